package apiserver_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/apiserver/admission"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth/bootstrappolicy"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth/node"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth/rbac"
)

// fullChain is the request chain of a real cluster on top of the x509
// authentication every env has: Node and RBAC authorizers over the default
// bootstrap policy, and the default admission plugins.
func fullChain(c *apiserver.Config) {
	c.DisableNamespaceLifecycle = true
	c.Plugins = func(stores apiserver.StoreGetter) (apiserver.Plugins, error) {
		var p apiserver.Plugins
		n, err := node.New(stores, node.Config{})
		if err != nil {
			return p, err
		}
		r, err := rbac.New(stores)
		if err != nil {
			return p, err
		}
		// system:masters first, as kube-apiserver (and impl/cluster)
		// always authorize it: the server's own loopback requests at
		// start come before the RBAC policy is written.
		p.Authorizer = auth.AuthorizerUnion{auth.PrivilegedGroups{bootstrappolicy.SystemMastersGroup}, n, r}
		p.Starters = []func(context.Context){n.Run, r.Run}
		p.PostStartHooks = []apiserver.PostStartHook{{Name: "rbac/bootstrap-roles",
			Run: func(ctx context.Context, hc apiserver.PostStartHookContext) error {
				return bootstrappolicy.EnsureThrough(ctx, hc.LoopbackClientConfig)
			}}}
		p.WaitReady = []func(context.Context) error{n.WaitSynced, r.WaitSynced}
		names, err := admission.EnabledPlugins(nil, nil)
		if err != nil {
			return p, err
		}
		var starters []func(context.Context)
		p.Mutators, p.Validators, starters, err = admission.NewPlugins(names, stores)
		p.Starters = append(p.Starters, starters...)
		return p, err
	}
}

// BenchmarkConfigMapCreateChain compares 1 KiB ConfigMap creates without
// an authorization and admission chain (AlwaysAllow, NamespaceLifecycle
// only) and with the full one (issue 8's target: within 15%). The client
// is the admin certificate (system:masters).
func BenchmarkConfigMapCreateChain(b *testing.B) {
	for _, chain := range []struct {
		name      string
		configure func(*apiserver.Config)
	}{{"none", nil}, {"full", fullChain}} {
		b.Run("chain="+chain.name+"/clients=64", func(b *testing.B) {
			e := newEnv(b, chain.configure)
			value := strings.Repeat("x", 1024)
			var seq atomic.Int64
			b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					body := []byte(fmt.Sprintf(`{"metadata":{"name":"cm-%d"},"data":{"v":%q}}`, seq.Add(1), value))
					req, _ := http.NewRequest("POST", e.url+"/api/v1/namespaces/default/configmaps", bytes.NewReader(body))
					req.Header.Set("Content-Type", "application/json")
					resp, err := e.client.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusCreated {
						b.Errorf("create: %d", resp.StatusCode)
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates/s")
		})
	}
}
