package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// WrittenAtAnnotation carries, on every object the watch-fanout writer
// creates, the writer's wall clock (Unix nanoseconds) just before the
// create request; a watcher's delivery latency is its receive time minus
// this.
const WrittenAtAnnotation = "bench.kubeproof.io/written-at-ns"

// WatchFanoutConfig configures the watch fan-out workload.
type WatchFanoutConfig struct {
	// API is the API server to write to and watch.
	API *rest.Config
	// Watchers are the fan-out levels (default 1, 10, 100, 1000).
	Watchers []int
	// Rate is the writer's events per second (default 100).
	Rate float64
	// Duration the writer writes at each level (default 10 s).
	Duration time.Duration
	// Drain is how long after the last write the watchers may take to
	// receive every event before the missing ones count as errors
	// (default 60 s: a saturated level delivers late but completely).
	Drain time.Duration
	// Connections is how many HTTP/2 connections the watchers share
	// (watcher i uses connection i mod Connections). Zero gives each
	// watcher its own, as separate clients (kubelets, controllers) have;
	// one multiplexes every watch over a single connection, whose one
	// frame writer and one reader then bound delivery.
	Connections int
	// Progress, if set, is called after each level.
	Progress func(WatchFanoutResult)
}

// WatchFanoutResult is one fan-out level: N watchers of one namespace's
// ConfigMaps through the API server (protobuf), a writer creating
// ConfigMaps at a fixed rate.
type WatchFanoutResult struct {
	Watchers int `json:"watchers"`
	// Connections the watchers shared.
	Connections int `json:"connections"`
	// Rate is the target event rate; WriteRate what the writer achieved.
	Rate      float64 `json:"rate"`
	WriteRate float64 `json:"writeRate"`
	// Events is the number of objects written (each one event).
	Events int `json:"events"`
	// Expected is Events × Watchers; Delivered the events watchers
	// received (each watcher's first receipt of each event).
	Expected  int64 `json:"expected"`
	Delivered int64 `json:"delivered"`
	// Errors counts failed writes, watch errors, duplicate deliveries
	// and every expected delivery that did not arrive within the drain
	// time.
	Errors int64 `json:"errors"`
	// Latencies of delivery: receive time minus the write time carried
	// in the object.
	Latencies Latencies     `json:"latencies"`
	Elapsed   time.Duration `json:"elapsed"`
}

// RunWatchFanout runs each fan-out level in turn in a fresh namespace
// (deleted afterwards): the watchers start watching from the namespace's
// current resourceVersion, the writer creates ConfigMaps for the duration
// at the rate, then the watchers get the drain time to receive them all.
func RunWatchFanout(ctx context.Context, cfg WatchFanoutConfig) ([]WatchFanoutResult, error) {
	if len(cfg.Watchers) == 0 {
		cfg.Watchers = []int{1, 10, 100, 1000}
	}
	if cfg.Rate <= 0 {
		cfg.Rate = 100
	}
	if cfg.Duration <= 0 {
		cfg.Duration = 10 * time.Second
	}
	if cfg.Drain <= 0 {
		cfg.Drain = 60 * time.Second
	}
	cs, err := kubernetes.NewForConfig(APIClientConfig(cfg.API, runtime.ContentTypeProtobuf))
	if err != nil {
		return nil, fmt.Errorf("building client: %w", err)
	}
	ns := fmt.Sprintf("bench-watch-%d", time.Now().UnixNano())
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("creating namespace %s: %w", ns, err)
	}
	defer func() {
		_ = cs.CoreV1().ConfigMaps(ns).DeleteCollection(context.WithoutCancel(ctx), metav1.DeleteOptions{}, metav1.ListOptions{})
		_ = cs.CoreV1().Namespaces().Delete(context.WithoutCancel(ctx), ns, metav1.DeleteOptions{})
	}()
	var results []WatchFanoutResult
	for i, n := range cfg.Watchers {
		r, err := watchFanoutLevel(ctx, cs, ns, fmt.Sprintf("l%d-", i), n, cfg)
		if err != nil {
			return results, err
		}
		results = append(results, r)
		if cfg.Progress != nil {
			cfg.Progress(r)
		}
	}
	return results, nil
}

// maxInFlightWrites bounds the watch-fanout writer's concurrent creates.
const maxInFlightWrites = 64

// fanoutWatcher is one watcher's record of the level.
type fanoutWatcher struct {
	seen      []bool // by event index
	latencies []time.Duration
	delivered int
	errors    int64
}

