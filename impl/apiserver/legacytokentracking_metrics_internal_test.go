package apiserver

import (
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
)

// queueNames records the names of the work queues that report to
// client-go's process-wide metrics provider.
type queueNames struct {
	mu    sync.Mutex
	names []string
}

func (q *queueNames) add(name string) {
	q.mu.Lock()
	q.names = append(q.names, name)
	q.mu.Unlock()
}

// testQueueNames is the provider the test installs, once per process.
var (
	testQueueNames = &queueNames{}
	queueNamesOnce sync.Once
)

type noMetric struct{}

func (noMetric) Inc()            {}
func (noMetric) Dec()            {}
func (noMetric) Set(float64)     {}
func (noMetric) Observe(float64) {}

func (q *queueNames) NewDepthMetric(name string) workqueue.GaugeMetric {
	q.add(name)
	return noMetric{}
}
func (q *queueNames) NewAddsMetric(string) workqueue.CounterMetric      { return noMetric{} }
func (q *queueNames) NewLatencyMetric(string) workqueue.HistogramMetric { return noMetric{} }
func (q *queueNames) NewWorkDurationMetric(string) workqueue.HistogramMetric {
	return noMetric{}
}
func (q *queueNames) NewUnfinishedWorkSecondsMetric(string) workqueue.SettableGaugeMetric {
	return noMetric{}
}
func (q *queueNames) NewLongestRunningProcessorSecondsMetric(string) workqueue.SettableGaugeMetric {
	return noMetric{}
}
func (q *queueNames) NewRetriesMetric(string) workqueue.CounterMetric { return noMetric{} }

// TestLegacyTokenTrackingQueueReportsNoMetrics: the controller's queue
// does not report to client-go's process-wide work queue metrics, which
// in a `kubeproof up` process are the controller manager's (its /metrics
// would show an API server queue).
func TestLegacyTokenTrackingQueueReportsNoMetrics(t *testing.T) {
	// client-go takes the first provider set in the process: one for
	// every run of the test (-count).
	q := testQueueNames
	queueNamesOnce.Do(func() { workqueue.SetProvider(q) })
	// The provider is installed (once per process): a named queue reports.
	workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{Name: "probe"}).ShutDown()
	q.mu.Lock()
	installed := slices.Contains(q.names, "probe")
	q.names = nil
	q.mu.Unlock()
	if !installed {
		t.Fatal("the test's metrics provider is not client-go's: another was set first")
	}
	c := newLegacyTokenTracking(fake.NewClientset(), clocktesting.NewFakeClock(time.Now()), newLegacyTrackingLimiter(), slog.New(slog.DiscardHandler))
	c.queue.ShutDown()
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.names) != 0 {
		t.Fatalf("queues reporting to the process-wide provider: %v", q.names)
	}
}
