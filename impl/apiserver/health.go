package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/version"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
	"github.com/kubeproof/kubeproof/impl/storage"
)

type healthCheck struct {
	name  string
	check func(ctx context.Context) error
}

func (s *Server) checks(endpoint string) []healthCheck {
	out := []healthCheck{
		{"ping", func(context.Context) error { return nil }},
		{"etcd", s.checkEtcd},
	}
	if endpoint == "readyz" {
		out = append(out, healthCheck{"poststarthook/bootstrap-namespaces", func(context.Context) error {
			if !s.bootstrapped.Load() {
				return fmt.Errorf("system namespaces not yet created")
			}
			return nil
		}})
	}
	return out
}

// checkEtcd reads a key with a quorum read.
func (s *Server) checkEtcd(ctx context.Context) error {
	if s.nsStore == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var ns = s.nsHandler.Resource().New()
	return s.nsStore.Get(ctx, "/namespaces/default", storage.GetOptions{IgnoreNotFound: true}, ns)
}

// serveHealth serves /healthz, /livez, /readyz (?verbose, ?exclude=name)
// and /<endpoint>/<check> as kube-apiserver does.
func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	endpoint := parts[0]
	checks := s.checks(endpoint)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if len(parts) > 1 {
		name := strings.Join(parts[1:], "/")
		for _, c := range checks {
			if c.name == name {
				if err := c.check(r.Context()); err != nil {
					w.WriteHeader(http.StatusInternalServerError)
					fmt.Fprintf(w, "internal server error: %v\n", err)
					return
				}
				fmt.Fprint(w, "ok")
				return
			}
		}
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, "404 page not found\n")
		return
	}
	exclude := map[string]bool{}
	for _, e := range r.URL.Query()["exclude"] {
		exclude[e] = true
	}
	var b strings.Builder
	failed := false
	for _, c := range checks {
		if exclude[c.name] {
			fmt.Fprintf(&b, "[+]%s excluded: ok\n", c.name)
			continue
		}
		if err := c.check(r.Context()); err != nil {
			failed = true
			fmt.Fprintf(&b, "[-]%s failed: reason withheld\n", c.name)
			s.log.Debug("health check failed", "endpoint", endpoint, "check", c.name, "err", err)
			continue
		}
		fmt.Fprintf(&b, "[+]%s ok\n", c.name)
	}
	_, verbose := r.URL.Query()["verbose"]
	if failed {
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintf(w, "%s%s check failed\n", b.String(), endpoint)
		return
	}
	if verbose {
		fmt.Fprintf(w, "%s%s check passed\n", b.String(), endpoint)
		return
	}
	fmt.Fprint(w, "ok")
}

// serveVersion serves /version.
func (s *Server) serveVersion(w http.ResponseWriter, r *http.Request) {
	gv := s.cfg.GitVersion
	major, minor := "1", ""
	if v := strings.TrimPrefix(gv, "v"); v != gv {
		f := strings.SplitN(v, ".", 3)
		if len(f) >= 2 {
			major, minor = f[0], f[1]
		}
	}
	info := version.Info{
		Major: major, Minor: minor, GitVersion: gv, GitCommit: "unknown", GitTreeState: "clean",
		BuildDate: "1970-01-01T00:00:00Z", GoVersion: runtime.Version(), Compiler: runtime.Compiler,
		Platform: runtime.GOOS + "/" + runtime.GOARCH,
	}
	data, _ := json.MarshalIndent(info, "", "  ")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(data)
}

func requestInfo(r *http.Request) *request.Info { return request.InfoFrom(r.Context()) }
