package registry

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
)

// Length limits of event fields (events API).
const (
	eventActionLengthLimit            = 128
	eventReasonLengthLimit            = 128
	eventReportingInstanceLengthLimit = 128
	eventNoteLengthLimit              = 1024
)

func events(now func() time.Time) *resource.Resource {
	k := kind[*corev1.Event]{
		namespaced: true,
		// core/v1 events keep their historical leniency on names; only
		// names that cannot be a path segment are refused.
		nameFn:   path.ValidatePathSegmentName,
		validate: validateCoreEvent,
		fields:   eventFields,
		table:    &tableSpec[*corev1.Event]{columns: eventColumns, cells: eventCells},
	}
	return &resource.Resource{
		GroupVersion: corev1.SchemeGroupVersion,
		Name:         "events", SingularName: "event", Kind: "Event",
		Namespaced: true, ShortNames: []string{"ev"}, Verbs: allVerbs,
		New:      func() runtime.Object { return &corev1.Event{} },
		NewList:  func() runtime.Object { return &corev1.EventList{} },
		Strategy: newStrategy(k, now),

		AllowCreateOnUpdate: true, // as in Kubernetes
		KeptForEventTTL:     true, // events.k8s.io/v1 events share this storage
	}
}

// validateCoreEvent is the validation of events written through core/v1
// (legacyEventErrors, the reporting controller named reportingComponent).
func validateCoreEvent(e *corev1.Event) field.ErrorList {
	return legacyEventErrors(e, "reportingComponent")
}

// legacyEventErrors are the checks every event passes, whichever API
// wrote it (kube-apiserver's legacy event validation): old-style events
// (no eventTime) only need a namespace that agrees with their involved
// object; new-style ones need the reporting fields, the reporting
// controller's error named controllerField after the API written to.
func legacyEventErrors(e *corev1.Event, controllerField string) field.ErrorList {
	var errs field.ErrorList
	involvedNS := field.NewPath("involvedObject", "namespace")
	if e.EventTime.IsZero() {
		if e.InvolvedObject.Namespace == "" {
			if e.Namespace != metav1.NamespaceNone && e.Namespace != metav1.NamespaceDefault {
				errs = append(errs, field.Invalid(involvedNS, e.InvolvedObject.Namespace, "does not match event.namespace"))
			}
		} else if e.Namespace != e.InvolvedObject.Namespace {
			errs = append(errs, field.Invalid(involvedNS, e.InvolvedObject.Namespace, "does not match event.namespace"))
		}
	} else {
		if e.InvolvedObject.Namespace == "" && e.Namespace != metav1.NamespaceDefault && e.Namespace != metav1.NamespaceSystem {
			errs = append(errs, field.Invalid(involvedNS, e.InvolvedObject.Namespace, "does not match event.namespace"))
		}
		errs = append(errs, validateReportingFields(eventReporting{
			controller: e.ReportingController, instance: e.ReportingInstance,
			action: e.Action, reason: e.Reason, note: e.Message,
		}, controllerField, "message")...)
	}
	return errs
}

// eventReporting are the fields new-style events must carry.
type eventReporting struct {
	controller, instance, action, reason, note string
}

func validateReportingFields(r eventReporting, controllerField, noteField string) field.ErrorList {
	var errs field.ErrorList
	if r.controller == "" {
		errs = append(errs, field.Required(field.NewPath(controllerField), ""))
	} else {
		for _, msg := range validation.IsQualifiedName(r.controller) {
			errs = append(errs, field.Invalid(field.NewPath(controllerField), r.controller, msg))
		}
	}
	errs = append(errs, requiredMaxLen(r.instance, eventReportingInstanceLengthLimit, field.NewPath("reportingInstance"))...)
	errs = append(errs, requiredMaxLen(r.action, eventActionLengthLimit, field.NewPath("action"))...)
	errs = append(errs, requiredMaxLen(r.reason, eventReasonLengthLimit, field.NewPath("reason"))...)
	if len(r.note) > eventNoteLengthLimit {
		errs = append(errs, field.Invalid(field.NewPath(noteField), "", fmt.Sprintf("can have at most %d characters", eventNoteLengthLimit)))
	}
	return errs
}

func requiredMaxLen(v string, limit int, p *field.Path) field.ErrorList {
	if v == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	if len(v) > limit {
		return field.ErrorList{field.Invalid(p, "", fmt.Sprintf("can have at most %d characters", limit))}
	}
	return nil
}

// eventFields are the selectable fields of core/v1 events; "source" falls
// back to the reporting controller of new-style events.
func eventFields(e *corev1.Event) fields.Set {
	source := e.Source.Component
	if source == "" {
		source = e.ReportingController
	}
	return fields.Set{
		"involvedObject.kind":            e.InvolvedObject.Kind,
		"involvedObject.namespace":       e.InvolvedObject.Namespace,
		"involvedObject.name":            e.InvolvedObject.Name,
		"involvedObject.uid":             string(e.InvolvedObject.UID),
		"involvedObject.apiVersion":      e.InvolvedObject.APIVersion,
		"involvedObject.resourceVersion": e.InvolvedObject.ResourceVersion,
		"involvedObject.fieldPath":       e.InvolvedObject.FieldPath,
		"reason":                         e.Reason,
		"reportingComponent":             e.ReportingController,
		"source":                         source,
		"type":                           e.Type,
	}
}

var eventDoc = corev1.Event{}.SwaggerDoc()

var eventColumns = []metav1.TableColumnDefinition{
	column("Last Seen", "string", eventDoc["lastTimestamp"]),
	column("Type", "string", eventDoc["type"]),
	column("Reason", "string", eventDoc["reason"]),
	column("Object", "string", eventDoc["involvedObject"]),
	wideColumn("Subobject", "string", corev1.ObjectReference{}.SwaggerDoc()["fieldPath"]),
	wideColumn("Source", "string", eventDoc["source"]),
	column("Message", "string", eventDoc["message"]),
	wideColumn("First Seen", "string", eventDoc["firstTimestamp"]),
	wideColumn("Count", "string", eventDoc["count"]),
	{Name: "Name", Type: "string", Format: "name", Priority: 1, Description: objectMetaDoc["name"]},
}

// eventCells renders an event the way kubectl get events shows it: times
// fall back from the legacy timestamps to eventTime and the series.
func eventCells(e *corev1.Event, now time.Time) []any {
	first := age(e.FirstTimestamp, now)
	if e.FirstTimestamp.IsZero() {
		first = microAge(e.EventTime, now)
	}
	last := age(e.LastTimestamp, now)
	if e.LastTimestamp.IsZero() {
		last = first
	}
	count := e.Count
	if e.Series != nil {
		last = microAge(e.Series.LastObservedTime, now)
		count = e.Series.Count
	} else if count == 0 {
		count = 1
	}
	target := strings.ToLower(e.InvolvedObject.Kind)
	if e.InvolvedObject.Name != "" {
		target += "/" + e.InvolvedObject.Name
	}
	return []any{last, e.Type, e.Reason, target, e.InvolvedObject.FieldPath,
		eventSource(e.Source, e.ReportingController, e.ReportingInstance),
		strings.TrimSpace(e.Message), first, int64(count), e.Name}
}

// eventSource is "component, host", falling back to the reporting
// controller and instance of new-style events.
func eventSource(s corev1.EventSource, controller, instance string) string {
	component, host := s.Component, s.Host
	if component == "" {
		component = controller
	}
	if host == "" {
		host = instance
	}
	if host == "" {
		return component
	}
	return component + ", " + host
}

func microAge(t metav1.MicroTime, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return age(metav1.NewTime(t.Time), now)
}
