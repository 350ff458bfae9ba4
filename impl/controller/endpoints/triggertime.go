package endpoints

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// LastChangeTriggerTimeAnnotation is the Endpoints annotation holding the
// time (RFC 3339 with nanoseconds, UTC) of the oldest pod or service change
// the write carries: the network programming latency SLI measures from it.
const LastChangeTriggerTimeAnnotation = corev1.EndpointsLastChangeTriggerTime

// TriggerTimes computes the last-change-trigger-time of each service's
// Endpoints as upstream's endpoint controller does. A pod's trigger time
// is the last transition of its Ready condition, a service's its creation
// time (there is no update time to read). Each sync of a service compares
// the times it sees with those its previous sync saw: the annotation is the
// earliest time that is newer than last seen (the oldest change not yet
// written), the service's creation time on the first sync of a service,
// and none when nothing newer is seen (a sync caused by something else).
// As upstream's, it is approximate when one object changes twice between
// two syncs.
//
// Calls for one service must not overlap (the work queue never hands one
// key to two workers); calls for different services may.
type TriggerTimes struct {
	mu     sync.Mutex
	states map[types.NamespacedName]triggerState
}

// triggerState is what the previous sync of a service saw.
type triggerState struct {
	service time.Time
	pods    map[string]time.Time
}

// NewTriggerTimes returns an empty tracker.
func NewTriggerTimes() *TriggerTimes {
	return &TriggerTimes{states: map[types.NamespacedName]triggerState{}}
}

// Observe records what a sync of svc sees (pods: those its selector
// matches) and returns the trigger time to annotate; zero means the
// annotation is removed.
func (t *TriggerTimes) Observe(svc *corev1.Service, pods []*corev1.Pod) time.Time {
	key := types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
	t.mu.Lock()
	prev, known := t.states[key]
	t.mu.Unlock()
	next, at := nextTriggerTime(prev, known, svc, pods)
	t.mu.Lock()
	t.states[key] = next
	t.mu.Unlock()
	return at
}

// Forget drops the state of a deleted service: a service created again
// under its name starts afresh.
func (t *TriggerTimes) Forget(namespace, name string) {
	t.mu.Lock()
	delete(t.states, types.NamespacedName{Namespace: namespace, Name: name})
	t.mu.Unlock()
}

// nextTriggerTime is Observe's decision: from what the previous sync saw
// (known false: there was none) and what this one sees, the new state and
// the trigger time.
func nextTriggerTime(prev triggerState, known bool, svc *corev1.Service, pods []*corev1.Pod) (triggerState, time.Time) {
	next := triggerState{service: svc.CreationTimestamp.Time, pods: make(map[string]time.Time, len(pods))}
	var earliest time.Time
	changed := func(at time.Time) {
		if earliest.IsZero() || at.Before(earliest) {
			earliest = at
		}
	}
	for _, p := range pods {
		at := podTriggerTime(p)
		if at.IsZero() {
			continue
		}
		next.pods[p.Name] = at
		if at.After(prev.pods[p.Name]) {
			changed(at)
		}
	}
	if next.service.After(prev.service) {
		changed(next.service)
	}
	if !known {
		return next, svc.CreationTimestamp.Time
	}
	return next, earliest
}

// podTriggerTime is the last transition of the pod's Ready condition, or
// zero without one.
func podTriggerTime(p *corev1.Pod) time.Time {
	for i := range p.Status.Conditions {
		if c := &p.Status.Conditions[i]; c.Type == corev1.PodReady {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// WithTriggerTime sets the plan's Endpoints' last-change-trigger-time
// annotation to at, or removes it when at is zero, as a create or update
// writes it; other plans are returned as they are. The annotation does not
// count in Decide's comparison: a sync that changes nothing else writes
// nothing.
func (p Plan) WithTriggerTime(at time.Time) Plan {
	if p.Action != Create && p.Action != Update {
		return p
	}
	if at.IsZero() {
		delete(p.Endpoints.Annotations, LastChangeTriggerTimeAnnotation)
		return p
	}
	if p.Endpoints.Annotations == nil {
		p.Endpoints.Annotations = map[string]string{}
	}
	p.Endpoints.Annotations[LastChangeTriggerTimeAnnotation] = at.UTC().Format(time.RFC3339Nano)
	return p
}
