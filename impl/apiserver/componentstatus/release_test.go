package componentstatus

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubeproof/kubeproof/impl/storage"
)

// TestListEndsItsProbesWithTheRequest: a list whose request ends (the
// client gone, its context cancelled) while components hang returns at
// once rather than after the 20 s probe timeout, and leaves no probe
// running: no goroutine, no connection to the component (the component
// sees each probe's request end). So lists of hanging components do not
// pile up probes: each list's probes, one per component, end with it.
func TestListEndsItsProbesWithTheRequest(t *testing.T) {
	var open atomic.Int64
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		open.Add(1)
		defer open.Add(-1)
		<-r.Context().Done()
	}))
	defer hang.Close()
	before := runtime.NumGoroutine()
	s := NewStore([]Component{
		{Name: "controller-manager", Prober: NewHTTP(hang.URL+"/healthz", nil, "kube-probe/1.37")},
		{Name: "scheduler", Prober: NewHTTP(hang.URL+"/healthz", nil, "kube-probe/1.37")},
	})
	for range 5 {
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			for open.Load() < 2 {
				time.Sleep(time.Millisecond)
			}
			cancel()
		}()
		start := time.Now()
		var list corev1.ComponentStatusList
		if err := s.GetList(ctx, "/registry/componentstatuses", storage.ListOptions{Predicate: storage.Everything()}, &list); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("list took %v after its request ended", d)
		}
		if len(list.Items) != 2 || list.Items[0].Conditions[0].Status != corev1.ConditionFalse {
			t.Fatalf("list of cancelled probes: %+v", list.Items)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for open.Load() != 0 || runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("after the lists: %d probe requests still open at the component, %d goroutines (%d before)", open.Load(), runtime.NumGoroutine(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
