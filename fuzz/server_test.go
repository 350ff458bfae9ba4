package fuzz

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/apiserver/admission"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth/bootstrappolicy"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth/node"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth/rbac"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth/rbac/objcache/objcachetest"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
	"github.com/kubeproof/kubeproof/impl/registry"
	"github.com/kubeproof/kubeproof/impl/registry/ipallocator"
	"github.com/kubeproof/kubeproof/impl/storage/embedded"
	"github.com/kubeproof/kubeproof/impl/storage/storagebackend"
)

func TestMain(m *testing.M) {
	code := m.Run()
	stopServer()
	os.Exit(code)
}

// keyPrefix is where the fuzzed server keeps its objects in etcd.
const keyPrefix = "/fuzz"

// fuzzNamespaces are the namespaces requests are sent to: the immortal
// system ones (so fuzzing can never lose them), one the fuzzer may delete,
// and one that does not exist.
var fuzzNamespaces = []string{"default", "kube-system", "fuzz", "missing"}

// patchNamespace is where FuzzPatch creates its objects: no other target
// writes there, so no limit range, quota or webhook another target made
// changes or refuses them (in `go test ./fuzz`, every target shares one
// server).
const patchNamespace = "fuzz-patch"

// liveServer is one API server on an embedded etcd per test process,
// started on first use and shared by every HTTP-level target (a fuzz
// worker is one process running one target for its whole life).
type liveServer struct {
	dir     string
	etcd    *embedded.Etcd
	srv     *apiserver.Server
	handler http.Handler
	// stopPlugins ends the admission plugins' caches; plugins waits for
	// them to return.
	stopPlugins context.CancelFunc
	pluginsCtx  context.Context
	plugins     sync.WaitGroup
	// saToken is the bearer token of the service account identity
	// (identity_test.go), issued at start.
	saToken string
	// fixedBindings are the RoleBindings and ClusterRoleBindings after
	// start (namespace/name: resourceVersion), see extraGrants.
	fixedBindings map[string]string
	// discovered lists every resource and subresource discovery shows.
	discovered []discoveredResource
	// byGVK finds the served resource of a stored object.
	byGVK map[schema.GroupVersionKind]*resource.Resource
}

// discoveredResource is one entry of a discovery resource list.
type discoveredResource struct {
	// root is "/api/v1" or "/apis/<group>/<version>".
	root string
	gv   schema.GroupVersion
	metav1.APIResource
	// res is the served resource behind it (the parent for subresources).
	res *resource.Resource
}

// admin authenticates every request that carries no credentials as a
// cluster administrator (as a client certificate in system:masters would),
// so that the fuzzer reaches the handlers rather than the authentication
// filter. A request with a bearer token is left to the server's token
// authenticators, and one whose context says so is not
// authenticated at all (anonymousKey): anonymous.
type admin struct{}

func (admin) Authenticate(r *http.Request) (*request.User, bool, error) {
	if r.Header.Get("Authorization") != "" || r.Context().Value(anonymousKey{}) != nil {
		return nil, false, nil
	}
	return &request.User{Name: "fuzz-admin", Groups: []string{"system:masters", "system:authenticated"}}, true, nil
}

var (
	serverMu  sync.Mutex
	theServer *liveServer
	serverErr error
)

// server returns the process's API server, starting it if needed.
func server(t testing.TB) *liveServer {
	t.Helper()
	serverMu.Lock()
	defer serverMu.Unlock()
	if theServer == nil && serverErr == nil {
		theServer, serverErr = startServer()
	}
	if serverErr != nil {
		t.Fatalf("starting the API server: %v", serverErr)
	}
	return theServer
}

