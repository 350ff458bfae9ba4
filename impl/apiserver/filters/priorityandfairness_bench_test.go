package filters

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/kubeproof/kubeproof/impl/apiserver/codec"
	"github.com/kubeproof/kubeproof/impl/apiserver/flowcontrol"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// BenchmarkLimitFilter is the CPU a request spends in the concurrency
// limit: API Priority and Fairness (a kubelet's pod status write, the
// system-nodes flow schema, 14 schemas to match) against the legacy
// max-in-flight semaphore, with an empty handler and parallel clients;
// "estimated" adds the work estimate (the write's interested watches
// looked up: 5 open pod watches, under the 10 that add final seats).
func BenchmarkLimitFilter(b *testing.B) {
	c, err := codec.New()
	if err != nil {
		b.Fatal(err)
	}
	fc, err := flowcontrol.New(flowcontrol.Config{TotalSeats: 600})
	if err != nil {
		b.Fatal(err)
	}
	next := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	est := &flowcontrol.Estimator{Counts: flowcontrol.NewObjectCounts(nil), Watches: flowcontrol.NewWatchTracker()}
	for range 5 {
		est.Watches.Register(&request.Info{IsResourceRequest: true, Verb: "watch", Resource: "pods"})
	}
	for _, f := range []struct {
		name string
		h    http.Handler
	}{
		{"max-in-flight", WithMaxInFlight(next, c, 400, 200)},
		{"priority-and-fairness", WithPriorityAndFairness(next, c, fc, nil)},
		{"priority-and-fairness-estimated", WithPriorityAndFairness(next, c, fc, est)},
	} {
		b.Run(f.name, func(b *testing.B) {
			u := &request.User{Name: "system:node:n1", Groups: []string{"system:nodes", "system:authenticated"}}
			b.RunParallel(func(pb *testing.PB) {
				r := httptest.NewRequest("PATCH", "/api/v1/namespaces/default/pods/p/status", nil)
				r = r.WithContext(request.SetUser(request.WithInfo(r.Context(), request.Parse(r)), u))
				w := httptest.NewRecorder()
				for pb.Next() {
					f.h.ServeHTTP(w, r)
				}
			})
		})
	}
}
