package etcd3

import (
	"reflect"
	"strings"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime"
)

// sharedDecodes lets a write (Create, GuaranteedUpdate) and the watch
// event of the write share one decode of the written bytes.
//
// A write decodes what it wrote to answer with it (as kube-apiserver's
// store does), and the watch that feeds the watch cache decodes the same
// bytes again when etcd sends the write's PUT event: two decodes of one
// value, each about as costly as the create's own handling. Instead, while
// a watch that sees the key runs, the writer registers its key; whichever
// of the two decodes first hands the other a deep copy of its result, and
// the other takes it instead of decoding. A deep copy shares the strings of
// the decode (they are immutable) and costs a fraction of a decode. Both
// sides still get an object of their own, equal (reflect.DeepEqual) to a
// decode of the stored bytes at the write's revision, so what the write
// answers and what watchers see are what they were.
//
// The hand-over is exact or nothing: the watch takes an object only for
// the revision it was decoded at, and the writer only one decoded at the
// revision its Txn committed. When the two race (both decoding at once) or
// a watch is behind, each side decodes for itself as before.
type sharedDecodes struct {
	newType reflect.Type // the store's object type (NewFunc's)

	mu sync.Mutex
	// watches are the running watch streams; a writer registers only
	// when one of them sees its key.
	watches map[*watchStream]struct{}
	// pending are the writes being handed over, by etcd key.
	pending map[string]*sharedDecode
	// watchedRev is the highest revision a watch has translated: an
	// object published at or below it that is still here was missed
	// (the watch started after it, or ended) and goes at the next sweep.
	watchedRev int64

	spared atomic.Int64 // decodes spared, for tests
}

// sharedDecode is one write being handed over.
type sharedDecode struct {
	creating bool // its writer has not finished
	decoding bool // its writer is decoding the write itself
	// watchRev is the revision of the last PUT event of the key a watch
	// decoded itself while the writer ran: if it is the write's
	// revision, the writer publishes nothing.
	watchRev int64
	rev      int64          // the revision obj was decoded at
	obj      runtime.Object // owned by whoever takes it
}

// maxSharedDecodes bounds the writes being handed over; beyond it (after a
// sweep of missed ones) writes decode as if no watch ran.
const maxSharedDecodes = 1024

func newSharedDecodes(newFunc func() runtime.Object) *sharedDecodes {
	return &sharedDecodes{
		newType: reflect.TypeOf(newFunc()),
		watches: map[*watchStream]struct{}{},
		pending: map[string]*sharedDecode{},
	}
}

// watchStarted and watchEnded track the watches that may take objects.
// When the last one ends, the objects published for it go.
func (d *sharedDecodes) watchStarted(w *watchStream) {
	d.mu.Lock()
	d.watches[w] = struct{}{}
	d.mu.Unlock()
}

func (d *sharedDecodes) watchEnded(w *watchStream) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.watches, w)
	if len(d.watches) == 0 {
		for k, e := range d.pending {
			if !e.creating {
				delete(d.pending, k)
			}
		}
	}
}

