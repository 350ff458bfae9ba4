// Package etcd3test has test helpers for code that watches etcd.
package etcd3test

import (
	"context"
	"sync"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
)

// CreatedFirst is a gRPC client interceptor for etcd watch streams. Once
// armed (Arm), each watch stream open at that moment lets the next "created"
// response overtake the progress notifications (watch ID -1) it received
// before it. The etcd server may send them in that order itself: its send
// loop picks at random between a "created" response and notifications it
// queued before the watch existed. The interceptor makes that order certain.
type CreatedFirst struct {
	mu      sync.Mutex
	streams []*createdFirstStream
}

type createdFirstStream struct {
	grpc.ClientStream
	mu      sync.Mutex
	armed   bool
	held    []*pb.WatchResponse
	pending []*pb.WatchResponse
}

func (c *CreatedFirst) intercept(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string,
	streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	cs, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil || method != "/etcdserverpb.Watch/Watch" {
		return cs, err
	}
	s := &createdFirstStream{ClientStream: cs}
	c.mu.Lock()
	c.streams = append(c.streams, s)
	c.mu.Unlock()
	return s, nil
}

// Arm makes every watch stream open now reorder until its next "created".
func (c *CreatedFirst) Arm() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.streams {
		s.mu.Lock()
		s.armed = true
		s.mu.Unlock()
	}
}

func isBroadcastProgress(r *pb.WatchResponse) bool {
	return r.WatchId == clientv3.InvalidWatchID && len(r.Events) == 0 && !r.Created && !r.Canceled && r.CompactRevision == 0
}

func (s *createdFirstStream) RecvMsg(m any) error {
	out, ok := m.(*pb.WatchResponse)
	if !ok {
		return s.ClientStream.RecvMsg(m)
	}
	for {
		s.mu.Lock()
		if len(s.pending) > 0 {
			next := s.pending[0]
			s.pending = s.pending[1:]
			s.mu.Unlock()
			*out = *next
			return nil
		}
		s.mu.Unlock()
		r := &pb.WatchResponse{}
		if err := s.ClientStream.RecvMsg(r); err != nil {
			return err
		}
		s.mu.Lock()
		switch {
		case s.armed && isBroadcastProgress(r):
			s.held = append(s.held, r)
			s.mu.Unlock()
			continue
		case s.armed && r.Created:
			s.armed = false
			s.pending = append(s.pending, s.held...)
			s.held = nil
		}
		s.mu.Unlock()
		*out = *r
		return nil
	}
}

// DialOption installs the interceptor on an etcd client
// (clientv3.Config.DialOptions).
func (c *CreatedFirst) DialOption() grpc.DialOption {
	return grpc.WithStreamInterceptor(c.intercept)
}