func startServer() (*liveServer, error) {
	dir, err := os.MkdirTemp("", "kubeproof-fuzz-")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := &liveServer{dir: dir, byGVK: map[schema.GroupVersionKind]*resource.Resource{}}
	s.etcd, err = embedded.Start(ctx, embedded.Config{DataDir: dir, UnsafeNoFsync: true})
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("starting etcd: %w", err)
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		s.close()
		return nil, fmt.Errorf("generating the service account signing key: %w", err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	// No watch cache and no compaction: every read is a quorum read of
	// etcd and the revision moves only when a request writes.
	factory := storagebackend.NewFactory(storagebackend.Config{Client: s.etcd.Client(), Prefix: keyPrefix, Logger: quiet})
	rs := registry.All()
	for _, r := range rs {
		s.byGVK[r.GroupVersionKind()] = r
	}
	plugins, err := admission.EnabledPlugins(apiserverAdmissionPlugins, nil)
	if err != nil {
		s.close()
		return nil, fmt.Errorf("resolving the admission plugins: %w", err)
	}
	nodeTokens, err := auth.ParseTokenFile(strings.NewReader(fuzzNodeToken + "," + fuzzNodeUser + ",fuzz-node-uid," + nodesGroup + "\n"))
	if err != nil {
		s.close()
		return nil, fmt.Errorf("parsing the node's token: %w", err)
	}
	var starters []func(context.Context)
	var waits []func(context.Context) error
	s.srv, err = apiserver.New(apiserver.Config{
		StorageFactory: factory,
		Resources:      rs,
		Authenticator:  admin{},
		// The identities FuzzHTTP sends requests as (identity_test.go):
		// a node's static token (--token-auth-file), service account
		// tokens, anonymous requests.
		TokenAuthenticators: []auth.TokenAuthenticator{nodeTokens},
		Anonymous:           true,
		Logger:              quiet,
		// pods/proxy and services/proxy reach no network from the
		// fuzzer (a fuzzed pod status may name any IP): every connection
		// is refused, kube-apiserver's 503 "error trying to reach service".
		ProxyDial: func(_ context.Context, network, address string) (net.Conn, error) {
			return nil, fmt.Errorf("dial %s %s: the fuzzer has no pod network", network, address)
		},
		// One request at a time reaches the server; never shed load.
		MaxRequestsInFlight: -1, MaxMutatingRequestsInFlight: -1,
		// A signing key serves the TokenRequest API (serviceaccounts/token).
		ServiceAccounts: &apiserver.ServiceAccountConfig{Issuers: []string{"https://kubernetes.default.svc.cluster.local"}, SigningKey: saKey},
		// The admission chain of `kubeproof apiserver` (impl/cluster's
		// buildChain), NamespaceLifecycle included, and its default
		// authorization: system:masters, then Node, then RBAC (with the
		// bootstrap policy), which the admission plugins ask too.
		DisableNamespaceLifecycle: true,
		Plugins: func(stores apiserver.StoreGetter) (apiserver.Plugins, error) {
			nodeAuthz, err := node.New(stores, node.Config{FieldSelector: func(_ context.Context, info *request.Info) string { return info.FieldSelector }})
			if err != nil {
				return apiserver.Plugins{}, fmt.Errorf("building the Node authorizer: %w", err)
			}
			rbacAuthz, err := rbac.New(stores)
			if err != nil {
				return apiserver.Plugins{}, fmt.Errorf("building the RBAC authorizer: %w", err)
			}
			union := auth.AuthorizerUnion{auth.PrivilegedGroups{bootstrappolicy.SystemMastersGroup}, nodeAuthz, rbacAuthz}
			mut, val, start, err := admission.NewPluginsWithOptions(plugins, stores, admission.Options{Authorizer: union})
			// The bootstrap policy is written before RBAC's cache first
			// lists (as impl/cluster's rbacAuthorizer orders them).
			starters = append(start, nodeAuthz.Run)
			waits = []func(context.Context) error{nodeAuthz.WaitSynced,
				// Straight to the stores, as the harness drives the server
				// without Run and its post-start hooks.
				func(ctx context.Context) error {
					return bootstrappolicy.Ensure(ctx, objcachetest.PolicyClient{Stores: stores})
				},
				func(ctx context.Context) error {
					s.plugins.Go(func() { rbacAuthz.Run(s.pluginsCtx) })
					return rbacAuthz.WaitSynced(ctx)
				}}
			return apiserver.Plugins{Authorizer: union, Mutators: mut, Validators: val}, err
		},
	})
	if err != nil {
		s.close()
		return nil, err
	}
	// The plugins' caches, as Server.Run starts them; until one has
	// synced its plugin reads etcd.
	pctx, stop := context.WithCancel(context.Background())
	s.stopPlugins, s.pluginsCtx = stop, pctx
	for _, start := range starters {
		s.plugins.Go(func() { start(pctx) })
	}
	if err := s.srv.EnsureSystemNamespaces(ctx); err != nil {
		s.close()
		return nil, err
	}
	for _, wait := range waits {
		if err := wait(ctx); err != nil {
			s.close()
			return nil, fmt.Errorf("waiting for the authorizers: %w", err)
		}
	}
	s.handler = s.srv.Handler()
	for _, ns := range []string{"fuzz", patchNamespace} {
		if code, body := s.do(ctx, http.MethodPost, "/api/v1/namespaces", "application/json", []byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"`+ns+`"}}`)); code != http.StatusCreated {
			s.close()
			return nil, fmt.Errorf("creating namespace %s: %d %s", ns, code, body)
		}
	}
	if err := s.ensureDefaultServiceAccounts(ctx); err != nil {
		s.close()
		return nil, err
	}
	// The account the pod variant running as "seed" names (FuzzHTTP
	// creates its own in the namespaces it writes to).
	if code, body := s.do(ctx, http.MethodPost, "/api/v1/namespaces/"+patchNamespace+"/serviceaccounts", "application/json", []byte(`{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"seed"}}`)); code != http.StatusCreated {
		s.close()
		return nil, fmt.Errorf("creating service account %s/seed: %d %s", patchNamespace, code, body)
	}
	if err := s.setUpIdentities(ctx); err != nil {
		s.close()
		return nil, err
	}
	if err := s.setUpNodeGraph(ctx); err != nil {
		s.close()
		return nil, err
	}
	if err := s.discover(ctx, rs); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

func stopServer() {
	serverMu.Lock()
	defer serverMu.Unlock()
	if theServer != nil {
		theServer.close()
		theServer = nil
	}
}

func (s *liveServer) close() {
	if s.stopPlugins != nil {
		s.stopPlugins()
		s.plugins.Wait()
	}
	if s.srv != nil {
		s.srv.Close()
	}
	if s.etcd != nil {
		s.etcd.Close()
	}
	os.RemoveAll(s.dir)
}

// apiserverAdmissionPlugins are what `kubeproof apiserver` (and `up`)
// enable besides kube-apiserver's default admission plugins
// (cluster.UpAdmissionPlugins, not imported: impl/cluster would bring
// every controller and the kubelet into this test binary).
var apiserverAdmissionPlugins = []string{"NodeRestriction"}

// ensureDefaultServiceAccounts creates the service account "default" in
// every existing namespace of fuzzNamespaces and in patchNamespace that
// lacks it, as the service account controller does in a cluster: without
// it the ServiceAccount admission plugin refuses every pod that names no
// other account.
func (s *liveServer) ensureDefaultServiceAccounts(ctx context.Context) error {
	for _, ns := range append([]string{patchNamespace}, fuzzNamespaces...) {
		path := "/api/v1/namespaces/" + ns + "/serviceaccounts"
		switch code, body := s.do(ctx, http.MethodPost, path, "application/json", []byte(`{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"default"}}`)); code {
		case http.StatusCreated, http.StatusConflict:
		case http.StatusNotFound, http.StatusForbidden: // no such namespace, or it is being deleted
		default:
			return fmt.Errorf("creating service account %s/default: %d %s", ns, code, body)
		}
	}
	return nil
}

// do sends one request to the handler in-process.
func (s *liveServer) do(ctx context.Context, method, path, contentType string, body []byte) (int, []byte) {
	req := httptest.NewRequestWithContext(ctx, method, path, strings.NewReader(string(body)))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	rec := httptest.NewRecorder()
	s.handler.ServeHTTP(rec, req)
	return rec.Code, rec.Body.Bytes()
}

// discover reads /api, /apis and every group version's resource list, as
// a client would.
func (s *liveServer) discover(ctx context.Context, rs []*resource.Resource) error {
	get := func(path string, into any) error {
		code, body := s.do(ctx, http.MethodGet, path, "", nil)
		if code != http.StatusOK {
			return fmt.Errorf("GET %s: %d %s", path, code, body)
		}
		return json.Unmarshal(body, into)
	}
	var roots []string
	var versions metav1.APIVersions
	if err := get("/api", &versions); err != nil {
		return err
	}
	for _, v := range versions.Versions {
		roots = append(roots, "/api/"+v)
	}
	var groups metav1.APIGroupList
	if err := get("/apis", &groups); err != nil {
		return err
	}
	for _, g := range groups.Groups {
		for _, v := range g.Versions {
			roots = append(roots, "/apis/"+v.GroupVersion)
		}
	}
	for _, root := range roots {
		var list metav1.APIResourceList
		if err := get(root, &list); err != nil {
			return err
		}
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			return err
		}
		for _, ar := range list.APIResources {
			if gv.Group == "" && ar.Name == "bindings" {
				// The legacy bindings resource is pods/binding's code
				// at another path (apiserver's TestLegacyBindings); the
				// fuzzer reaches that code through pods/binding.
				continue
			}
			parent, _, _ := strings.Cut(ar.Name, "/")
			var res *resource.Resource
			for _, r := range rs {
				if r.GroupVersion == gv && r.Name == parent {
					res = r
				}
			}
			if res == nil && !virtualGroups[gv.Group] {
				return fmt.Errorf("discovery lists %s/%s, which no registry entry serves", gv, ar.Name)
			}
			s.discovered = append(s.discovered, discoveredResource{root: root, gv: gv, APIResource: ar, res: res})
		}
	}
	if len(s.discovered) == 0 {
		return fmt.Errorf("discovery lists no resources")
	}
	return nil
}

// virtualGroups serve create-only review resources with no registry entry
// and no storage (access and token reviews); they are fuzzed with generic
// bodies of their kind, and, storing nothing, must never move etcd's
// revision.
var virtualGroups = map[string]bool{"authorization.k8s.io": true, "authentication.k8s.io": true}

// revision is etcd's current revision: it moves exactly when something is
// written.
func (s *liveServer) revision(ctx context.Context) (int64, error) {
	resp, err := s.etcd.Client().Get(ctx, "/revision-probe", clientv3.WithCountOnly())
	if err != nil {
		return 0, err
	}
	return resp.Header.Revision, nil
}

// storedObject is one object written after some revision.
type storedObject struct {
	key string
	obj runtime.Object
	res *resource.Resource
}

// allocationsGivenBack reports whether everything written since rev is
// an allocator bitmap (ClusterIPs, NodePorts) that now holds what it held
// at rev: allocations taken and given back within one request.
func (s *liveServer) allocationsGivenBack(ctx context.Context, rev int64) (bool, error) {
	resp, err := s.etcd.Client().Get(ctx, keyPrefix+"/", clientv3.WithPrefix(), clientv3.WithMinModRev(rev+1))
	if err != nil {
		return false, err
	}
	for _, kv := range resp.Kvs {
		key := string(kv.Key)
		if !isAllocatorKey(key) {
			return false, nil
		}
		then, err := s.etcd.Client().Get(ctx, key, clientv3.WithRev(rev))
		if err != nil {
			return false, err
		}
		var before []byte
		if len(then.Kvs) == 1 {
			if before, err = allocationBits(then.Kvs[0].Value); err != nil {
				return false, fmt.Errorf("decoding %s at revision %d: %w", key, rev, err)
			}
		}
		now, err := allocationBits(kv.Value)
		if err != nil {
			return false, fmt.Errorf("decoding %s: %w", key, err)
		}
		if !bytes.Equal(bytes.TrimRight(before, "\x00"), bytes.TrimRight(now, "\x00")) {
			return false, nil
		}
	}
	return true, nil
}

// isAllocatorKey: key holds one of the allocators' bitmaps (ClusterIPs,
// NodePorts) a service write updates, not a served object.
func isAllocatorKey(key string) bool {
	return strings.HasPrefix(key, keyPrefix+ipallocator.ServiceIPsKey+"/") ||
		strings.HasPrefix(key, keyPrefix+ipallocator.ServiceNodePortsKey+"/")
}

// allocationBits is the bitmap of a stored RangeAllocation.
func allocationBits(value []byte) ([]byte, error) {
	_, c := served()
	obj, _, err := c.Factory.UniversalDeserializer().Decode(value, nil, &corev1.RangeAllocation{})
	if err != nil {
		return nil, err
	}
	ra, ok := obj.(*corev1.RangeAllocation)
	if !ok {
		return nil, fmt.Errorf("a %T, not a RangeAllocation", obj)
	}
	return ra.Data, nil
}

// writtenSince decodes every object under keyPrefix modified after rev.
func (s *liveServer) writtenSince(ctx context.Context, rev int64) ([]storedObject, error) {
	resp, err := s.etcd.Client().Get(ctx, keyPrefix+"/", clientv3.WithPrefix(), clientv3.WithMinModRev(rev+1))
	if err != nil {
		return nil, err
	}
	_, c := served()
	var out []storedObject
	for _, kv := range resp.Kvs {
		if isAllocatorKey(string(kv.Key)) {
			continue
		}
		obj, gvk, err := c.Factory.UniversalDeserializer().Decode(kv.Value, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("decoding stored %s: %w", kv.Key, err)
		}
		res := s.byGVK[*gvk]
		if res == nil {
			return nil, fmt.Errorf("stored %s is a %s, which is not served", kv.Key, gvk)
		}
		out = append(out, storedObject{key: string(kv.Key), obj: obj, res: res})
	}
	return out, nil
}
