package endpoints

import (
	"encoding/hex"
	"fmt"
	"reflect"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// This file words a request body that does not decode into the kind an
// endpoint takes as kube-apiserver does. Upstream decodes every body into
// the group's internal ("hub") type: the serializer decodes the external
// object the body names and the codec converts it, so a body of another
// kind fails in the conversion, and the create and update handlers wrap
// whatever the decoder said in a 400 naming the kind the body claims.
// This server decodes straight into external types; ConversionError says
// what upstream's conversion would have.

// DecodeError is the 400 BadRequest kube-apiserver's create and update
// handlers answer for a body that does not decode into an object of kind
// (the resource's kind) with the decoder's error err: it names the kind and
// version the body claims when the decoder read one (gvk), else it quotes
// the start of the body (SummarizeBody), as the body is not even an object
// with a kind.
func DecodeError(kind string, err error, gvk *schema.GroupVersionKind, body []byte) error {
	if gvk != nil && gvk.Kind != "" {
		return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", gvk.Kind, gvk.Version, kind, err))
	}
	return apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): %v (%s)", kind, err, SummarizeBody(body)))
}

// summaryLimit is how many bytes of a body kube-apiserver quotes.
const summaryLimit = 30

// SummarizeBody is how kube-apiserver quotes a body it cannot make sense
// of: <empty>, the first 30 bytes as text when it starts like a JSON
// object, else those bytes in hexadecimal; " ..." when there is more.
func SummarizeBody(body []byte) string {
	more := ""
	if len(body) > summaryLimit {
		body, more = body[:summaryLimit], " ..."
	}
	switch {
	case len(body) == 0:
		return "<empty>"
	case body[0] == '{':
		return string(body) + more
	default:
		return hex.EncodeToString(body) + more
	}
}

// ConversionError is the error of kube-apiserver's decoder when the body
// decoded to obj, an object of a kind other than want's that has no
// conversion to want's internal type (HubTypeName): the scheme's converter
// names the Go types of both ("v1.Secret", "core.ConfigMap").
func ConversionError(obj runtime.Object, want schema.GroupKind) error {
	from := "<nil>"
	if obj != nil {
		from = reflect.Indirect(reflect.ValueOf(obj)).Type().String()
	}
	return fmt.Errorf("converting (%s) to (%s): unknown conversion", from, HubTypeName(want))
}

// Converts reports whether kube-apiserver's decoder converts an object of
// kind from to the internal type of kind to: they share an internal type.
// A body of the resource's kind in another version of its group converts
// (and is then refused as of the wrong API version); one of another kind
// does not, except where upstream registers one internal type under two
// groups (core and events.k8s.io Events; the extensions group's kinds).
func Converts(from, to schema.GroupKind) bool {
	return HubTypeName(from) == HubTypeName(to)
}

// hubPackages are the names of the Go packages holding upstream's internal
// types, by API group, where not the group's first label.
var hubPackages = map[string]string{
	"":                             "core",
	"rbac.authorization.k8s.io":    "rbac",
	"flowcontrol.apiserver.k8s.io": "flowcontrol",
	"internal.apiserver.k8s.io":    "apiserverinternal",
	"apiregistration.k8s.io":       "apiregistration",
}

// sharedHubTypes are the internal types upstream registers under a group
// other than their own.
var sharedHubTypes = map[schema.GroupKind]string{
	{Group: "events.k8s.io", Kind: "Event"}:      "core.Event",
	{Group: "extensions", Kind: "Deployment"}:    "apps.Deployment",
	{Group: "extensions", Kind: "DaemonSet"}:     "apps.DaemonSet",
	{Group: "extensions", Kind: "ReplicaSet"}:    "apps.ReplicaSet",
	{Group: "extensions", Kind: "Ingress"}:       "networking.Ingress",
	{Group: "extensions", Kind: "NetworkPolicy"}: "networking.NetworkPolicy",
	{Group: "extensions", Kind: "Scale"}:         "autoscaling.Scale",
	{Group: "apps", Kind: "Scale"}:               "autoscaling.Scale",
}

// HubTypeName is the Go type name (package.Kind) of upstream's internal
// type for kind gk: the package is named after the group ("core" for the
// legacy group, "rbac" for rbac.authorization.k8s.io, "apps", "scheduling",
// "coordination", ...), as the conversion error prints it.
func HubTypeName(gk schema.GroupKind) string {
	if name, ok := sharedHubTypes[gk]; ok {
		return name
	}
	pkg, ok := hubPackages[gk.Group]
	if !ok {
		pkg, _, _ = strings.Cut(gk.Group, ".")
	}
	return pkg + "." + gk.Kind
}
