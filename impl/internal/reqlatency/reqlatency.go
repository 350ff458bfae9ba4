// Package reqlatency accumulates, for one API request, the time spent in
// the layers kube-apiserver reports in the apiserver.latency.k8s.io/*
// annotations of a slow request's audit event: the round trips to etcd
// (summed, every key-value call the request made), the decoding of the
// items a list read from etcd (summed), the transformation of
// a read's answer into what the client asked for (summed), the
// serialization of
// the response (summed, its writes included, as kube-apiserver measures
// it) and the writes of the response to the client (summed). It sits below both the storage layer
// and the API server, which import it. Every method is safe for
// concurrent use and does nothing on a nil *Trackers, so code serving no
// tracked request need not check.
package reqlatency

import (
	"context"
	"sync/atomic"
	"time"
)

// The annotation keys, as kube-apiserver's.
const (
	EtcdKey          = "apiserver.latency.k8s.io/etcd"
	ResponseWriteKey = "apiserver.latency.k8s.io/response-write"
	SerializeKey     = "apiserver.latency.k8s.io/serialize-response-object"
	TransformKey     = "apiserver.latency.k8s.io/transform-response-object"
	DecodeKey        = "apiserver.latency.k8s.io/decode-response-object"
	TotalKey         = "apiserver.latency.k8s.io/total"
)

// Trackers holds one request's accumulated latencies, in nanoseconds.
type Trackers struct {
	etcd, decode, transform, serialize, responseWrite atomic.Int64
}

type key struct{}

// With returns ctx carrying a new Trackers, and that Trackers.
func With(ctx context.Context) (context.Context, *Trackers) {
	t := &Trackers{}
	return context.WithValue(ctx, key{}, t), t
}

// From returns the Trackers of ctx's request, or nil.
func From(ctx context.Context) *Trackers {
	t, _ := ctx.Value(key{}).(*Trackers)
	return t
}

// AddEtcd adds one etcd call of d.
func (t *Trackers) AddEtcd(d time.Duration) {
	if t != nil {
		t.etcd.Add(int64(d))
	}
}

// AddDecode adds the decoding of one listed item of d.
func (t *Trackers) AddDecode(d time.Duration) {
	if t != nil {
		t.decode.Add(int64(d))
	}
}

// AddTransform adds one transformation of a response object of d.
func (t *Trackers) AddTransform(d time.Duration) {
	if t != nil {
		t.transform.Add(int64(d))
	}
}

// AddSerialize adds one serialization (and write) of a response of d.
func (t *Trackers) AddSerialize(d time.Duration) {
	if t != nil {
		t.serialize.Add(int64(d))
	}
}

// AddResponseWrite adds one write of d to the client.
func (t *Trackers) AddResponseWrite(d time.Duration) {
	if t != nil {
		t.responseWrite.Add(int64(d))
	}
}

// Annotations returns the audit annotations of the latencies tracked so
// far, as kube-apiserver writes them: one key per layer that took any
// time, its value the duration in Go's time.Duration notation (for
// example "1.503s", "12.4ms"). Empty when nothing was tracked or t is nil.
func (t *Trackers) Annotations() map[string]string {
	out := map[string]string{}
	if t == nil {
		return out
	}
	if d := time.Duration(t.etcd.Load()); d != 0 {
		out[EtcdKey] = d.String()
	}
	if d := time.Duration(t.decode.Load()); d != 0 {
		out[DecodeKey] = d.String()
	}
	if d := time.Duration(t.transform.Load()); d != 0 {
		out[TransformKey] = d.String()
	}
	if d := time.Duration(t.serialize.Load()); d != 0 {
		out[SerializeKey] = d.String()
	}
	if d := time.Duration(t.responseWrite.Load()); d != 0 {
		out[ResponseWriteKey] = d.String()
	}
	return out
}
