package audit

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
	"github.com/kubeproof/kubeproof/impl/internal/reqlatency"
)

// slowWriter is a client connection whose every write takes d.
type slowWriter struct {
	*httptest.ResponseRecorder
	d time.Duration
}

func (w slowWriter) Write(p []byte) (int, error) {
	time.Sleep(w.d)
	return w.ResponseRecorder.Write(p)
}

// serveTimed runs req through WithAudit to handler, on a clock at which the
// request takes took from received to ResponseComplete, the client's writes
// taking write each.
func serveTimed(req *http.Request, took, write time.Duration, handler http.HandlerFunc) []*Event {
	b := &memBackend{}
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	calls := 0
	now := func() time.Time {
		calls++
		if calls == 1 {
			return start
		}
		return start.Add(took)
	}
	h := WithAudit(handler, Config{Policy: policyAt(LevelMetadata), Backend: b, Now: now})
	ctx := request.WithInfo(req.Context(), request.Parse(req))
	h.ServeHTTP(slowWriter{httptest.NewRecorder(), write}, req.WithContext(request.WithUser(ctx, testUser)))
	return b.events
}

// TestLatencyAnnotations: as kube-apiserver's audit filter, the
// ResponseComplete event of a request that took more than 500 ms from
// its receipt carries apiserver.latency.k8s.io/etcd (the time of its
// etcd calls), /response-write (of its writes to the client) and /total
// (receipt to ResponseComplete), each in time.Duration notation and only
// for the layers that took time; none at 500 ms or less, none when no
// layer took time, none for a watch (not tracked), none in earlier stages.
func TestLatencyAnnotations(t *testing.T) {
	get := func() *http.Request { return httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/ns/pods/p", nil) }
	etcdThenWrite := func(w http.ResponseWriter, r *http.Request) {
		tr := reqlatency.From(r.Context())
		if tr == nil {
			t.Error("a get has no latency trackers")
		}
		tr.AddEtcd(200 * time.Millisecond)
		tr.AddEtcd(250 * time.Millisecond)
		w.Write([]byte("{}"))
	}
	events := serveTimed(get(), 600*time.Millisecond, 2*time.Millisecond, etcdThenWrite)
	last := events[len(events)-1]
	if last.Stage != StageResponseComplete || last.Annotations[reqlatency.EtcdKey] != "450ms" || last.Annotations[reqlatency.TotalKey] != "600ms" {
		t.Errorf("slow get: %s annotations %v, want etcd 450ms and total 600ms", last.Stage, last.Annotations)
	}
	if d, err := time.ParseDuration(last.Annotations[reqlatency.ResponseWriteKey]); err != nil || d < 2*time.Millisecond {
		t.Errorf("slow get: response-write %q (%v), want at least the 2ms write", last.Annotations[reqlatency.ResponseWriteKey], err)
	}
	if rr := events[0]; len(rr.Annotations) != 0 {
		t.Errorf("RequestReceived annotations %v, want none", rr.Annotations)
	}

	events = serveTimed(get(), 500*time.Millisecond, 0, etcdThenWrite)
	if ann := events[len(events)-1].Annotations; len(ann) != 0 {
		t.Errorf("500ms: annotations %v, want none (the threshold is exceeded only above 500ms)", ann)
	}
	events = serveTimed(get(), time.Second, 0, func(http.ResponseWriter, *http.Request) {})
	if ann := events[len(events)-1].Annotations; len(ann) != 0 {
		t.Errorf("nothing tracked: annotations %v, want none, total neither", ann)
	}
	watch := httptest.NewRequest(http.MethodGet, "/api/v1/pods?watch=true", nil)
	events = serveTimed(watch, time.Second, 0, func(w http.ResponseWriter, r *http.Request) {
		if reqlatency.From(r.Context()) != nil {
			t.Error("a watch has latency trackers")
		}
	})
	if ann := events[len(events)-1].Annotations; len(ann) != 0 {
		t.Errorf("watch: annotations %v, want none", ann)
	}
}

// TestLatencyAnnotationsWebhooksAndQueue: the admission webhook calls
// (apiserver.latency.k8s.io/mutating-webhook summed,
// /validating-webhook the longest) and the priority and fairness queue
// wait (/apf-queue-wait) of a slow request are annotated too, as
// kube-apiserver's; alone they are enough for the total.
func TestLatencyAnnotationsWebhooksAndQueue(t *testing.T) {
	req := httptest.NewRequest(http.MethodPost, "/api/v1/namespaces/ns/configmaps", nil)
	events := serveTimed(req, 2*time.Second, 0, func(w http.ResponseWriter, r *http.Request) {
		ex := request.ExcludedLatencyFrom(r.Context())
		ex.AddQueueWait(1500 * time.Microsecond)
		ex.AddMutatingWebhook(100 * time.Millisecond)
		ex.AddMutatingWebhook(150 * time.Millisecond)
		ex.AddValidatingWebhook(300 * time.Millisecond)
		ex.AddValidatingWebhook(200 * time.Millisecond)
	})
	want := map[string]string{
		"apiserver.latency.k8s.io/apf-queue-wait":     "1.5ms",
		"apiserver.latency.k8s.io/mutating-webhook":   "250ms",
		"apiserver.latency.k8s.io/validating-webhook": "300ms",
		reqlatency.TotalKey:                           "2s",
	}
	got := events[len(events)-1].Annotations
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q (annotations %v)", k, got[k], v, got)
		}
	}
}
