package cluster

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/apiserver/audit"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth/bootstrappolicy"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth/rbac/objcache/objcachetest"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
	"github.com/kubeproof/kubeproof/impl/storage"
)

func TestBuildChainRejectsBadFlags(t *testing.T) {
	dir := t.TempDir()
	policy := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policy, []byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		opts AuthOptions
		want string
	}{
		{"unknown mode", AuthOptions{AuthorizationModes: []string{"RBAC", "Foo"}}, `authorization-mode "Foo" is not a valid mode`},
		{"mode kubeproof lacks", AuthOptions{AuthorizationModes: []string{"RBAC", "ABAC"}}, `authorization-mode "ABAC" is not one kubeproof has`},
		{"mode twice", AuthOptions{AuthorizationModes: []string{"RBAC", "RBAC"}}, `authorization-mode ["RBAC" "RBAC"] has mode specified more than once`},
		{"every option error together", AuthOptions{AuthorizationModes: []string{"Foo"}, EnableAdmissionPlugins: []string{"Nope"},
			ServiceAccountIssuers: []string{"https://x"}, TokenAuthFile: filepath.Join(dir, "none.csv")},
			`[--service-account-issuer needs --service-account-signing-key-file or --service-account-key-file, authorization-mode "Foo" is not a valid mode, enable-admission-plugins plugin "Nope" is unknown]`},
		{"unknown plugin", AuthOptions{EnableAdmissionPlugins: []string{"Nope"}}, `"Nope" is unknown`},
		{"bad audit log mode without policy", AuthOptions{AuditLogPath: filepath.Join(dir, "audit.log"), AuditLog: audit.LogOptions{Mode: "async"}},
			"invalid audit log mode async"},
		{"missing audit policy without backend", AuthOptions{AuditPolicyFile: filepath.Join(dir, "none.yaml")}, "loading audit policy file: failed to read file path"},
		{"all audit errors", func() AuthOptions {
			o := AuthOptions{AuditLogPath: "-", AuditLog: audit.DefaultLogOptions(), AuditWebhook: audit.DefaultWebhookOptions()}
			o.AuditLog.Mode, o.AuditWebhook.ConfigFile, o.AuditWebhook.Mode = "async", filepath.Join(dir, "hook"), "strict"
			return o
		}(),
			`[invalid audit log mode async, allowed modes are "batch,blocking,blocking-strict", invalid audit webhook mode strict, allowed modes are "batch,blocking,blocking-strict"]`},
		{"bad audit log mode", AuthOptions{AuditPolicyFile: policy, AuditLogPath: filepath.Join(dir, "audit.log"),
			AuditLog: audit.LogOptions{Mode: "async"}}, "invalid audit log mode async"},
		{"missing audit webhook config", AuthOptions{AuditPolicyFile: policy, AuditWebhook: audit.WebhookOptions{ConfigFile: filepath.Join(dir, "none")}},
			"initializing audit webhook"},
		{"missing token file", AuthOptions{TokenAuthFile: filepath.Join(dir, "none.csv")}, "token file"},
		{"issuer without keys", AuthOptions{ServiceAccountIssuers: []string{"https://x"}}, "needs --service-account-signing-key-file"},
		{"missing signing key", AuthOptions{ServiceAccountSigningKeyFile: filepath.Join(dir, "none.key")}, "signing key"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := buildChain(tc.opts)
			if err == nil {
				c.close()
				t.Fatalf("no error, want %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q, want it to contain %q", err, tc.want)
			}
		})
	}
	c, err := buildChain(AuthOptions{AuditLogPath: filepath.Join(dir, "audit.log"), AuditPolicyFile: policy})
	if err != nil {
		t.Fatal(err)
	}
	if c.auditPolicy == nil || c.backend() == nil || c.serviceAccounts != nil || c.plugins == nil {
		t.Fatalf("chain %+v", c)
	}
	c.close()
	if c, err = buildChain(AuthOptions{}); err != nil || c.backend() != nil {
		t.Fatalf("default chain: %+v %v", c, err)
	}
}

// TestBuildChainAuditFlagsAlone: as kube-apiserver, an audit backend
// without --audit-policy-file, or the policy without a backend, starts
// and records nothing (before: refused, "go together"); the webhook's
// config file is not read without a policy.
func TestBuildChainAuditFlagsAlone(t *testing.T) {
	dir := t.TempDir()
	policy := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policy, []byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, opts := range map[string]AuthOptions{
		"log without policy":     {AuditLogPath: filepath.Join(dir, "audit.log")},
		"webhook without policy": {AuditWebhook: audit.WebhookOptions{ConfigFile: filepath.Join(dir, "missing-hook")}},
		"policy without backend": {AuditPolicyFile: policy},
	} {
		c, err := buildChain(opts)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if c.backend() != nil {
			t.Errorf("%s: an audit backend, want none", name)
		}
		c.close()
	}
}

