package bench

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"github.com/kubeproof/kubeproof/impl/controllermanager"
	"github.com/kubeproof/kubeproof/impl/kubelet"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
	"github.com/kubeproof/kubeproof/impl/pki"
	"github.com/kubeproof/kubeproof/impl/scheduler"
	schedconfig "github.com/kubeproof/kubeproof/impl/scheduler/config"
	"github.com/kubeproof/kubeproof/impl/storage/embedded"
)

// The node-memory workload separates issue 5's memory shares by process:
//
//   - this process: embedded etcd and the load generator (not measured);
//   - a `kubeproof apiserver` process: the API server's share (RSS);
//   - a node agent process (`kubeproof bench --node-agent-kubeconfig`):
//     the controller manager, the scheduler and N simulated kubelets
//     sharing one pod watch, i.e. everything "beyond the API server".
//
// The agent's live heap (after a forced GC) and RSS are read three times:
// with no kubelet, after N nodes are Ready, and after every pod is
// Running; per node and per pod are the differences divided by N and by
// the pod count.

// NodeMemoryConfig configures RunNodeMemory.
type NodeMemoryConfig struct {
	Nodes, Pods int
	// Rate is the pod arrival rate (pods/s; default 100, the arrival rate
	// of issue 5's latency target, so that memory is read in the scenario
	// the latency is: at a rate the pipeline cannot keep up with, what the
	// backlog holds and leaves behind is read as memory per pod).
	Rate     float64
	Timeout  time.Duration // for nodes Ready and pods Running (10 min)
	Progress func(Progress)
	// HeapProfile, when set, is where the agent writes its heap profile
	// once every pod is Running; the profile taken when the nodes are
	// Ready goes next to it with ".nodes" appended, so that
	// `go tool pprof -diff_base PATH.nodes PATH` shows what the pods hold,
	// and the agent's CPU profile from the first pod created to the last
	// one Running goes to PATH.cpu.
	HeapProfile string
	// AgentGOGC, when set, is the node agent's --gogc (its GC percent; 0
	// leaves it to the Go runtime and the environment); unset, the agent
	// uses sim.HostGCPercent as `kubeproof up` does.
	AgentGOGC *int
}

// NodeMemoryResult is what the node-memory workload measured.
type NodeMemoryResult struct {
	Nodes int `json:"nodes"`
	Pods  int `json:"pods"`
	// Agent: the controller manager + scheduler + kubelets process.
	AgentHeap [3]uint64 `json:"agentHeap"` // before nodes, after nodes, after pods
	AgentRSS  [3]int64  `json:"agentRss"`
	// APIServerRSS: the API server process at the same three points.
	APIServerRSS [3]int64 `json:"apiserverRss"`

	AgentHeapPerNode    float64       `json:"agentHeapPerNode"`
	AgentHeapPerPod     float64       `json:"agentHeapPerPod"`
	AgentRSSPerNode     float64       `json:"agentRssPerNode"`
	AgentRSSPerPod      float64       `json:"agentRssPerPod"`
	APIServerRSSPerNode float64       `json:"apiserverRssPerNode"`
	APIServerRSSPerPod  float64       `json:"apiserverRssPerPod"`
	AllRunningAfter     time.Duration `json:"allRunningAfter"`
	// CreateToRunning: from each create sent to the pod observed Running
	// (what the agent's GC policy costs, if anything, shows here).
	CreateToRunning Latencies `json:"createToRunning"`
	// AgentCPU is the CPU time (user + system) the agent process used
	// from the first pod created to the last one Running: what the
	// agent's GC setting costs, read independently of how loaded the
	// machine was (latency is not).
	AgentCPU time.Duration `json:"agentCpu"`

	// AgentClasses is the agent's Go runtime memory breakdown
	// (runtime/metrics, see memoryClasses) at the same three readings;
	// AgentClassesPerNode and AgentClassesPerPod their differences
	// divided by nodes and by pods, as for heap and RSS.
	AgentClasses        [3]map[string]uint64 `json:"agentClasses,omitempty"`
	AgentClassesPerNode map[string]float64   `json:"agentClassesPerNode,omitempty"`
	AgentClassesPerPod  map[string]float64   `json:"agentClassesPerPod,omitempty"`
}

