// Package compact compacts etcd's history the way kube-apiserver does:
// every interval, to the revision observed one interval earlier, with the
// API servers sharing one etcd agreeing through the "compact_rev_key" key
// so that only one of them compacts per interval.
package compact

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// RevKey is the etcd key whose version counts compaction intervals across
// API servers.
const RevKey = "compact_rev_key"

// DefaultInterval is kube-apiserver's default --etcd-compaction-interval.
const DefaultInterval = 5 * time.Minute

// Compact compacts etcd's history up to rev: reads at older revisions fail
// with ErrCompacted afterwards. Compacting to a revision that is already
// compacted is not an error.
func Compact(ctx context.Context, client *clientv3.Client, rev int64) error {
	if _, err := client.Compact(ctx, rev); err != nil {
		if errors.Is(err, rpctypes.ErrCompacted) {
			return nil
		}
		return fmt.Errorf("compacting etcd to revision %d: %w", rev, err)
	}
	return nil
}

// Compactor runs periodic compaction until stopped.
type Compactor struct {
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// Start starts compacting every interval; interval <= 0 returns a Compactor
// that does nothing.
func Start(client *clientv3.Client, interval time.Duration, logger *slog.Logger) *Compactor {
	ctx, cancel := context.WithCancel(context.Background())
	c := &Compactor{cancel: cancel, done: make(chan struct{})}
	if interval <= 0 {
		close(c.done)
		return c
	}
	if logger == nil {
		logger = slog.Default()
	}
	go c.run(ctx, client, interval, logger)
	return c
}

// Stop stops the compactor and waits for it.
func (c *Compactor) Stop() {
	c.once.Do(c.cancel)
	<-c.done
}

func (c *Compactor) run(ctx context.Context, client *clientv3.Client, interval time.Duration, logger *slog.Logger) {
	defer close(c.done)
	var logicalTime, lastRev int64
	t := time.NewTimer(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		var err error
		logicalTime, lastRev, err = Step(ctx, client, logicalTime, lastRev)
		if err != nil && ctx.Err() == nil {
			logger.Warn("etcd compaction failed", "err", err)
		}
		t.Reset(interval)
	}
}

// Step is one compaction interval. logicalTime is the version of RevKey this
// server saw last time and prevRev the etcd revision it saw then. If no other
// server has moved RevKey since, this server claims the interval (bumping
// RevKey's version in a Txn) and compacts to prevRev; otherwise it only
// learns the new version. It returns the new logical time and the current
// revision, to pass to the next Step one interval later.
func Step(ctx context.Context, client *clientv3.Client, logicalTime, prevRev int64) (int64, int64, error) {
	resp, err := client.KV.Txn(ctx).
		If(clientv3.Compare(clientv3.Version(RevKey), "=", logicalTime)).
		Then(clientv3.OpPut(RevKey, RevKey)).
		Else(clientv3.OpGet(RevKey)).
		Commit()
	if err != nil {
		return logicalTime, prevRev, fmt.Errorf("claiming compaction interval: %w", err)
	}
	curRev := resp.Header.Revision
	if !resp.Succeeded {
		kvs := resp.Responses[0].GetResponseRange().Kvs
		if len(kvs) == 0 {
			// Deleted under us: start counting again.
			return 0, curRev, nil
		}
		return kvs[0].Version, curRev, nil
	}
	newTime := logicalTime + 1
	if prevRev == 0 {
		// The first interval only records where we are.
		return newTime, curRev, nil
	}
	if err := Compact(ctx, client, prevRev); err != nil {
		return newTime, curRev, err
	}
	return newTime, curRev, nil
}