// TestRBACCachesListAfterTheDefaultPolicy: the RBAC caches first list only
// once the default policy is written, so when the server starts serving,
// anonymous /version is already allowed. The cluster role bindings' store
// holds its first write back until something lists it (or 300 ms pass):
// a cache that listed while the policy was being written fails the test
// every time instead of now and then.
func TestRBACCachesListAfterTheDefaultPolicy(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	etcd, err := objcachetest.StartEtcd(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer etcd.Close()
	real, err := etcd.NewStores(objcachetest.RBACAndPods())
	if err != nil {
		t.Fatal(err)
	}
	defer real.Close()
	s := &listRecordingStores{Stores: real, listed: make(chan struct{})}
	// The policy written straight to the stores: no server here.
	policy := func(ctx context.Context, _ apiserver.PostStartHookContext) error {
		return bootstrappolicy.Ensure(ctx, objcachetest.PolicyClient{Stores: s})
	}
	a, start, bootstrap, wait, err := rbacAuthorizer(s, policy)
	if err != nil {
		t.Fatal(err)
	}
	if bootstrap.Name != "rbac/bootstrap-roles" {
		t.Errorf("post-start hook %q, want kube-apiserver's rbac/bootstrap-roles", bootstrap.Name)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		start(ctx)
	}()
	defer func() { cancel(); <-done }()
	// As the server's Run: the post-start hook, then the wait.
	if err := bootstrap.Run(ctx, apiserver.PostStartHookContext{}); err != nil {
		t.Fatal(err)
	}
	if err := wait(ctx); err != nil {
		t.Fatal(err)
	}
	if s.listedEarly.Load() {
		t.Error("the cluster role bindings were listed before the default policy was written")
	}
	anonymous := &request.User{Name: "system:anonymous", Groups: []string{bootstrappolicy.UnauthenticatedGroup}}
	d, reason, err := a.Authorize(ctx, auth.Attributes{User: anonymous, Info: &request.Info{Verb: "get", Path: "/version"}})
	if d != auth.DecisionAllow || err != nil {
		t.Errorf("anonymous get /version as the server starts serving: %v %q %v, want allowed", d, reason, err)
	}
}

// listRecordingStores wraps the cluster role bindings' store: its first
// Create waits for a list (at most 300 ms), and a list before any write
// has completed is recorded.
type listRecordingStores struct {
	*objcachetest.Stores
	listed      chan struct{}
	listOnce    sync.Once
	waited      atomic.Bool
	wrote       atomic.Bool
	listedEarly atomic.Bool
}

func (s *listRecordingStores) Store(gr schema.GroupResource) (storage.Interface, bool) {
	st, ok := s.Stores.Store(gr)
	if ok && gr == rbacv1.Resource("clusterrolebindings") {
		return &listRecordingStore{Interface: st, s: s}, true
	}
	return st, ok
}

type listRecordingStore struct {
	storage.Interface
	s *listRecordingStores
}

func (st *listRecordingStore) GetList(ctx context.Context, key string, opts storage.ListOptions, list runtime.Object) error {
	if !st.s.wrote.Load() {
		st.s.listedEarly.Store(true)
	}
	st.s.listOnce.Do(func() { close(st.s.listed) })
	return st.Interface.GetList(ctx, key, opts, list)
}

func (st *listRecordingStore) Create(ctx context.Context, key string, obj, out runtime.Object) error {
	if !st.s.waited.Swap(true) {
		select {
		case <-st.s.listed:
		case <-time.After(300 * time.Millisecond):
		}
	}
	err := st.Interface.Create(ctx, key, obj, out)
	st.s.wrote.Store(true)
	return err
}

// The API server's EventTTL for a configured one: 0 is kube-apiserver's
// default hour, negative keeps events until deleted (the API server's 0).
func TestEventTTL(t *testing.T) {
	for _, tc := range []struct{ configured, want time.Duration }{
		{0, DefaultEventTTL},
		{-1, 0},
		{10 * time.Minute, 10 * time.Minute},
	} {
		if got := eventTTL(tc.configured); got != tc.want {
			t.Errorf("eventTTL(%s) = %s, want %s", tc.configured, got, tc.want)
		}
	}
}
