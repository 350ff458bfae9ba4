package linearizability

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// initialEventsEndAnnotation marks the bookmark that ends the initial
// events of a watch with sendInitialEvents=true.
const initialEventsEndAnnotation = "k8s.io/initial-events-end"

// watcher records watch streams until ctx ends. Watcher 0 watches every
// object from the start revision, resuming each stream where the last one
// ended, so the history has one complete record of every change; watcher 1
// starts with a watch-list (sendInitialEvents) of group a; the others pick
// a selector and a start revision at random. Streams are short (1–3 s) so
// resumption is exercised.
func (r *Recorder) watcher(ctx context.Context, id int, startRV int64) {
	rnd := rand.New(rand.NewPCG(r.cfg.Seed, uint64(1000+id)))
	group := ""
	switch {
	case id == 1:
		group = "a"
	case id > 1:
		group = []string{"", "a", "b"}[rnd.IntN(3)]
	}
	resume, from := -1, strconv.FormatInt(startRV, 10)
	initial := id == 1
	for ctx.Err() == nil {
		if id > 1 && resume < 0 {
			initial = rnd.IntN(2) == 0
			// Random starts stay at or above the last compaction the
			// scenario made; Probe covers compacted revisions explicitly.
			low := max(startRV, r.compactedRV())
			if top := r.MaxRV(); !initial && top > low {
				from = strconv.FormatInt(low+rnd.Int64N(top-low+1), 10)
			}
		}
		w := r.watchOnce(ctx, id, resume, from, group, initial, int64(1+rnd.IntN(3)))
		if ctx.Err() != nil && len(w.Events) == 0 && w.Outcome != OK {
			// Cancelled before it started: nothing was observed.
			return
		}
		r.mu.Lock()
		w.ID = len(r.watches)
		r.watches = append(r.watches, w)
		r.mu.Unlock()
		last := lastRV(&w)
		switch {
		case w.Outcome == OK && last > 0:
			resume, from, initial = w.ID, strconv.FormatInt(last, 10), false
		case w.Outcome == OK && !initial:
			resume = w.ID // nothing happened: resume from the same revision
		default:
			// Expired or failed: start over from a recent revision, after a
			// pause so a server that is down is not hammered.
			resume, initial = -1, id == 1
			from = strconv.FormatInt(r.MaxRV(), 10)
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
		if id > 1 && rnd.IntN(2) == 0 {
			resume = -1 // a fresh stream from a random revision
		}
	}
}

func lastRV(w *Watch) int64 {
	var last int64
	for _, ev := range w.Events {
		if ev.Object.RV > last {
			last = ev.Object.RV
		}
	}
	return last
}

// watchOnce records one stream.
func (r *Recorder) watchOnce(ctx context.Context, id, resume int, from, group string, initial bool, timeoutSeconds int64) Watch {
	sel := RunLabel + "=" + r.run
	if group != "" {
		sel += "," + GroupLabel + "=" + group
	}
	opts := metav1.ListOptions{LabelSelector: sel, ResourceVersion: from, AllowWatchBookmarks: true, TimeoutSeconds: &timeoutSeconds}
	if initial {
		t := true
		opts.SendInitialEvents = &t
		opts.ResourceVersion = ""
		opts.ResourceVersionMatch = metav1.ResourceVersionMatchNotOlderThan
	}
	w := Watch{Resume: resume, ResourceVersion: opts.ResourceVersion, Selector: sel, Group: group, SendInitialEvents: initial, AllowBookmarks: true, Events: []WatchEvent{}}
	w.Call = r.Now()
	defer func() { w.End = r.Now() }()
	wi, err := r.clients[id%len(r.clients)].CoreV1().ConfigMaps(r.cfg.Namespace).Watch(ctx, opts)
	if err != nil {
		w.Outcome, w.Error = classify(err), err.Error()
		if w.Outcome != Expired {
			w.Outcome = Failed
		}
		w.End = r.Now()
		return w
	}
	defer wi.Stop()
	w.Outcome = OK
	for {
		select {
		case <-ctx.Done():
			w.End = r.Now()
			return w
		case ev, ok := <-wi.ResultChan():
			if !ok {
				w.End = r.Now()
				return w
			}
			if ev.Type == watch.Error {
				// An error ends the stream; the events before it stand.
				err := apierrors.FromObject(ev.Object)
				w.Error = err.Error()
				if len(w.Events) == 0 {
					w.Outcome = Failed
					if classify(err) == Expired {
						w.Outcome = Expired
					}
				}
				w.End = r.Now()
				return w
			}
			cm, ok := ev.Object.(*corev1.ConfigMap)
			if !ok {
				w.Outcome, w.Error = Failed, fmt.Sprintf("unexpected %T in watch event", ev.Object)
				w.End = r.Now()
				return w
			}
			obj := toObject(cm)
			we := WatchEvent{Time: r.Now(), Type: EventType(ev.Type), Object: obj}
			if ev.Type == watch.Bookmark {
				we.Object = Object{RV: obj.RV}
				we.InitialEventsEnd = cm.Annotations[initialEventsEndAnnotation] == "true"
			}
			w.Events = append(w.Events, we)
		}
	}
}

// Probe records, outside the random mix, a short watch from revision rv
// and an Exact list at rv (for scenarios that compact: both must be
// answered 410 Expired exactly when rv was compacted).
func (r *Recorder) Probe(ctx context.Context, rv int64) {
	from := strconv.FormatInt(rv, 10)
	w := r.watchOnce(ctx, 0, -1, from, "", false, 1)
	r.mu.Lock()
	w.ID = len(r.watches)
	r.watches = append(r.watches, w)
	r.mu.Unlock()
	c := &client{r: r, id: r.cfg.Clients + 1, cs: r.clients[0], rnd: rand.New(rand.NewPCG(r.cfg.Seed, 1<<21)), rvs: map[string]int64{}}
	c.list(ctx, from, "Exact", 0)
}

func (r *Recorder) compactedRV() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var rv int64
	for _, c := range r.compactions {
		rv = max(rv, c.Revision)
	}
	return rv
}
