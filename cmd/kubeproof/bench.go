package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubeproof/kubeproof/bench"
	"github.com/kubeproof/kubeproof/impl/cluster"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
	"github.com/kubeproof/kubeproof/model"
)

// newBenchCommand is `kubeproof bench [WORKLOAD...]`.
func newBenchCommand() *cobra.Command {
	var (
		logs        logOptions
		kubeconfig  string
		kubeContext string
		etcdServers []string
		clients     []int
		duration    time.Duration
		pods        int
		outDir      string
		watchCache  bool
		etcdGRPC    bool

		schedProcess    bool
		fsyncOff        bool
		startupNodes    int
		heapFloor       string
		rate            float64
		startupDuration time.Duration
		heapProfile     string
		cpuProfile      string
		cpuProfileEvery time.Duration
		startupIdle     time.Duration
		startupControl  bool
		repeat          int
		compare         string
		noise           float64
		nodeAgent       string
		upControl       string
		memNodes        int
		memPods         int
		agentGOGC       int
		watchers        []int
		eventRate       float64
		watchDuration   time.Duration
		watchConns      int
		checkerConfigs  []string
		historySizes    []int
	)
	cmd := &cobra.Command{
		Use:   "bench [WORKLOAD...]",
		Short: "Run benchmark workloads and print a table",
		Long: `Run benchmark workloads against an in-process kubeproof control plane, or against
any API server given by --kubeconfig (and --context), and print Markdown tables.

Workloads:
  writes            1 KiB ConfigMap creates/s through the API server (client-go protobuf
                    and JSON clients, and a lean HTTP/2 protobuf client doing about etcd
                    clientv3's work per call: "apiserver (protobuf, http2)") at each
                    --clients level, next to raw etcd Txn creates/s (clientv3) on the
                    same etcd: with an in-process cluster both over gRPC on loopback TCP
                    ("etcd Txn") and through etcd's in-process client ("etcd Txn
                    (in-process)", how the API server reaches its embedded etcd unless
                    --apiserver-etcd-grpc); with --kubeconfig, over gRPC to --etcd-servers.
                    Each row also gives the process's CPU per operation (the whole stack's
                    when it runs in-process); a second table gives each API row's share of
                    the raw Txn rate over gRPC at its level, by rate and by CPU.
  updates           compare-and-swap updates/s of 1 KiB ConfigMaps at each --clients level for
                    --duration: each client PUTs its own object with the last resourceVersion
                    (protobuf and JSON clients), next to raw etcd Txn
                    If(ModRevision==last) Then Put; conflicts count as errors.
  watch-fanout      --watchers clients (each level in turn) watch one namespace's ConfigMaps
                    (protobuf) while a writer creates them at --event-rate for
                    --watch-duration, each watcher on its own connection (or sharing
                    --watch-connections); delivery latency (receive − write time carried in
                    the object) p50/p99/max; every watcher must get every event within
                    60 s of the last write (missing ones are errors).
  apiserver-memory  RSS of a separate 'kubeproof apiserver' process after --pods pods.
  scheduling-basic-500
                    scheduler_perf SchedulingBasic/500Nodes_1000Pods: nodes and pods are
                    created first, then the scheduler starts; SchedulingThroughput (pods
                    bound per 1 s window: Average, Perc50/90/99), attempt latency p50/p99
                    from the scheduler's histogram, the scheduler's CPU time and RSS.
  scheduling-basic-5000
                    the same, SchedulingBasic/5000Nodes_10000Pods.
  scheduling:NAME   any workload of bench/workloads/*.yaml by name, e.g.
                    scheduling:TopologySpreading/5000Nodes, scheduling:MixedChurn/5000Nodes
                    (also SchedulingNodeAffinity/5000Nodes, SchedulingPodAntiAffinity/5000Nodes,
                    Preemption/500Nodes: 2000 low-priority pods fill the nodes' CPU, then 500
                    high-priority pods are measured, each preempting one).
                    The scheduler runs as a separate 'kubeproof scheduler' process
                    (--scheduler-process, default) so CPU and RSS are its own; with
                    --kubeconfig, a scheduler already running there is measured (binding
                    throughput only).
  startup           pod startup latency in one 'kubeproof up' process (its configuration,
                    --startup-nodes simulated nodes), pods arriving at --rate per second for
                    --startup-duration; creation→Running/Ready p50/p99/max; memory per
                    simulated node and per pod beyond the API server's share (against a
                    control process with etcd and the API server only, holding the same
                    nodes, pods and events).
  startup-1000x30000
                    the same with 1,000 nodes and 30,000 pods at --rate (300 s at 100/s).
  node-memory       issue 5's memory shares by process: a 'kubeproof apiserver' process,
                    and a node agent process (controller manager, scheduler and
                    --memory-nodes simulated kubelets); --memory-pods pods created at
                    --rate and Running; the agent's live heap and RSS per node and per pod, and the
                    API server's RSS per node and per pod, separately.
  checkers          the model checker on each --checker-configs configuration (distinct
                    states, depth, time, distinct states/s, bytes per state), then the
                    linearizability check time of generated linearizable histories of
                    each --history-sizes operation count from 16 clients (in this process;
                    --kubeconfig does not apply).

With no WORKLOAD, runs writes.

--repeat N runs the whole list N times (workloads interleaved, so drift
hits every workload alike) and prints each metric's median and range.
--compare BASELINE (a results.json, or a directory of them such as
bench/baselines/2026-11-21) compares medians by ratio and gives a verdict
per metric: a change is a regression only beyond the noise (the larger of
--noise and either side's run-to-run range; with repeats on both sides,
only when the ranges do not overlap). The command fails when a metric
regressed. --out writes results.json, results.md, report.html (tables and
inline SVG charts) and charts/*.svg.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := logs.logger(); err != nil {
				return err
			}
			if nodeAgent != "" {
				// The node-memory workload's child process.
				restConfig, err := clientcmd.BuildConfigFromFlags("", nodeAgent)
				if err != nil {
					return fmt.Errorf("loading kubeconfig: %w", err)
				}
				// The agent hosts simulated nodes: the same GC policy as
				// `kubeproof up` (sim.ApplyHostGCPercent).
				gc := sim.ApplyHostGCPercent(agentGOGC, cmd.Flags().Changed("node-agent-gogc"))
				if logger, err := logs.logger(); err == nil {
					logger.Info("node agent", "gc", gc)
				}
				return bench.RunNodeAgent(cmd.Context(), restConfig, heapProfile, cmd.InOrStdin(), cmd.OutOrStdout())
			}
			if upControl != "" {
				// The startup workloads' control process (memory beyond
				// the API server's share).
				return bench.RunUpControl(cmd.Context(), upControl, cmd.OutOrStdout())
			}
			start := time.Now()
			defer func() {
				fmt.Fprintf(cmd.ErrOrStderr(), "bench: total elapsed %s\n", time.Since(start).Round(time.Second))
			}()
			if len(args) == 0 {
				args = []string{"writes"}
			}
			if repeat < 1 {
				return fmt.Errorf("--repeat must be at least 1")
			}
			if err := checkWorkloads(args, kubeconfig != ""); err != nil {
				return err
			}
			// remote is the API server of --kubeconfig and --context; nil
			// runs the workloads against servers of their own.
			var remote *rest.Config
			if kubeconfig != "" {
				var err error
				if remote, err = loadClientConfig(kubeconfig, kubeContext); err != nil {
					return err
				}
			} else if kubeContext != "" {
				return errors.New("--context needs --kubeconfig: without it the workloads run against servers of their own")
			}
			var baseline *bench.Report
			if compare != "" {
				b, err := bench.LoadReport(compare)
				if err != nil {
					return err
				}
				baseline = &b
			}
			out := cmd.OutOrStdout()
			machine := bench.ThisMachine()
			report := bench.Report{Machine: machine, Repeat: repeat}
			var md bytes.Buffer
			for run := 1; run <= repeat; run++ {
				for _, w := range args {
					if repeat > 1 {
						fmt.Fprintf(cmd.ErrOrStderr(), "run %d of %d: %s\n", run, repeat, w)
						fmt.Fprintf(&md, "<!-- run %d of %d -->\n", run, repeat)
					}
					wStart := time.Now()
					switch w {
					case "writes", "updates":
						results, err := runWritesWorkload(cmd.Context(), out, w, remote, etcdServers, clients, duration, targetConfig{watchCache, etcdGRPC}, cpuProfile)
						if err != nil {
							return err
						}
						report.Writes = append(report.Writes, results...)
						fmt.Fprintln(&md, "## "+w)
						if w == "updates" {
							bench.WriteUpdatesTable(&md, machine, results)
						} else {
							bench.WriteTable(&md, machine, results)
							bench.WriteShareTable(&md, results)
						}
					case "watch-fanout":
						cfg := bench.WatchFanoutConfig{Watchers: watchers, Rate: eventRate, Duration: watchDuration, Connections: watchConns}
						results, err := runWatchFanoutWorkload(cmd.Context(), out, remote, cfg, targetConfig{watchCache, etcdGRPC})
						if err != nil {
							return err
						}
						report.WatchFanout = append(report.WatchFanout, results...)
						fmt.Fprintln(&md, "## watch-fanout")
						bench.WriteWatchFanoutTable(&md, machine, results)
					case "apiserver-memory":
						self, err := os.Executable()
						if err != nil {
							return err
						}
						fmt.Fprintf(out, "creating %d pods through a separate API server process...\n", pods)
						res, err := bench.APIServerMemory(cmd.Context(), self, pods, watchCache)
						if err != nil {
							return err
						}
						report.APIServerMemory = append(report.APIServerMemory, res)
						fmt.Fprintln(&md, "## apiserver-memory")
						fmt.Fprintf(&md, "| pods | RSS | peak RSS | create time | watch cache |\n|---:|---:|---:|---:|---|\n| %d | %.0f MiB | %.0f MiB | %s | %v |\n",
							res.Pods, float64(res.RSSBytes)/(1<<20), float64(res.PeakRSSBytes)/(1<<20), res.CreateTime.Round(time.Millisecond), watchCache)
					case "node-memory":
						self, err := os.Executable()
						if err != nil {
							return err
						}
						progress := newProgressLine(cmd.ErrOrStderr())
						nmCfg := bench.NodeMemoryConfig{Nodes: memNodes, Pods: memPods, Rate: rate, HeapProfile: heapProfile, Progress: progress.print}
						if cmd.Flags().Changed("node-agent-gogc") {
							nmCfg.AgentGOGC = &agentGOGC
						}
						res, err := bench.RunNodeMemory(cmd.Context(), self, nmCfg)
						progress.end()
						if err != nil {
							return err
						}
						report.NodeMemory = append(report.NodeMemory, res)
						fmt.Fprintln(&md, "## node-memory")
						bench.WriteNodeMemoryTable(&md, []bench.NodeMemoryResult{res})
					case "scheduling-basic-500", "scheduling-basic-5000":
						name := map[string]string{"scheduling-basic-500": "SchedulingBasic/500Nodes_1000Pods", "scheduling-basic-5000": "SchedulingBasic/5000Nodes_10000Pods"}[w]
						res, err := runSchedulingWorkload(cmd.Context(), cmd.ErrOrStderr(), name, remote, schedProcess, fsyncOff)
						if err != nil {
							return err
						}
						report.Scheduling = append(report.Scheduling, res)
						fmt.Fprintln(&md, "## "+w)
						bench.WriteSchedulingTable(&md, machine, []bench.SchedulingResult{res})
					case "startup", "startup-1000x30000":
						cfg := bench.StartupConfig{Nodes: startupNodes, Rate: rate, Pods: int(rate * startupDuration.Seconds()), UnsafeNoFsync: fsyncOff, HeapProfile: heapProfile, CPUProfile: cpuProfile, CPUProfileEvery: cpuProfileEvery, Idle: startupIdle}
						if w == "startup-1000x30000" {
							cfg.Nodes, cfg.Pods = 1000, 30000
						}
						progress := newProgressLine(cmd.ErrOrStderr())
						cfg.Progress = progress.print
						self, err := os.Executable()
						if err != nil {
							return err
						}
						cfg.ControlBinary = self // the control runs in a process of its own
						cfg.SkipControl = !startupControl
						floor, err := heapFloorBytes(heapFloor, 1)
						if err != nil {
							return err
						}
						cfg.GCHeapFloorPerNode = floor
						res, err := bench.RunStartup(cmd.Context(), cfg)
						progress.end()
						if err != nil {
							return err
						}
						report.Startup = append(report.Startup, res)
						fmt.Fprintln(&md, "## "+w)
						bench.WriteStartupTable(&md, machine, []bench.StartupResult{res})
					case "checkers":
						progress := newProgressLine(cmd.ErrOrStderr())
						res, err := bench.RunCheckers(cmd.Context(), bench.CheckersConfig{Configs: checkerConfigs, HistorySizes: historySizes, Progress: progress.print})
						progress.end()
						if err != nil {
							return err
						}
						report.Checkers = append(report.Checkers, res)
						fmt.Fprintln(&md, "## checkers")
						bench.WriteCheckersTable(&md, machine, res)
					default:
						if name, ok := strings.CutPrefix(w, "scheduling:"); ok {
							res, err := runSchedulingWorkload(cmd.Context(), cmd.ErrOrStderr(), name, remote, schedProcess, fsyncOff)
							if err != nil {
								return err
							}
							report.Scheduling = append(report.Scheduling, res)
							fmt.Fprintln(&md, "## "+name)
							bench.WriteSchedulingTable(&md, machine, []bench.SchedulingResult{res})
							break
						}
						return fmt.Errorf("unknown workload %q", w) // checkWorkloads let it through
					}
					fmt.Fprintln(&md)
					fmt.Fprintf(cmd.ErrOrStderr(), "bench: %s took %s\n", w, time.Since(wStart).Round(time.Second))
				}
			}
			if repeat > 1 {
				fmt.Fprintf(&md, "## Median and range over %d runs\n\n", repeat)
				bench.WriteSpreadTable(&md, report.Metrics())
				fmt.Fprintln(&md)
			}
			var comparisons []bench.Comparison
			if baseline != nil {
				comparisons = bench.Compare(baseline.Metrics(), report.Metrics(), noise)
				fmt.Fprintf(&md, "## Against %s (commit %s, load average %s; this run's load average %s)\n\n", compare, baseline.Machine.Commit, orUnknown(baseline.Machine.LoadAverage), orUnknown(machine.LoadAverage))
				report.BaselineWarnings = bench.MachineWarnings(baseline.Machine, machine)
				for _, w := range report.BaselineWarnings {
					fmt.Fprintf(&md, "Warning: %s.\n\n", w)
				}
				bench.WriteComparisonTable(&md, comparisons)
				fmt.Fprintf(&md, "\n%d regression(s).\n", bench.Regressions(comparisons))
			}
			fmt.Fprintln(out)
			_, _ = io.Copy(out, bytes.NewReader(md.Bytes()))
			if outDir != "" {
				if err := bench.WriteResults(outDir, report, md.Bytes(), comparisons); err != nil {
					return err
				}
			}
			if n := bench.Regressions(comparisons); n > 0 {
				return fmt.Errorf("%d metric(s) regressed against %s", n, compare)
			}
			return nil
		},
	}
	fs := cmd.Flags()
	logs.addFlags(fs)
	fs.StringVar(&kubeconfig, "kubeconfig", "", "Benchmark this API server instead of an in-process kubeproof.")
	fs.StringVar(&kubeContext, "context", "", "With --kubeconfig: the kubeconfig context to use (default: its current-context).")
	fs.StringSliceVar(&etcdServers, "etcd-servers", nil, "With --kubeconfig: the etcd behind it, for the raw etcd comparison.")
	fs.IntSliceVar(&clients, "clients", []int{1, 16, 64, 256}, "Concurrent clients of the writes and updates workloads.")
	fs.DurationVar(&duration, "duration", 10*time.Second, "Duration of each writes and updates measurement.")
	fs.IntSliceVar(&watchers, "watchers", []int{1, 10, 100, 1000}, "Watcher counts of the watch-fanout workload.")
	fs.Float64Var(&eventRate, "event-rate", 100, "Events per second the watch-fanout writer creates.")
	fs.DurationVar(&watchDuration, "watch-duration", 10*time.Second, "How long the watch-fanout writer writes at each --watchers level.")
	fs.IntVar(&watchConns, "watch-connections", 0, "HTTP/2 connections the watch-fanout watchers share (0: one per watcher, as separate clients).")
	fs.IntVar(&pods, "pods", 10000, "Pods of the apiserver-memory workload.")
	fs.StringVar(&outDir, "out", "", "Directory for results.json, results.md, report.html and charts/*.svg.")
	fs.IntVar(&repeat, "repeat", 1, "Run the workload list this many times; report each metric's median and range.")
	fs.StringVar(&compare, "compare", "", "Baseline results.json, or a directory of them, to compare against (fails on a regression).")
	fs.Float64Var(&noise, "noise", bench.DefaultNoise, "Relative change treated as noise when comparing (raised to the runs' own range).")
	fs.BoolVar(&watchCache, "watch-cache", true, "In-process API servers use the watch cache.")
	fs.BoolVar(&etcdGRPC, "apiserver-etcd-grpc", false, "In-process API servers of writes, updates and watch-fanout reach the embedded etcd over gRPC on loopback TCP, as they would --etcd-servers (default: etcd's in-process client).")
	fs.BoolVar(&schedProcess, "scheduler-process", true, "Scheduling workloads run the scheduler as a separate 'kubeproof scheduler' process (false: in-process; CPU and RSS are then the whole process's).")
	fs.BoolVar(&fsyncOff, "unsafe-no-fsync", false, "Scheduling and startup workloads turn fsync off in the embedded etcd.")
	fs.IntVar(&startupNodes, "startup-nodes", 100, "Simulated nodes of the startup workload.")
	fs.StringVar(&heapFloor, "gc-heap-floor-per-node", heapFloorDefault(), "Startup workloads' heap goal floor per simulated node, as 'kubeproof up --gc-heap-floor-per-node' (0: none; GOGC or GOMEMLIMIT in the environment turn it off).")
	fs.Float64Var(&rate, "rate", 100, "Pod arrival rate (pods/s) of the startup and node-memory workloads.")
	fs.DurationVar(&startupDuration, "startup-duration", 30*time.Second, "How long pods arrive in the startup workload.")
	fs.IntVar(&memNodes, "memory-nodes", 100, "Simulated nodes of the node-memory workload.")
	fs.IntVar(&memPods, "memory-pods", 3000, "Pods of the node-memory workload.")
	fs.StringVar(&nodeAgent, "node-agent-kubeconfig", "", "Run as the node-memory workload's node agent against this kubeconfig (internal).")
	_ = fs.MarkHidden("node-agent-kubeconfig")
	fs.StringVar(&upControl, "up-control", "", "Run as the startup workloads' control process with this request file (internal).")
	_ = fs.MarkHidden("up-control")
	fs.IntVar(&agentGOGC, "node-agent-gogc", sim.HostGCPercent, "GC percent of the node-memory workload's node agent, as 'kubeproof up --gogc' (0: the Go runtime's, i.e. GOGC or 100; unset, GOGC or GOMEMLIMIT in the environment take precedence over the default).")
	fs.StringSliceVar(&checkerConfigs, "checker-configs", model.StandardConfigs, "Model-checker configurations (spec/*.cfg) of the checkers workload.")
	fs.IntSliceVar(&historySizes, "history-sizes", bench.DefaultHistorySizes, "Operations per generated history of the checkers workload.")
	fs.StringVar(&heapProfile, "heap-profile", "", "Startup workloads write a heap profile here once every pod is Running.")
	fs.BoolVar(&startupControl, "startup-control", true, "Startup workloads run the control process that memory beyond the API server's share is measured against (false: latency, CPU and the whole process's memory only).")
	fs.StringVar(&cpuProfile, "cpu-profile", "", "Startup workloads write the process's CPU profile from the first pod created to the last one Running here, and each pod's timeline to PATH.pods.csv (without --heap-profile's finer heap sampling; with --heap-profile alone the CPU profile goes to its PATH.cpu). The writes and updates workloads write one profile per measurement, PATH.<target>.c<clients> (e.g. PATH.apiserver-protobuf.c64, PATH.etcd-txn.c64), of the whole process: with an in-process cluster, client, API server and etcd together.")
	fs.DurationVar(&cpuProfileEvery, "cpu-profile-every", 0, "Cut the startup workloads' CPU profile into windows of this width from the first pod created: PATH.000, PATH.001, ... instead of PATH (0: one profile), so early and late windows can be compared; go tool pprof merges them back.")
	fs.DurationVar(&startupIdle, "startup-idle", 0, "After every pod of a startup workload is Running, keep the cluster this long with no arrivals and report the process's cores then (the steady cost of the running pods; the CPU profile and its windows go on through it, the run's windows and CPU per pod do not).")
	return cmd
}

// runSchedulingWorkload runs the named scheduling workload, against
// remote (--kubeconfig's; its scheduler is measured) or, remote nil, an
// in-process control plane with the scheduler in a child process (or
// in-process).
func runSchedulingWorkload(ctx context.Context, progress io.Writer, name string, remote *rest.Config, schedProcess, fsyncOff bool) (bench.SchedulingResult, error) {
	w, err := bench.SchedulingWorkloadByName(name)
	if err != nil {
		return bench.SchedulingResult{}, err
	}
	line := newProgressLine(progress)
	cfg := bench.SchedulingConfig{Workload: w, UnsafeNoFsync: fsyncOff, Progress: line.print}
	if remote != nil {
		cfg.API = remote
	} else if schedProcess {
		if cfg.SchedulerBinary, err = os.Executable(); err != nil {
			return bench.SchedulingResult{}, err
		}
	}
	res, err := bench.RunScheduling(ctx, cfg)
	line.end()
	return res, err
}

// checkWorkloads refuses a workload list before anything runs (the tables
// are printed at the end, so a refusal after the first workloads would
// throw their results away): an unknown name, a scheduling:NAME that
// bench/workloads lacks, and with --kubeconfig (remote) the workloads that
// start their own servers.
func checkWorkloads(workloads []string, remote bool) error {
	var errs []error
	for _, w := range workloads {
		switch w {
		case "writes", "updates", "watch-fanout", "scheduling-basic-500", "scheduling-basic-5000", "checkers":
		case "apiserver-memory":
			if remote {
				errs = append(errs, fmt.Errorf("%s runs its own API server process; it does not take --kubeconfig", w))
			}
		case "node-memory":
			if remote {
				errs = append(errs, fmt.Errorf("%s runs its own API server and node agent processes; it does not take --kubeconfig", w))
			}
		case "startup", "startup-1000x30000":
			if remote {
				errs = append(errs, fmt.Errorf("%s runs its own simulated nodes in-process; it does not take --kubeconfig", w))
			}
		default:
			name, ok := strings.CutPrefix(w, "scheduling:")
			if !ok {
				errs = append(errs, fmt.Errorf("unknown workload %q (writes, apiserver-memory, node-memory, scheduling-basic-500, scheduling-basic-5000, scheduling:NAME, startup, startup-1000x30000, updates, watch-fanout, checkers)", w))
				continue
			}
			if _, err := bench.SchedulingWorkloadByName(name); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// runWatchFanoutWorkload runs watch-fanout against remote or, remote nil,
// a fresh in-process cluster.
func runWatchFanoutWorkload(ctx context.Context, out io.Writer, remote *rest.Config, cfg bench.WatchFanoutConfig, tc targetConfig) ([]bench.WatchFanoutResult, error) {
	api, _, stop, err := benchTarget(ctx, remote, tc)
	if err != nil {
		return nil, err
	}
	defer stop()
	cfg.API = api
	cfg.Progress = func(r bench.WatchFanoutResult) {
		fmt.Fprintf(out, "watch-fanout watchers=%-5d %6.0f events/s  delivered %d/%d  p50 %6.1f ms  p99 %6.1f ms  errors %d\n", r.Watchers, r.WriteRate,
			r.Delivered, r.Expected, float64(r.Latencies.P50)/1e6, float64(r.Latencies.P99)/1e6, r.Errors)
	}
	return bench.RunWatchFanout(ctx, cfg)
}

// runWritesWorkload runs writes (creates) or updates (CAS updates).
func runWritesWorkload(ctx context.Context, out io.Writer, workload string, remote *rest.Config, etcdServers []string, clients []int, d time.Duration, tc targetConfig, cpuProfile string) ([]bench.WriteResult, error) {
	api, c, stop, err := benchTarget(ctx, remote, tc)
	if err != nil {
		return nil, err
	}
	defer stop()
	var etcd, etcdInProcess *clientv3.Client
	if c != nil {
		// Raw etcd both ways: over gRPC (as any etcd client, and as the
		// API server with --apiserver-etcd-grpc) and in-process (as the
		// API server by default).
		etcd, etcdInProcess = c.EtcdClient, c.EtcdInProcessClient
	} else if len(etcdServers) > 0 {
		if etcd, err = clientv3.New(clientv3.Config{Endpoints: etcdServers, DialTimeout: 10 * time.Second}); err != nil {
			return nil, fmt.Errorf("connecting to etcd: %w", err)
		}
		defer etcd.Close()
	}
	run := bench.RunWrites
	if workload == "updates" {
		run = bench.RunUpdates
	}
	return run(ctx, bench.WritesConfig{
		API: api, Etcd: etcd, EtcdInProcess: etcdInProcess, Clients: clients, Duration: d, CPUProfile: cpuProfile,
		ServersElsewhere: c == nil,
		Progress: func(r bench.WriteResult) {
			fmt.Fprintf(out, "%-28s clients=%-4d %8.0f/s  p50 %6.1f ms  p99 %6.1f ms  errors %d  process CPU %4.0f µs/op\n", r.Target, r.Clients, r.Rate,
				float64(r.Latencies.P50)/1e6, float64(r.Latencies.P99)/1e6, r.Errors, float64(r.ProcessCPUPerOp)/1e3)
			if r.FirstError != "" {
				fmt.Fprintf(out, "  first error: %s\n", r.FirstError)
			}
		},
	})
}

// targetConfig is how benchTarget starts an in-process API server: with
// the watch cache (--watch-cache), and over gRPC to the embedded etcd
// (--apiserver-etcd-grpc) instead of in-process.
type targetConfig struct{ watchCache, etcdGRPC bool }

// benchTarget is the API server a workload runs against: remote
// (--kubeconfig's), or (c not nil) a fresh in-process cluster in a
// temporary directory, with fsync on so the numbers are what a user's
// cluster gets. stop releases it.
func benchTarget(ctx context.Context, remote *rest.Config, tc targetConfig) (api *rest.Config, c *cluster.Cluster, stop func(), err error) {
	if remote != nil {
		return remote, nil, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "kubeproof-bench-")
	if err != nil {
		return nil, nil, nil, err
	}
	c, err = cluster.Start(ctx, cluster.Config{DataDir: dir, BindAddress: "127.0.0.1:0", WatchCache: tc.watchCache,
		EtcdOverGRPC: tc.etcdGRPC, CompactionInterval: -1})
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, nil, err
	}
	return c.AdminConfig, c, func() {
		_ = c.Stop()
		os.RemoveAll(dir)
	}, nil
}

func orUnknown(s string) string {
	if s == "" {
		return "not recorded"
	}
	return s
}