// begin registers a write of key k whose result goes into out. It returns
// nil (decode as usual) when no running watch sees k, when out is not of
// the store's type, or when k is already being handed over.
func (d *sharedDecodes) begin(k string, out runtime.Object) *sharedDecode {
	if out == nil || reflect.TypeOf(out) != d.newType {
		return nil // (an Unknown, for one, keeps the bytes it decodes)
	}
	if _, unknown := out.(*runtime.Unknown); unknown {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.watchedLocked(k) || d.pending[k] != nil {
		return nil
	}
	if len(d.pending) >= maxSharedDecodes {
		d.sweepLocked()
		if len(d.pending) >= maxSharedDecodes {
			return nil
		}
	}
	e := &sharedDecode{creating: true}
	d.pending[k] = e
	return e
}

// watchedLocked reports whether a running watch sees every write of k.
func (d *sharedDecodes) watchedLocked(k string) bool {
	for w := range d.watches {
		if w.key == k || (w.recursive && strings.HasPrefix(k, w.key)) {
			return true
		}
	}
	return false
}

// sweepLocked drops objects published at revisions the watches have passed.
func (d *sharedDecodes) sweepLocked() {
	for k, e := range d.pending {
		if !e.creating && e.rev <= d.watchedRev {
			delete(d.pending, k)
		}
	}
}

// take is called by the writer of e (key k) once its Txn committed at rev:
// it copies a watch's decode of the write into out and reports true, or
// reports false and marks e as decoding (call publish after decoding).
func (d *sharedDecodes) take(k string, e *sharedDecode, rev int64, out runtime.Object) bool {
	d.mu.Lock()
	if d.pending[k] != e {
		d.mu.Unlock()
		return false
	}
	if e.obj != nil && e.rev == rev {
		obj := e.obj
		delete(d.pending, k)
		d.mu.Unlock()
		// obj is this writer's alone now: a shallow copy of it is too.
		reflect.ValueOf(out).Elem().Set(reflect.ValueOf(obj).Elem())
		d.spared.Add(1)
		return true
	}
	e.obj, e.decoding = nil, true
	d.mu.Unlock()
	return false
}

// publish is called by the writer of e (key k) with its decode of the
// write at rev: unless a watch has decoded that write itself, a deep copy
// waits for the watch's event.
func (d *sharedDecodes) publish(k string, e *sharedDecode, rev int64, out runtime.Object) {
	d.mu.Lock()
	mine := d.pending[k] == e
	wanted := mine && e.watchRev != rev && rev > d.watchedRev
	d.mu.Unlock()
	if !wanted {
		d.end(k, e)
		return
	}
	cp := out.DeepCopyObject()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.pending[k] != e {
		return
	}
	if e.watchRev == rev || rev <= d.watchedRev {
		delete(d.pending, k)
		return
	}
	e.creating, e.decoding, e.rev, e.obj = false, false, rev, cp
}

// end is called when the writer of e (key k) returns: an entry it has not
// published goes.
func (d *sharedDecodes) end(k string, e *sharedDecode) {
	if e == nil {
		return
	}
	d.mu.Lock()
	if d.pending[k] == e && e.creating {
		delete(d.pending, k)
	}
	d.mu.Unlock()
}

// forWatch is called by a watch for the PUT event of key k at rev. It
// returns the writer's decode of that write to take instead of decoding,
// or nil; then, after decoding, the watch calls decoded with its object.
func (d *sharedDecodes) forWatch(k string, rev int64) (runtime.Object, *sharedDecode) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if rev > d.watchedRev {
		d.watchedRev = rev
	}
	e := d.pending[k]
	if e == nil {
		return nil, nil
	}
	if !e.creating {
		switch {
		case e.rev == rev:
			delete(d.pending, k)
			d.spared.Add(1)
			return e.obj, nil
		case e.rev < rev:
			delete(d.pending, k) // missed: the watch is past it
		}
		return nil, nil
	}
	e.watchRev = rev
	if e.decoding || e.obj != nil {
		return nil, nil // the writer decodes (or a copy already waits)
	}
	return nil, e
}

// decoded offers the writer of e (key k) a deep copy of the watch's decode
// of the write at rev, unless the writer has begun decoding it itself.
func (d *sharedDecodes) decoded(k string, e *sharedDecode, rev int64, obj runtime.Object) {
	if !d.offerable(k, e) {
		return
	}
	cp := obj.DeepCopyObject()
	d.mu.Lock()
	if d.offerableLocked(k, e) {
		e.obj, e.rev = cp, rev
	}
	d.mu.Unlock()
}

func (d *sharedDecodes) offerable(k string, e *sharedDecode) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.offerableLocked(k, e)
}

func (d *sharedDecodes) offerableLocked(k string, e *sharedDecode) bool {
	return d.pending[k] == e && e.creating && !e.decoding && e.obj == nil
}
