package registry

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// Endpoints addresses are legacy IP fields checked as upstream 1.37
// (KEP-4858, StrictIPCIDRValidation on): leading zeros and IPv4-mapped
// IPv6 refused, a non-canonical IPv6 address accepted with a warning
// (none when the endpoints controller wrote the object); an update keeps
// bad addresses only when subsets are unchanged.
func TestEndpointsIPsAsUpstream(t *testing.T) {
	r := find(t, coreV1, "endpoints")
	eps := func(ready, notReady string) *corev1.Endpoints {
		e := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
			Subsets: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: "10.0.0.1"}, {IP: ready}},
				NotReadyAddresses: []corev1.EndpointAddress{{IP: notReady}}, Ports: []corev1.EndpointPort{{Port: 80}}}}}
		r.Strategy.Default(e)
		return e
	}
	validate := func(e, old *corev1.Endpoints) (errs, warnings []string) {
		ctx, w := request.WithWarnings(context.Background())
		var list []string
		if old == nil {
			for _, err := range r.Strategy.Validate(ctx, e) {
				list = append(list, err.Error())
			}
		} else {
			for _, err := range r.Strategy.ValidateUpdate(ctx, e, old) {
				list = append(list, err.Error())
			}
		}
		return list, w.List()
	}
	cases := []struct {
		name, ready, notReady string
		errs, warnings        []string
	}{
		{"canonical", "10.0.0.2", "fd00::3", nil, nil},
		{"leading zeros", "10.0.0.02", "10.0.0.3", []string{`subsets[0].addresses[1].ip: Invalid value: "10.0.0.02": must not have leading 0s`}, nil},
		{"IPv4-mapped IPv6", "10.0.0.2", "::ffff:10.0.0.3", []string{`subsets[0].notReadyAddresses[0].ip: Invalid value: "::ffff:10.0.0.3": must not be an IPv4-mapped IPv6 address`}, nil},
		{"non-canonical IPv6", "FD00::2", "fd00:0:0:0::3", nil, []string{
			`subsets[0].addresses[1].ip: IPv6 address "FD00::2" should be in RFC 5952 canonical format ("fd00::2")`,
			`subsets[0].notReadyAddresses[0].ip: IPv6 address "fd00:0:0:0::3" should be in RFC 5952 canonical format ("fd00::3")`}},
		{"special address still refused", "127.0.0.1", "10.0.0.3", []string{`subsets[0].addresses[1].ip: Invalid value: "127.0.0.1": may not be in the loopback range (127.0.0.0/8, ::1/128)`}, nil},
		{"unspecified address named as given", "10.0.0.2", "::", []string{`subsets[0].notReadyAddresses[0].ip: Invalid value: "::": may not be unspecified (::)`}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs, warnings := validate(eps(tc.ready, tc.notReady), nil)
			if strings.Join(errs, "\n") != strings.Join(tc.errs, "\n") {
				t.Errorf("errors:\n got  %q\n want %q", errs, tc.errs)
			}
			if strings.Join(warnings, "\n") != strings.Join(tc.warnings, "\n") {
				t.Errorf("warnings:\n got  %q\n want %q", warnings, tc.warnings)
			}
		})
	}
	t.Run("no warnings for the endpoints controller's", func(t *testing.T) {
		e := eps("FD00::2", "10.0.0.3")
		e.Labels = map[string]string{"endpoints.kubernetes.io/managed-by": "endpoint-controller"}
		if errs, warnings := validate(e, nil); len(errs)+len(warnings) > 0 {
			t.Errorf("errors %q, warnings %q, want none", errs, warnings)
		}
	})
	t.Run("update", func(t *testing.T) {
		old := eps("10.0.0.02", "10.0.0.3")
		upd := old.DeepCopy()
		upd.Labels = map[string]string{"x": "y"}
		if errs, _ := validate(upd, old); len(errs) > 0 {
			t.Errorf("unchanged subsets: %q, want no errors", errs)
		}
		upd.Subsets[0].NotReadyAddresses[0].IP = "10.0.0.4"
		want := []string{`subsets[0].addresses[1].ip: Invalid value: "10.0.0.02": must not have leading 0s`}
		if errs, _ := validate(upd, old); strings.Join(errs, "\n") != strings.Join(want, "\n") {
			t.Errorf("changed subsets:\n got  %q\n want %q", errs, want)
		}
	})
}
