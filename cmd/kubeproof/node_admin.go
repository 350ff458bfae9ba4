package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubeproof/kubeproof/impl/cluster"
	"github.com/kubeproof/kubeproof/impl/kubelet"
	"github.com/kubeproof/kubeproof/impl/kubelet/eviction"
)

// nodeAdminSocket is the file name, inside `up`'s --data-dir, of the Unix
// socket through which `kubeproof node fail|recover|list` reaches the
// running `up` process. Being a file of mode 0600 in the data directory,
// it is usable by whoever owns the cluster's credentials and nobody else.
const nodeAdminSocket = "nodes.sock"

// simulatedNode is what the node admin endpoint needs of one in-process
// kubelet (*kubelet.Kubelet implements it).
type simulatedNode interface {
	NodeName() string
	Pause()
	Resume()
	Paused() bool
	Pressure() kubelet.Pressure
	SetPressure(kubelet.Pressure)
}

// availableSetter is a simulated node whose eviction manager's observed
// resources can be set (a kubelet with the sim runtime).
type availableSetter interface {
	SetAvailable(eviction.Signal, *resource.Quantity) error
}

// nodeState is one simulated node as `kubeproof node list` shows it; the
// JSON form is the admin endpoint's wire format.
type nodeState struct {
	Name     string   `json:"name"`
	Failed   bool     `json:"failed"`
	Pressure []string `json:"pressure,omitempty"`
}

func stateOf(n simulatedNode) nodeState {
	st := nodeState{Name: n.NodeName(), Failed: n.Paused()}
	for _, c := range n.Pressure().Conditions() {
		st.Pressure = append(st.Pressure, string(c))
	}
	return st
}

// parsePressure reads a comma-separated list of pressure conditions
// ("" or "none": no pressure).
func parsePressure(s string) (kubelet.Pressure, error) {
	var p kubelet.Pressure
	for _, c := range strings.Split(s, ",") {
		switch strings.TrimSpace(c) {
		case "", "none":
		case string(v1.NodeMemoryPressure):
			p.Memory = true
		case string(v1.NodeDiskPressure):
			p.Disk = true
		case string(v1.NodePIDPressure):
			p.PID = true
		default:
			return p, fmt.Errorf("unknown pressure condition %q: want MemoryPressure, DiskPressure, PIDPressure or none", c)
		}
	}
	return p, nil
}

// nodeAdmin is the HTTP handler of the node admin endpoint:
//
//	GET  /nodes               every simulated node and whether it is failed
//	POST /nodes/{name}/fail    the node's kubelet stops (no Lease renewals,
//	                           no node status, no pod syncs), as if the
//	                           machine were cut off from the API server
//	POST /nodes/{name}/recover the kubelet resumes where it stopped
//	POST /nodes/{name}/pressure?conditions=MemoryPressure,DiskPressure
//	                           the node reports these pressure conditions
//	                           (none: no pressure) and its kubelet admits
//	                           pods as under that pressure
//	POST /nodes/{name}/pressure?available=memory.available=50Mi,...
//	                           the node's eviction manager observes these
//	                           amounts available (and acts on them)
//
// Both POSTs answer with the node's state and are idempotent; an unknown
// node is a 404.
func nodeAdmin(nodes []simulatedNode, logger *slog.Logger) http.Handler {
	byName := make(map[string]simulatedNode, len(nodes))
	for _, n := range nodes {
		byName[n.NodeName()] = n
	}
	var mu sync.Mutex // one state change at a time, so replies are consistent
	reply := func(w http.ResponseWriter, code int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(v)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /nodes", func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		out := make([]nodeState, 0, len(nodes))
		for _, n := range nodes {
			out = append(out, stateOf(n))
		}
		sort.Slice(out, func(i, j int) bool { return nodeLess(out[i].Name, out[j].Name) })
		reply(w, http.StatusOK, out)
	})
	change := func(fail bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			name := r.PathValue("name")
			n, ok := byName[name]
			if !ok {
				reply(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("no simulated node %q in this kubeproof up", name)})
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if fail && !n.Paused() {
				n.Pause()
				logger.Warn("simulated node failed", "node", name)
			} else if !fail && n.Paused() {
				n.Resume()
				logger.Warn("simulated node recovered", "node", name)
			}
			reply(w, http.StatusOK, stateOf(n))
		}
	}
	mux.HandleFunc("POST /nodes/{name}/pressure", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		n, ok := byName[name]
		if !ok {
			reply(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("no simulated node %q in this kubeproof up", name)})
			return
		}
		if text := r.URL.Query().Get("available"); text != "" {
			available, err := eviction.ParseAvailable(text)
			setter, ok := n.(availableSetter)
			if err == nil && !ok {
				err = fmt.Errorf("node %s cannot set available resources", name)
			}
			if err != nil {
				reply(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for s, q := range available {
				if err := setter.SetAvailable(s, &q); err != nil {
					reply(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
					return
				}
			}
			logger.Warn("simulated node resources", "node", name, "available", text)
			reply(w, http.StatusOK, stateOf(n))
			return
		}
		p, err := parsePressure(r.URL.Query().Get("conditions"))
		if err != nil {
			reply(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		mu.Lock()
		defer mu.Unlock()
		n.SetPressure(p)
		logger.Warn("simulated node pressure", "node", name, "pressure", p.Conditions())
		reply(w, http.StatusOK, stateOf(n))
	})
	mux.Handle("POST /nodes/{name}/fail", change(true))
	mux.Handle("POST /nodes/{name}/recover", change(false))
	return mux
}

// nodeLess orders node-2 before node-10.
func nodeLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// serveNodeAdmin serves the node admin endpoint on dataDir/nodes.sock until
// ctx ends; the returned function waits for the server to stop and removes
// the socket. A socket left behind by a killed `up` is replaced; one that
// still answers means another `up` runs on the same data directory.
func serveNodeAdmin(ctx context.Context, dataDir string, nodes []simulatedNode, logger *slog.Logger) (wait func(), err error) {
	path := filepath.Join(dataDir, nodeAdminSocket)
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return nil, fmt.Errorf("node admin socket %s is in use: is another kubeproof up running on this --data-dir?", path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("removing stale node admin socket: %w", err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("node admin socket: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("node admin socket: %w", err)
	}
	srv := &http.Server{Handler: nodeAdmin(nodes, logger), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("node admin endpoint", "err", err)
		}
	}()
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		select {
		case <-ctx.Done():
		case <-done:
		}
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdownCtx)
		<-done
		_ = os.Remove(path)
	}()
	return func() { <-stopped }, nil
}

// serveUpNodeAdmin serves the node admin endpoint for the n simulated nodes
// (node-1 … node-n) of c; a cluster without simulated nodes serves none.
func serveUpNodeAdmin(ctx context.Context, c *cluster.Cluster, dataDir string, n int, logger *slog.Logger) (wait func(), err error) {
	var nodes []simulatedNode
	for i := 1; i <= n; i++ {
		if k := c.Kubelet(fmt.Sprintf("node-%d", i)); k != nil {
			nodes = append(nodes, k)
		}
	}
	if len(nodes) == 0 {
		return func() {}, nil
	}
	return serveNodeAdmin(ctx, dataDir, nodes, logger)
}
