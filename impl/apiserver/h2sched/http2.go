package h2sched

import (
	"reflect"

	"golang.org/x/net/http2"
)

// New returns a write scheduler for golang.org/x/net/http2's server
// (http2.Server.NewWriteScheduler): a Scheduler of FrameWriteRequests.
//
// Which frames are control frames is not exported by x/net: a
// FrameWriteRequest is one when it has no stream (connection frames, and
// RST_STREAM, which the server queues without its stream so that it can
// reset streams it never opened). That field is read by reflection; if a
// later x/net lays FrameWriteRequest out differently, New falls back to
// x/net's random scheduler (which also keeps only streams with queued
// frames), and TestFrameWriteRequestLayout fails.
//
// Since Go 1.27 x/net/http2 wraps net/http's own HTTP/2 server, where
// user write schedulers are deprecated; this is for the Go 1.26 server.
func New() http2.WriteScheduler {
	if !layoutKnown {
		return http2.NewRandomWriteScheduler()
	}
	return adapter{NewScheduler(frameIsControl)}
}

// adapter gives Scheduler[http2.FrameWriteRequest] http2's method set.
type adapter struct {
	*Scheduler[http2.FrameWriteRequest]
}

func (a adapter) OpenStream(id uint32, _ http2.OpenStreamOptions) { a.Scheduler.OpenStream(id) }

func (adapter) AdjustStream(uint32, http2.PriorityParam) {}

// streamField is the index of FrameWriteRequest's stream pointer.
const streamField = 1

// layoutKnown reports whether FrameWriteRequest's field streamField is the
// stream pointer frameIsControl reads.
var layoutKnown = func() bool {
	t := reflect.TypeFor[http2.FrameWriteRequest]()
	if t.Kind() != reflect.Struct || t.NumField() <= streamField {
		return false
	}
	f := t.Field(streamField)
	return f.Name == "stream" && f.Type.Kind() == reflect.Pointer
}()

// frameIsControl is x/net's FrameWriteRequest.isControl: no stream.
func frameIsControl(wr http2.FrameWriteRequest) bool {
	return reflect.ValueOf(&wr).Elem().Field(streamField).IsNil()
}
