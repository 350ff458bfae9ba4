package eventsink

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/tools/record/util"
)

// client-go record's write retries (event.go): up to maxTries attempts,
// retryInterval apart (the first wait a random part of it).
const (
	maxTries      = 12
	retryInterval = 10 * time.Second
)

// Writer writes the events of one broadcaster to a sink through its
// correlator, as record.EventBroadcaster.StartRecordingToSink does.
type Writer struct {
	Sink       record.EventSink
	Correlator *Correlator
	// RetryInterval is the wait between failed writes; 0 means 10 s.
	RetryInterval time.Duration
	// Logger; nil means slog.Default().
	Logger *slog.Logger
}

// Start writes every event b broadcasts until ctx ends or b shuts down
// (StartRecordingToSink's replacement).
func (w *Writer) Start(ctx context.Context, b record.EventBroadcaster) watch.Interface {
	return b.StartEventWatcher(func(ev *v1.Event) { w.Write(ctx, ev) })
}

// Write correlates ev and writes what comes out: created, or patched when
// it counts an event written before (created if that one is gone), retried
// while the server cannot be reached, given up when it rejects the event.
func (w *Writer) Write(ctx context.Context, ev *v1.Event) {
	// Other watchers of the broadcaster get the same pointer.
	cp := *ev
	ev = &cp
	log := w.Logger
	if log == nil {
		log = slog.Default()
	}
	res, err := w.Correlator.Correlate(ev)
	if err != nil {
		log.Debug("event correlation failed", "err", err)
	}
	if res.Skip {
		return
	}
	interval := w.RetryInterval
	if interval <= 0 {
		interval = retryInterval
	}
	for tries := 1; ; tries++ {
		if w.writeOnce(log, res.Event, res.Patch, res.Event.Count > 1) {
			return
		}
		if tries >= maxTries {
			log.Debug("unable to write event: retry limit exceeded", "reason", res.Event.Reason, "object", res.Event.InvolvedObject.Name)
			return
		}
		delay := interval
		if tries == 1 {
			// Clients that lost the server together do not all retry
			// at once.
			delay = time.Duration(float64(delay) * rand.Float64())
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// writeOnce makes one attempt and reports whether the event is done with
// (written, or rejected for good).
func (w *Writer) writeOnce(log *slog.Logger, ev *v1.Event, patch []byte, update bool) bool {
	var written *v1.Event
	var err error
	if update {
		written, err = w.Sink.Patch(ev, patch)
	}
	// The event counted may be gone (expired): create it anew.
	if !update || util.IsKeyNotFoundError(err) {
		ev.ResourceVersion = ""
		written, err = w.Sink.Create(ev)
	}
	if err == nil {
		w.Correlator.UpdateState(written)
		return true
	}
	switch err.(type) {
	case *restclient.RequestConstructionError:
		log.Debug("unable to construct event, not retrying", "err", err)
		return true
	case *apierrors.StatusError:
		log.Debug("server rejected event, not retrying", "err", err)
		return true
	}
	log.Debug("unable to write event, may retry", "err", err)
	return false
}
