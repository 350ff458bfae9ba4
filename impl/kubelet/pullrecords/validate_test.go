package pullrecords

import "testing"

// TestValidate: the verification policy and its allowlist are checked as
// upstream's ValidateKubeletConfiguration (KubeletEnsureSecretPulledImages
// on) and ValidateAllowlistImagesPatterns, with their messages.
func TestValidate(t *testing.T) {
	const (
		badPolicy = `invalid configuration: option "Sometimes" specified for imagePullCredentialsVerificationPolicy. Valid options are "NeverVerify", "NeverVerifyPreloadedImages", "NeverVerifyAllowlistedImages" or "AlwaysVerify"`
		notAllow  = "invalid configuration: can't set `preloadedImagesVerificationAllowlist` if `imagePullCredentialsVertificationPolicy` is not \"NeverVerifyAllowlistedImages\""
		pattern   = "invalid configuration: invalid image pattern in `preloadedImagesVerificationAllowlist`: "
	)
	for _, tc := range []struct {
		name      string
		policy    Policy
		allowlist []string
		want      string
	}{
		{name: "NeverVerify", policy: NeverVerify},
		{name: "NeverVerifyPreloadedImages", policy: NeverVerifyPreloadedImages},
		{name: "AlwaysVerify", policy: AlwaysVerify},
		{name: "NeverVerifyAllowlistedImages without a list", policy: NeverVerifyAllowlistedImages},
		{name: "allowlist", policy: NeverVerifyAllowlistedImages,
			allowlist: []string{"registry.example.com/app", "docker.io/library/nginx", "registry.example.com/team/*", "registry.example.com:5000/*"}},
		{name: "unknown policy", policy: "Sometimes", want: badPolicy},
		{name: "empty policy", policy: "", want: `invalid configuration: option "" specified for imagePullCredentialsVerificationPolicy. Valid options are "NeverVerify", "NeverVerifyPreloadedImages", "NeverVerifyAllowlistedImages" or "AlwaysVerify"`},
		{name: "allowlist with another policy", policy: NeverVerifyPreloadedImages, allowlist: []string{"registry.example.com/app"}, want: notAllow},
		{name: "allowlist with another policy, bad pattern not reported", policy: AlwaysVerify, allowlist: []string{" x"}, want: notAllow},
		{name: "both", policy: "Sometimes", allowlist: []string{"registry.example.com/app"}, want: "[" + badPolicy + ", " + notAllow + "]"},
		{name: "spaces", policy: NeverVerifyAllowlistedImages, allowlist: []string{"registry.example.com/app "}, want: pattern + "leading/trailing spaces are not allowed: registry.example.com/app "},
		{name: "empty pattern", policy: NeverVerifyAllowlistedImages, allowlist: []string{""}, want: pattern + "the supplied pattern is too short: "},
		{name: "inner star", policy: NeverVerifyAllowlistedImages, allowlist: []string{"registry.example.com/*/app"}, want: pattern + "not a valid wildcard pattern, only patterns ending with '/*' are allowed: registry.example.com/*/app"},
		{name: "star without slash", policy: NeverVerifyAllowlistedImages, allowlist: []string{"registry.example.com/app*"}, want: pattern + "not a valid wildcard pattern, only patterns ending with '/*' are allowed: registry.example.com/app*"},
		{name: "only /*", policy: NeverVerifyAllowlistedImages, allowlist: []string{"/*"}, want: pattern + "at least registry hostname is required"},
		{name: "tag", policy: NeverVerifyAllowlistedImages, allowlist: []string{"registry.example.com/app:1.0"}, want: pattern + "neither tag nor digest is accepted in an image reference: registry.example.com/app:1.0"},
		{name: "familiar name", policy: NeverVerifyAllowlistedImages, allowlist: []string{"nginx"}, want: pattern + "neither tag nor digest is accepted in an image reference: nginx"},
		{name: "unparsable", policy: NeverVerifyAllowlistedImages, allowlist: []string{"Registry/App"}, want: pattern + "failed to parse as an image name: invalid reference format: repository name (App) must be lowercase"},
		{name: "first bad pattern only", policy: NeverVerifyAllowlistedImages, allowlist: []string{"a:1", "b:2"}, want: pattern + "neither tag nor digest is accepted in an image reference: a:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(tc.policy, tc.allowlist)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("Validate(%q, %q) = %q, want %q", tc.policy, tc.allowlist, got, tc.want)
			}
		})
	}
}
