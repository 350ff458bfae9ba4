package registry

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
)

func eventsV1(now func() time.Time) *resource.Resource {
	k := kind[*eventsv1.Event]{
		namespaced:     true,
		validate:       validateEventV1,
		validateCreate: validateEventV1Create,
		validateUpdate: validateEventV1Update,
		fields: func(e *eventsv1.Event) fields.Set {
			f := eventFields(CoreEventFromV1(e))
			f["regarding.kind"] = e.Regarding.Kind
			f["regarding.namespace"] = e.Regarding.Namespace
			f["regarding.name"] = e.Regarding.Name
			f["regarding.uid"] = string(e.Regarding.UID)
			f["regarding.apiVersion"] = e.Regarding.APIVersion
			f["regarding.resourceVersion"] = e.Regarding.ResourceVersion
			f["regarding.fieldPath"] = e.Regarding.FieldPath
			f["reportingController"] = e.ReportingController
			return f
		},
		table: &tableSpec[*eventsv1.Event]{
			columns: eventColumns,
			cells: func(e *eventsv1.Event, now time.Time) []any {
				return eventCells(CoreEventFromV1(e), now)
			},
		},
	}
	return &resource.Resource{
		GroupVersion: eventsv1.SchemeGroupVersion,
		Name:         "events", SingularName: "event", Kind: "Event",
		Namespaced: true, ShortNames: []string{"ev"}, Verbs: allVerbs,
		New:      func() runtime.Object { return &eventsv1.Event{} },
		NewList:  func() runtime.Object { return &eventsv1.EventList{} },
		Strategy: newStrategy(k, now),

		AllowCreateOnUpdate: true, // as in Kubernetes
		// One store for both event APIs, as upstream: what the scheduler
		// records through events.k8s.io is what `kubectl describe` reads
		// through core/v1, and the other way round.
		SharedStorage: &resource.SharedStorage{
			Of: corev1.SchemeGroupVersion.WithResource("events"),
			ToStorage: func(obj runtime.Object) (runtime.Object, error) {
				e, ok := obj.(*eventsv1.Event)
				if !ok {
					return nil, fmt.Errorf("expected *eventsv1.Event, got %T", obj)
				}
				return CoreEventFromV1(e), nil
			},
			FromStorage: func(obj runtime.Object) (runtime.Object, error) {
				e, ok := obj.(*corev1.Event)
				if !ok {
					return nil, fmt.Errorf("expected *corev1.Event, got %T", obj)
				}
				return V1EventFromCore(e), nil
			},
			FieldLabel: eventV1FieldToCore,
		},
	}
}

// eventV1FieldToCore maps an events.k8s.io/v1 field selector label to the
// stored core/v1 Event's: regarding.* is involvedObject.*, and
// reportingController is reportingComponent.
func eventV1FieldToCore(label string) string {
	if rest, ok := strings.CutPrefix(label, "regarding."); ok {
		return "involvedObject." + rest
	}
	if label == "reportingController" {
		return "reportingComponent"
	}
	return label
}

// kube-apiserver validates an event written through events.k8s.io/v1 as
// the internal (core) Event it is stored as, so every error names core/v1's
// field (message, involvedObject, count, source, firstTimestamp,
// lastTimestamp), except reportingController, which its validation names
// after the API written to.

// validateEventV1 is what every events.k8s.io/v1 write must pass, create
// and update: the core/v1 rules for events with an eventTime (the
// reporting fields, a message of at most 1 KiB), or for events without
// one the namespace agreeing with the involved object's.
func validateEventV1(e *eventsv1.Event) field.ErrorList {
	return legacyEventErrors(CoreEventFromV1(e), "reportingController")
}

// validateEventV1Create adds the strict rules of a create through
// events.k8s.io/v1: a well-formed series, an eventTime, a known type, and
// the fields that API deprecates left unset.
func validateEventV1Create(e *eventsv1.Event) field.ErrorList {
	errs := validateEventV1Series(e)
	if e.EventTime.IsZero() {
		errs = append(errs, field.Required(field.NewPath("eventTime"), ""))
	}
	if e.Type != corev1.EventTypeNormal && e.Type != corev1.EventTypeWarning {
		errs = append(errs, field.Invalid(field.NewPath("type"), "", "has invalid value: "+e.Type))
	}
	if !e.DeprecatedFirstTimestamp.IsZero() {
		errs = append(errs, field.Invalid(field.NewPath("firstTimestamp"), "", "needs to be unset"))
	}
	if !e.DeprecatedLastTimestamp.IsZero() {
		errs = append(errs, field.Invalid(field.NewPath("lastTimestamp"), "", "needs to be unset"))
	}
	if e.DeprecatedCount != 0 {
		errs = append(errs, field.Invalid(field.NewPath("count"), "", "needs to be unset"))
	}
	if e.DeprecatedSource.Component != "" || e.DeprecatedSource.Host != "" {
		errs = append(errs, field.Invalid(field.NewPath("source"), "", "needs to be unset"))
	}
	return errs
}

// validateEventV1Series checks a series: at least two occurrences, the
// last one's time set.
func validateEventV1Series(e *eventsv1.Event) field.ErrorList {
	var errs field.ErrorList
	if s := e.Series; s != nil {
		if s.Count < 2 {
			errs = append(errs, field.Invalid(field.NewPath("series.count"), "", "should be at least 2"))
		}
		if s.LastObservedTime.IsZero() {
			errs = append(errs, field.Required(field.NewPath("series.lastObservedTime"), ""))
		}
	}
	return errs
}

