package controllermanager

import (
	"slices"
	"strings"
	"testing"
)

// TestNormalizeControllers: --controllers as kube-controller-manager
// 1.37 reads it (k8s.io/controller-manager options/generic.go Validate
// and ApplyTo; cmd/kube-controller-manager/names): "*", names and
// "-"names, where a name is a controller's canonical name or one of its
// aliases; any other name is refused with its "-" taken off.
func TestNormalizeControllers(t *testing.T) {
	for _, tc := range []struct {
		in, want []string
		errs     []string
	}{
		{in: []string{"*"}, want: []string{"*"}},
		{in: []string{"*", "-deployment", "replicaset"}, want: []string{"*", "-deployment", "replicaset"}},
		{in: []string{"deployment-controller", "-garbage-collector-controller"}, want: []string{Deployment, "-" + GarbageCollector}},
		{in: []string{"podgc", "pod-garbage-collector-controller", "pod-garbage-collector"}, want: []string{PodGC, PodGC, PodGC}},
		{in: []string{"endpoints-controller", "endpointslice-mirroring-controller", "root-ca-certificate-publisher-controller"}, want: []string{Endpoint, EndpointSliceMirroring, RootCAPublisher}},
		{in: []string{"certificatesigningrequest-approving-controller", "certificatesigningrequest-signing-controller", "certificatesigningrequest-cleaner-controller"}, want: []string{CSRApproving, CSRSigning, CSRCleaner}},
		{in: []string{"legacy-serviceaccount-token-cleaner-controller", "serviceaccount-token-controller", "node-lifecycle-controller"}, want: []string{LegacyServiceAccountTokenCleaner, ServiceAccountToken, NodeLifecycle}},
		{in: []string{"foo"}, errs: []string{`"foo" is not in the list of known controllers`}},
		{in: []string{"*", "-deploymnet", "bar"}, errs: []string{`"deploymnet" is not in the list of known controllers`, `"bar" is not in the list of known controllers`}},
	} {
		got, errs := NormalizeControllers(tc.in)
		var msgs []string
		for _, err := range errs {
			msgs = append(msgs, err.Error())
		}
		if !slices.Equal(msgs, tc.errs) {
			t.Errorf("%v: errors %q, want %q", tc.in, msgs, tc.errs)
			continue
		}
		if len(tc.errs) == 0 && !slices.Equal(got, tc.want) {
			t.Errorf("%v: %v, want %v", tc.in, got, tc.want)
		}
	}
}

// TestEveryControllerHasItsUpstreamNames: each controller kubeproof runs
// is reachable by its own name and by an upstream canonical name.
func TestEveryControllerHasItsUpstreamNames(t *testing.T) {
	canonical := map[string]bool{}
	for name, ours := range upstreamControllerNames {
		if !slices.Contains(AllControllers, ours) {
			t.Errorf("upstream name %s maps to %q, which is not a controller", name, ours)
		}
		canonical[ours] = canonical[ours] || strings.HasSuffix(name, "-controller")
	}
	for _, c := range AllControllers {
		if got, errs := NormalizeControllers([]string{c}); len(errs) != 0 || !slices.Equal(got, []string{c}) {
			t.Errorf("%s: %v %v", c, got, errs)
		}
		if !canonical[c] {
			t.Errorf("%s has no upstream canonical name", c)
		}
	}
}
