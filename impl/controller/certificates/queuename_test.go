package certificates

import (
	"slices"
	"sync"
	"testing"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/util/workqueue"
)

// queueNames is a work queue metrics provider that records the queue
// names metrics are made for.
type queueNames struct {
	mu    sync.Mutex
	names []string
}

func (q *queueNames) record(name string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !slices.Contains(q.names, name) {
		q.names = append(q.names, name)
	}
}

type noopMetric struct{}

func (noopMetric) Inc()            {}
func (noopMetric) Dec()            {}
func (noopMetric) Set(float64)     {}
func (noopMetric) Observe(float64) {}

func (q *queueNames) NewDepthMetric(n string) workqueue.GaugeMetric { q.record(n); return noopMetric{} }
func (q *queueNames) NewAddsMetric(n string) workqueue.CounterMetric {
	q.record(n)
	return noopMetric{}
}
func (q *queueNames) NewLatencyMetric(n string) workqueue.HistogramMetric {
	q.record(n)
	return noopMetric{}
}
func (q *queueNames) NewWorkDurationMetric(n string) workqueue.HistogramMetric {
	q.record(n)
	return noopMetric{}
}
func (q *queueNames) NewUnfinishedWorkSecondsMetric(n string) workqueue.SettableGaugeMetric {
	q.record(n)
	return noopMetric{}
}
func (q *queueNames) NewLongestRunningProcessorSecondsMetric(n string) workqueue.SettableGaugeMetric {
	q.record(n)
	return noopMetric{}
}
func (q *queueNames) NewRetriesMetric(n string) workqueue.CounterMetric {
	q.record(n)
	return noopMetric{}
}

// TestQueueNamedCertificate: the csrapproving and csrsigning controllers'
// work queues are both named "certificate", as upstream's certificate
// controller (which both are built on) names its queue, so their
// workqueue_* metrics carry name="certificate". client-go takes one
// metrics provider per process: no other test of this package sets one.
func TestQueueNamedCertificate(t *testing.T) {
	rec := &queueNames{}
	workqueue.SetProvider(rec)
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	csrs := factory.Certificates().V1().CertificateSigningRequests()
	a, err := NewApprover(client, csrs)
	if err != nil {
		t.Fatal(err)
	}
	defer a.l.queue.ShutDown()
	s, err := NewSigner(client, csrs, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.l.queue.ShutDown()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if !slices.Equal(rec.names, []string{"certificate"}) {
		t.Errorf("queue metrics names %q, want [certificate]", rec.names)
	}
}