// agentMemory is one reading the node agent reports.
type agentMemory struct {
	CPU     time.Duration     `json:"cpu,omitempty"` // "cpu": the process's CPU time so far
	Heap    uint64            `json:"heap"`
	RSS     int64             `json:"rss"`
	Classes map[string]uint64 `json:"classes,omitempty"`
	Err     string            `json:"err,omitempty"`
}

// memoryClasses are the runtime/metrics read next to RSS, by the short name
// the table prints. The /memory/classes/ ones partition what the Go runtime
// mapped (their sum is total); RSS is what of that is resident (released
// is not) plus the binary's own pages. gc/heap/goal is the heap size at
// which the next GC starts, goroutines the live goroutine count.
var memoryClasses = []struct{ name, metric string }{
	{"heap/objects", "/memory/classes/heap/objects:bytes"},
	{"heap/unused", "/memory/classes/heap/unused:bytes"},
	{"heap/free", "/memory/classes/heap/free:bytes"},
	{"heap/released", "/memory/classes/heap/released:bytes"},
	{"heap/stacks", "/memory/classes/heap/stacks:bytes"},
	{"os-stacks", "/memory/classes/os-stacks:bytes"},
	{"metadata/mcache/free", "/memory/classes/metadata/mcache/free:bytes"},
	{"metadata/mcache/inuse", "/memory/classes/metadata/mcache/inuse:bytes"},
	{"metadata/mspan/free", "/memory/classes/metadata/mspan/free:bytes"},
	{"metadata/mspan/inuse", "/memory/classes/metadata/mspan/inuse:bytes"},
	{"metadata/other", "/memory/classes/metadata/other:bytes"},
	{"other", "/memory/classes/other:bytes"},
	{"profiling/buckets", "/memory/classes/profiling/buckets:bytes"},
	{"total", "/memory/classes/total:bytes"},
	{"rss/anon", ""}, // VmRSS's parts (/proc/self/status)
	{"rss/file", ""},
	{"gc/heap/goal", "/gc/heap/goal:bytes"},
	// What a GC cycle marks: heap objects (a count), and the scannable
	// heap and stacks (bytes that may hold pointers).
	{"gc/heap/objects", "/gc/heap/objects:objects"},
	{"gc/scan/heap", "/gc/scan/heap:bytes"},
	{"gc/scan/stack", "/gc/scan/stack:bytes"},
	{"goroutines", "/sched/goroutines:goroutines"},
	{"gc/gogc", "/gc/gogc:percent"}, // the settings in effect
	{"gc/gomemlimit", "/gc/gomemlimit:bytes"},
}

// readMemoryClasses reads memoryClasses from runtime/metrics, and
// RssAnon and RssFile (the binary's resident pages) from /proc/self/status.
func readMemoryClasses() map[string]uint64 {
	var samples []metrics.Sample
	for _, c := range memoryClasses {
		if c.metric != "" {
			samples = append(samples, metrics.Sample{Name: c.metric})
		}
	}
	metrics.Read(samples)
	out := make(map[string]uint64, len(memoryClasses))
	for _, c := range memoryClasses {
		for _, s := range samples {
			if s.Name == c.metric && s.Value.Kind() == metrics.KindUint64 {
				out[c.name] = s.Value.Uint64()
			}
		}
	}
	if st, err := processStatus(os.Getpid()); err == nil {
		for name, field := range map[string]string{"rss/anon": "RssAnon", "rss/file": "RssFile"} {
			if v, ok := st[field]; ok {
				out[name] = uint64(v)
			}
		}
	}
	return out
}

// agentReading is the agent's answer to "mem": the live heap after a
// forced GC, VmRSS after freed memory was returned to the operating system
// (liveMemory), and the runtime's memory classes right after.
func agentReading() agentMemory {
	heap, rss := liveMemory()
	return agentMemory{Heap: heap, RSS: rss, Classes: readMemoryClasses()}
}

