package bench

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// windowProfilePath is the file of the i-th CPU profile window of path:
// path.000, path.001, … (three digits sort by name for up to 1,000
// windows; more get wider names, still in order within each width).
func windowProfilePath(path string, i int) string {
	return fmt.Sprintf("%s.%03d", path, i)
}

// startCPUProfileWindows writes the process's CPU profile in windows of
// width every: path.000 from now to now+every, path.001 the next, and so
// on until the returned function is called, which ends the last window
// (once; later calls return the first call's result). Each window is a
// profile of its own (the runtime's profiler is stopped and restarted
// between them, losing no more than the samples of that instant), so
// that work which grows during a run can be told apart from work that
// does not; go tool pprof merges any set of them again.
func startCPUProfileWindows(ctx context.Context, path string, every time.Duration) (func() error, error) {
	if every <= 0 {
		return nil, fmt.Errorf("starting windowed CPU profile: window %v is not positive", every)
	}
	i := 0
	stop, err := startCPUProfile(windowProfilePath(path, i))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	var rotateErr error // written by the goroutine, read after done
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if err := stop(); err != nil {
				rotateErr = fmt.Errorf("ending CPU profile window %d: %w", i, err)
				stop = func() error { return nil }
				return
			}
			i++
			next, err := startCPUProfile(windowProfilePath(path, i))
			if err != nil {
				rotateErr = fmt.Errorf("starting CPU profile window %d: %w", i, err)
				stop = func() error { return nil }
				return
			}
			stop = next
		}
	}()
	return sync.OnceValue(func() error {
		cancel()
		<-done
		if err := stop(); err != nil {
			return fmt.Errorf("ending the last CPU profile window: %w", err)
		}
		return rotateErr
	}), nil
}

// cpuProfiling starts what StartupConfig asks for: no CPU profile, one
// for the whole run, or one per CPUProfileEvery window.
func cpuProfiling(ctx context.Context, cfg StartupConfig) (func() error, error) {
	switch {
	case cfg.CPUProfile == "":
		return func() error { return nil }, nil
	case cfg.CPUProfileEvery > 0:
		return startCPUProfileWindows(ctx, cfg.CPUProfile, cfg.CPUProfileEvery)
	}
	return startCPUProfile(cfg.CPUProfile)
}
