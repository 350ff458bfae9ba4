package admission

import (
	"fmt"
	"reflect"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// matchPolicy Equivalent (the admissionregistration/v1 default): a webhook
// whose rules do not name the request's resource, but name an equivalent
// one (the same objects served in another group or version, as core/v1
// and events.k8s.io/v1 events), is called too, as kube-apiserver's
// generic webhook matcher calls it: with the object converted to that
// resource's kind, the AdmissionReview's resource and kind the matched
// ones and requestResource and requestKind the request's. A mutating
// webhook's patch is applied to the converted object, which is defaulted
// as its kind and converted back to the request's.

// EquivalentResource is a resource serving the same objects as another,
// with the kind it serves them as.
type EquivalentResource struct {
	Resource schema.GroupVersionResource
	Kind     schema.GroupVersionKind
}

// EquivalentResourceMapper knows which served resources are equivalent
// and converts objects between them (kube-apiserver's equivalent resource
// mapper and object convertor; *apiserver.Server is one). Without one
// (the StoreGetter given to NewPlugins is not), matchPolicy Equivalent
// matches as Exact.
type EquivalentResourceMapper interface {
	// EquivalentResources lists the other resources serving gvr's
	// objects (none for a subresource).
	EquivalentResources(gvr schema.GroupVersionResource, subresource string) []EquivalentResource
	// ConvertObject converts an object of resource from to the kind of
	// the equivalent resource to; the result is a new object.
	ConvertObject(obj runtime.Object, from, to schema.GroupVersionResource) (runtime.Object, error)
}

// matchedHook is a webhook a request goes to.
type matchedHook struct {
	webhook
	// as, when not nil, is the equivalent resource the webhook is called
	// for (its rules name it, not the request's resource).
	as *EquivalentResource
	// shouldCallErr, when not nil, fails the request at this webhook's
	// turn instead of calling it (its namespace could not be read).
	shouldCallErr error
}

// matchResource decides whether the webhook is called for the request:
// for its own resource (as nil), or under matchPolicy Equivalent for the
// first equivalent resource its rules name. equivalents lists them,
// computed once per request.
func matchResource(w *webhook, a *Attributes, equivalents func() []EquivalentResource) (ok bool, as *EquivalentResource) {
	if rulesMatch(w.rules, a) {
		return true, nil
	}
	if w.matchPolicy == admissionregistrationv1.Exact {
		return false, nil
	}
	for _, eq := range equivalents() {
		ea := *a
		ea.Resource, ea.Kind = eq.Resource, eq.Kind
		if rulesMatch(w.rules, &ea) {
			return true, &eq
		}
	}
	return false, nil
}

// versioned is the request as a webhook called for the equivalent
// resource as sees it: its object and old object converted.
func (d *webhookDispatcher) versioned(a *Attributes, as *EquivalentResource) (*Attributes, error) {
	if as == nil {
		return a, nil
	}
	va := *a
	va.Resource, va.Kind = as.Resource, as.Kind
	var err error
	for _, p := range []struct{ in, out *runtime.Object }{{&a.Object, &va.Object}, {&a.OldObject, &va.OldObject}} {
		if *p.in == nil || reflect.ValueOf(*p.in).IsNil() {
			continue
		}
		if *p.out, err = d.equivalents.ConvertObject(*p.in, a.Resource, as.Resource); err != nil {
			return nil, apierrors.NewInternalError(fmt.Errorf("converting the object for webhooks: %w", err))
		}
	}
	return &va, nil
}

// convertBack sets a.Object to va.Object, the object a webhook called for
// an equivalent resource changed, converted to the request's kind.
func (d *webhookDispatcher) convertBack(a, va *Attributes) error {
	back, err := d.equivalents.ConvertObject(va.Object, va.Resource, a.Resource)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("converting the webhook's object back to %s: %w", a.Resource, err))
	}
	if reflect.TypeOf(back) != reflect.TypeOf(a.Object) {
		return apierrors.NewInternalError(fmt.Errorf("converting the webhook's object back to %s: got %T, want %T", a.Resource, back, a.Object))
	}
	back.GetObjectKind().SetGroupVersionKind(a.Object.GetObjectKind().GroupVersionKind())
	reflect.ValueOf(a.Object).Elem().Set(reflect.ValueOf(back).Elem())
	return nil
}
