package h2sched

import (
	"fmt"
	"slices"
	"testing"
)

// maxFrame is the fake connection's largest DATA frame.
const maxFrame = 16

// frame is a test frame: a name to follow it by, and for DATA its size and
// its stream's flow control window, which Consume takes from as x/net's
// FrameWriteRequest does.
type frame struct {
	name    string
	stream  uint32
	control bool
	data    int
	window  *int32
}

func (f frame) StreamID() uint32 { return f.stream }
func (f frame) DataSize() int    { return f.data }

func (f frame) Consume(n int32) (frame, frame, int) {
	if f.data == 0 {
		return f, frame{}, 1
	}
	allowed := min(n, *f.window, maxFrame)
	if allowed <= 0 {
		return frame{}, frame{}, 0
	}
	if f.data > int(allowed) {
		*f.window -= allowed
		sent, rest := f, f
		sent.name, sent.data = fmt.Sprintf("%s[%d]", f.name, allowed), int(allowed)
		rest.data -= int(allowed)
		return sent, rest, 2
	}
	*f.window -= int32(f.data)
	return f, frame{}, 1
}

func newTestScheduler() *Scheduler[frame] {
	return NewScheduler(func(f frame) bool { return f.control })
}

// popAll pops until Pop reports nothing to write and returns the names.
func popAll(s *Scheduler[frame]) []string {
	var names []string
	for {
		f, ok := s.Pop()
		if !ok {
			return names
		}
		names = append(names, f.name)
	}
}

func headers(stream uint32, name string) frame { return frame{name: name, stream: stream} }

func data(stream uint32, name string, size int, window *int32) frame {
	return frame{name: name, stream: stream, data: size, window: window}
}

func TestPopOrder(t *testing.T) {
	open := func(w int32) *int32 { return &w }
	tests := []struct {
		name   string
		open   []uint32
		script func(s *Scheduler[frame])
		want   []string
	}{{
		name: "control frames and RST_STREAM go before every stream's",
		open: []uint32{1, 3},
		script: func(s *Scheduler[frame]) {
			s.Push(headers(1, "h1"))
			s.Push(frame{name: "settings", control: true})
			s.Push(headers(3, "h3"))
			s.Push(frame{name: "rst3", stream: 3, control: true})
			s.Push(frame{name: "ping", control: true})
		},
		want: []string{"settings", "rst3", "ping", "h1", "h3"},
	}, {
		name: "one frame per stream per turn, in the order streams got frames",
		open: []uint32{1, 3, 5},
		script: func(s *Scheduler[frame]) {
			w := open(1 << 20)
			s.Push(headers(5, "h5"))
			s.Push(headers(1, "h1"))
			s.Push(data(1, "d1", 8, w))
			s.Push(data(5, "d5", 8, w))
			s.Push(headers(3, "h3"))
			s.Push(data(1, "e1", 8, w))
		},
		want: []string{"h5", "h1", "h3", "d5", "d1", "e1"},
	}, {
		name: "a stream that gets a frame mid-round waits for the round's end",
		open: []uint32{1, 3, 5},
		script: func(s *Scheduler[frame]) {
			s.Push(headers(1, "h1"))
			s.Push(headers(3, "h3"))
			s.Push(headers(1, "i1"))
			if f, _ := s.Pop(); f.name != "h1" {
				panic("first pop " + f.name)
			}
			s.Push(headers(5, "h5"))
		},
		want: []string{"h3", "i1", "h5"},
	}, {
		name: "a flow-blocked stream is skipped, the others sent",
		open: []uint32{1, 3},
		script: func(s *Scheduler[frame]) {
			s.Push(data(1, "d1", 8, open(0)))
			s.Push(headers(3, "h3"))
			s.Push(headers(3, "i3"))
		},
		want: []string{"h3", "i3"},
	}, {
		name: "a DATA frame larger than the window is split and its rest waits",
		open: []uint32{1},
		script: func(s *Scheduler[frame]) {
			s.Push(data(1, "d1", 12, open(5)))
			s.Push(headers(1, "trailers1"))
		},
		want: []string{"d1[5]"},
	}, {
		name: "a DATA frame larger than the frame size is split across turns",
		open: []uint32{1, 3},
		script: func(s *Scheduler[frame]) {
			w := open(1 << 20)
			s.Push(data(1, "d1", 40, w))
			s.Push(data(3, "d3", 8, w))
		},
		want: []string{"d1[16]", "d3", "d1[16]", "d1"},
	}, {
		name: "CloseStream drops the stream's frames",
		open: []uint32{1, 3, 5},
		script: func(s *Scheduler[frame]) {
			s.Push(headers(1, "h1"))
			s.Push(headers(3, "h3"))
			s.Push(headers(3, "i3"))
			s.Push(headers(5, "h5"))
			s.CloseStream(3)
		},
		want: []string{"h1", "h5"},
	}, {
		name: "frames for a stream that is not open go with the control frames",
		open: []uint32{1},
		script: func(s *Scheduler[frame]) {
			s.Push(headers(1, "h1"))
			s.CloseStream(1)
			s.Push(frame{name: "rst1", stream: 1})
			s.Push(frame{name: "rst7", stream: 7})
		},
		want: []string{"rst1", "rst7"},
	}, {
		name: "a closed stream's id can be opened again with an empty queue",
		open: []uint32{1},
		script: func(s *Scheduler[frame]) {
			s.Push(headers(1, "h1"))
			s.CloseStream(1)
			s.OpenStream(1)
			s.Push(headers(1, "again1"))
		},
		want: []string{"again1"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestScheduler()
			for _, id := range tt.open {
				s.OpenStream(id)
			}
			tt.script(s)
			if got := popAll(s); !slices.Equal(got, tt.want) {
				t.Fatalf("popped %q, want %q", got, tt.want)
			}
		})
	}
}

