package eviction

// Termination is what the kubelet knows of a pod's termination, for
// Active: the pod workers' state of it and its phase.
type Termination struct {
	// Terminated: the kill that ends the pod succeeded; nothing of it
	// runs again (upstream's pod workers' IsPodKnownTerminated).
	Terminated bool
	// Terminal: the pod's phase is Failed or Succeeded, in the API or in
	// the status the kubelet reports for it (a rejected pod's Failed;
	// upstream's isAdmittedPodTerminal).
	Terminal bool
	// TerminationRequested: the pod workers are ending the pod, its kill
	// under way or yet to start: deleted, its phase terminal, evicted or
	// given a terminal phase by the kubelet (a deadline); upstream's
	// IsPodTerminationRequested.
	TerminationRequested bool
}

// Active reports whether the eviction manager ranks the pod, as
// upstream's GetActivePods (filterOutInactivePods) hands it the pods: a
// pod whose termination has been requested (being deleted, or killed for
// its deadline) stays active until it is known terminated, and may be
// evicted then, the eviction's shorter grace period cutting its kill
// short; a terminated pod is not, nor a terminal one whose termination is
// not under way (a rejected pod). Pure.
func Active(t Termination) bool {
	if t.Terminated {
		return false
	}
	return !t.Terminal || t.TerminationRequested
}
