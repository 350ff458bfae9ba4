// Package stability writes metric help texts as Kubernetes components
// expose them. Upstream components register their metrics through
// component-base, which starts every help text with the metric's stability
// level in brackets ("[ALPHA] ", "[BETA] ", "[STABLE] ", "[INTERNAL] ";
// ALPHA when a definition names no level) and, for a metric deprecated in
// the running version, "(Deprecated since X.Y.Z) " after it. Collectors
// registered raw (the Go runtime and process collectors) get no prefix.
// kubeproof registers plain Prometheus collectors, so each definition
// passes its help text through its level here: scrapes and dashboards that
// parse the prefix see what they see on upstream's /metrics.
package stability

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Level is a metric's stability level.
type Level string

// The stability levels component-base knows.
const (
	Internal Level = "INTERNAL"
	Alpha    Level = "ALPHA"
	Beta     Level = "BETA"
	Stable   Level = "STABLE"
)

// Help is help with l's prefix, "[L] help"; the empty Level is ALPHA, as an
// upstream definition without a level. A help that already starts with a
// level prefix is returned unchanged, so that annotating twice is harmless.
func (l Level) Help(help string) string {
	if HasPrefix(help) {
		return help
	}
	if l == "" {
		l = Alpha
	}
	return "[" + string(l) + "] " + help
}

// DeprecatedHelp is help of a metric of level l deprecated since version
// (e.g. "1.34.0"), as upstream shows it while it still exposes the metric:
// "[L] (Deprecated since 1.34.0) help".
func (l Level) DeprecatedHelp(since, help string) string {
	if HasPrefix(help) {
		return help
	}
	return l.Help("(Deprecated since " + since + ") " + help)
}

// HasPrefix reports whether help starts with a stability level prefix.
func HasPrefix(help string) bool {
	for _, l := range []Level{Internal, Alpha, Beta, Stable} {
		if strings.HasPrefix(help, "["+string(l)+"] ") {
			return true
		}
	}
	return false
}

// raw reports whether a metric family comes from a collector upstream
// registers without component-base (the Go runtime and process
// collectors), whose help texts carry no level.
func raw(name string) bool {
	return strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_")
}

// Unannotated gathers g and returns the names of the metric families whose
// help text lacks a level prefix, other than the Go runtime and process
// collectors' (which upstream leaves unprefixed too). A component's tests
// use it to check that every metric it registers went through Help.
func Unannotated(g prometheus.Gatherer) ([]string, error) {
	mfs, err := g.Gather()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, mf := range mfs {
		if !raw(mf.GetName()) && !HasPrefix(mf.GetHelp()) {
			out = append(out, mf.GetName())
		}
	}
	return out, nil
}

// Helps describes cs and returns each described metric's help text by its
// fully-qualified name. Unlike a scrape, it sees the vectors that have no
// series yet. It reads the names and help texts from the descriptions'
// String form (client_golang offers no getter), and fails when that form
// is not the one it knows.
func Helps(cs ...prometheus.Collector) (map[string]string, error) {
	ch := make(chan *prometheus.Desc)
	go func() {
		for _, c := range cs {
			c.Describe(ch)
		}
		close(ch)
	}()
	out := map[string]string{}
	var err error
	for d := range ch {
		name, help, perr := parseDesc(d.String())
		if perr != nil {
			if err == nil {
				err = perr
			}
			continue
		}
		out[name] = help
	}
	return out, err
}

// parseDesc reads the name and help of a Desc's String form,
// Desc{fqName: "...", help: "...", ...}.
func parseDesc(s string) (name, help string, err error) {
	rest, ok := strings.CutPrefix(s, "Desc{fqName: ")
	if !ok {
		return "", "", fmt.Errorf("unknown metric description form %q", s)
	}
	q, err := strconv.QuotedPrefix(rest)
	if err != nil {
		return "", "", fmt.Errorf("metric description %q: name: %w", s, err)
	}
	if name, err = strconv.Unquote(q); err != nil {
		return "", "", fmt.Errorf("metric description %q: name: %w", s, err)
	}
	if rest, ok = strings.CutPrefix(rest[len(q):], ", help: "); !ok {
		return "", "", fmt.Errorf("metric description %q: no help", s)
	}
	if q, err = strconv.QuotedPrefix(rest); err != nil {
		return "", "", fmt.Errorf("metric description %q: help: %w", s, err)
	}
	if help, err = strconv.Unquote(q); err != nil {
		return "", "", fmt.Errorf("metric description %q: help: %w", s, err)
	}
	return name, help, nil
}

// Recorder is a prometheus.Registerer that passes registrations on and
// keeps the collectors registered, for tests to describe them (Helps) when
// a component registers on a Registerer it is given.
type Recorder struct {
	prometheus.Registerer
	mu         sync.Mutex
	collectors []prometheus.Collector
}

// Register implements prometheus.Registerer.
func (r *Recorder) Register(c prometheus.Collector) error {
	if err := r.Registerer.Register(c); err != nil {
		return err
	}
	r.mu.Lock()
	r.collectors = append(r.collectors, c)
	r.mu.Unlock()
	return nil
}

// MustRegister implements prometheus.Registerer.
func (r *Recorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// Collectors are the collectors registered so far.
func (r *Recorder) Collectors() []prometheus.Collector {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]prometheus.Collector(nil), r.collectors...)
}

// Mismatches compares help texts by metric name (Helps) with the prefixes
// they must start with (e.g. "[STABLE] "): it describes each metric whose
// help lacks a level prefix and each wanted metric missing or with another
// prefix. Empty when all is as upstream.
func Mismatches(helps map[string]string, want map[string]string) []string {
	var out []string
	for name, help := range helps {
		if !raw(name) && !HasPrefix(help) {
			out = append(out, fmt.Sprintf("%s: help %q has no stability level", name, help))
		}
	}
	for name, prefix := range want {
		help, ok := helps[name]
		switch {
		case !ok:
			out = append(out, name+": not registered")
		case !strings.HasPrefix(help, prefix):
			out = append(out, fmt.Sprintf("%s: help %q, want it to start with %q", name, help, prefix))
		}
	}
	sort.Strings(out)
	return out
}
