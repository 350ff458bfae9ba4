// Package h2sched is the API server's HTTP/2 write scheduler: it decides
// which queued frame of a connection is written next, round-robin over the
// streams that have frames queued, with control frames (SETTINGS, PING,
// WINDOW_UPDATE for the connection, RST_STREAM) first.
//
// Why its own: golang.org/x/net/http2's round-robin scheduler keeps every
// open stream in one ring and Pop walks the ring until it finds a stream
// that can send, so once per scheduling round (when nothing is left to
// send) it walks every open stream. A connection shared by a thousand
// simulated nodes carries about a thousand long-lived, mostly idle watch
// streams, and that walk was 16.7 CPU-s of the API server's 62.4 in
// session 13's 1,000 x 30,000 profile. Here only streams with queued frames
// are in the ring (the ready ring): a stream enters it when Push makes its
// queue non-empty and leaves it when Pop empties its queue or CloseStream
// closes it, so an idle stream costs Pop nothing. A stream whose flow
// control window is exhausted keeps its frames and its place in the ready
// ring and is tried again on each later Pop (the server calls Pop again
// after a WINDOW_UPDATE), so Pop costs O(streams with queued frames), not
// O(open streams).
//
// The contract it keeps is the WriteScheduler's: frames of one stream leave
// in the order they were pushed, except RST_STREAM, which goes with the
// control frames; a DATA frame larger than what flow control allows is
// split by FrameWriteRequest.Consume and its rest stays at the head of its
// stream's queue; CloseStream drops the stream's queued frames; frames
// pushed for a stream that is not open (RST_STREAM after close) go with the
// control frames. Priorities are ignored (AdjustStream is a no-op), as in
// the stock round-robin scheduler.
//
// The scheduler is a pure data structure (no I/O, no goroutines, not safe
// for concurrent use: the HTTP/2 server calls it from one goroutine per
// connection). Scheduler is generic over the frame type so that its tests
// drive it with frames whose flow control they set; New adapts it to
// golang.org/x/net/http2 (see http2.go). It implements no spec property:
// it sits below the API, and changes only the order of bytes on a
// connection among streams.
package h2sched

import "math"

// Frame is what the scheduler needs of a frame: the methods
// golang.org/x/net/http2.FrameWriteRequest has.
type Frame[F any] interface {
	// StreamID is the frame's stream, 0 for connection frames.
	StreamID() uint32
	// DataSize is the flow-controlled size (DATA frames), else 0.
	DataSize() int
	// Consume takes up to n flow-control bytes: 0 frames if flow control
	// allows none, 1 (the whole frame), or 2 (the part sent now and the
	// rest).
	Consume(n int32) (F, F, int)
}

// Scheduler is a write scheduler whose Pop costs O(1) amortized in the
// number of idle streams. Make one with NewScheduler.
type Scheduler[F Frame[F]] struct {
	// isControl reports whether a frame bypasses the streams' queues:
	// connection frames and RST_STREAM.
	isControl func(F) bool

	control fifo[F]
	// streams holds the open streams' queues by id.
	streams map[uint32]*streamQueue[F]
	// ready is the next stream to try in the ring of streams with queued
	// frames; nil when no open stream has any.
	ready *streamQueue[F]
	// free keeps closed streams' queues for the next OpenStream.
	free []*streamQueue[F]

	// steps counts the stream queues Pop looked at, for tests.
	steps int
}

// NewScheduler returns an empty scheduler; isControl tells which frames
// go first, ahead of every stream's.
func NewScheduler[F Frame[F]](isControl func(F) bool) *Scheduler[F] {
	return &Scheduler[F]{isControl: isControl, streams: make(map[uint32]*streamQueue[F])}
}

// streamQueue is one open stream's queued frames and its links in the
// ready ring (nil while its queue is empty).
type streamQueue[F any] struct {
	id         uint32
	frames     fifo[F]
	prev, next *streamQueue[F]
}

// OpenStream starts tracking a stream. Opening an open stream is a broken
// caller: it panics, as the stock schedulers do.
func (s *Scheduler[F]) OpenStream(id uint32) {
	if s.streams[id] != nil {
		panic("h2sched: stream opened twice")
	}
	var q *streamQueue[F]
	if n := len(s.free); n > 0 {
		q, s.free[n-1] = s.free[n-1], nil
		s.free = s.free[:n-1]
	} else {
		q = new(streamQueue[F])
	}
	q.id = id
	s.streams[id] = q
}

