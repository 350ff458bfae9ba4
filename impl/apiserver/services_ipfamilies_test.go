package apiserver_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/ipfamily"
)

// svcOpt shapes a service of TestServiceIPFamiliesAsKubeAPIServer.
type svcOpt func(*corev1.Service)

func policy(p corev1.IPFamilyPolicy) svcOpt {
	return func(s *corev1.Service) { s.Spec.IPFamilyPolicy = &p }
}

func families(fs ...corev1.IPFamily) svcOpt {
	return func(s *corev1.Service) { s.Spec.IPFamilies = fs }
}

// clusterIPs sets clusterIP and clusterIPs as a current client does.
func clusterIPs(ips ...string) svcOpt {
	return func(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = ips[0], ips }
}

func noSelector(s *corev1.Service) { s.Spec.Selector = nil }

func ptrTo[T any](v T) *T { return &v }

func badPortName(s *corev1.Service) { s.Spec.Ports[0].Name = "BAD" }

func externalName(s *corev1.Service) {
	s.Spec.Type, s.Spec.ExternalName = corev1.ServiceTypeExternalName, "db.example.com"
}

// loadBalancer makes the service a LoadBalancer of class (nil: none).
func loadBalancer(class *string) svcOpt {
	return func(s *corev1.Service) { s.Spec.Type, s.Spec.LoadBalancerClass = corev1.ServiceTypeLoadBalancer, class }
}

