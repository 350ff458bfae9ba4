package registry

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
)

func eventsV1(now func() time.Time) *resource.Resource {
	k := kind[*eventsv1.Event]{
		namespaced:     true,
		validate:       validateEventV1,
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

// validateEventV1 is the strict validation of events written through
// events.k8s.io/v1: new-style fields required, deprecated ones unset.
func validateEventV1(e *eventsv1.Event) field.ErrorList {
	var errs field.ErrorList
	if e.Regarding.Namespace == "" && e.Namespace != metav1.NamespaceDefault && e.Namespace != metav1.NamespaceSystem {
		errs = append(errs, field.Invalid(field.NewPath("regarding", "namespace"), e.Regarding.Namespace, "does not match event.namespace"))
	}
	errs = append(errs, validateReportingFields(eventReporting{
		controller: e.ReportingController, instance: e.ReportingInstance,
		action: e.Action, reason: e.Reason, note: e.Note,
	}, "reportingController", "note")...)
	if s := e.Series; s != nil {
		if s.Count < 2 {
			errs = append(errs, field.Invalid(field.NewPath("series", "count"), "", "should be at least 2"))
		}
		if s.LastObservedTime.IsZero() {
			errs = append(errs, field.Required(field.NewPath("series", "lastObservedTime"), ""))
		}
	}
	if e.EventTime.IsZero() {
		errs = append(errs, field.Required(field.NewPath("eventTime"), ""))
	}
	if e.Type != corev1.EventTypeNormal && e.Type != corev1.EventTypeWarning {
		errs = append(errs, field.Invalid(field.NewPath("type"), "", "has invalid value: "+e.Type))
	}
	if !e.DeprecatedFirstTimestamp.IsZero() {
		errs = append(errs, field.Invalid(field.NewPath("deprecatedFirstTimestamp"), "", "needs to be unset"))
	}
	if !e.DeprecatedLastTimestamp.IsZero() {
		errs = append(errs, field.Invalid(field.NewPath("deprecatedLastTimestamp"), "", "needs to be unset"))
	}
	if e.DeprecatedCount != 0 {
		errs = append(errs, field.Invalid(field.NewPath("deprecatedCount"), "", "needs to be unset"))
	}
	if e.DeprecatedSource.Component != "" || e.DeprecatedSource.Host != "" {
		errs = append(errs, field.Invalid(field.NewPath("deprecatedSource"), "", "needs to be unset"))
	}
	return errs
}

// validateEventV1Update: only the series (and metadata) of an event may
// change through events.k8s.io/v1.
func validateEventV1Update(e, old *eventsv1.Event) field.ErrorList {
	immutable := func(a, b any, name string) field.ErrorList {
		return apivalidation.ValidateImmutableField(a, b, field.NewPath(name))
	}
	var errs field.ErrorList
	errs = append(errs, immutable(e.Regarding, old.Regarding, "regarding")...)
	errs = append(errs, immutable(e.Reason, old.Reason, "reason")...)
	errs = append(errs, immutable(e.Note, old.Note, "note")...)
	errs = append(errs, immutable(e.DeprecatedSource, old.DeprecatedSource, "deprecatedSource")...)
	errs = append(errs, immutable(e.DeprecatedFirstTimestamp, old.DeprecatedFirstTimestamp, "deprecatedFirstTimestamp")...)
	errs = append(errs, immutable(e.DeprecatedLastTimestamp, old.DeprecatedLastTimestamp, "deprecatedLastTimestamp")...)
	errs = append(errs, immutable(e.DeprecatedCount, old.DeprecatedCount, "deprecatedCount")...)
	errs = append(errs, immutable(e.Type, old.Type, "type")...)
	errs = append(errs, immutable(e.EventTime, old.EventTime, "eventTime")...)
	errs = append(errs, immutable(e.Action, old.Action, "action")...)
	errs = append(errs, immutable(e.Related, old.Related, "related")...)
	errs = append(errs, immutable(e.ReportingController, old.ReportingController, "reportingController")...)
	errs = append(errs, immutable(e.ReportingInstance, old.ReportingInstance, "reportingInstance")...)
	return errs
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