// CloseStream forgets a stream and drops its queued frames. Closing a
// stream that is not open does nothing.
func (s *Scheduler[F]) CloseStream(id uint32) {
	q := s.streams[id]
	if q == nil {
		return
	}
	delete(s.streams, id)
	if !q.frames.empty() {
		s.leaveRing(q)
	}
	q.frames.reset()
	s.free = append(s.free, q)
}

// Push queues a frame: control frames and frames of streams that are not
// open on the control queue, the others on their stream's queue, which
// joins the ready ring if it was empty. DATA for a stream that is not open
// is a broken caller (the server drops writes for closed streams before
// they get here): it panics, as the stock round-robin scheduler does.
func (s *Scheduler[F]) Push(wr F) {
	if s.isControl(wr) {
		s.control.push(wr)
		return
	}
	q := s.streams[wr.StreamID()]
	if q == nil {
		if wr.DataSize() > 0 {
			panic("h2sched: DATA pushed for a stream that is not open")
		}
		s.control.push(wr)
		return
	}
	if q.frames.empty() {
		s.joinRing(q)
	}
	q.frames.push(wr)
}

// Pop returns the next frame to write: a control frame if any, else the
// next frame flow control allows from the ready ring, round-robin (one
// frame per stream per turn). ok is false when nothing can be written.
func (s *Scheduler[F]) Pop() (wr F, ok bool) {
	if !s.control.empty() {
		return s.control.pop(), true
	}
	start := s.ready
	if start == nil {
		return wr, false
	}
	q := start
	for {
		s.steps++
		sent, rest, n := (*q.frames.peek()).Consume(math.MaxInt32)
		switch n {
		case 1:
			q.frames.pop()
			next := q.next
			if q.frames.empty() {
				s.leaveRing(q)
				if next == q {
					next = nil
				}
			}
			s.ready = next
			return sent, true
		case 2:
			*q.frames.peek() = rest
			s.ready = q.next
			return sent, true
		}
		// Blocked by flow control: it keeps its place, try the next.
		q = q.next
		if q == start {
			return wr, false
		}
	}
}

// joinRing puts q last in the ring: just before the next stream to try,
// so it gets its turn after every stream already waiting.
func (s *Scheduler[F]) joinRing(q *streamQueue[F]) {
	if s.ready == nil {
		q.prev, q.next = q, q
		s.ready = q
		return
	}
	q.prev, q.next = s.ready.prev, s.ready
	q.prev.next = q
	q.next.prev = q
}

// leaveRing takes q out of the ring.
func (s *Scheduler[F]) leaveRing(q *streamQueue[F]) {
	if q.next == q {
		s.ready = nil
	} else {
		q.prev.next = q.next
		q.next.prev = q.prev
		if s.ready == q {
			s.ready = q.next
		}
	}
	q.prev, q.next = nil, nil
}

// fifo is a queue of frames in a slice: frames[head:] are queued. It
// starts over at the slice's beginning whenever it empties, which for a
// stream (a frame or two at a time) is nearly always.
type fifo[F any] struct {
	frames []F
	head   int
}

func (f *fifo[F]) empty() bool { return f.head == len(f.frames) }

func (f *fifo[F]) push(wr F) {
	if f.head > 0 && len(f.frames) == cap(f.frames) {
		// Full with a consumed prefix: move the queued frames down
		// instead of growing.
		n := copy(f.frames, f.frames[f.head:])
		clear(f.frames[n:])
		f.frames, f.head = f.frames[:n], 0
	}
	f.frames = append(f.frames, wr)
}

func (f *fifo[F]) peek() *F { return &f.frames[f.head] }

func (f *fifo[F]) pop() F {
	wr := f.frames[f.head]
	var zero F
	f.frames[f.head] = zero
	f.head++
	if f.head == len(f.frames) {
		f.frames, f.head = f.frames[:0], 0
	}
	return wr
}

// reset drops every queued frame, keeping the slice for reuse.
func (f *fifo[F]) reset() {
	clear(f.frames)
	f.frames, f.head = f.frames[:0], 0
}
