package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
	"github.com/kubeproof/kubeproof/impl/storage"
)

// The health endpoints /healthz, /livez and /readyz list the checks
// kube-apiserver lists, for the components kubeproof has (see
// health.checks for the order and README for those it lacks). A
// post-start hook's check, "poststarthook/<name>", fails until Run has
// done what the hook does in kube-apiserver.

// Names of kube-apiserver's post-start hooks kubeproof has an equivalent of.
const (
	hookStartInformers      = "generic-apiserver-start-informers"
	hookAPFConsumer         = "priority-and-fairness-config-consumer"
	hookObjectCountTracker  = "storage-object-count-tracker-hook"
	hookSystemNamespaces    = "start-system-namespaces-controller"
	hookLegacyTokenTracking = "start-legacy-token-tracking-controller"
	hookServiceIPRepair     = "start-service-ip-repair-controllers"
	hookAPFProducer         = "priority-and-fairness-config-producer"
	hookBootstrapController = "bootstrap-controller"
)

// healthCheck is one named check of a health endpoint.
type healthCheck struct {
	name  string
	check func(ctx context.Context) error
}

// postStartHook is one post-start hook's state: done once Run did its
// work.
type postStartHook struct {
	name string
	done atomic.Bool
}

// health is what the health checks read: the post-start hooks in
// kube-apiserver's registration order, whether the caches the server
// reads from have synced, whether shutdown has begun, and the log check.
type health struct {
	hooks           []*postStartHook
	informersSynced atomic.Bool
	shuttingDown    atomic.Bool
	log             *logCheck
}

// hookOrder lists the post-start hooks a server has, in the order
// kube-apiserver registers them (the order its health endpoints list
// them): the generic server's (informers, API Priority and Fairness's
// configuration consumer, the object count tracker), the control
// plane's (system namespaces, legacy token tracking), the core REST
// storage's (service IP and port repair), then pluginHooks (where
// kube-apiserver has rbac/bootstrap-roles, then the other REST storages'
// hooks such as scheduling/bootstrap-system-priority-classes), then API
// Priority and Fairness's configuration producer and the kubernetes
// service's bootstrap controller. Pure.
func hookOrder(apf, objectCounts, namespaces, legacyTracking, services bool, pluginHooks []string) []string {
	var out []string
	add := func(on bool, name string) {
		if on {
			out = append(out, name)
		}
	}
	add(true, hookStartInformers)
	add(apf, hookAPFConsumer)
	add(objectCounts, hookObjectCountTracker)
	add(namespaces, hookSystemNamespaces)
	add(legacyTracking, hookLegacyTokenTracking)
	add(services, hookServiceIPRepair)
	out = append(out, pluginHooks...)
	add(apf, hookAPFProducer)
	add(services, hookBootstrapController)
	return out
}

func newHealth(hookNames []string) *health {
	h := &health{log: newLogCheck(klog.Flush, time.Now, time.Minute)}
	for _, n := range hookNames {
		h.hooks = append(h.hooks, &postStartHook{name: n})
	}
	return h
}

// hookDone marks the named post-start hook done (no-op for a hook the
// server does not have).
func (h *health) hookDone(name string) {
	for _, p := range h.hooks {
		if p.name == name {
			p.done.Store(true)
		}
	}
}

// hookCheck fails until p is done, as kube-apiserver's check of a hook
// that has not returned yet.
func hookCheck(p *postStartHook) healthCheck {
	return healthCheck{"poststarthook/" + p.name, func(context.Context) error {
		if !p.done.Load() {
			return errors.New("not finished")
		}
		return nil
	}}
}

// checks are an endpoint's checks in kube-apiserver's order: ping, log,
// etcd, then for /readyz etcd-readiness and informer-sync, the
// post-start hooks, and for /readyz shutdown last.
func (s *Server) checks(endpoint string) []healthCheck {
	h := s.health
	ready := endpoint == "readyz"
	out := []healthCheck{
		{"ping", func(context.Context) error { return nil }},
		{"log", h.log.check},
		{"etcd", s.checkEtcd},
	}
	if ready {
		out = append(out, healthCheck{"etcd-readiness", s.checkEtcd}, healthCheck{"informer-sync", s.checkInformersSynced})
	}
	for _, p := range h.hooks {
		out = append(out, hookCheck(p))
	}
	if ready {
		out = append(out, healthCheck{"shutdown", func(context.Context) error {
			if h.shuttingDown.Load() {
				return errors.New("process is shutting down")
			}
			return nil
		}})
	}
	return out
}

// checkInformersSynced passes once the caches the server and its plugins
// read from (kube-apiserver's shared informers) have synced.
func (s *Server) checkInformersSynced(context.Context) error {
	var notSynced []string
	if !s.health.informersSynced.Load() {
		notSynced = append(notSynced, "plugin and flow control caches")
	}
	if s.nsCache != nil && !s.nsCache.local.Synced() {
		notSynced = append(notSynced, "namespaces")
	}
	if len(notSynced) > 0 {
		return fmt.Errorf("%d informers not started yet: %v", len(notSynced), notSynced)
	}
	return nil
}

