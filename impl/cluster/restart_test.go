package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/kubeproof/kubeproof/impl/controllermanager"
	"github.com/kubeproof/kubeproof/impl/scheduler"
)

// TestGoRunRestartingRestartsOnLostLeadership: a component that lost its
// Lease is built again and run again (as the kubelet restarts a static
// pod), and the cluster keeps running; any other error stops the cluster.
func TestGoRunRestartingRestartsOnLostLeadership(t *testing.T) {
	defer func(d time.Duration) { restartDelay = d }(restartDelay)
	restartDelay = time.Millisecond
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))

	for _, lost := range []error{scheduler.ErrLostLeadership, fmt.Errorf("running: %w", controllermanager.ErrLostLeadership)} {
		ctx, cancel := context.WithCancel(context.Background())
		c := &Cluster{cancel: cancel}
		var wg sync.WaitGroup
		starts := 0
		third := make(chan struct{})
		c.goRunRestarting(ctx, &wg, "component", quiet, func() (func() error, error) {
			starts++
			n := starts
			return func() error {
				if n < 3 {
					return lost
				}
				close(third)
				<-ctx.Done()
				return nil
			}, nil
		})
		select {
		case <-third:
		case <-time.After(10 * time.Second):
			t.Fatalf("%v: the component was not started a third time", lost)
		}
		if err := c.Err(); err != nil {
			t.Errorf("%v: cluster error %v while the component restarted; want none", lost, err)
		}
		cancel()
		wg.Wait()
		if starts != 3 {
			t.Errorf("%v: started %d times, want 3", lost, starts)
		}
		if err := c.Err(); err != nil {
			t.Errorf("%v: cluster error %v after a clean stop", lost, err)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := &Cluster{cancel: cancel}
	var wg sync.WaitGroup
	boom := errors.New("boom")
	starts := 0
	c.goRunRestarting(ctx, &wg, "component", quiet, func() (func() error, error) {
		starts++
		return func() error { return boom }, nil
	})
	wg.Wait()
	if err := c.Err(); !errors.Is(err, boom) || starts != 1 {
		t.Errorf("other error: cluster error %v after %d starts; want boom after 1", err, starts)
	}
	if ctx.Err() == nil {
		t.Error("other error: the cluster was not stopped")
	}
}