func svcOf(opts ...svcOpt) *corev1.Service {
	s := &corev1.Service{
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP, Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// TestServiceIPFamiliesAsKubeAPIServer is the table of what a client sees
// creating and updating services' IP families, as kube-apiserver answers
// (its allocator's initIPFamilyFields runs before validation, and its
// update validation checks upgrades and downgrades with the rest), on a
// single-stack IPv4 cluster and a dual-stack IPv4,IPv6 one: the status
// code, for a 422 the causes' field paths, for a success the policy, the
// families and one address of each family. Requested addresses are in the
// ranges' low bands (KEP-3070), which dynamic allocation leaves alone
// while the upper bands have room.
func TestServiceIPFamiliesAsKubeAPIServer(t *testing.T) {
	v4, v6 := corev1.IPv4Protocol, corev1.IPv6Protocol
	single, prefer, require := corev1.IPFamilyPolicySingleStack, corev1.IPFamilyPolicyPreferDualStack, corev1.IPFamilyPolicyRequireDualStack
	headless := clusterIPs(corev1.ClusterIPNone)
	const created, ok, invalid = http.StatusCreated, http.StatusOK, http.StatusUnprocessableEntity
	type tc struct {
		name    string
		cluster string // "v4" (10.0.0.0/24) or "dual" (10.0.0.0/24,fd00::/120)
		// A create of create, or an update of from (created first) by
		// a PUT of the stored object changed by update.
		create *corev1.Service
		from   *corev1.Service
		update svcOpt
		code   int
		causes []string // sorted
		policy corev1.IPFamilyPolicy
		fams   []corev1.IPFamily
		ips    []string // the clusterIPs asked for ("" for a free one), "None" for headless
		// check, when set, looks at the rest of a success.
		check func(t *testing.T, s *corev1.Service)
	}
	cases := []tc{
		// Create, no family asked.
		{name: "nothing asked, single-stack", cluster: "v4", create: svcOf(), code: created, policy: single, fams: []corev1.IPFamily{v4}, ips: []string{""}},
		{name: "nothing asked, dual-stack: the primary family", cluster: "dual", create: svcOf(), code: created, policy: single, fams: []corev1.IPFamily{v4}, ips: []string{""}},
		{name: "SingleStack", cluster: "dual", create: svcOf(policy(single)), code: created, policy: single, fams: []corev1.IPFamily{v4}, ips: []string{""}},
		{name: "PreferDualStack, single-stack", cluster: "v4", create: svcOf(policy(prefer)), code: created, policy: prefer, fams: []corev1.IPFamily{v4}, ips: []string{""}},
		{name: "PreferDualStack, dual-stack", cluster: "dual", create: svcOf(policy(prefer)), code: created, policy: prefer, fams: []corev1.IPFamily{v4, v6}, ips: []string{"", ""}},
		{name: "RequireDualStack, single-stack", cluster: "v4", create: svcOf(policy(require)), code: invalid, causes: []string{"spec.ipFamilyPolicy"}},
		{name: "RequireDualStack, dual-stack", cluster: "dual", create: svcOf(policy(require)), code: created, policy: require, fams: []corev1.IPFamily{v4, v6}, ips: []string{"", ""}},
		// Families asked for.
		{name: "families in the other order", cluster: "dual", create: svcOf(policy(require), families(v6, v4)), code: created, policy: require, fams: []corev1.IPFamily{v6, v4}, ips: []string{"", ""}},
		{name: "the secondary family first", cluster: "dual", create: svcOf(policy(prefer), families(v6)), code: created, policy: prefer, fams: []corev1.IPFamily{v6, v4}, ips: []string{"", ""}},
		{name: "a family the cluster does not serve", cluster: "v4", create: svcOf(families(v6)), code: invalid, causes: []string{"spec.ipFamilies[0]"}},
		{name: "two families without a policy", cluster: "dual", create: svcOf(families(v4, v6)), code: invalid, causes: []string{"spec.ipFamilyPolicy"}},
		{name: "two families, SingleStack", cluster: "dual", create: svcOf(policy(single), families(v4, v6)), code: invalid, causes: []string{"spec.ipFamilyPolicy"}},
		{name: "a family twice", cluster: "dual", create: svcOf(policy(prefer), families(v4, v4)), code: invalid, causes: []string{"spec.ipFamilies[1]"}},
		// ClusterIPs asked for.
		{name: "one address: its family", cluster: "dual", create: svcOf(clusterIPs("10.0.0.10")), code: created, policy: single, fams: []corev1.IPFamily{v4}, ips: []string{"10.0.0.10"}},
		{name: "one address of the secondary family", cluster: "dual", create: svcOf(clusterIPs("fd00::a")), code: created, policy: single, fams: []corev1.IPFamily{v6}, ips: []string{"fd00::a"}},
		{name: "an address of each family", cluster: "dual", create: svcOf(policy(prefer), clusterIPs("10.0.0.11", "fd00::b")), code: created, policy: prefer, fams: []corev1.IPFamily{v4, v6}, ips: []string{"10.0.0.11", "fd00::b"}},
		{name: "an address of each family, secondary first", cluster: "dual", create: svcOf(policy(require), clusterIPs("fd00::c", "10.0.0.12")), code: created, policy: require, fams: []corev1.IPFamily{v6, v4}, ips: []string{"fd00::c", "10.0.0.12"}},
		{name: "two addresses without a policy", cluster: "dual", create: svcOf(clusterIPs("10.0.0.13", "fd00::13")), code: invalid, causes: []string{"spec.ipFamilyPolicy"}},
		{name: "an address of a family the cluster does not serve", cluster: "v4", create: svcOf(clusterIPs("fd00::14")), code: invalid, causes: []string{"spec.clusterIPs[0]"}},
		{name: "the second address of a family not served", cluster: "v4", create: svcOf(policy(prefer), clusterIPs("10.0.0.18", "fd00::18")), code: invalid, causes: []string{"spec.clusterIPs[1]"}},
		{name: "an address of the wrong family", cluster: "dual", create: svcOf(families(v4), clusterIPs("fd00::15")), code: invalid, causes: []string{"spec.clusterIPs[0]"}},
		{name: "two addresses of one family", cluster: "dual", create: svcOf(policy(prefer), clusterIPs("10.0.0.16", "10.0.0.17")), code: invalid, causes: []string{"spec.clusterIPs"}},
		// Headless.
		{name: "headless with a selector", cluster: "v4", create: svcOf(headless), code: created, policy: single, fams: []corev1.IPFamily{v4}, ips: []string{"None"}},
		{name: "headless without a selector: both families, even single-stack", cluster: "v4", create: svcOf(headless, noSelector), code: created, policy: require, fams: []corev1.IPFamily{v4, v6}, ips: []string{"None"}},
		{name: "headless without a selector, SingleStack", cluster: "dual", create: svcOf(headless, noSelector, policy(single)), code: created, policy: single, fams: []corev1.IPFamily{v4}, ips: []string{"None"}},
		{name: "headless without a selector, a family not served", cluster: "v4", create: svcOf(headless, noSelector, families(v6)), code: created, policy: require, fams: []corev1.IPFamily{v6, v4}, ips: []string{"None"}},
		{name: "headless with a selector, RequireDualStack, single-stack", cluster: "v4", create: svcOf(headless, policy(require)), code: invalid, causes: []string{"spec.ipFamilyPolicy"}},
		{name: "headless with a selector, PreferDualStack", cluster: "dual", create: svcOf(headless, policy(prefer)), code: created, policy: prefer, fams: []corev1.IPFamily{v4, v6}, ips: []string{"None"}},
		{name: "headless NodePort", cluster: "dual", create: svcOf(headless, func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort }), code: invalid, causes: []string{"spec.clusterIPs[0]"}},
		// ExternalName.
		{name: "ExternalName", cluster: "dual", create: svcOf(externalName), code: created},
		{name: "ExternalName with a policy", cluster: "dual", create: svcOf(externalName, policy(single)), code: invalid, causes: []string{"spec.ipFamilyPolicy"}},
		{name: "ExternalName with families", cluster: "dual", create: svcOf(externalName, families(v4)), code: invalid, causes: []string{"spec.ipFamilies"}},
		// The order: the cluster's refusal comes alone, before validation.
		{name: "RequireDualStack on single-stack and a bad port name", cluster: "v4", create: svcOf(policy(require), badPortName), code: invalid, causes: []string{"spec.ipFamilyPolicy"}},
		{name: "an unknown policy and a bad port name", cluster: "dual", create: svcOf(policy("Bogus"), badPortName), code: invalid, causes: []string{"spec.ipFamilyPolicy"}},
		{name: "a bad port name alone", cluster: "dual", create: svcOf(policy(prefer), badPortName), code: invalid, causes: []string{"spec.ports[0].name"}},

		// Updates.
		{name: "upgrade", cluster: "dual", from: svcOf(), update: policy(require), code: ok, policy: require, fams: []corev1.IPFamily{v4, v6}, ips: []string{"", ""}},
		{name: "upgrade with the secondary address named", cluster: "dual", from: svcOf(clusterIPs("10.0.0.14")),
			update: func(s *corev1.Service) {
				policy(require)(s)
				families(v4, v6)(s)
				clusterIPs("10.0.0.14", "fd00::d")(s)
			},
			code: ok, policy: require, fams: []corev1.IPFamily{v4, v6}, ips: []string{"10.0.0.14", "fd00::d"}},
		{name: "upgrade on single-stack", cluster: "v4", from: svcOf(), update: policy(require), code: invalid, causes: []string{"spec.ipFamilyPolicy"}},
		{name: "downgrade", cluster: "dual", from: svcOf(policy(require)), update: policy(single), code: ok, policy: single, fams: []corev1.IPFamily{v4}, ips: []string{""}},
		{name: "downgrade of PreferDualStack", cluster: "dual", from: svcOf(policy(prefer)), update: policy(single), code: ok, policy: single, fams: []corev1.IPFamily{v4}, ips: []string{""}},
		{name: "the secondary address dropped without SingleStack", cluster: "dual", from: svcOf(policy(require)),
			update: func(s *corev1.Service) {
				s.Spec.ClusterIPs, s.Spec.IPFamilies = s.Spec.ClusterIPs[:1], s.Spec.IPFamilies[:1]
			},
			code: invalid, causes: []string{"spec.ipFamilyPolicy", "spec.ipFamilyPolicy"}},
		{name: "the primary address changed", cluster: "dual", from: svcOf(), update: clusterIPs("10.0.0.20"), code: invalid, causes: []string{"spec.clusterIPs[0]"}},
		{name: "the primary family changed", cluster: "dual", from: svcOf(), update: families(v6), code: invalid, causes: []string{"spec.clusterIPs[0]"}},
		{name: "the primary address changed and a bad port name: one 422 of both", cluster: "dual", from: svcOf(),
			update: func(s *corev1.Service) { clusterIPs("10.0.0.21")(s); badPortName(s) }, code: invalid, causes: []string{"spec.clusterIPs[0]", "spec.ports[0].name"}},
		{name: "to ExternalName", cluster: "dual", from: svcOf(policy(require)), update: externalName, code: ok},
		{name: "from ExternalName", cluster: "dual", from: svcOf(externalName),
			update: func(s *corev1.Service) { s.Spec.Type, s.Spec.ExternalName = corev1.ServiceTypeClusterIP, "" },
			code:   ok, policy: single, fams: []corev1.IPFamily{v4}, ips: []string{""}},
		{name: "from ExternalName, RequireDualStack on single-stack", cluster: "v4", from: svcOf(externalName),
			update: func(s *corev1.Service) {
				s.Spec.Type, s.Spec.ExternalName = corev1.ServiceTypeClusterIP, ""
				policy(require)(s)
			},
			code: invalid, causes: []string{"spec.ipFamilyPolicy"}},
		{name: "the IP fields left out keep the stored ones", cluster: "dual", from: svcOf(policy(prefer)),
			update: func(s *corev1.Service) {
				s.Spec.IPFamilyPolicy, s.Spec.IPFamilies, s.Spec.ClusterIP, s.Spec.ClusterIPs = nil, nil, "", nil
			},
			code: ok, policy: prefer, fams: []corev1.IPFamily{v4, v6}, ips: []string{"", ""}},
		// The rest of kube-apiserver's update validation.
		{name: "a LoadBalancer class that is no qualified name", cluster: "dual", create: svcOf(loadBalancer(ptrTo("not a name!"))), code: invalid, causes: []string{"spec.loadBalancerClass"}},
		{name: "a LoadBalancer's class changed", cluster: "dual", from: svcOf(loadBalancer(ptrTo("example.com/lb"))),
			update: func(s *corev1.Service) { s.Spec.LoadBalancerClass = ptrTo("example.com/other") }, code: invalid, causes: []string{"spec.loadBalancerClass"}},
		{name: "a health check NodePort changed", cluster: "dual",
			from:   svcOf(loadBalancer(nil), func(s *corev1.Service) { s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal }),
			update: func(s *corev1.Service) { s.Spec.HealthCheckNodePort = 30050 }, code: invalid, causes: []string{"spec.healthCheckNodePort"}},
		// Fields of the old type the client left as stored are dropped.
		{name: "NodePort to ClusterIP, the node ports and traffic policy left in", cluster: "dual",
			from:   svcOf(func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort }),
			update: func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeClusterIP },
			code:   ok, policy: single, fams: []corev1.IPFamily{v4}, ips: []string{""},
			check: func(t *testing.T, s *corev1.Service) {
				if s.Spec.Ports[0].NodePort != 0 || s.Spec.ExternalTrafficPolicy != "" {
					t.Errorf("nodePort %d externalTrafficPolicy %q kept", s.Spec.Ports[0].NodePort, s.Spec.ExternalTrafficPolicy)
				}
			}},
		{name: "LoadBalancer to ExternalName, everything left in", cluster: "dual",
			from: svcOf(loadBalancer(ptrTo("example.com/lb")), policy(require),
				func(s *corev1.Service) { s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal }),
			update: externalName, code: ok,
			check: func(t *testing.T, s *corev1.Service) {
				if s.Spec.Ports[0].NodePort != 0 || s.Spec.HealthCheckNodePort != 0 || s.Spec.ExternalTrafficPolicy != "" ||
					s.Spec.AllocateLoadBalancerNodePorts != nil || s.Spec.LoadBalancerClass != nil {
					t.Errorf("LoadBalancer fields kept: %+v", s.Spec)
				}
			}},
		{name: "NodePort to ClusterIP with a new node port", cluster: "dual",
			from:   svcOf(func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort }),
			update: func(s *corev1.Service) { s.Spec.Type, s.Spec.Ports[0].NodePort = corev1.ServiceTypeClusterIP, 30051 },
			code:   invalid, causes: []string{"spec.ports[0].nodePort"}},
		{name: "ClusterIP with externalIPs gets an externalTrafficPolicy", cluster: "dual",
			create: svcOf(func(s *corev1.Service) { s.Spec.ExternalIPs = []string{"192.0.2.10"} }),
			code:   created, policy: single, fams: []corev1.IPFamily{v4}, ips: []string{""},
			check: func(t *testing.T, s *corev1.Service) {
				if s.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyCluster {
					t.Errorf("externalTrafficPolicy %q, want Cluster", s.Spec.ExternalTrafficPolicy)
				}
			}},
		{name: "a selectorless headless service on single-stack keeps both families", cluster: "v4", from: svcOf(headless, noSelector),
			update: func(s *corev1.Service) { s.Labels = map[string]string{"changed": "yes"} },
			code:   ok, policy: require, fams: []corev1.IPFamily{v4, v6}, ips: []string{"None"}},
	}
	envs := map[string]*env{
		"v4":   newEnv(t, func(c *apiserver.Config) { c.ServiceClusterIPRange = "10.0.0.0/24" }),
		"dual": newEnv(t, func(c *apiserver.Config) { c.ServiceClusterIPRange = "10.0.0.0/24,fd00::/120" }),
	}
	ctx := context.Background()
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			svcs := envs[c.cluster].cs.CoreV1().Services("default")
			name := "svc-" + string(rune('a'+i/26)) + string(rune('a'+i%26))
			var got *corev1.Service
			var err error
			code := created
			if c.create != nil {
				s := c.create.DeepCopy()
				s.Name = name
				got, err = svcs.Create(ctx, s, metav1.CreateOptions{})
			} else {
				s := c.from.DeepCopy()
				s.Name = name
				stored, cerr := svcs.Create(ctx, s, metav1.CreateOptions{})
				if cerr != nil {
					t.Fatalf("creating the service to update: %v", cerr)
				}
				c.update(stored)
				got, err = svcs.Update(ctx, stored, metav1.UpdateOptions{})
				code = ok
			}
			var status apierrors.APIStatus
			if err != nil {
				if !errors.As(err, &status) {
					t.Fatalf("not a Status error: %v", err)
				}
				code = int(status.Status().Code)
			}
			if code != c.code {
				t.Fatalf("code %d, want %d (%v)", code, c.code, err)
			}
			if c.code == invalid {
				if status.Status().Reason != metav1.StatusReasonInvalid {
					t.Errorf("reason %q", status.Status().Reason)
				}
				var paths []string
				for _, cause := range status.Status().Details.Causes {
					paths = append(paths, cause.Field)
				}
				slices.Sort(paths)
				if !slices.Equal(paths, c.causes) {
					t.Errorf("causes %v, want %v (%v)", paths, c.causes, err)
				}
				return
			}
			var gotPolicy corev1.IPFamilyPolicy
			if got.Spec.IPFamilyPolicy != nil {
				gotPolicy = *got.Spec.IPFamilyPolicy
			}
			if gotPolicy != c.policy || !slices.Equal(got.Spec.IPFamilies, c.fams) {
				t.Errorf("policy %q families %v, want %q %v", gotPolicy, got.Spec.IPFamilies, c.policy, c.fams)
			}
			if len(got.Spec.ClusterIPs) != len(c.ips) || (len(c.ips) > 0 && got.Spec.ClusterIP != got.Spec.ClusterIPs[0]) {
				t.Fatalf("clusterIP %q clusterIPs %v, want %d", got.Spec.ClusterIP, got.Spec.ClusterIPs, len(c.ips))
			}
			for j, want := range c.ips {
				ip := got.Spec.ClusterIPs[j]
				switch {
				case want == corev1.ClusterIPNone || want != "":
					if ip != want {
						t.Errorf("clusterIPs[%d] %q, want %q", j, ip, want)
					}
				case ipfamily.Of(ip) != c.fams[j]:
					t.Errorf("clusterIPs[%d] %q, not of family %s", j, ip, c.fams[j])
				}
			}
			if c.check != nil {
				c.check(t, got)
			}
		})
	}
}
