package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubeproof/kubeproof/impl/scheduler"
	"github.com/kubeproof/kubeproof/impl/scheduler/config"
)

// runningScheduler is the scheduler under test, in this process or in a
// child process.
type runningScheduler struct {
	pid      int
	cpuScope string
	startCPU time.Duration
	cpuTime  func() time.Duration
	metrics  func(ctx context.Context) (io.ReadCloser, error)
	stop     func()
}

// startScheduler starts the scheduler the run measures: a `kubeproof
// scheduler` child process when SchedulerBinary is set, else in-process.
// Either way its client may send 5000 QPS (burst 10000), as scheduler_perf
// configures it.
func (r *schedulingRun) startScheduler(ctx context.Context) error {
	if r.cfg.SchedulerBinary != "" {
		return r.startSchedulerProcess(ctx)
	}
	cfg := rest.CopyConfig(r.api)
	cfg.QPS, cfg.Burst, cfg.UserAgent = benchSchedulerQPS, benchSchedulerBurst, "kubeproof-bench-scheduler"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	conf := config.Default()
	conf.LeaderElection.LeaderElect = new(bool)
	ctx, cancel := context.WithCancel(ctx)
	s, err := scheduler.New(ctx, cs, scheduler.Config{Configuration: conf, Logger: r.cfg.Logger})
	if err != nil {
		cancel()
		return fmt.Errorf("building scheduler: %w", err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := s.Run(ctx); err != nil && ctx.Err() == nil {
			r.cfg.Logger.Error("scheduler stopped", "err", err)
		}
	}()
	handler := s.MetricsHandler()
	r.sched = &runningScheduler{
		pid: os.Getpid(), cpuScope: "whole benchmark process (API server, etcd and scheduler)", cpuTime: processCPU,
		metrics: func(context.Context) (io.ReadCloser, error) {
			rec := httptest.NewRecorder()
			handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
			return io.NopCloser(rec.Body), nil
		},
		stop: func() { cancel(); wg.Wait() },
	}
	return nil
}

func (r *schedulingRun) startSchedulerProcess(ctx context.Context) error {
	kubeconfig, err := r.kubeconfigFor()
	if err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command(r.cfg.SchedulerBinary, "scheduler", "--kubeconfig", kubeconfig, "--leader-elect=false",
		"--kube-api-qps", strconv.Itoa(benchSchedulerQPS), "--kube-api-burst", strconv.Itoa(benchSchedulerBurst),
		"--metrics-bind-address", addr, "--secure-port", "0", "--log-level", "error")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s scheduler: %w", r.cfg.SchedulerBinary, err)
	}
	pid := cmd.Process.Pid
	stopped := sync.OnceFunc(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	client := &http.Client{Timeout: 10 * time.Second}
	r.sched = &runningScheduler{
		pid: pid, cpuScope: "scheduler process",
		cpuTime: func() time.Duration { d, _ := processCPUTime(pid); return d },
		metrics: func(ctx context.Context) (io.ReadCloser, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
			if err != nil {
				return nil, err
			}
			resp, err := client.Do(req)
			if err != nil {
				return nil, err
			}
			if resp.StatusCode != http.StatusOK {
				resp.Body.Close()
				return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
			}
			return resp.Body, nil
		},
		stop: stopped,
	}
	return nil
}

// histogram is a cumulative Prometheus histogram: upper bounds and counts.
type histogram struct {
	bounds []float64
	counts []float64
	total  float64
}

const attemptMetric = "scheduler_scheduling_attempt_duration_seconds"

// attemptHistogram reads the scheduler's attempt-latency histogram for
// result="scheduled", summed over profiles.
func (s *runningScheduler) attemptHistogram(ctx context.Context) (histogram, error) {
	body, err := s.metrics(ctx)
	if err != nil {
		return histogram{}, err
	}
	defer body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(body)
	if err != nil {
		return histogram{}, fmt.Errorf("parsing metrics: %w", err)
	}
	fam, ok := families[attemptMetric]
	if !ok {
		return histogram{}, fmt.Errorf("no %s in the scheduler's metrics", attemptMetric)
	}
	return sumHistograms(fam, "result", "scheduled"), nil
}

func sumHistograms(fam *dto.MetricFamily, label, value string) histogram {
	byBound := map[float64]float64{}
	var h histogram
	for _, m := range fam.GetMetric() {
		match := false
		for _, l := range m.GetLabel() {
			if l.GetName() == label && l.GetValue() == value {
				match = true
			}
		}
		if !match || m.GetHistogram() == nil {
			continue
		}
		h.total += float64(m.GetHistogram().GetSampleCount())
		for _, b := range m.GetHistogram().GetBucket() {
			byBound[b.GetUpperBound()] += float64(b.GetCumulativeCount())
		}
	}
	for b := range byBound {
		h.bounds = append(h.bounds, b)
	}
	sort.Float64s(h.bounds)
	for _, b := range h.bounds {
		h.counts = append(h.counts, byBound[b])
	}
	return h
}

// quantile interpolates linearly within the bucket holding rank q, the way
// Prometheus' histogram_quantile does; samples above the last bound report
// that bound.
func (h histogram) quantile(q float64) time.Duration {
	if h.total == 0 {
		return 0
	}
	rank := q * h.total
	lower, below := 0.0, 0.0
	for i, b := range h.bounds {
		if h.counts[i] >= rank {
			inBucket := h.counts[i] - below
			frac := 1.0
			if inBucket > 0 {
				frac = (rank - below) / inBucket
			}
			return time.Duration((lower + (b-lower)*frac) * float64(time.Second))
		}
		lower, below = b, h.counts[i]
	}
	if n := len(h.bounds); n > 0 && !math.IsInf(h.bounds[n-1], 1) {
		return time.Duration(h.bounds[n-1] * float64(time.Second))
	}
	return 0
}

// throughputSampler samples a counter every second.
type throughputSampler struct {
	start   time.Time
	created time.Time
	cancel  context.CancelFunc
	done    chan struct{}
	count   func() int64
	base    int64 // count() when measuring began
	mu      sync.Mutex
	samples []int64
}

func startThroughputSampler(count func() int64) *throughputSampler {
	ctx, cancel := context.WithCancel(context.Background())
	base := count()
	s := &throughputSampler{start: time.Now(), created: time.Now(), cancel: cancel, done: make(chan struct{}), count: count, base: base}
	go func() {
		defer close(s.done)
		// Windows start at the first binding, so that the scheduler's
		// start-up (informer sync) neither counts nor cuts a window short.
		poll := time.NewTicker(5 * time.Millisecond)
		for count() == base {
			select {
			case <-ctx.Done():
				poll.Stop()
				return
			case <-poll.C:
			}
		}
		poll.Stop()
		s.mu.Lock()
		s.start = time.Now()
		s.samples = []int64{base}
		s.mu.Unlock()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				s.mu.Lock()
				s.samples = append(s.samples, count())
				s.mu.Unlock()
			}
		}
	}()
	return s
}