// watchFanoutLevel runs one level: n watchers, one writer.
func watchFanoutLevel(ctx context.Context, cs kubernetes.Interface, ns, prefix string, n int, cfg WatchFanoutConfig) (WatchFanoutResult, error) {
	events := max(1, int(math.Round(cfg.Rate*cfg.Duration.Seconds())))
	list, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return WatchFanoutResult{}, fmt.Errorf("listing configmaps: %w", err)
	}
	startRV := list.ResourceVersion

	parent := ctx
	conns := n
	if cfg.Connections > 0 {
		conns = min(n, cfg.Connections)
	}
	clients, closeClients, err := watchClients(cfg.API, conns)
	if err != nil {
		return WatchFanoutResult{}, err
	}
	defer closeClients()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	watchers := make([]*fanoutWatcher, n)
	var complete atomic.Int64 // watchers that have received every event
	allDone := make(chan struct{})
	var wg sync.WaitGroup
	for w := range watchers {
		fw := &fanoutWatcher{seen: make([]bool, events), latencies: make([]time.Duration, 0, events)}
		watchers[w] = fw
		wg.Add(1)
		go func() {
			defer wg.Done()
			fw.watch(ctx, clients[w%conns], ns, prefix, startRV, events)
			if fw.delivered == events && complete.Add(1) == int64(n) {
				close(allDone)
			}
		}()
	}

	// The writer is open-loop: event i is sent at start + i/rate whatever
	// earlier creates take (up to maxInFlightWrites at once; past that it
	// falls behind and the achieved rate shows it).
	var written, writeErrs atomic.Int64
	var writes sync.WaitGroup
	inFlight := make(chan struct{}, maxInFlightWrites)
	start := time.Now()
	interval := time.Duration(float64(time.Second) / cfg.Rate)
	for i := 0; i < events && ctx.Err() == nil; i++ {
		if wait := time.Until(start.Add(time.Duration(i) * interval)); wait > 0 {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
			}
		}
		select {
		case inFlight <- struct{}{}:
		case <-ctx.Done():
			continue
		}
		writes.Add(1)
		go func() {
			defer writes.Done()
			defer func() { <-inFlight }()
			cm := &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{
					Name:        prefix + strconv.Itoa(i),
					Annotations: map[string]string{WrittenAtAnnotation: strconv.FormatInt(time.Now().UnixNano(), 10)},
				},
				Data: map[string]string{"event": strconv.Itoa(i)},
			}
			if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				writeErrs.Add(1)
				return
			}
			written.Add(1)
		}()
	}
	writes.Wait()
	writeElapsed := time.Since(start)

	select {
	case <-allDone:
	case <-time.After(cfg.Drain):
	case <-ctx.Done():
	}
	cancel()
	wg.Wait()
	elapsed := time.Since(start)
	if err := parent.Err(); err != nil {
		return WatchFanoutResult{}, err
	}

	// A writer on schedule spans events/rate; one that fell behind, longer.
	writeSpan := max(writeElapsed, time.Duration(events)*interval)
	res := WatchFanoutResult{
		Watchers: n, Connections: conns, Rate: cfg.Rate, WriteRate: float64(written.Load()) / writeSpan.Seconds(), Events: int(written.Load()),
		Expected: written.Load() * int64(n), Errors: writeErrs.Load(), Elapsed: elapsed,
	}
	var all []time.Duration
	for _, fw := range watchers {
		res.Delivered += int64(fw.delivered)
		res.Errors += fw.errors
		all = append(all, fw.latencies...)
	}
	res.Errors += res.Expected - res.Delivered
	res.Latencies = Summarize(all)
	return res, nil
}

// watchClients builds n protobuf clientsets of cfg, each with its own
// transport (so its own connection); closeAll closes their idle
// connections once the watches have ended.
func watchClients(cfg *rest.Config, n int) (clients []kubernetes.Interface, closeAll func(), err error) {
	var transports []http.RoundTripper
	closeAll = func() {
		for _, t := range transports {
			utilnet.CloseIdleConnectionsFor(t)
		}
	}
	for range n {
		c := APIClientConfig(cfg, runtime.ContentTypeProtobuf)
		// A Proxy function makes client-go build a fresh transport
		// rather than share its cached one; it proxies nothing.
		c.Proxy = func(*http.Request) (*url.URL, error) { return nil, nil }
		hc, err := rest.HTTPClientFor(c)
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("building watch client: %w", err)
		}
		transports = append(transports, hc.Transport)
		cs, err := kubernetes.NewForConfigAndClient(c, hc)
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("building watch client: %w", err)
		}
		clients = append(clients, cs)
	}
	return clients, closeAll, nil
}

// watch receives the level's ADDED events from startRV until it has seen
// all events or ctx ends; a watch the server closes is reopened from the
// last resourceVersion received.
func (fw *fanoutWatcher) watch(ctx context.Context, cs kubernetes.Interface, ns, prefix, rv string, events int) {
	for ctx.Err() == nil && fw.delivered < events {
		wi, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			if ctx.Err() == nil {
				fw.errors++
				select { // do not spin against a failing server
				case <-time.After(100 * time.Millisecond):
				case <-ctx.Done():
				}
			}
			continue
		}
		rv = fw.receive(ctx, wi, prefix, rv, events)
		wi.Stop()
	}
}

