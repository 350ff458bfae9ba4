package eventsink

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"
)

// The caches hold their entries by value in one slice each, one entry per
// distinct event (the logger's), per reason of an object (the
// aggregator's) and per object (the spam filter's): each byte of an entry
// is kept three times per pod, with the slice's spare room.
func TestCacheEntriesAreSmall(t *testing.T) {
	for _, tc := range []struct {
		name      string
		size, max uintptr
	}{
		{"logger's entry", unsafe.Sizeof(slot[cacheKey, observation]{}), 88},
		{"aggregator's entry", unsafe.Sizeof(slot[cacheKey, aggregate]{}), 80},
		{"spam filter's entry", unsafe.Sizeof(slot[cacheKey, tokenBucket]{}), 56},
	} {
		if tc.size > tc.max {
			t.Errorf("%s: %d bytes, want at most %d", tc.name, tc.size, tc.max)
		}
	}
}

// liveHeapBytes is the heap's live bytes after two collections.
func liveHeapBytes() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// A kubelet's three events per pod (Pulled, Created, Started), each
// answered by the server, at 30 pods per node as in the startup
// benchmark: what the correlators keep per pod. Entries of 120, 96 and 56
// bytes kept 1,391 bytes per pod here (go1.26); of 88, 80 and 56 1,118;
// with an open-addressing table of slot numbers instead of a Go map from
// key to slot, 930; with the slots grown by a quarter instead of doubled
// (90 of the logger's entries in 96 slots, not 128), 700.
func TestCorrelatorRetainedBytesPerPod(t *testing.T) {
	const pods, perNode = 3000, 30
	clk := testingclock.NewFakePassiveClock(time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC))
	type pod struct{ name, node string }
	ps := make([]pod, pods) // the kubelets' own strings, not the correlators'
	for p := range ps {
		ps[p] = pod{fmt.Sprintf("startup-%05d-abcde", p), fmt.Sprintf("node-%04d", p/perNode)}
	}
	cs := make([]*Correlator, pods/perNode)
	for i := range cs {
		cs[i] = NewCorrelator(0, clk)
	}
	before := liveHeapBytes()
	for p, pd := range ps {
		c := cs[p/perNode]
		ref := v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "default", Name: pd.name,
			UID: types.UID(fmt.Sprintf("0f3c2a1e-1234-4c6b-9a1d-%012d", p)), FieldPath: "spec.containers{app}"}
		for i, r := range [][2]string{
			{"Pulled", "Container image \"registry.k8s.io/pause:3.10\" already present on machine"},
			{"Created", "Created container: app"},
			{"Started", "Started container app"},
		} {
			now := metav1.NewTime(clk.Now())
			ev := &v1.Event{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", pd.name, now.UnixNano()+int64(i)), Namespace: "default"},
				InvolvedObject: ref, Reason: r[0], Message: r[1], Type: v1.EventTypeNormal,
				Source: v1.EventSource{Component: "kubelet", Host: pd.node}, FirstTimestamp: now, LastTimestamp: now, Count: 1}
			res, err := c.Correlate(ev)
			if err != nil || res.Skip {
				t.Fatalf("pod %d event %s: %+v, %v", p, r[0], res, err)
			}
			ans := res.Event.DeepCopy()
			ans.Name, ans.InvolvedObject.Name = strings.Clone(ans.Name), strings.Clone(ans.InvolvedObject.Name)
			ans.ResourceVersion = fmt.Sprint(1000000 + 3*p + i)
			c.UpdateState(ans)
		}
	}
	after := liveHeapBytes()
	runtime.KeepAlive(cs)
	runtime.KeepAlive(ps)
	perPod := float64(after-before) / pods
	t.Logf("heap bytes the correlators keep per pod (3 events): %.0f", perPod)
	if perPod > 800 {
		t.Errorf("the correlators keep %.0f bytes per pod, want at most 800", perPod)
	}
}
