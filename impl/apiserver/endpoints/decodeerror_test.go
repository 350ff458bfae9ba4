package endpoints

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// HubTypeName names upstream's internal type of every group this server
// serves as the conversion error prints it: the internal package's name
// (core, rbac, flowcontrol, ..., the group's first label otherwise) and
// the kind; the kinds upstream keeps under another group's package are
// that package's.
func TestHubTypeName(t *testing.T) {
	cases := []struct {
		group, kind, want string
	}{
		{"", "ConfigMap", "core.ConfigMap"},
		{"", "Binding", "core.Binding"},
		{"apps", "Deployment", "apps.Deployment"},
		{"apps", "Scale", "autoscaling.Scale"},
		{"autoscaling", "Scale", "autoscaling.Scale"},
		{"policy", "Eviction", "policy.Eviction"},
		{"rbac.authorization.k8s.io", "ClusterRole", "rbac.ClusterRole"},
		{"scheduling.k8s.io", "PriorityClass", "scheduling.PriorityClass"},
		{"coordination.k8s.io", "Lease", "coordination.Lease"},
		{"flowcontrol.apiserver.k8s.io", "FlowSchema", "flowcontrol.FlowSchema"},
		{"admissionregistration.k8s.io", "ValidatingWebhookConfiguration", "admissionregistration.ValidatingWebhookConfiguration"},
		{"certificates.k8s.io", "CertificateSigningRequest", "certificates.CertificateSigningRequest"},
		{"discovery.k8s.io", "EndpointSlice", "discovery.EndpointSlice"},
		{"node.k8s.io", "RuntimeClass", "node.RuntimeClass"},
		{"authentication.k8s.io", "TokenReview", "authentication.TokenReview"},
		{"authorization.k8s.io", "SubjectAccessReview", "authorization.SubjectAccessReview"},
		{"events.k8s.io", "Event", "core.Event"},
		{"extensions", "Ingress", "networking.Ingress"},
		{"internal.apiserver.k8s.io", "StorageVersion", "apiserverinternal.StorageVersion"},
	}
	for _, c := range cases {
		if got := HubTypeName(schema.GroupKind{Group: c.group, Kind: c.kind}); got != c.want {
			t.Errorf("%s/%s: %q, want %q", c.group, c.kind, got, c.want)
		}
	}
	if !Converts(schema.GroupKind{Kind: "Event"}, schema.GroupKind{Group: "events.k8s.io", Kind: "Event"}) {
		t.Error("core Events do not convert to events.k8s.io's")
	}
	if Converts(schema.GroupKind{Kind: "ConfigMap"}, schema.GroupKind{Group: "apps", Kind: "ConfigMap"}) {
		t.Error("a ConfigMap converts to apps' ConfigMap, which upstream does not have")
	}
	err := ConversionError(&corev1.Secret{}, schema.GroupKind{Kind: "ConfigMap"})
	if want := "converting (v1.Secret) to (core.ConfigMap): unknown conversion"; err.Error() != want {
		t.Errorf("%q, want %q", err, want)
	}
}

// DecodeError names the kind the body claims when there is one, else
// quotes the body's start: text when it opens like an object, hex
// otherwise, cut at 30 bytes.
func TestDecodeErrorWording(t *testing.T) {
	cause := errors.New("boom")
	gvk := &schema.GroupVersionKind{Group: "apps", Version: "v1beta2", Kind: "Deployment"}
	cases := []struct {
		gvk  *schema.GroupVersionKind
		body string
		want string
	}{
		{gvk, `{}`, `Deployment in version "v1beta2" cannot be handled as a ConfigMap: boom`},
		{&schema.GroupVersionKind{Version: "v1"}, `{}`, `the object provided is unrecognized (must be of type ConfigMap): boom ({})`},
		{nil, ``, `the object provided is unrecognized (must be of type ConfigMap): boom (<empty>)`},
		{nil, `{"apiVersion":"v1","kind":"ConfigMap"}`, `the object provided is unrecognized (must be of type ConfigMap): boom ({"apiVersion":"v1","kind":"Con ...)`},
		{nil, `[1]`, `the object provided is unrecognized (must be of type ConfigMap): boom (5b315d)`},
		{nil, strings.Repeat("x", 31), `the object provided is unrecognized (must be of type ConfigMap): boom (` + strings.Repeat("78", 30) + ` ...)`},
	}
	for _, c := range cases {
		err := DecodeError("ConfigMap", cause, c.gvk, []byte(c.body))
		st, ok := err.(interface{ Status() metav1.Status })
		if !ok {
			t.Fatalf("%T is not a Status error", err)
		}
		if s := st.Status(); s.Code != 400 || s.Reason != metav1.StatusReasonBadRequest || s.Message != c.want {
			t.Errorf("%d %s %q, want 400 BadRequest %q", s.Code, s.Reason, s.Message, c.want)
		}
	}
}
