package scheduler

import v1 "k8s.io/api/core/v1"

// Stages of a pod's scheduling that Config.PodTrace is told of, in the
// order a schedulable pod passes them (where kube-scheduler observes its
// scheduling_attempt_duration and pod_scheduling_sli_duration metrics).
const (
	// TraceQueued: the pod informer delivered an unscheduled pod of one
	// of the scheduler's profiles and it was added to the queue.
	TraceQueued = "scheduler/queued"
	// TraceAttempt: a scheduling attempt popped the pod from the queue.
	TraceAttempt = "scheduler/attempt"
	// TraceBindingSent: the binding cycle is about to post the Binding;
	// the pod is the assumed one (spec.nodeName set).
	TraceBindingSent = "scheduler/binding-sent"
	// TraceBound: the API server accepted the Binding.
	TraceBound = "scheduler/bound"
)

// PodTraceFunc is told when a pod reaches a stage (Trace* constants). It
// is called synchronously on the scheduler's goroutines, so it must be
// cheap and must not modify the pod, which is shared and read-only.
type PodTraceFunc func(stage string, pod *v1.Pod)

func (s *Scheduler) trace(stage string, pod *v1.Pod) {
	if s.cfg.PodTrace != nil {
		s.cfg.PodTrace(stage, pod)
	}
}