// receive drains one watch; it returns the last resourceVersion seen.
func (fw *fanoutWatcher) receive(ctx context.Context, wi watch.Interface, prefix, rv string, events int) string {
	for fw.delivered < events {
		var ev watch.Event
		var ok bool
		select {
		case ev, ok = <-wi.ResultChan():
		case <-ctx.Done():
			return rv
		}
		if !ok {
			return rv
		}
		now := time.Now()
		if ev.Type == watch.Error {
			fw.errors++
			continue
		}
		cm, isCM := ev.Object.(*corev1.ConfigMap)
		if !isCM {
			continue
		}
		rv = cm.ResourceVersion
		if ev.Type != watch.Added {
			continue
		}
		idx, err := strconv.Atoi(strings.TrimPrefix(cm.Name, prefix))
		if !strings.HasPrefix(cm.Name, prefix) || err != nil || idx < 0 || idx >= events {
			continue // another level's object
		}
		if fw.seen[idx] {
			fw.errors++ // delivered twice
			continue
		}
		writtenAt, err := strconv.ParseInt(cm.Annotations[WrittenAtAnnotation], 10, 64)
		if err != nil {
			fw.errors++
			continue
		}
		fw.seen[idx] = true
		fw.delivered++
		fw.latencies = append(fw.latencies, now.Sub(time.Unix(0, writtenAt)))
	}
	return rv
}

// WriteWatchFanoutTable prints watch fan-out results as a Markdown table.
func WriteWatchFanoutTable(w io.Writer, m Machine, results []WatchFanoutResult) {
	writeMachine(w, m)
	fmt.Fprintln(w, "| watchers | connections | events/s (target) | events | delivered/expected | errors | p50 | p99 | max |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range results {
		fmt.Fprintf(w, "| %d | %d | %.0f (%.0f) | %d | %d/%d | %d | %s | %s | %s |\n", r.Watchers, r.Connections, r.WriteRate, r.Rate, r.Events,
			r.Delivered, r.Expected, r.Errors, ms(r.Latencies.P50), ms(r.Latencies.P99), ms(r.Latencies.Max))
	}
}

// WatchFanoutChart draws delivery latency p50 and p99 against watchers
// (log scale; the median over runs at each level).
func WatchFanoutChart(results []WatchFanoutResult) NamedChart {
	c := LineChart{Title: "Watch delivery latency against watchers (median of runs)", XLabel: "watchers (log scale)", YLabel: "delivery latency (ms)", YMin0: true}
	p50, p99 := map[int][]float64{}, map[int][]float64{}
	var levels []int
	for _, r := range results {
		if _, ok := p50[r.Watchers]; !ok {
			levels = append(levels, r.Watchers)
		}
		p50[r.Watchers] = append(p50[r.Watchers], msOf(r.Latencies.P50))
		p99[r.Watchers] = append(p99[r.Watchers], msOf(r.Latencies.P99))
	}
	slices.Sort(levels)
	for _, s := range []struct {
		name string
		by   map[int][]float64
	}{{"p50", p50}, {"p99", p99}} {
		ser := Series{Name: s.name}
		for _, n := range levels {
			ser.Points = append(ser.Points, Point{X: math.Log10(float64(n)), Y: Metric{Values: s.by[n]}.Spread().Median})
		}
		c.Series = append(c.Series, ser)
	}
	for _, n := range levels {
		c.XTicks = append(c.XTicks, Tick{Value: math.Log10(float64(n)), Label: strconv.Itoa(n)})
	}
	return NamedChart{File: "watch-fanout-latency", Chart: c}
}

// WatchFanoutMetrics are the metrics a report yields for watch fan-out
// runs (for Report.Metrics): delivery latency p50/p99 per level and the
// delivery errors.
func WatchFanoutMetrics(results []WatchFanoutResult, add func(name, unit string, higherIsBetter bool, v float64)) {
	for _, r := range results {
		key := fmt.Sprintf("watch-fanout watchers=%d conns=%d@%.0f/s", r.Watchers, r.Connections, r.Rate)
		add(key+" delivery p50", "ms", false, msOf(r.Latencies.P50))
		add(key+" delivery p99", "ms", false, msOf(r.Latencies.P99))
		add(key+" errors", "count", false, float64(r.Errors))
	}
}

// watchFanoutCharts is the latency-against-watchers chart, if there are
// results.
func watchFanoutCharts(results []WatchFanoutResult) []NamedChart {
	if len(results) == 0 {
		return nil
	}
	return []NamedChart{WatchFanoutChart(results)}
}

// writeWatchFanoutHTML writes the report's watch fan-out runs as an HTML
// table.
func writeWatchFanoutHTML(w io.Writer, results []WatchFanoutResult) {
	if len(results) == 0 {
		return
	}
	fmt.Fprintln(w, "<h2>Watch fan-out runs</h2>")
	var rows [][]string
	for _, r := range results {
		rows = append(rows, []string{fmt.Sprint(r.Watchers), fmt.Sprint(r.Connections), fmt.Sprintf("%.0f (%.0f)", r.WriteRate, r.Rate), fmt.Sprint(r.Events),
			fmt.Sprintf("%d/%d", r.Delivered, r.Expected), fmt.Sprint(r.Errors), ms(r.Latencies.P50), ms(r.Latencies.P99), ms(r.Latencies.Max)})
	}
	htmlTable(w, []string{"watchers", "connections", "events/s (target)", "events", "delivered/expected", "errors", "p50", "p99", "max"}, rows, -1)
}
