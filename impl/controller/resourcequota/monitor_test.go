package resourcequota

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// TestMonitorSawKeepsTheNewestRevision: the revision a cache holds at
// least is the newest resourceVersion its events carried (tombstones and
// resourceVersions that are not numbers change nothing), and recording
// it allocates nothing (it runs for every pod event).
func TestMonitorSawKeepsTheNewestRevision(t *testing.T) {
	var m monitor
	at := func(rv string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", ResourceVersion: rv}}
	}
	for _, step := range []struct {
		obj  any
		want uint64
	}{
		{at("7"), 7},
		{at("12"), 12},
		{at("9"), 12},
		{at(""), 12},
		{at("x"), 12},
		{cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: at("3")}, 12},
		{at("13"), 13},
	} {
		m.saw(step.obj)
		if got := m.seen.Load(); got != step.want {
			t.Fatalf("after %v: seen %d, want %d", step.obj, got, step.want)
		}
	}
	p := at("100")
	if n := testing.AllocsPerRun(100, func() { m.saw(p) }); n != 0 {
		t.Errorf("saw allocates %v times per event, want 0", n)
	}
}