// classDiffs is (b[k]-a[k])/n for every class of b.
func classDiffs(a, b map[string]uint64, n float64) map[string]float64 {
	if a == nil || b == nil {
		return nil
	}
	out := make(map[string]float64, len(b))
	for k, v := range b {
		out[k] = (float64(v) - float64(a[k])) / n
	}
	return out
}

// RunNodeMemory runs the node-memory workload with bin (this binary) as
// the API server and node agent processes.
func RunNodeMemory(ctx context.Context, bin string, cfg NodeMemoryConfig) (NodeMemoryResult, error) {
	if cfg.Rate <= 0 {
		cfg.Rate = 100
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Minute
	}
	res := NodeMemoryResult{Nodes: cfg.Nodes, Pods: cfg.Pods}
	if cfg.Nodes <= 0 || cfg.Nodes > maxStartupNodes {
		return res, fmt.Errorf("node-memory: 1 to %d nodes, %d asked", maxStartupNodes, cfg.Nodes)
	}
	if fit := podsPerNode(resource.MustParse("4"), resource.MustParse("32Gi"), 110); fit*cfg.Nodes < cfg.Pods {
		return res, fmt.Errorf("%d pods do not fit on %d nodes (%d each)", cfg.Pods, cfg.Nodes, fit)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	dir, err := os.MkdirTemp("", "kubeproof-bench-nodememory-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	etcd, err := embedded.Start(ctx, embedded.Config{DataDir: filepath.Join(dir, "etcd"), UnsafeNoFsync: true})
	if err != nil {
		return res, err
	}
	defer etcd.Close()

	certDir := filepath.Join(dir, "pki")
	ca, err := pki.LoadOrCreateCA(certDir, "kubeproof-ca")
	if err != nil {
		return res, err
	}
	admin, err := ca.IssueClient("bench-admin", []string{"system:masters"})
	if err != nil {
		return res, err
	}
	port, err := freePort()
	if err != nil {
		return res, err
	}
	// A service account signing key: pods' kube-api-access volumes need
	// the TokenRequest API.
	saKey := filepath.Join(dir, "sa.key")
	if err := writeRSAKey(saKey); err != nil {
		return res, err
	}
	api := exec.CommandContext(ctx, bin, "apiserver",
		"--etcd-servers", strings.Join(etcd.Endpoints(), ","),
		"--cert-dir", certDir, "--secure-port", strconv.Itoa(port), "--log-level", "error",
		"--service-account-signing-key-file", saKey, "--service-account-key-file", saKey)
	api.Stdout, api.Stderr = os.Stderr, os.Stderr
	api.Cancel = func() error { return api.Process.Signal(syscall.SIGTERM) }
	if err := api.Start(); err != nil {
		return res, fmt.Errorf("starting %s apiserver: %w", bin, err)
	}
	defer func() { _ = api.Process.Signal(syscall.SIGTERM); _ = api.Wait() }()

	server := "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	restCfg := pki.RESTConfig(server, ca.CertPEM, admin)
	kubeconfig := filepath.Join(dir, "admin.kubeconfig")
	if err := pki.WriteKubeconfig(kubeconfig, pki.Kubeconfig(server, ca.CertPEM, "bench-admin", admin)); err != nil {
		return res, err
	}
	cs, err := kubernetes.NewForConfig(APIClientConfig(restCfg, runtime.ContentTypeProtobuf))
	if err != nil {
		return res, err
	}
	if err := waitForAPI(ctx, cs, 60*time.Second); err != nil {
		return res, err
	}

	agentArgs := []string{"bench", "--node-agent-kubeconfig", kubeconfig}
	if cfg.AgentGOGC != nil {
		agentArgs = append(agentArgs, "--node-agent-gogc", strconv.Itoa(*cfg.AgentGOGC))
	}
	if cfg.HeapProfile != "" {
		agentArgs = append(agentArgs, "--heap-profile", cfg.HeapProfile)
	}
	agent := exec.CommandContext(ctx, bin, agentArgs...)
	agent.Stderr = os.Stderr
	agent.Cancel = func() error { return agent.Process.Signal(syscall.SIGTERM) }
	toAgent, err := agent.StdinPipe()
	if err != nil {
		return res, err
	}
	fromAgent, err := agent.StdoutPipe()
	if err != nil {
		return res, err
	}
	if err := agent.Start(); err != nil {
		return res, fmt.Errorf("starting the node agent: %w", err)
	}
	defer func() { _ = toAgent.Close(); _ = agent.Wait() }()
	replies := bufio.NewScanner(fromAgent)
	ask := func(cmd string) (agentMemory, error) {
		if _, err := fmt.Fprintln(toAgent, cmd); err != nil {
			return agentMemory{}, fmt.Errorf("node agent: %w", err)
		}
		if !replies.Scan() {
			return agentMemory{}, fmt.Errorf("node agent ended: %v", replies.Err())
		}
		var m agentMemory
		if err := json.Unmarshal(replies.Bytes(), &m); err != nil {
			return m, fmt.Errorf("node agent said %q: %w", replies.Text(), err)
		}
		if m.Err != "" {
			return m, errors.New("node agent: " + m.Err)
		}
		return m, nil
	}
	read := func(i int) error {
		time.Sleep(2 * time.Second) // let both processes settle
		m, err := settledMemory(ctx, ask)
		if err != nil {
			return err
		}
		res.AgentHeap[i], res.AgentRSS[i], res.AgentClasses[i] = m.Heap, m.RSS, m.Classes
		res.APIServerRSS[i], _, err = processRSS(api.Process.Pid)
		return err
	}

	prog := &progressLine{workload: "node-memory"}
	prog.set("start", func() int { return 0 }, 0)
	if cfg.Progress != nil {
		stop := prog.report(ctx, cfg.Progress)
		defer stop()
	}
	if err := read(0); err != nil {
		return res, err
	}
	if _, err := ask(fmt.Sprintf("nodes %d", cfg.Nodes)); err != nil {
		return res, err
	}
	if err := waitNodesReady(ctx, cs, cfg.Nodes, cfg.Timeout, prog); err != nil {
		return res, err
	}
	if err := read(1); err != nil {
		return res, err
	}
	if cfg.HeapProfile != "" {
		if _, err := ask("profile .nodes"); err != nil {
			return res, err
		}
	}
	ns := "bench-node-memory"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return res, fmt.Errorf("creating namespace: %w", err)
	}
	if err := ensureDefaultServiceAccount(ctx, cs, ns); err != nil {
		return res, err
	}
	tr, stopWatch, err := watchStartup(ctx, cs, ns)
	if err != nil {
		return res, err
	}
	if cfg.HeapProfile != "" {
		if _, err := ask("cpuprofile " + cfg.HeapProfile + ".cpu"); err != nil {
			stopWatch()
			return res, err
		}
	}
	cpuBefore, err := ask("cpu")
	if err != nil {
		stopWatch()
		return res, err
	}
	start := time.Now()
	if err := createPodsAtRate(ctx, cs, ns, 0, cfg.Pods, cfg.Rate, tr, prog); err != nil {
		stopWatch()
		return res, err
	}
	prog.set("wait running", func() int { return int(tr.running.Load()) }, cfg.Pods)
	deadline := time.Now().Add(cfg.Timeout)
	for int(tr.running.Load()) < cfg.Pods {
		if time.Now().After(deadline) {
			stopWatch()
			return res, fmt.Errorf("only %d of %d pods Running after %s", tr.running.Load(), cfg.Pods, cfg.Timeout)
		}
		select {
		case <-ctx.Done():
			stopWatch()
			return res, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	res.AllRunningAfter = time.Since(start)
	stopWatch()
	cpuAfter, err := ask("cpu")
	if err != nil {
		return res, err
	}
	res.AgentCPU = cpuAfter.CPU - cpuBefore.CPU
	running, _, _ := tr.results()
	res.CreateToRunning = Summarize(running)
	if cfg.HeapProfile != "" {
		if _, err := ask("cpuprofile"); err != nil {
			return res, err
		}
	}
	if err := read(2); err != nil {
		return res, err
	}
	if cfg.HeapProfile != "" {
		if _, err := ask("profile"); err != nil {
			return res, err
		}
	}
	n, p := float64(cfg.Nodes), float64(max(cfg.Pods, 1))
	res.AgentHeapPerNode = (float64(res.AgentHeap[1]) - float64(res.AgentHeap[0])) / n
	res.AgentHeapPerPod = (float64(res.AgentHeap[2]) - float64(res.AgentHeap[1])) / p
	res.AgentRSSPerNode = float64(res.AgentRSS[1]-res.AgentRSS[0]) / n
	res.AgentRSSPerPod = float64(res.AgentRSS[2]-res.AgentRSS[1]) / p
	res.APIServerRSSPerNode = float64(res.APIServerRSS[1]-res.APIServerRSS[0]) / n
	res.APIServerRSSPerPod = float64(res.APIServerRSS[2]-res.APIServerRSS[1]) / p
	res.AgentClassesPerNode = classDiffs(res.AgentClasses[0], res.AgentClasses[1], n)
	res.AgentClassesPerPod = classDiffs(res.AgentClasses[1], res.AgentClasses[2], p)
	return res, nil
}

// settledMemory reads the agent's memory until its live heap has reached
// its floor, and returns the reading with the lowest live heap. On a loaded
// machine the agent still drains informer backlogs, in-flight relists and
// retried status writes for a while after the last pod turned Running, and
// every kubelet resyncs its pods every 20 s; that work in flight is not
// what a pod costs. Readings are taken settleEvery apart until settleQuiet
// readings in a row (longer than a resync period) brought no new low more
// than 1% below the lowest so far, at most settleReads more. (An earlier
// criterion stopped at the first reading no more than 2% below the one
// before, which on the 1,000-node runs could fall mid-backlog, while it
// drained slowly or a resync briefly raised the heap.)
func settledMemory(ctx context.Context, ask func(string) (agentMemory, error)) (agentMemory, error) {
	return lowestHeap(ctx, settleRule{every: settleEvery, reads: settleReads + 1, quiet: settleQuiet},
		func(m agentMemory) uint64 { return m.Heap }, func() (agentMemory, error) { return ask("mem") })
}

// settleReads readings settleEvery apart: at most three minutes; settleQuiet
// readings without a new low end the wait (30 s, longer than the kubelets'
// 20 s resync). Variables so tests can shorten them.
var (
	settleReads = 36
	settleQuiet = 6
	settleEvery = 5 * time.Second
)

// RunNodeAgent is the node agent process: the controller manager and the
// scheduler against the API server of kubeconfig's rest config, and, on
// request, simulated kubelets sharing one pod watch. It reads commands
// from in, one per line, and answers each with one JSON line on out:
//
//	mem       the live heap after a forced GC, VmRSS, and the Go
//	          runtime's memory classes (memoryClasses)
//	cpu       the process's CPU time so far (user + system)
//	nodes N   starts kubelets bench-node-1 … bench-node-N
//	profile [SUFFIX]   writes the heap profile to heapProfile (+SUFFIX),
//	                   and the goroutines to the same path + ".goroutines"
//	cpuprofile PATH    starts a CPU profile to PATH
//	cpuprofile         stops it
//
// It stops when in ends or ctx is done.
func RunNodeAgent(ctx context.Context, restCfg *rest.Config, heapProfile string, in io.Reader, out io.Writer) error {
	if heapProfile != "" {
		// Sample every 4 KiB allocated rather than every 512 KiB, so the
		// profile attributes the per-pod bytes to their holders precisely
		// (the heap figures themselves come from MemStats, exact either
		// way).
		goruntime.MemProfileRate = 4096
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	logger := slog.New(slog.DiscardHandler)
	cmCfg := APIClientConfig(restCfg, runtime.ContentTypeProtobuf)
	cmCfg.QPS, cmCfg.Burst = 1000, 2000
	controllermanager.QuietWarnings(cmCfg)
	cmClient, err := kubernetes.NewForConfig(cmCfg)
	if err != nil {
		return err
	}
	schedClient, err := kubernetes.NewForConfig(APIClientConfig(restCfg, runtime.ContentTypeProtobuf))
	if err != nil {
		return err
	}
	// On the way out: stop everything, wait for it, then clean up behind
	// it (the kubelets' directories, their event broadcaster).
	var wg sync.WaitGroup
	var cleanup []func()
	defer func() {
		cancel()
		wg.Wait()
		for i := len(cleanup) - 1; i >= 0; i-- {
			cleanup[i]()
		}
	}()
	kubeletClient, err := kubernetes.NewForConfig(APIClientConfig(restCfg, runtime.ContentTypeProtobuf))
	if err != nil {
		return err
	}
	// One pod cache for the kubelets' shared pod source, the controller
	// manager and the scheduler, which all watch every pod anyway: one copy
	// of each pod (see kubelet.NewPodInformer). Upstream's scheduler and
	// controller manager are processes of their own and cannot share; in
	// one process a shared informer is what client-go's SharedIndexInformer
	// is for, like the controllers sharing one in kube-controller-manager.
	// Each component keeps its own handlers, queues and caches
	// (scheduler.Config.PodInformer, controllermanager.Config.PodInformer).
	pods := kubelet.NewPodInformer(kubeletClient, 0)
	wg.Go(func() { pods.RunWithContext(ctx) })
	ctrlCfg := controllermanager.DefaultConfig()
	ctrlCfg.RootCA = restCfg.TLSClientConfig.CAData // kube-root-ca.crt, which pods' projected volumes need
	ctrlCfg.PodInformer = pods
	// The agent runs the only controller manager and scheduler: no leader
	// election, which on an API server throttling with 429s (a loaded
	// machine, 1,000 kubelets) could lose its lease and stop either for
	// good, leaving the pods Pending and the measurement meaningless.
	ctrlCfg.LeaderElect = false
	wg.Go(func() { _ = controllermanager.Run(ctx, cmClient, cmCfg, ctrlCfg) })
	schedConf := schedconfig.Default()
	schedConf.LeaderElection.LeaderElect = new(false)
	s, err := scheduler.New(ctx, schedClient, scheduler.Config{Configuration: schedConf, Logger: logger, PodInformer: pods})
	if err != nil {
		return fmt.Errorf("building scheduler: %w", err)
	}
	wg.Go(func() { _ = s.Run(ctx) })

	dir, err := os.MkdirTemp(volumeTmpfs(), "kubeproof-node-agent-")
	if err != nil {
		return err
	}
	cleanup = append(cleanup, func() { _ = os.RemoveAll(dir) })
	cpu, mem := resource.MustParse("4"), resource.MustParse("32Gi")
	dispatcher := kubelet.NewPodDispatcherWithInformer(pods)
	// The kubelets share their client, so they share one event broadcaster
	// too (each records as its own node): one correlation cache of
	// client-go's fixed size instead of one per node.
	events := record.NewBroadcaster(record.WithContext(ctx))
	events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kubeletClient.CoreV1().Events("")})
	cleanup = append(cleanup, events.Shutdown)
	started := false
	var cpuProfile func() error // stops the running CPU profile
	defer func() {
		if cpuProfile != nil {
			_ = cpuProfile()
		}
	}()

	reply := func(m agentMemory) {
		b, _ := json.Marshal(m)
		fmt.Fprintf(out, "%s\n", b)
	}
	lines := bufio.NewScanner(in)
	for lines.Scan() {
		f := strings.Fields(lines.Text())
		switch {
		case len(f) == 1 && f[0] == "cpu":
			reply(agentMemory{CPU: processCPU()})
		case len(f) == 1 && f[0] == "mem":
			reply(agentReading())
		case len(f) == 2 && f[0] == "cpuprofile" && cpuProfile == nil:
			if cpuProfile, err = startCPUProfile(f[1]); err != nil {
				reply(agentMemory{Err: err.Error()})
				continue
			}
			reply(agentMemory{})
		case len(f) == 1 && f[0] == "cpuprofile" && cpuProfile != nil:
			err := cpuProfile()
			cpuProfile = nil
			if err != nil {
				reply(agentMemory{Err: err.Error()})
				continue
			}
			reply(agentMemory{})
		case (len(f) == 1 || len(f) == 2) && f[0] == "profile":
			path := heapProfile
			if len(f) == 2 {
				path += f[1]
			}
			if err := writeHeapProfile(path); err != nil {
				reply(agentMemory{Err: err.Error()})
				continue
			}
			if err := writeGoroutineProfile(path + ".goroutines"); err != nil {
				reply(agentMemory{Err: err.Error()})
				continue
			}
			reply(agentMemory{})
		case len(f) == 2 && f[0] == "nodes" && !started:
			n, err := strconv.Atoi(f[1])
			if err != nil || n < 1 || n > maxStartupNodes {
				reply(agentMemory{Err: fmt.Sprintf("nodes: 1 to %d", maxStartupNodes)})
				continue
			}
			if err := startAgentKubelets(ctx, &wg, kubeletClient, dispatcher, events, n, cpu, mem, dir, logger); err != nil {
				reply(agentMemory{Err: err.Error()})
				continue
			}
			started = true
			wg.Go(func() { _ = dispatcher.Run(ctx) })
			reply(agentMemory{})
		default:
			reply(agentMemory{Err: fmt.Sprintf("unknown command %q", lines.Text())})
		}
	}
	return lines.Err()
}

// volumeTmpfs is where the agent's kubelets keep their pod directories:
// on a tmpfs (/dev/shm) if the machine has one, as upstream's kubelet
// keeps secret and projected volumes (memory-backed, so on neither their
// files count in a kubelet's RSS), else in the default temporary
// directory. On this machine's shared disk, creating each pod's volume
// directories and files took a third of the agent's CPU during the burst
// of pods, and the backlog it built up raised the heap the burst left
// behind.
func volumeTmpfs() string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if f, err := os.CreateTemp("/dev/shm", "kubeproof-probe-"); err == nil {
			name := f.Name()
			f.Close()
			os.Remove(name)
			return "/dev/shm"
		}
	}
	return ""
}