// stop ends sampling and returns the per-window throughput: full 1 s
// windows from the first binding on; the final partial window counts (as
// a rate) only if there is no full window, and then over the time since
// measuring began (the first binding is seen by polling, so a burst
// shorter than the poll would otherwise look instantaneous). elapsed is
// from the first binding to now. Bindings the poll had not seen yet when
// sampling stopped (a short burst on a loaded machine) still count: then
// measuring is taken to have begun when the sampler was created.
func (s *throughputSampler) stop() (windows []float64, elapsed time.Duration) {
	s.cancel()
	<-s.done
	final := s.count()
	if len(s.samples) == 0 {
		if final == s.base {
			return nil, 0
		}
		s.start, s.samples = s.created, []int64{s.base}
	}
	elapsed = time.Since(s.start)
	var rates []float64
	for i := 1; i < len(s.samples); i++ {
		rates = append(rates, float64(s.samples[i]-s.samples[i-1]))
	}
	if since := time.Since(s.created); len(rates) == 0 && since > 0 {
		rates = []float64{float64(final-s.samples[0]) / since.Seconds()}
	}
	return rates, elapsed
}

// summarizeThroughput computes scheduler_perf's statistics of windows:
// the mean and nearest-rank percentiles.
func summarizeThroughput(windows []float64) Throughput {
	t := Throughput{Windows: windows}
	if len(windows) == 0 {
		return t
	}
	sorted := append([]float64(nil), windows...)
	sort.Float64s(sorted)
	sum := 0.0
	for _, w := range sorted {
		sum += w
	}
	pct := func(p int) float64 {
		rank := (p*len(sorted) + 99) / 100
		return sorted[max(rank, 1)-1]
	}
	t.Average = sum / float64(len(sorted))
	t.Perc50, t.Perc90, t.Perc99 = pct(50), pct(90), pct(99)
	return t
}
