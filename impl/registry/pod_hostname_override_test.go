package registry

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestHostnameOverrideValidationAsUpstream: spec.hostnameOverride
// (HostnameOverride, on by default since 1.35) is checked as upstream's
// validatePodHostName.
func TestHostnameOverrideValidationAsUpstream(t *testing.T) {
	r := find(t, coreV1, "pods")
	const hp = "spec.hostnameOverride"
	cases := []struct {
		name    string
		mutate  func(s *corev1.PodSpec)
		want    []string
		details []string
	}{
		{"valid", func(s *corev1.PodSpec) { s.HostnameOverride = ptr("web-1.example") }, nil, nil},
		{"beside setHostnameAsFQDN", func(s *corev1.PodSpec) {
			s.HostnameOverride, s.SetHostnameAsFQDN = ptr("web-1"), ptr(true)
		}, []string{forbidden + " " + hp}, []string{hp + ": Forbidden: may not be specified when setHostnameAsFQDN is true"}},
		{"in the host network", func(s *corev1.PodSpec) {
			s.HostnameOverride, s.HostNetwork = ptr("web-1"), true
		}, []string{forbidden + " " + hp}, []string{hp + ": Forbidden: may not be specified when hostNetwork is true"}},
		{"too long", func(s *corev1.PodSpec) { s.HostnameOverride = ptr(strings.Repeat("a", 65)) },
			[]string{tooLong + " " + hp}, nil},
		{"no subdomain", func(s *corev1.PodSpec) { s.HostnameOverride = ptr("Web_1") }, []string{invalid + " " + hp}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPod("p")
			tc.mutate(&p.Spec)
			defaultPod(p)
			errs := r.Strategy.Validate(context.Background(), p)
			wantErrors(t, errs, tc.want...)
			for _, d := range tc.details {
				wantError(t, errs, d)
			}
		})
	}
}