// checkEtcd reads a key with a quorum read.
func (s *Server) checkEtcd(ctx context.Context) error {
	if s.nsStore == nil {
		return nil
	}
	return etcdHealth(ctx, func(ctx context.Context) error {
		var ns = s.nsHandler.Resource().New()
		return s.nsStore.Get(ctx, "/namespaces/default", storage.GetOptions{IgnoreNotFound: true}, ns)
	})
}

// etcdHealth runs read with kube-apiserver's etcd health check timeout
// (2 s) and words its failure as that check does ("error getting data
// from etcd: ..."), which /readyz/etcd shows.
func etcdHealth(ctx context.Context, read func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := read(ctx); err != nil {
		return fmt.Errorf("error getting data from etcd: %w", err)
	}
	return nil
}

// logCheck is kube-apiserver's "log" check: from the first check on, a
// goroutine flushes the logs (klog's, which client-go's logging goes
// through) every period and the check fails once no flush has completed
// for two periods, as when writing the logs blocks.
type logCheck struct {
	flush  func()
	now    func() time.Time
	period time.Duration
	start  sync.Once
	stop   chan struct{}
	closed sync.Once
	last   atomic.Int64 // UnixNano of the last completed flush
}

func newLogCheck(flush func(), now func() time.Time, period time.Duration) *logCheck {
	return &logCheck{flush: flush, now: now, period: period, stop: make(chan struct{})}
}

func (l *logCheck) check(context.Context) error {
	l.start.Do(func() {
		l.last.Store(l.now().UnixNano())
		go l.run()
	})
	if l.now().Sub(time.Unix(0, l.last.Load())) < 2*l.period {
		return nil
	}
	return errors.New("logging blocked")
}

func (l *logCheck) run() {
	t := time.NewTicker(l.period)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		l.flush()
		l.last.Store(l.now().UnixNano())
	}
}

// close ends the flushing goroutine.
func (l *logCheck) close() { l.closed.Do(func() { close(l.stop) }) }

// serveHealth serves /healthz, /livez and /readyz (?verbose,
// ?exclude=<check>) and /<endpoint>/<check> as kube-apiserver does;
// path is the request's, already known to be one of these or under one.
func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request) {
	endpoint, name, sub := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	checks := s.checks(endpoint)
	if sub {
		// Only the checks' own paths: "/readyz/" or an unknown check is
		// not found, as on kube-apiserver's exact-path mux.
		i := slices.IndexFunc(checks, func(c healthCheck) bool { return c.name == name })
		if i < 0 {
			s.notFound(w, r)
			return
		}
		if err := checks[i].check(r.Context()); err != nil {
			http.Error(w, fmt.Sprintf("internal server error: %v", err), http.StatusInternalServerError)
			return
		}
		fmt.Fprint(w, "ok")
		return
	}
	out, failed, unknown := runHealthChecks(r.Context(), checks, r.URL.Query()["exclude"])
	if len(unknown) > 0 {
		s.log.Warn("cannot exclude some health checks, no health checks are installed matching them", "endpoint", endpoint, "exclude", unknown)
	}
	if len(failed) > 0 {
		s.log.Debug("health check failed", "endpoint", endpoint, "checks", failed)
		http.Error(w, out+endpoint+" check failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if _, verbose := r.URL.Query()["verbose"]; !verbose {
		fmt.Fprint(w, "ok")
		return
	}
	fmt.Fprintf(w, "%s%s check passed\n", out, endpoint)
}

// runHealthChecks runs checks but the excluded ones and returns the
// verbose report ("[+]name ok", "[+]name excluded: ok", "[-]name failed:
// reason withheld" lines; a failure's reason is only logged, the
// endpoints being public), the names of the failed checks (with their
// errors) and the excluded names that match no check, which the report
// ends with a "warn:" line about (sorted, quoted), as kube-apiserver's.
func runHealthChecks(ctx context.Context, checks []healthCheck, exclude []string) (report string, failed []string, unknown []string) {
	excluded := map[string]bool{}
	for _, e := range exclude {
		excluded[e] = true
	}
	var b strings.Builder
	for _, c := range checks {
		if excluded[c.name] {
			delete(excluded, c.name)
			fmt.Fprintf(&b, "[+]%s excluded: ok\n", c.name)
			continue
		}
		if err := c.check(ctx); err != nil {
			fmt.Fprintf(&b, "[-]%s failed: reason withheld\n", c.name)
			failed = append(failed, c.name+": "+err.Error())
			continue
		}
		fmt.Fprintf(&b, "[+]%s ok\n", c.name)
	}
	if len(excluded) > 0 {
		for e := range excluded {
			unknown = append(unknown, e)
		}
		slices.Sort(unknown)
		quoted := make([]string, len(unknown))
		for i, u := range unknown {
			quoted[i] = strconv.Quote(u)
		}
		fmt.Fprintf(&b, "warn: some health checks cannot be excluded: no matches for %s\n", strings.Join(quoted, ","))
	}
	return b.String(), failed, unknown
}

// serveVersion serves /version.
func (s *Server) serveVersion(w http.ResponseWriter, r *http.Request) {
	info := VersionInfo(s.cfg.GitVersion)
	data, _ := json.MarshalIndent(info, "", "  ")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(data)
}

func requestInfo(r *http.Request) *request.Info { return request.InfoFrom(r.Context()) }
