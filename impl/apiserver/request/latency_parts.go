package request

import "time"

// MutatingWebhooks is the summed time of the request's mutating
// admission webhook calls (zero on a nil receiver).
func (e *ExcludedLatency) MutatingWebhooks() time.Duration {
	if e == nil {
		return 0
	}
	return time.Duration(e.mutating.Load())
}

// ValidatingWebhooks is the longest of the request's validating admission
// webhook calls (zero on a nil receiver).
func (e *ExcludedLatency) ValidatingWebhooks() time.Duration {
	if e == nil {
		return 0
	}
	return time.Duration(e.validating.Load())
}

// QueueWait is the request's longest wait for priority and fairness seats
// (zero on a nil receiver).
func (e *ExcludedLatency) QueueWait() time.Duration {
	if e == nil {
		return 0
	}
	return time.Duration(e.queueWait.Load())
}
