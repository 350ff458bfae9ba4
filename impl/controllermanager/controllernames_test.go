package controllermanager

import (
	"slices"
	"strings"
	"testing"
)

// TestNormalizeControllers: --controllers as kube-controller-manager
// 1.37 reads it (k8s.io/controller-manager options/generic.go Validate
// and ApplyTo; cmd/kube-controller-manager/app NewControllerDescriptors
// and IsControllerEnabled): "*", names and "-"names, where a name is a
// controller's canonical name or one of its aliases; any other name is
// refused with its "-" taken off. Controllers upstream has and kubeproof
// does not are accepted and, when an entry turns them on, reported.
func TestNormalizeControllers(t *testing.T) {
	for _, tc := range []struct {
		in, want, unimplemented []string
		errs                    []string
	}{
		{in: []string{"*"}, want: []string{"*"}},
		{in: []string{"*", "-deployment", "replicaset"}, want: []string{"*", "-deployment", "replicaset"}},
		{in: []string{"deployment-controller", "-garbage-collector-controller"}, want: []string{Deployment, "-" + GarbageCollector}},
		{in: []string{"podgc", "pod-garbage-collector-controller", "pod-garbage-collector"}, want: []string{PodGC, PodGC, PodGC}},
		{in: []string{"endpoints-controller", "endpointslice-mirroring-controller", "root-ca-certificate-publisher-controller"}, want: []string{Endpoint, EndpointSliceMirroring, RootCAPublisher}},
		{in: []string{"certificatesigningrequest-approving-controller", "certificatesigningrequest-signing-controller", "certificatesigningrequest-cleaner-controller"}, want: []string{CSRApproving, CSRSigning, CSRCleaner}},
		{in: []string{"legacy-serviceaccount-token-cleaner-controller", "serviceaccount-token-controller", "node-lifecycle-controller"}, want: []string{LegacyServiceAccountTokenCleaner, ServiceAccountToken, NodeLifecycle}},
		// kubeadm's default: the two bootstrap-token controllers "*"
		// leaves off, named; kube-controller-manager runs them.
		{in: []string{"*", "bootstrapsigner", "tokencleaner"}, want: []string{"*"}, unimplemented: []string{"bootstrap-signer-controller", "token-cleaner-controller"}},
		{in: []string{"*", "-bootstrapsigner", "-tokencleaner", "-ttl", "selinux-warning-controller"}, want: []string{"*"}, unimplemented: []string{"selinux-warning-controller"}},
		{in: []string{"job", "cronjob-controller", "-deployment", "deployment"}, want: []string{"-deployment", "deployment"}, unimplemented: []string{"job-controller", "cronjob-controller"}},
		// The first entry naming a controller decides; one named twice
		// is reported once.
		{in: []string{"-ttl", "ttl", "job", "job-controller"}, want: []string{}, unimplemented: []string{"job-controller"}},
		{in: []string{"daemonset", "statefulset", "horizontalpodautoscaling", "attachdetach", "service", "route"}, want: []string{}, unimplemented: []string{"daemonset-controller", "statefulset-controller", "horizontal-pod-autoscaler-controller", "persistentvolume-attach-detach-controller", "service-lb-controller", "node-route-controller"}},
		{in: []string{"foo"}, errs: []string{`"foo" is not in the list of known controllers`}},
		{in: []string{"*", "-deploymnet", "bar", "bootstrapsigner"}, errs: []string{`"deploymnet" is not in the list of known controllers`, `"bar" is not in the list of known controllers`}},
		{in: []string{"-*", "", "-", "+deployment"}, errs: []string{`"*" is not in the list of known controllers`, `"" is not in the list of known controllers`, `"" is not in the list of known controllers`, `"+deployment" is not in the list of known controllers`}},
	} {
		got, unimplemented, errs := NormalizeControllers(tc.in)
		var msgs []string
		for _, err := range errs {
			msgs = append(msgs, err.Error())
		}
		if !slices.Equal(msgs, tc.errs) {
			t.Errorf("%q: errors %q, want %q", tc.in, msgs, tc.errs)
			continue
		}
		if len(tc.errs) != 0 {
			continue
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%q: %q, want %q", tc.in, got, tc.want)
		}
		if !slices.Equal(unimplemented, tc.unimplemented) {
			t.Errorf("%q: unimplemented %q, want %q", tc.in, unimplemented, tc.unimplemented)
		}
	}
}

// TestUpstreamControllerList: every upstream name and alias is accepted
// (kubeadm and other installers name controllers kubeproof lacks), the
// names are upstream's (each ends in -controller, none is another's
// alias), "*" leaves off exactly the disabled-by-default ones, and each
// controller kubeproof runs is reachable by its own name and by its
// upstream canonical name.
func TestUpstreamControllerList(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range upstreamControllers {
		if !strings.HasSuffix(c.name, "-controller") {
			t.Errorf("%s: canonical names end in -controller", c.name)
		}
		for _, n := range append([]string{c.name}, c.aliases...) {
			if seen[n] {
				t.Errorf("%s: named twice", n)
			}
			seen[n] = true
			for _, e := range []string{n, "-" + n} {
				if _, _, errs := NormalizeControllers([]string{e}); len(errs) != 0 {
					t.Errorf("%s: %v", e, errs)
				}
			}
		}
		if upstreamEnabled(c, []string{"*"}) == c.disabledByDefault {
			t.Errorf("%s: enabled by * %v, disabled by default %v", c.name, upstreamEnabled(c, []string{"*"}), c.disabledByDefault)
		}
	}
	if _, unimplemented, _ := NormalizeControllers([]string{"*"}); len(unimplemented) != 0 {
		t.Errorf(`"*" reports %q`, unimplemented)
	}
	if got, want := UpstreamControllersDisabledByDefault(), []string{"bootstrap-signer-controller", "selinux-warning-controller", "token-cleaner-controller"}; !slices.Equal(got, want) {
		t.Errorf("disabled by default %q, want %q", got, want)
	}
	for _, ours := range AllControllers {
		for _, n := range []string{ours, ourUpstreamName(ours)} {
			if got, _, errs := NormalizeControllers([]string{n}); len(errs) != 0 || !slices.Equal(got, []string{ours}) {
				t.Errorf("%s: %v %v, want %s", n, got, errs, ours)
			}
		}
	}
}
