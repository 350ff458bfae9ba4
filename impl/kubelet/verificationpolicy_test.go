package kubelet

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/pullrecords"
)

// TestConfigVerificationPolicy: Config's imagePullCredentialsVerificationPolicy
// defaults to upstream's NeverVerifyPreloadedImages, and New refuses what
// upstream's kubelet configuration validation refuses, with its messages.
func TestConfigVerificationPolicy(t *testing.T) {
	cfg := Config{NodeName: "n"}
	if err := cfg.setDefaults(); err != nil {
		t.Fatal(err)
	}
	if cfg.ImagePullCredentialsVerificationPolicy != pullrecords.NeverVerifyPreloadedImages {
		t.Errorf("default policy %q, want NeverVerifyPreloadedImages", cfg.ImagePullCredentialsVerificationPolicy)
	}
	for _, tc := range []struct {
		policy    pullrecords.Policy
		allowlist []string
		want      string
	}{
		{policy: "Sometimes", want: `invalid configuration: option "Sometimes" specified for imagePullCredentialsVerificationPolicy.`},
		{allowlist: []string{"registry.example.com/app"}, want: "can't set `preloadedImagesVerificationAllowlist` if `imagePullCredentialsVertificationPolicy` is not \"NeverVerifyAllowlistedImages\""},
		{policy: pullrecords.NeverVerifyAllowlistedImages, allowlist: []string{"nginx:1.27"}, want: "invalid image pattern in `preloadedImagesVerificationAllowlist`: neither tag nor digest is accepted in an image reference: nginx:1.27"},
	} {
		cfg := Config{NodeName: "n", ImagePullCredentialsVerificationPolicy: tc.policy, PreloadedImagesVerificationAllowlist: tc.allowlist}
		if err := cfg.setDefaults(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("policy %q allowlist %q: %v; want %q", tc.policy, tc.allowlist, err, tc.want)
		}
	}
}

// TestVerificationPolicies: the configured policy decides which present
// images a pod without the credentials that pulled them may use, as
// upstream's ImagePullPolicyEnforcers: NeverVerify any; NeverVerifyAllowlistedImages
// those of the allowlist (pulled by the kubelet or not) and no other;
// AlwaysVerify none, preloaded images too.
func TestVerificationPolicies(t *testing.T) {
	const (
		team    = "registry.example.com/team/app:1.0"
		other   = "registry.example.com/other:1.0"
		preload = "registry.example.com/base:1"
	)
	for _, tc := range []struct {
		name      string
		policy    pullrecords.Policy
		allowlist []string
		// whether a pod without the secret uses the image without a pull
		shared map[string]bool
	}{
		{name: "NeverVerify", policy: pullrecords.NeverVerify, shared: map[string]bool{team: true, other: true, preload: true}},
		{name: "NeverVerifyPreloadedImages", policy: pullrecords.NeverVerifyPreloadedImages, shared: map[string]bool{team: false, other: false, preload: true}},
		{name: "NeverVerifyAllowlistedImages", policy: pullrecords.NeverVerifyAllowlistedImages, allowlist: []string{"registry.example.com/team/*"},
			shared: map[string]bool{team: true, other: false, preload: false}},
		{name: "AlwaysVerify", policy: pullrecords.AlwaysVerify, shared: map[string]bool{team: false, other: false, preload: false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) {
				c.RootDir = t.TempDir()
				c.ImagePullCredentialsVerificationPolicy, c.PreloadedImagesVerificationAllowlist = tc.policy, tc.allowlist
			})
			h.rt.RequireCredentials("registry.example.com", "robot", "right")
			s := pullSecret("a", "registry.example.com", "robot", "right")
			s.UID = types.UID("uid-a")
			if _, err := h.client.CoreV1().Secrets("default").Create(h.ctx, s, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := h.rt.PullImageWithAuth(h.ctx, &runtimeapi.ImageSpec{Image: preload}, &runtimeapi.AuthConfig{Username: "robot", Password: "right"}); err != nil {
				t.Fatal(err)
			}
			n := 0
			pod := func(image string, secrets ...string) *v1.Pod {
				n++
				return h.create(h.pod("p"+string(rune('a'+n)), func(p *v1.Pod) {
					p.Spec.Containers[0].Image, p.Spec.Containers[0].ImagePullPolicy = image, v1.PullIfNotPresent
					for _, s := range secrets {
						p.Spec.ImagePullSecrets = append(p.Spec.ImagePullSecrets, v1.LocalObjectReference{Name: s})
					}
				}))
			}
			for _, image := range []string{team, other} {
				if cs := cstatus(h.sync(pod(image, "a")), "app"); cs.State.Running == nil {
					t.Fatalf("%s with the secret: %+v", image, cs.State)
				}
			}
			for _, image := range []string{team, other, preload} {
				before := len(h.rt.PullAuths(image))
				cs := cstatus(h.sync(pod(image)), "app")
				pulled := len(h.rt.PullAuths(image)) > before
				if tc.shared[image] {
					if cs.State.Running == nil || pulled {
						t.Errorf("%s without the secret: %+v, pulled again %v; want it used without a pull", image, cs.State, pulled)
					}
				} else if w := cs.State.Waiting; w == nil || w.Reason != "ErrImagePull" || !pulled {
					t.Errorf("%s without the secret: %+v, pulled again %v; want a pull, refused", image, cs.State, pulled)
				}
			}
		})
	}
}