// validateEventV1Update: through events.k8s.io/v1 only the series (checked
// when it changes) and the metadata of an event may change; the create's
// strict rules are not applied again, so an event recorded through core/v1
// with a count or source can be updated. As kube-apiserver, reason is
// checked twice (a changed reason is two errors), eventTime only to the
// microsecond (clients may send it truncated or not), and an object
// reference or source printed as its internal type (hubObjectReference).
func validateEventV1Update(e, old *eventsv1.Event) field.ErrorList {
	var errs field.ErrorList
	if !apiequality.Semantic.DeepEqual(e.Series, old.Series) {
		errs = append(errs, validateEventV1Series(e)...)
	}
	immutable := func(a, b any, name string) {
		errs = append(errs, apivalidation.ValidateImmutableField(a, b, field.NewPath(name))...)
	}
	immutable(hubReference(e.Regarding), hubReference(old.Regarding), "involvedObject")
	immutable(e.Reason, old.Reason, "reason")
	immutable(e.Note, old.Note, "message")
	immutable(hubSource(e.DeprecatedSource), hubSource(old.DeprecatedSource), "source")
	immutable(e.DeprecatedFirstTimestamp, old.DeprecatedFirstTimestamp, "firstTimestamp")
	immutable(e.DeprecatedLastTimestamp, old.DeprecatedLastTimestamp, "lastTimestamp")
	immutable(e.DeprecatedCount, old.DeprecatedCount, "count")
	immutable(e.Reason, old.Reason, "reason")
	immutable(e.Type, old.Type, "type")
	if !e.EventTime.Truncate(time.Microsecond).Equal(old.EventTime.Truncate(time.Microsecond)) {
		immutable(e.EventTime, old.EventTime, "eventTime")
	}
	immutable(e.Action, old.Action, "action")
	immutable(hubReferencePtr(e.Related), hubReferencePtr(old.Related), "related")
	immutable(e.ReportingController, old.ReportingController, "reportingController")
	immutable(e.ReportingInstance, old.ReportingInstance, "reportingInstance")
	return errs
}

// hubObjectReference and hubEventSource have the fields of
// kube-apiserver's internal (core) ObjectReference and EventSource, the
// values its event validation compares. Those types carry no JSON tags, so
// an immutable field's error, which prints the new value JSON-encoded,
// names every Go field ({"Kind":"Pod","Namespace":"",...}); the errors of
// validateEventV1Update print these for the same text.
type hubObjectReference struct {
	Kind            string
	Namespace       string
	Name            string
	UID             types.UID
	APIVersion      string
	ResourceVersion string
	FieldPath       string
}

type hubEventSource struct {
	Component string
	Host      string
}

func hubReference(r corev1.ObjectReference) hubObjectReference {
	return hubObjectReference{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, UID: r.UID,
		APIVersion: r.APIVersion, ResourceVersion: r.ResourceVersion, FieldPath: r.FieldPath}
}

// hubReferencePtr is nil (printed null) for no reference.
func hubReferencePtr(r *corev1.ObjectReference) *hubObjectReference {
	if r == nil {
		return nil
	}
	h := hubReference(*r)
	return &h
}

func hubSource(s corev1.EventSource) hubEventSource {
	return hubEventSource{Component: s.Component, Host: s.Host}
}

// CoreEventFromV1 converts an events.k8s.io/v1 Event to the core/v1 Event
// with the same content (upstream stores events once and serves both
// groups by this conversion).
func CoreEventFromV1(e *eventsv1.Event) *corev1.Event {
	out := &corev1.Event{
		TypeMeta:            metav1.TypeMeta{APIVersion: "v1", Kind: "Event"},
		ObjectMeta:          *e.ObjectMeta.DeepCopy(),
		InvolvedObject:      e.Regarding,
		Reason:              e.Reason,
		Message:             e.Note,
		Source:              e.DeprecatedSource,
		FirstTimestamp:      e.DeprecatedFirstTimestamp,
		LastTimestamp:       e.DeprecatedLastTimestamp,
		Count:               e.DeprecatedCount,
		Type:                e.Type,
		EventTime:           e.EventTime,
		Action:              e.Action,
		ReportingController: e.ReportingController,
		ReportingInstance:   e.ReportingInstance,
	}
	if e.Related != nil {
		r := *e.Related
		out.Related = &r
	}
	if e.Series != nil {
		out.Series = &corev1.EventSeries{Count: e.Series.Count, LastObservedTime: e.Series.LastObservedTime}
	}
	return out
}

// V1EventFromCore converts a core/v1 Event to events.k8s.io/v1.
func V1EventFromCore(e *corev1.Event) *eventsv1.Event {
	out := &eventsv1.Event{
		TypeMeta:                 metav1.TypeMeta{APIVersion: eventsv1.SchemeGroupVersion.String(), Kind: "Event"},
		ObjectMeta:               *e.ObjectMeta.DeepCopy(),
		EventTime:                e.EventTime,
		ReportingController:      e.ReportingController,
		ReportingInstance:        e.ReportingInstance,
		Action:                   e.Action,
		Reason:                   e.Reason,
		Regarding:                e.InvolvedObject,
		Note:                     e.Message,
		Type:                     e.Type,
		DeprecatedSource:         e.Source,
		DeprecatedFirstTimestamp: e.FirstTimestamp,
		DeprecatedLastTimestamp:  e.LastTimestamp,
		DeprecatedCount:          e.Count,
	}
	if e.Related != nil {
		r := *e.Related
		out.Related = &r
	}
	if e.Series != nil {
		out.Series = &eventsv1.EventSeries{Count: e.Series.Count, LastObservedTime: e.Series.LastObservedTime}
	}
	return out
}
