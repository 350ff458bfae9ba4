package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"

	"github.com/kubeproof/kubeproof/impl/healthz"
	"github.com/kubeproof/kubeproof/impl/scheduler"
	"github.com/kubeproof/kubeproof/impl/scheduler/config"
	"github.com/kubeproof/kubeproof/impl/secureserving"
)

// newSchedulerCommand is `kubeproof scheduler`: the scheduler as its own
// process against any API server.
func newSchedulerCommand() *cobra.Command {
	var (
		kubeconfig  string
		configFile  string
		leaderElect bool
		metricsAddr string
		qps         float32
		burst       int
		profiling   bool
		logOpts     logOptions
		secure      = secureserving.NewOptions(10259, "kube-scheduler")
	)
	cmd := &cobra.Command{
		Use:   "scheduler --kubeconfig FILE [--config FILE]",
		Short: "Run the scheduler: assign pending pods to nodes",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			logger, err := logOpts.logger()
			if err != nil {
				return err
			}
			if err := secure.Validate(); err != nil {
				return err
			}
			conf := config.Default()
			if configFile != "" {
				if conf, err = config.Load(configFile); err != nil {
					return err
				}
			}
			if cmd.Flags().Changed("leader-elect") {
				conf.LeaderElection.LeaderElect = &leaderElect
			}
			if kubeconfig == "" {
				kubeconfig = conf.ClientConnection.Kubeconfig
			}
			if kubeconfig == "" {
				return errors.New("--kubeconfig is required")
			}
			restConfig, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
			if err != nil {
				return fmt.Errorf("loading kubeconfig: %w", err)
			}
			restConfig.QPS, restConfig.Burst = conf.ClientConnection.QPS, int(conf.ClientConnection.Burst)
			if cmd.Flags().Changed("kube-api-qps") {
				restConfig.QPS = qps
			}
			if cmd.Flags().Changed("kube-api-burst") {
				restConfig.Burst = burst
			}
			restConfig.UserAgent = "kubeproof-scheduler"
			client, err := kubernetes.NewForConfig(restConfig)
			if err != nil {
				return fmt.Errorf("creating client: %w", err)
			}
			setSchedulerGCPercent()
			ctx := cmd.Context()
			schedCfg := scheduler.Config{Configuration: conf, Logger: logger}
			if *conf.LeaderElection.LeaderElect {
				schedCfg.WatchDog = leaderelection.NewLeaderHealthzAdaptor(leaderElectionHealthTimeout)
			}
			sched, err := scheduler.New(ctx, client, schedCfg)
			if err != nil {
				return err
			}
			srv, err := secureserving.New(ctx, secure, logger)
			if err != nil {
				return err
			}
			checks := schedulerHealthChecks(ctx, schedCfg.WatchDog, sched.HandlersSynced)
			return runSchedulerWithMetrics(ctx, logger, metricsAddr, srv, sched.MetricsHandler(), checks, profiling, sched.Run)
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "path to a kubeconfig file for the API server")
	f.StringVar(&configFile, "config", "", "path to a KubeSchedulerConfiguration file (kubescheduler.config.k8s.io/v1)")
	f.BoolVar(&leaderElect, "leader-elect", true, "elect a leader through a coordination.k8s.io Lease before scheduling")
	secure.AddFlags(f)
	f.StringVar(&metricsAddr, "metrics-bind-address", "", "kubeproof only (kube-scheduler has no such flag): also serve /metrics, /healthz, /readyz and /livez over plain HTTP, unauthenticated, at this address (benchmarks); empty: not")
	f.Float32Var(&qps, "kube-api-qps", 50, "API client queries per second")
	f.IntVar(&burst, "kube-api-burst", 100, "API client burst")
	f.BoolVar(&profiling, "profiling", true, "serve Go profiles at /debug/pprof/ on the metrics address, as kube-scheduler does")
	logOpts.addFlags(f)
	return cmd
}

// schedulerGCPercent is the scheduler process's garbage collection target
// when GOGC is not set. Most of the scheduler's heap is its informer caches,
// which live as long as the process, so Go's default (collect when the heap
// has doubled) keeps as much garbage as there are cached objects. 50 lets
// the heap grow by half instead: SchedulingBasic 5000 nodes / 10000 pods
// ends about 20 MiB smaller, for more frequent (concurrent) collections.
// Prometheus lowers its default the same way.
const schedulerGCPercent = 50

func setSchedulerGCPercent() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(schedulerGCPercent)
	}
}

// leaderElectionHealthTimeout is how long past its lease duration a
// leader may go without renewing before the leaderElection check fails
// (kube-scheduler's and kube-controller-manager's 20 s).
const leaderElectionHealthTimeout = 20 * time.Second

// healthChecks are the checks of each health endpoint.
type healthChecks struct {
	healthz, livez, readyz []healthz.Check
}

// schedulerHealthChecks are kube-scheduler's (cmd/kube-scheduler/app
// Run): /healthz the leader election check (ping without leader
// election), /livez ping, /readyz the leader election check, "shutdown"
// (failing once ctx ends) and "sched-handler-sync" (failing until the
// informers delivered their initial lists).
func schedulerHealthChecks(ctx context.Context, watchDog *leaderelection.HealthzAdaptor, handlersSynced func() bool) healthChecks {
	var c healthChecks
	if watchDog != nil {
		c.healthz = append(c.healthz, watchDog)
		c.readyz = append(c.readyz, watchDog)
	}
	c.readyz = append(c.readyz, healthz.Shutdown(ctx.Done()), healthz.NamedCheck("sched-handler-sync", func(*http.Request) error {
		if !handlersSynced() {
			return errors.New("handlers are not fully synchronized")
		}
		return nil
	}))
	return c
}

// runSchedulerWithMetrics serves /metrics, /healthz, /readyz and /livez
// with checks (and /debug/pprof/ when profiling) on the secure server
// (nil: none) and on addr over plain HTTP (empty: not) while run runs, and
// shuts them down when run returns.
func runSchedulerWithMetrics(ctx context.Context, logger *slog.Logger, addr string, secure *secureserving.Server, metrics http.Handler, checks healthChecks, profiling bool, run func(context.Context) error) error {
	mux := http.NewServeMux()
	mux.Handle("/metrics", metrics)
	healthz.Install(mux, "/healthz", logger, checks.healthz...)
	healthz.Install(mux, "/livez", logger, checks.livez...)
	healthz.Install(mux, "/readyz", logger, checks.readyz...)
	if profiling {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	serveErr := make(chan error, 1)
	if secure != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := secure.Serve(ctx, mux); err != nil {
				serveErr <- err
				cancel()
			}
		}()
	}
	if addr != "" {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("listening on %s: %w", addr, err)
		}
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		wg.Add(2)
		go func() {
			defer wg.Done()
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				logger.Error("metrics server", "err", err)
			}
		}()
		go func() {
			defer wg.Done()
			<-ctx.Done()
			shutdownCtx, c := context.WithTimeout(context.Background(), 5*time.Second)
			defer c()
			_ = srv.Shutdown(shutdownCtx)
		}()
	}
	runErr := run(ctx)
	select {
	case err := <-serveErr:
		return errors.Join(runErr, err)
	default:
		return runErr
	}
}