// A stream blocked by flow control keeps its frames and its turn: once its
// window opens (x/net then calls Pop again) it is sent, rest after part.
func TestFlowBlockedStreamIsSentWhenItsWindowOpens(t *testing.T) {
	s := newTestScheduler()
	s.OpenStream(1)
	s.OpenStream(3)
	window := int32(0)
	s.Push(data(1, "d1", 10, &window))
	s.Push(headers(1, "trailers1"))
	s.Push(headers(3, "h3"))
	if got := popAll(s); !slices.Equal(got, []string{"h3"}) {
		t.Fatalf("with the window shut popped %q, want [h3]", got)
	}
	window = 4
	if got := popAll(s); !slices.Equal(got, []string{"d1[4]"}) {
		t.Fatalf("with 4 bytes of window popped %q, want [d1[4]]", got)
	}
	window = 100
	if got := popAll(s); !slices.Equal(got, []string{"d1", "trailers1"}) {
		t.Fatalf("with the window open popped %q, want [d1 trailers1]", got)
	}
	if window != 94 {
		t.Fatalf("window %d after sending 10 bytes of 104, want 94", window)
	}
}

// Pop looks only at streams with queued frames: with 10,000 idle streams
// open, sending one frame looks at one queue, and finding nothing to send
// looks at none; a blocked stream costs one look per Pop.
func TestIdleStreamsCostPopNothing(t *testing.T) {
	s := newTestScheduler()
	for id := uint32(1); id < 20000; id += 2 {
		s.OpenStream(id)
	}
	s.Push(headers(9999, "h9999"))
	if f, ok := s.Pop(); !ok || f.name != "h9999" {
		t.Fatalf("Pop = %q, %v; want h9999", f.name, ok)
	}
	if s.steps != 1 {
		t.Fatalf("sending one frame looked at %d queues, want 1", s.steps)
	}
	if _, ok := s.Pop(); ok || s.steps != 1 {
		t.Fatalf("Pop with nothing queued: ok %v after %d looks, want false after 1", ok, s.steps)
	}
	window := int32(0)
	s.Push(data(4001, "d4001", 8, &window))
	s.Push(headers(4003, "h4003"))
	if got := popAll(s); !slices.Equal(got, []string{"h4003"}) {
		t.Fatalf("popped %q, want [h4003]", got)
	}
	// The blocked stream, then the headers' stream, then the blocked
	// stream alone once more.
	if s.steps != 1+3 {
		t.Fatalf("looked at %d queues in all, want 4", s.steps)
	}
}

// Round-robin holds over many turns: streams with equal work finish
// interleaved, each turn giving every ready stream one frame.
func TestRoundRobinIsFairAmongReadyStreams(t *testing.T) {
	s := newTestScheduler()
	window := int32(1 << 20)
	for id := uint32(1); id <= 5; id += 2 {
		s.OpenStream(id)
		s.Push(data(id, fmt.Sprint(id), 3*maxFrame, &window))
	}
	want := []string{"1[16]", "3[16]", "5[16]", "1[16]", "3[16]", "5[16]", "1", "3", "5"}
	if got := popAll(s); !slices.Equal(got, want) {
		t.Fatalf("popped %q, want %q", got, want)
	}
}

func TestDataForAStreamThatIsNotOpenPanics(t *testing.T) {
	s := newTestScheduler()
	defer func() {
		if recover() == nil {
			t.Fatal("Push of DATA for a stream never opened did not panic")
		}
	}()
	window := int32(10)
	s.Push(data(1, "d1", 1, &window))
}

// Queues of closed streams are reused and come back empty, with no frame
// kept reachable from the free list.
func TestClosedStreamQueuesAreReusedEmpty(t *testing.T) {
	s := newTestScheduler()
	s.OpenStream(1)
	s.Push(headers(1, "h1"))
	s.Push(headers(1, "i1"))
	s.CloseStream(1)
	if len(s.free) != 1 {
		t.Fatalf("free queues %d, want 1", len(s.free))
	}
	q := s.free[0]
	for _, f := range q.frames.frames[:cap(q.frames.frames)] {
		if f.name != "" {
			t.Fatalf("a closed stream's queue still holds %q", f.name)
		}
	}
	s.OpenStream(3)
	if s.streams[3] != q || !q.frames.empty() || q.next != nil {
		t.Fatal("OpenStream did not reuse the closed stream's empty queue")
	}
}
