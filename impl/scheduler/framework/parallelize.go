package framework

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
)

// DefaultParallelism is upstream's default worker count.
const DefaultParallelism = 16

// Parallelizer runs work across a bounded pool of goroutines. The pool lives
// only for one Until call, so nothing outlives it.
type Parallelizer struct {
	workers int
}

// NewParallelizer returns a Parallelizer with at most workers goroutines.
func NewParallelizer(workers int) Parallelizer {
	if workers < 1 {
		workers = 1
	}
	return Parallelizer{workers: workers}
}

// chunkSize balances goroutine hand-off cost against load balance: about
// sqrt(n) pieces per chunk, but at least one chunk per worker.
func chunkSize(n, workers int) int {
	s := int(math.Sqrt(float64(n)))
	if r := n/workers + 1; s > r {
		s = r
	}
	return max(s, 1)
}

// Until calls do(i) for every i in [0, pieces), in parallel, and returns when
// all calls returned or ctx is cancelled (calls already started finish).
func (p Parallelizer) Until(ctx context.Context, pieces int, do func(i int)) {
	if pieces <= 0 {
		return
	}
	chunk := chunkSize(pieces, p.workers)
	chunks := (pieces + chunk - 1) / chunk
	workers := min(p.workers, chunks)
	run := func(next *atomic.Int64) {
		for {
			if ctx.Err() != nil {
				return
			}
			c := int(next.Add(1) - 1)
			if c >= chunks {
				return
			}
			end := min((c+1)*chunk, pieces)
			for i := c * chunk; i < end; i++ {
				do(i)
			}
		}
	}
	var next atomic.Int64
	if workers <= 1 {
		run(&next)
		return
	}
	var wg sync.WaitGroup
	wg.Add(workers - 1)
	for w := 1; w < workers; w++ {
		go func() {
			defer wg.Done()
			run(&next)
		}()
	}
	run(&next)
	wg.Wait()
}
