package kubelet

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestSeccompDefault: with Config.SeccompDefault (the kubelet's
// seccompDefault), a container whose pod and container set no
// seccompProfile is created under RuntimeDefault; without it, Unconfined;
// a profile the pod sets still wins (upstream's getSeccompProfile).
func TestSeccompDefault(t *testing.T) {
	for _, tc := range []struct {
		name           string
		seccompDefault bool
		pod            *v1.SeccompProfile
		want           runtimeapi.SecurityProfile_ProfileType
	}{
		{name: "off", want: runtimeapi.SecurityProfile_Unconfined},
		{name: "on", seccompDefault: true, want: runtimeapi.SecurityProfile_RuntimeDefault},
		{name: "on, pod Unconfined", seccompDefault: true, pod: &v1.SeccompProfile{Type: v1.SeccompProfileTypeUnconfined}, want: runtimeapi.SecurityProfile_Unconfined},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.SeccompDefault = tc.seccompDefault })
			p := h.create(h.pod("seccomp", func(p *v1.Pod) {
				if tc.pod != nil {
					p.Spec.SecurityContext = &v1.PodSecurityContext{SeccompProfile: tc.pod}
				}
			}))
			cs := cstatus(h.sync(p), "app")
			if cs.State.Running == nil {
				t.Fatalf("container not running: %+v", cs.State)
			}
			sc, err := h.rt.ContainerSecurity(simID(t, cs.ContainerID))
			if err != nil {
				t.Fatal(err)
			}
			if got := sc.GetSeccomp().GetProfileType(); got != tc.want {
				t.Fatalf("seccomp profile %v, want %v", got, tc.want)
			}
		})
	}
}
