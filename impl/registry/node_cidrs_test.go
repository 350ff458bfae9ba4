package registry

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// A node's spec.podCIDRs are legacy CIDR fields checked as upstream 1.37
// (KEP-4858, StrictIPCIDRValidation on): leading zeros, IPv4-mapped IPv6
// and host bits refused, a non-canonical IPv6 CIDR accepted with a
// warning; more than one must be a dual-stack pair; on update a CIDR the
// stored node had may stay.
func TestNodePodCIDRsAsUpstream(t *testing.T) {
	r := find(t, coreV1, "nodes")
	node := func(cidrs ...string) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}, Spec: corev1.NodeSpec{PodCIDRs: cidrs}}
		r.Strategy.Default(n)
		return n
	}
	validate := func(n, old *corev1.Node) (errs, warnings []string) {
		ctx, w := request.WithWarnings(context.Background())
		var list field.ErrorList
		if old == nil {
			list = r.Strategy.Validate(ctx, n)
		} else {
			r.Strategy.PrepareForUpdate(ctx, n, old)
			list = r.Strategy.ValidateUpdate(ctx, n, old)
		}
		for _, e := range list {
			errs = append(errs, e.Error())
		}
		return errs, w.List()
	}
	cases := []struct {
		name           string
		cidrs          []string
		errs, warnings []string
	}{
		{"dual-stack", []string{"10.244.1.0/24", "fd00:10:244:1::/64"}, nil, nil},
		{"host bits", []string{"10.244.1.5/24"}, []string{`spec.podCIDRs[0]: Invalid value: "10.244.1.5/24": must not have bits set beyond the prefix length`}, nil},
		{"leading zeros", []string{"10.244.01.0/24"}, []string{`spec.podCIDRs[0]: Invalid value: "10.244.01.0/24": must not have leading 0s in IP or prefix length`}, nil},
		{"IPv4-mapped IPv6", []string{"::ffff:10.244.1.0/120"}, []string{`spec.podCIDRs[0]: Invalid value: "::ffff:10.244.1.0/120": must not have an IPv4-mapped IPv6 address`}, nil},
		{"non-canonical IPv6", []string{"10.244.1.0/24", "FD00:10:244:1::/64"}, nil,
			[]string{`spec.podCIDRs[1]: IPv6 CIDR value "FD00:10:244:1::/64" should be in RFC 5952 canonical format ("fd00:10:244:1::/64")`}},
		{"two of one family", []string{"10.244.1.0/24", "10.244.2.0/24"}, []string{`spec.podCIDRs: Invalid value: ["10.244.1.0/24","10.244.2.0/24"]: may specify no more than one CIDR for each IP family`}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs, warnings := validate(node(tc.cidrs...), nil)
			if strings.Join(errs, "\n") != strings.Join(tc.errs, "\n") {
				t.Errorf("errors:\n got  %q\n want %q", errs, tc.errs)
			}
			if strings.Join(warnings, "\n") != strings.Join(tc.warnings, "\n") {
				t.Errorf("warnings:\n got  %q\n want %q", warnings, tc.warnings)
			}
		})
	}
	t.Run("update keeps a stored bad CIDR", func(t *testing.T) {
		old := node("10.244.1.5/24")
		old.ResourceVersion = "1"
		upd := old.DeepCopy()
		upd.Labels = map[string]string{"x": "y"}
		if errs, _ := validate(upd, old); len(errs) > 0 {
			t.Errorf("errors %q, want none", errs)
		}
	})
}
