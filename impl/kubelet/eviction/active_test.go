package eviction

import "testing"

// TestActive: the pods the eviction manager ranks, as upstream's
// filterOutInactivePods: a pod being deleted or killed for its deadline
// is ranked until it is known terminated; a terminated pod never; a
// terminal pod only while its termination is under way.
func TestActive(t *testing.T) {
	for _, tc := range []struct {
		name string
		t    Termination
		want bool
	}{
		{"running", Termination{}, true},
		{"being deleted, its kill under way", Termination{TerminationRequested: true}, true},
		{"killed for its deadline, the kubelet's phase Failed", Termination{Terminal: true, TerminationRequested: true}, true},
		{"terminal in the API, its kill yet to finish", Termination{Terminal: true, TerminationRequested: true}, true},
		{"terminated", Termination{Terminated: true, Terminal: true, TerminationRequested: true}, false},
		{"terminated, deleted, phase not yet written", Termination{Terminated: true, TerminationRequested: true}, false},
		{"rejected: terminal, never terminating", Termination{Terminal: true}, false},
	} {
		if got := Active(tc.t); got != tc.want {
			t.Errorf("%s: Active(%+v) = %v, want %v", tc.name, tc.t, got, tc.want)
		}
	}
}
