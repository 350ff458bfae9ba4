package eventsink

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"
)

// fakeSink answers each call with the next scripted error (nil: success,
// the event with a new resourceVersion) and records the calls.
type fakeSink struct {
	errs  []error
	calls []string
	rv    int
}

func (s *fakeSink) answer(call string, ev *v1.Event) (*v1.Event, error) {
	s.calls = append(s.calls, call)
	if len(s.errs) > 0 {
		err := s.errs[0]
		s.errs = s.errs[1:]
		if err != nil {
			return nil, err
		}
	}
	s.rv++
	out := ev.DeepCopy()
	out.ResourceVersion = strconv.Itoa(s.rv)
	return out, nil
}

func (s *fakeSink) Create(ev *v1.Event) (*v1.Event, error) { return s.answer("create", ev) }
func (s *fakeSink) Update(ev *v1.Event) (*v1.Event, error) { return s.answer("update", ev) }
func (s *fakeSink) Patch(ev *v1.Event, _ []byte) (*v1.Event, error) {
	return s.answer("patch", ev)
}

func started(clk *testingclock.FakePassiveClock) *v1.Event {
	t := metav1.NewTime(clk.Now())
	return &v1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "web-0.1", Namespace: "default"},
		InvolvedObject: v1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web-0", UID: "u0"},
		Reason:         "Started", Message: "Started container app", Type: v1.EventTypeNormal,
		Source: v1.EventSource{Component: "kubelet", Host: "node-1"}, FirstTimestamp: t, LastTimestamp: t, Count: 1,
	}
}

func TestWriterRoads(t *testing.T) {
	notFound := apierrors.NewNotFound(schema.GroupResource{Resource: "events"}, "web-0.1")
	invalid := apierrors.NewBadRequest("bad event")
	transport := errors.New("connection refused")
	for _, tc := range []struct {
		name   string
		events int // the same event sent this many times
		errs   []error
		want   []string
	}{
		{"created", 1, nil, []string{"create"}},
		{"a repeat patches the count", 2, nil, []string{"create", "patch"}},
		{"a repeat of an event gone is created again", 2, []error{nil, notFound}, []string{"create", "patch", "create"}},
		{"unreachable: retried until written", 1, []error{transport, transport}, []string{"create", "create", "create"}},
		{"rejected: not retried", 1, []error{invalid}, []string{"create"}},
		{"unreachable: at most 12 tries", 1, []error{transport, transport, transport, transport, transport, transport,
			transport, transport, transport, transport, transport, transport, transport}, []string{"create", "create",
			"create", "create", "create", "create", "create", "create", "create", "create", "create", "create"}},
		// The count is kept before the write, as client-go's logger does.
		{"a repeat of a rejected event patches", 2, []error{invalid}, []string{"create", "patch"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := testingclock.NewFakePassiveClock(time.Date(2026, 11, 23, 2, 0, 0, 0, time.UTC))
			sink := &fakeSink{errs: tc.errs}
			w := &Writer{Sink: sink, Correlator: NewCorrelator(0, clk), RetryInterval: time.Nanosecond}
			for range tc.events {
				w.Write(context.Background(), started(clk))
			}
			if len(sink.calls) != len(tc.want) {
				t.Fatalf("calls %v, want %v", sink.calls, tc.want)
			}
			for i := range tc.want {
				if sink.calls[i] != tc.want[i] {
					t.Fatalf("calls %v, want %v", sink.calls, tc.want)
				}
			}
		})
	}
}

// TestWriterStopsWithContext: a writer retrying an unreachable server
// returns once its context ends.
func TestWriterStopsWithContext(t *testing.T) {
	clk := testingclock.NewFakePassiveClock(time.Now())
	sink := &fakeSink{errs: []error{errors.New("connection refused")}}
	w := &Writer{Sink: sink, Correlator: NewCorrelator(0, clk), RetryInterval: time.Hour}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w.Write(ctx, started(clk))
	if len(sink.calls) != 1 {
		t.Fatalf("calls %v, want one create", sink.calls)
	}
}

// TestStartWritesBroadcastEvents: events recorded through a broadcaster
// reach the sink through Start, and end with the broadcaster.
func TestStartWritesBroadcastEvents(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := record.NewBroadcaster(record.WithContext(ctx))
	written := make(chan *v1.Event, 10)
	sink := &chanSink{written}
	w := &Writer{Sink: sink, Correlator: NewCorrelator(0, nil)}
	w.Start(ctx, b)
	r := b.NewRecorder(scheme.Scheme, v1.EventSource{Component: "kubelet", Host: "node-1"})
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "default", UID: "u0"}}
	r.Event(pod, v1.EventTypeNormal, "Started", "Started container app")
	r.Event(pod, v1.EventTypeNormal, "Started", "Started container app")
	first, second := <-written, <-written
	if first.Count != 1 || second.Count != 2 || second.Name != first.Name {
		t.Fatalf("written %s count %d, then %s count %d: want one event counted twice", first.Name, first.Count, second.Name, second.Count)
	}
	b.Shutdown()
}

type chanSink struct{ out chan *v1.Event }

func (s *chanSink) Create(ev *v1.Event) (*v1.Event, error) { s.out <- ev.DeepCopy(); return ev, nil }
func (s *chanSink) Update(ev *v1.Event) (*v1.Event, error) { s.out <- ev.DeepCopy(); return ev, nil }
func (s *chanSink) Patch(ev *v1.Event, _ []byte) (*v1.Event, error) {
	s.out <- ev.DeepCopy()
	return ev, nil
}
