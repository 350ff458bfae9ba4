package bench

import (
	"context"
	"sync"
	"time"
)

// Progress is a snapshot of a running workload for a live progress line.
type Progress struct {
	Workload string
	Phase    string
	Done     int
	Total    int
	// Rate is Done's increase per second over the last second.
	Rate float64
}

// progressLine is the state behind a live progress line: the current
// phase and how far it got.
type progressLine struct {
	workload string
	mu       sync.Mutex
	phase    string
	done     func() int
	total    func() int
}

func (p *progressLine) set(phase string, done func() int, total int) {
	p.setFunc(phase, done, func() int { return total })
}

func (p *progressLine) setFunc(phase string, done, total func() int) {
	p.mu.Lock()
	p.phase, p.done, p.total = phase, done, total
	p.mu.Unlock()
}

// report calls f once a second with a snapshot until stop is called.
func (p *progressLine) report(ctx context.Context, f func(Progress)) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		last, lastPhase := 0, ""
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			p.mu.Lock()
			pr := Progress{Workload: p.workload, Phase: p.phase}
			if p.done != nil {
				pr.Done, pr.Total = p.done(), p.total()
			}
			p.mu.Unlock()
			if pr.Phase == lastPhase {
				pr.Rate = float64(pr.Done - last)
			}
			last, lastPhase = pr.Done, pr.Phase
			f(pr)
		}
	}()
	return func() { cancel(); wg.Wait() }
}
