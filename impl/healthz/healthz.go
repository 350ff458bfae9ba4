// Package healthz serves the health endpoints of kubeproof's standalone
// scheduler and controller manager (/healthz, /livez, /readyz) as
// k8s.io/apiserver's healthz package serves kube-scheduler's and
// kube-controller-manager's: a list of named checks behind one path,
// "ok" when all pass, a report of every check with ?verbose ("[+]name ok",
// "[+]name excluded: ok" for each ?exclude=name, "[-]name failed: reason
// withheld", the reason going to the log only since the endpoints are
// public) ending "<endpoint> check passed", and 500 with that report
// ending "<endpoint> check failed" when one fails; each check also at
// <path>/<name> ("ok", or 500 "internal server error: <reason>").
package healthz

import (
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Check is one named health check. client-go's
// leaderelection.HealthzAdaptor is one.
type Check interface {
	Name() string
	Check(r *http.Request) error
}

type namedCheck struct {
	name  string
	check func(*http.Request) error
}

func (c namedCheck) Name() string                { return c.name }
func (c namedCheck) Check(r *http.Request) error { return c.check(r) }

// NamedCheck is a Check of a function.
func NamedCheck(name string, check func(*http.Request) error) Check {
	return namedCheck{name: name, check: check}
}

// Ping always passes: the check an endpoint without checks has.
var Ping = NamedCheck("ping", func(*http.Request) error { return nil })

// Shutdown fails once done is closed, as upstream's "shutdown" readiness
// check.
func Shutdown(done <-chan struct{}) Check {
	return NamedCheck("shutdown", func(*http.Request) error {
		select {
		case <-done:
			return fmt.Errorf("process is shutting down")
		default:
			return nil
		}
	})
}

// Install serves checks (Ping when none) at path and each at
// path/<name> on mux.
func Install(mux *http.ServeMux, path string, log *slog.Logger, checks ...Check) {
	if len(checks) == 0 {
		checks = []Check{Ping}
	}
	mux.Handle(path, Handler(path, log, checks...))
	for _, c := range checks {
		mux.HandleFunc(path+"/"+c.Name(), func(w http.ResponseWriter, r *http.Request) {
			if err := c.Check(r); err != nil {
				http.Error(w, fmt.Sprintf("internal server error: %v", err), http.StatusInternalServerError)
				return
			}
			fmt.Fprint(w, "ok")
		})
	}
}

// Handler serves checks (Ping when none) as the endpoint at path, without
// the per-check paths.
func Handler(path string, log *slog.Logger, checks ...Check) http.Handler {
	if len(checks) == 0 {
		checks = []Check{Ping}
	}
	endpoint := strings.Split(strings.TrimPrefix(path, "/"), "/")[0]
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		serve(w, r, endpoint, log, checks)
	})
}

func serve(w http.ResponseWriter, r *http.Request, endpoint string, log *slog.Logger, checks []Check) {
	excluded := map[string]bool{}
	for _, e := range r.URL.Query()["exclude"] {
		excluded[e] = true
	}
	var report strings.Builder
	var failed []string
	for _, c := range checks {
		if excluded[c.Name()] {
			delete(excluded, c.Name())
			fmt.Fprintf(&report, "[+]%s excluded: ok\n", c.Name())
			continue
		}
		if err := c.Check(r); err != nil {
			fmt.Fprintf(&report, "[-]%s failed: reason withheld\n", c.Name())
			failed = append(failed, c.Name()+": "+err.Error())
			continue
		}
		fmt.Fprintf(&report, "[+]%s ok\n", c.Name())
	}
	if len(excluded) > 0 {
		// Sorted by name, then quoted, as upstream lists them.
		unknown := slices.Sorted(maps.Keys(excluded))
		for i, e := range unknown {
			unknown[i] = strconv.Quote(e)
		}
		fmt.Fprintf(&report, "warn: some health checks cannot be excluded: no matches for %s\n", strings.Join(unknown, ","))
		log.Warn("cannot exclude some health checks, none is installed with that name", "endpoint", endpoint, "exclude", unknown)
	}
	if len(failed) > 0 {
		log.Info("health check failed", "endpoint", endpoint, "failed", failed)
		http.Error(w, report.String()+endpoint+" check failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if _, verbose := r.URL.Query()["verbose"]; !verbose {
		fmt.Fprint(w, "ok")
		return
	}
	fmt.Fprintf(w, "%s%s check passed\n", report.String(), endpoint)
}

// Mutable is an endpoint whose checks grow, as kube-controller-manager's
// /healthz: the leader election check from the start, each controller's
// once it started. Like upstream's, it serves the endpoint only (no
// per-check paths), Ping while it has no checks.
type Mutable struct {
	path string
	log  *slog.Logger

	mu     sync.RWMutex
	checks []Check
}

// NewMutable is the endpoint at path with checks.
func NewMutable(path string, log *slog.Logger, checks ...Check) *Mutable {
	return &Mutable{path: path, log: log, checks: checks}
}

// Add appends checks.
func (m *Mutable) Add(checks ...Check) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.checks = append(m.checks, checks...)
}

func (m *Mutable) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.mu.RLock()
	checks := slices.Clone(m.checks)
	m.mu.RUnlock()
	Handler(m.path, m.log, checks...).ServeHTTP(w, r)
}
