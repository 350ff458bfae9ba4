package eventrecorder

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	clienttesting "k8s.io/client-go/testing"
)

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Step(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func pod(name string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), ResourceVersion: "7"}}
}

// start runs a broadcaster on a fake clientset until the test ends and
// checks that its goroutines stop.
func start(t *testing.T, opts Options) (*Broadcaster, *fake.Clientset, *fakeClock) {
	t.Helper()
	clock := &fakeClock{now: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)}
	opts.Now = clock.Now
	cs := fake.NewClientset()
	b := New(cs.EventsV1(), opts)
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { b.Run(ctx); close(done) }()
	t.Cleanup(func() {
		cancel()
		<-done
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > before {
			t.Errorf("%d goroutines after Run returned, %d before", n, before)
		}
	})
	return b, cs, clock
}

func listEvents(t *testing.T, cs *fake.Clientset) []eventsv1.Event {
	t.Helper()
	l, err := cs.EventsV1().Events("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestEventIsWrittenAsClientGoWritesIt(t *testing.T) {
	b, cs, clock := start(t, Options{})
	r := b.NewRecorder(scheme.Scheme, "default-scheduler")
	r.Eventf(pod("p"), pod("preemptor"), v1.EventTypeNormal, "Preempted", "Preempting", "Preempted by pod %v", "x")
	waitFor(t, "the event", func() bool { return len(listEvents(t, cs)) == 1 })
	ev := listEvents(t, cs)[0]
	if ev.Name != "p."+hex(clock.Now()) || ev.Namespace != "ns" {
		t.Errorf("event name %s/%s, want ns/p.<hex nanoseconds>", ev.Namespace, ev.Name)
	}
	if ev.Reason != "Preempted" || ev.Action != "Preempting" || ev.Type != v1.EventTypeNormal || ev.Note != "Preempted by pod x" {
		t.Errorf("event %+v", ev)
	}
	if ev.ReportingController != "default-scheduler" || ev.ReportingInstance == "" || ev.Series != nil {
		t.Errorf("reporting %q/%q series %v", ev.ReportingController, ev.ReportingInstance, ev.Series)
	}
	if ev.Regarding.Kind != "Pod" || ev.Regarding.Name != "p" || ev.Regarding.UID != "uid-p" || ev.Related == nil || ev.Related.Name != "preemptor" {
		t.Errorf("regarding %+v related %+v", ev.Regarding, ev.Related)
	}
	if !ev.EventTime.Time.Equal(clock.Now()) {
		t.Errorf("eventTime %v, want %v", ev.EventTime, clock.Now())
	}
}

func hex(t time.Time) string {
	const digits = "0123456789abcdef"
	n := uint64(t.UnixNano())
	var buf []byte
	for n > 0 {
		buf = append([]byte{digits[n%16]}, buf...)
		n /= 16
	}
	return string(buf)
}

func TestRepeatedEventsBecomeASeries(t *testing.T) {
	b, cs, clock := start(t, Options{})
	r := b.NewRecorder(scheme.Scheme, "default-scheduler")
	p := pod("p")
	r.Eventf(p, nil, v1.EventTypeWarning, "FailedScheduling", "Scheduling", "0/3 nodes are available")
	waitFor(t, "the first event", func() bool { return len(listEvents(t, cs)) == 1 })
	clock.Step(time.Second)
	r.Eventf(p, nil, v1.EventTypeWarning, "FailedScheduling", "Scheduling", "0/3 nodes are available")
	waitFor(t, "series count 2", func() bool {
		evs := listEvents(t, cs)
		return len(evs) == 1 && evs[0].Series != nil && evs[0].Series.Count == 2
	})
	// Further repeats only count; the count is written when the series
	// ends.
	for range 3 {
		clock.Step(time.Second)
		r.Eventf(p, nil, v1.EventTypeWarning, "FailedScheduling", "Scheduling", "0/3 nodes are available")
	}
	writes := func() int {
		n := 0
		for _, a := range cs.Actions() {
			if a.GetVerb() == "create" || a.GetVerb() == "patch" {
				n++
			}
		}
		return n
	}
	if w := writes(); w != 2 {
		t.Errorf("%d writes for 5 isomorphic events before the series ended, want 2 (create, patch)", w)
	}
	clock.Step(6 * time.Minute)
	b.Sweep()
	waitFor(t, "final count 5", func() bool {
		evs := listEvents(t, cs)
		return len(evs) == 1 && evs[0].Series != nil && evs[0].Series.Count == 5
	})
	if b.Len() != 0 {
		t.Errorf("%d entries remembered after the series finished, want 0", b.Len())
	}
	// Another object's event is not part of the series.
	r.Eventf(pod("q"), nil, v1.EventTypeWarning, "FailedScheduling", "Scheduling", "0/3 nodes are available")
	waitFor(t, "q's event", func() bool { return len(listEvents(t, cs)) == 2 })
}

func TestSeriesOfADeletedEventIsCreatedAgain(t *testing.T) {
	b, cs, clock := start(t, Options{})
	r := b.NewRecorder(scheme.Scheme, "default-scheduler")
	p := pod("p")
	r.Eventf(p, nil, v1.EventTypeWarning, "FailedScheduling", "Scheduling", "no")
	waitFor(t, "the first event", func() bool { return len(listEvents(t, cs)) == 1 })
	name := listEvents(t, cs)[0].Name
	if err := cs.EventsV1().Events("ns").Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	clock.Step(time.Second)
	r.Eventf(p, nil, v1.EventTypeWarning, "FailedScheduling", "Scheduling", "no")
	waitFor(t, "the event created again with its series", func() bool {
		evs := listEvents(t, cs)
		return len(evs) == 1 && evs[0].Name == name && evs[0].Series != nil && evs[0].Series.Count == 2
	})
}

func TestMemoryOfRecentEventsIsBounded(t *testing.T) {
	b, cs, _ := start(t, Options{CacheSize: 10})
	r := b.NewRecorder(scheme.Scheme, "default-scheduler")
	for i := range 25 {
		r.Eventf(pod("p"+string(rune('a'+i))), nil, v1.EventTypeNormal, "Scheduled", "Binding", "assigned")
	}
	if b.Len() != 10 {
		t.Errorf("%d events remembered, want the cache size 10", b.Len())
	}
	waitFor(t, "all 25 events", func() bool { return len(listEvents(t, cs)) == 25 })
}

func TestFullQueueDropsEvents(t *testing.T) {
	clock := &fakeClock{now: time.Now()}
	cs := fake.NewClientset()
	// Not running: nothing drains the queue of 3.
	b := New(cs.EventsV1(), Options{QueueSize: 3, Now: clock.Now})
	r := b.NewRecorder(scheme.Scheme, "s")
	for i := range 5 {
		r.Eventf(pod("p"+string(rune('a'+i))), nil, v1.EventTypeNormal, "Scheduled", "Binding", "assigned")
	}
	if n := len(b.queue); n != 3 {
		t.Errorf("%d queued, want 3 (the rest dropped)", n)
	}
}

func TestUnsupportedEventTypeIsNotRecorded(t *testing.T) {
	b := New(fake.NewClientset().EventsV1(), Options{})
	b.NewRecorder(scheme.Scheme, "s").Eventf(pod("p"), nil, "Odd", "R", "A", "n")
	if b.Len() != 0 || len(b.queue) != 0 {
		t.Errorf("an event of type Odd was recorded")
	}
}

func TestConnectionErrorsAreRetriedRefusalsAreNot(t *testing.T) {
	b, cs, _ := start(t, Options{RetryInterval: time.Millisecond})
	var mu sync.Mutex
	attempts := map[string]int{}
	cs.PrependReactor("create", "events", func(a clienttesting.Action) (bool, kruntime.Object, error) {
		ev := a.(clienttesting.CreateAction).GetObject().(*eventsv1.Event)
		mu.Lock()
		defer mu.Unlock()
		attempts[ev.Regarding.Name]++
		switch {
		case ev.Regarding.Name == "flaky" && attempts["flaky"] < 3:
			return true, nil, errors.New("connection refused")
		case ev.Regarding.Name == "refused":
			return true, nil, metav1StatusError()
		}
		return false, nil, nil
	})
	r := b.NewRecorder(scheme.Scheme, "s")
	r.Eventf(pod("refused"), nil, v1.EventTypeNormal, "Scheduled", "Binding", "assigned")
	r.Eventf(pod("flaky"), nil, v1.EventTypeNormal, "Scheduled", "Binding", "assigned")
	waitFor(t, "flaky's event after retries", func() bool { return len(listEvents(t, cs)) == 1 })
	mu.Lock()
	defer mu.Unlock()
	if attempts["flaky"] != 3 || attempts["refused"] != 1 {
		t.Errorf("attempts %v, want flaky 3 (two connection errors), refused 1", attempts)
	}
}

func metav1StatusError() error {
	return apierrors.NewForbidden(eventsv1.Resource("events"), "x", errors.New("no"))
}