// writeGoroutineProfile writes the goroutines' stacks, grouped, as text
// (what holds the heap/stacks class).
func writeGoroutineProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("goroutine").WriteTo(f, 1); err != nil {
		f.Close()
		return fmt.Errorf("writing goroutine profile: %w", err)
	}
	return f.Close()
}

// startCPUProfile starts a CPU profile to path and returns what stops it
// (once; later calls do nothing).
func startCPUProfile(path string) (func() error, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting CPU profile: %w", err)
	}
	return sync.OnceValue(func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}), nil
}

func writeRSAKey(path string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600)
}

func startAgentKubelets(ctx context.Context, wg *sync.WaitGroup, cs kubernetes.Interface, d *kubelet.PodDispatcher, events record.EventBroadcaster, n int, cpu, mem resource.Quantity, dir string, logger *slog.Logger) error {
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("bench-node-%d", i+1)
		cidr := fmt.Sprintf("10.%d.%d.0/24", 244+i/256, i%256)
		rt, err := sim.New(sim.Config{PodCIDR: cidr})
		if err != nil {
			return fmt.Errorf("runtime of %s: %w", name, err)
		}
		k, err := kubelet.New(ctx, cs, kubelet.Config{
			NodeName: name, PodCIDR: cidr, CPU: cpu, Memory: mem, MaxPods: 110, ExternalPodSource: true,
			RootDir: filepath.Join(dir, "kubelet"), PodLogsDir: filepath.Join(dir, "pod-logs"), Workers: 2,
			Logger:   logger,
			Recorder: events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: kubelet.EventComponent, Host: name}),
		}, rt)
		if err != nil {
			return fmt.Errorf("kubelet %s: %w", name, err)
		}
		d.Add(k)
		wg.Go(func() { _ = k.Run(ctx) })
	}
	return nil
}
