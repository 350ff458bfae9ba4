package props

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubeproof/kubeproof/impl/cluster"
	"github.com/kubeproof/kubeproof/impl/controllermanager"
	"github.com/kubeproof/kubeproof/impl/faults"
	"github.com/kubeproof/kubeproof/impl/kubelet"
	kruntime "github.com/kubeproof/kubeproof/impl/kubelet/runtime"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
	"github.com/kubeproof/kubeproof/impl/scheduler"
	schedconfig "github.com/kubeproof/kubeproof/impl/scheduler/config"
)

// components runs the controller manager, the scheduler and the simulated
// kubelets of the harness's cluster, each of which can crash — its run is
// cancelled, all its memory lost — and is then started afresh, like a
// process restarted by its supervisor. A kubelet's runtime (the sandboxes
// and containers it started) survives its crash, as containerd survives a
// kubelet restart.
type components struct {
	admin    *rest.Config
	ctx      context.Context
	cancel   context.CancelFunc
	runtimes map[string]kruntime.Runtime

	mu       sync.Mutex
	procs    map[string]*proc // component name -> running instance
	kubelets map[string]*kubelet.Kubelet
	paused   map[string]bool // kubelets whose node is failed (kept across restarts)
	stopping bool
	wg       sync.WaitGroup
	restarts atomic.Int64
}

// proc is one running instance of a component.
type proc struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// componentNames are the names crash and restart actions draw from (and the
// watch-fault names of impl/faults' transport hooks).
func componentNames() []string {
	out := []string{"controller-manager", "scheduler"}
	for i := 1; i <= numNodes; i++ {
		out = append(out, fmt.Sprintf("node-%d", i))
	}
	return out
}

func startComponents(c *cluster.Cluster) (*components, error) {
	ctx, cancel := context.WithCancel(context.Background())
	cs := &components{admin: c.AdminConfig, ctx: ctx, cancel: cancel, runtimes: map[string]kruntime.Runtime{},
		procs: map[string]*proc{}, kubelets: map[string]*kubelet.Kubelet{}, paused: map[string]bool{}}
	for i := 1; i <= numNodes; i++ {
		name := fmt.Sprintf("node-%d", i)
		rt, err := sim.New(sim.Config{PodCIDR: fmt.Sprintf("10.244.%d.0/24", i)})
		if err != nil {
			cancel()
			return nil, fmt.Errorf("runtime of %s: %w", name, err)
		}
		cs.runtimes[name] = rt
	}
	for _, name := range componentNames() {
		if err := cs.start(name); err != nil {
			cs.stop()
			return nil, err
		}
	}
	return cs, nil
}

// client returns a fresh client for component name with impl/faults'
// transport hook (lagWatch) and the given rate limits.
func (cs *components) client(name string, qps float32, burst int) (*rest.Config, kubernetes.Interface, error) {
	cfg := rest.CopyConfig(cs.admin)
	cfg.QPS, cfg.Burst, cfg.UserAgent = qps, burst, "kubeproof/"+name
	cfg.Wrap(faults.WrapTransport(name))
	client, err := kubernetes.NewForConfig(cfg)
	return cfg, client, err
}

// start starts a fresh instance of component name.
func (cs *components) start(name string) error {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.stopping {
		return nil
	}
	ctx, cancel := context.WithCancel(faults.WithComponent(cs.ctx, name))
	var run func() error
	switch name {
	case "controller-manager":
		restCfg, client, err := cs.client(name, 1000, 2000)
		if err != nil {
			cancel()
			return err
		}
		cfg := controllermanager.DefaultConfig()
		cfg.LeaderElect = false // a restarted instance takes over at once
		cfg.NodeMonitorGracePeriod = 20 * time.Second
		cfg.DefaultNotReadyTolerationSeconds, cfg.DefaultUnreachableTolerationSeconds = 2, 2
		run = func() error { return controllermanager.Run(ctx, client, restCfg, cfg) }
	case "scheduler":
		_, client, err := cs.client(name, 5000, 10000)
		if err != nil {
			cancel()
			return err
		}
		conf := schedconfig.Default()
		conf.LeaderElection.LeaderElect = ptr(false)
		s, err := scheduler.New(ctx, client, scheduler.Config{Configuration: conf, Logger: slog.Default()})
		if err != nil {
			cancel()
			return fmt.Errorf("building scheduler: %w", err)
		}
		run = func() error { return s.Run(ctx) }
	default:
		rt := cs.runtimes[name]
		if rt == nil {
			cancel()
			return fmt.Errorf("no component %s", name)
		}
		_, client, err := cs.client(name, 50, 100)
		if err != nil {
			cancel()
			return err
		}
		var idx int
		_, _ = fmt.Sscanf(name, "node-%d", &idx)
		// Syncs failed under injected faults are retried after a second
		// (upstream's 10-15 s back-off would only stretch each run's
		// convergence wait; the properties do not depend on it).
		k, err := kubelet.New(ctx, client, kubelet.Config{NodeName: name, PodCIDR: fmt.Sprintf("10.244.%d.0/24", idx),
			CPU: resource.MustParse("4"), Memory: resource.MustParse("32Gi"), MaxPods: nodeMaxPods, SyncErrorBackOff: time.Second,
			Logger: slog.Default().With("node", name)}, rt)
		if err != nil {
			cancel()
			return fmt.Errorf("building kubelet %s: %w", name, err)
		}
		if cs.paused[name] {
			k.Pause()
		}
		cs.kubelets[name] = k
		run = func() error { return k.Run(ctx) }
	}
	p := &proc{cancel: cancel, done: make(chan struct{})}
	cs.procs[name] = p
	cs.wg.Add(1)
	go func() {
		defer cs.wg.Done()
		defer close(p.done)
		if err := run(); err != nil && !errors.Is(err, context.Canceled) && ctx.Err() == nil {
			slog.Warn("component ended", "component", name, "err", err)
		}
	}()
	return nil
}

// crash stops component name's running instance without waiting for it
// and starts a fresh one once it has ended. It never blocks: crash
// functions of impl/faults call it from inside the component.
func (cs *components) crash(name string) {
	cs.mu.Lock()
	p := cs.procs[name]
	cs.mu.Unlock()
	if p == nil {
		return
	}
	p.cancel()
	cs.restarts.Add(1)
	cs.wg.Add(1)
	go func() {
		defer cs.wg.Done()
		<-p.done
		if err := cs.start(name); err != nil {
			slog.Error("restarting component", "component", name, "err", err)
		}
	}()
}

// restarted reports whether component name's current instance is running
// (not crashed and waiting for its restart).
func (cs *components) running(name string) bool {
	cs.mu.Lock()
	p := cs.procs[name]
	cs.mu.Unlock()
	if p == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// waitRunning waits (at most timeout) until every component runs.
func (cs *components) waitRunning(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var down []string
		for _, n := range componentNames() {
			if !cs.running(n) {
				down = append(down, n)
			}
		}
		if len(down) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			sort.Strings(down)
			return fmt.Errorf("components not running after %s: %v", timeout, down)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// pause and resume fail and recover a node: its kubelet (and every
// restarted instance of it) sends no heartbeats and syncs nothing.
func (cs *components) pause(node string) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.paused[node] = true
	cs.kubelets[node].Pause()
}

func (cs *components) resume(node string) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	delete(cs.paused, node)
	cs.kubelets[node].Resume()
}

// stop ends every component and waits for them.
func (cs *components) stop() {
	cs.mu.Lock()
	cs.stopping = true
	cs.mu.Unlock()
	cs.cancel()
	cs.wg.Wait()
}
