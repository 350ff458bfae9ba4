package apiserver_test

import (
	"context"
	"errors"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/apiserver/admission"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
	"github.com/kubeproof/kubeproof/impl/registry"
	"github.com/kubeproof/kubeproof/impl/storage"
)

// denyConfigMaps forbids everything on configmaps (to anyone but
// system:masters, whom the server allows before asking it).
type denyConfigMaps struct{}

func (denyConfigMaps) Authorize(_ context.Context, a auth.Attributes) (auth.Decision, string, error) {
	if a.Info != nil && a.Info.Resource == "configmaps" {
		return auth.DecisionDeny, "", nil
	}
	return auth.DecisionAllow, "", nil
}

func TestAuthentication(t *testing.T) {
	e := newEnv(t, nil)
	r := e.doWith(e.anon, "GET", "/api/v1/namespaces/default/configmaps", nil)
	expectStatus(t, r, http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "Unauthorized")
	// health and version are public.
	for _, p := range []string{"/healthz", "/livez", "/readyz", "/version"} {
		if r := e.doWith(e.anon, "GET", p, nil); r.code != 200 {
			t.Errorf("%s anonymously: %d %s", p, r.code, r.body)
		}
	}
	// a client certificate from another CA is not accepted.
	if r := e.do("GET", "/api/v1/namespaces", nil); r.code != 200 {
		t.Fatalf("admin: %d", r.code)
	}
}

// As alice (admin impersonates her): admin is in system:masters.
func TestAuthorization(t *testing.T) {
	e := newEnv(t, func(c *apiserver.Config) { c.Authorizer = denyConfigMaps{} })
	asAlice := []string{"Impersonate-User", "alice"}
	r := e.do("GET", "/api/v1/namespaces/default/configmaps/x", nil, asAlice...)
	expectStatus(t, r, http.StatusForbidden, metav1.StatusReasonForbidden,
		`configmaps "x" is forbidden: User "alice" cannot get resource "configmaps" in API group "" in the namespace "default"`)
	r = e.do("GET", "/api/v1/configmaps", nil, asAlice...)
	expectStatus(t, r, http.StatusForbidden, metav1.StatusReasonForbidden,
		`User "alice" cannot list resource "configmaps" in API group "" at the cluster scope`)
	if r := e.do("GET", "/api/v1/namespaces/default/pods", nil, asAlice...); r.code != 200 {
		t.Fatalf("pods: %d", r.code)
	}
}

// gate blocks creates until released, to fill the mutating in-flight limit.
type gate struct {
	entered chan struct{}
	release chan struct{}
}

func (g *gate) Admit(ctx context.Context, a *admission.Attributes) error {
	if a.Resource.Resource != "configmaps" || (a.User != nil && a.User.Name == apiserver.APIServerUser) {
		// Not held: other resources, and the server's own writes (the
		// legacy token tracking ConfigMap).
		return nil
	}
	g.entered <- struct{}{}
	select {
	case <-g.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func TestMaxInFlight(t *testing.T) {
	g := &gate{entered: make(chan struct{}, 1), release: make(chan struct{})}
	e := newEnv(t, func(c *apiserver.Config) {
		c.DisablePriorityAndFairness = true // the legacy limits
		c.MaxMutatingRequestsInFlight = 1
		c.MaxRequestsInFlight = 1
		c.AdmissionMutators = []admission.Mutator{g}
	})
	// an open watch does not count against the read-only limit of 1.
	wctx, wcancel := context.WithCancel(context.Background())
	defer wcancel()
	w, err := e.cs.CoreV1().Pods("default").Watch(wctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var wg sync.WaitGroup
	var first response
	wg.Add(1)
	go func() {
		defer wg.Done()
		first = e.do("POST", "/api/v1/namespaces/default/configmaps", []byte(`{"metadata":{"name":"slow"}}`))
	}()
	<-g.entered
	// The bound applies to the effective user (after impersonation): bob
	// is turned away.
	r := e.do("POST", "/api/v1/namespaces/default/configmaps", []byte(`{"metadata":{"name":"rejected"}}`), "Impersonate-User", "bob")
	expectStatus(t, r, http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests, "Too many requests")
	if r.header.Get("Retry-After") != "1" {
		t.Fatalf("Retry-After %q", r.header.Get("Retry-After"))
	}
	// system:masters (the admin) is let through, as kube-apiserver does.
	if r := e.do("POST", "/api/v1/namespaces/default/secrets", []byte(`{"metadata":{"name":"privileged"}}`)); r.code != http.StatusCreated {
		t.Fatalf("system:masters create while writes are full: %d %s", r.code, r.body)
	}
	// reads and watches are not limited by the mutating limit.
	if r := e.do("GET", "/api/v1/namespaces/default/configmaps", nil); r.code != 200 {
		t.Fatalf("read while writes are full: %d", r.code)
	}
	close(g.release)
	wg.Wait()
	if first.code != http.StatusCreated {
		t.Fatalf("first create: %d %s", first.code, first.body)
	}
}

func TestHealthAndMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	e := newEnv(t, func(c *apiserver.Config) { c.Metrics = reg })
	r := e.do("GET", "/readyz?verbose", nil)
	if r.code != 200 || !strings.Contains(string(r.body), "[+]etcd ok") || !strings.Contains(string(r.body), "readyz check passed") {
		t.Fatalf("readyz: %d %s", r.code, r.body)
	}
	if r := e.do("GET", "/healthz/etcd", nil); r.code != 200 || string(r.body) != "ok" {
		t.Fatalf("healthz/etcd: %d %s", r.code, r.body)
	}
	if r := e.do("GET", "/livez", nil); r.code != 200 || string(r.body) != "ok" {
		t.Fatalf("livez: %d %s", r.code, r.body)
	}
	// The server's own create of the legacy token tracking ConfigMap
	// comes first (seen in /metrics, which counts no resource request),
	// so that the counts below are the same every run: it is the first of
	// the two configmaps POSTs.
	eventually(t, "the legacy token tracking ConfigMap created", func() bool {
		return strings.Contains(string(e.do("GET", "/metrics", nil).body),
			`apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="POST",version="v1"} 1`)
	})
	e.do("GET", "/api/v1/namespaces/default/configmaps/missing", nil)
	e.do("POST", "/api/v1/namespaces/default/configmaps", []byte(`{"metadata":{"name":"m"}}`))
	e.do("POST", "/api/v1/namespaces/default/configmaps?dryRun=All", []byte(`{"metadata":{"name":"dry"}}`))
	e.do("GET", "/api/v1/namespaces/default/configmaps/m", nil)
	e.do("GET", "/api/v1/namespaces/default/configmaps", nil)
	e.do("GET", "/api/v1/configmaps", nil)
	if r := e.do("PATCH", "/api/v1/namespaces/default/configmaps/m?fieldManager=test", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"m"},"data":{"a":"b"}}`),
		"Content-Type", "application/apply-patch+yaml"); r.code != 200 {
		t.Fatalf("apply: %d %s", r.code, r.body)
	}
	// an open watch is counted as long-running.
	c, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := e.cs.CoreV1().Pods("default").Watch(c, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// kube-apiserver's labels and values: LIST for collections, APPLY for
	// server-side apply, scope resource/namespace/cluster, dry_run All.
	const longRunning = `apiserver_longrunning_requests{component="apiserver",group="",resource="pods",scope="namespace",subresource="",verb="WATCH",version="v1"} 1`
	deadline := time.Now().Add(10 * time.Second)
	var body string
	for time.Now().Before(deadline) {
		body = string(e.do("GET", "/metrics", nil).body)
		if strings.Contains(body, longRunning) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, want := range []string{
		`apiserver_request_total{code="404",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="GET",version="v1"} 1`,
		`apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="GET",version="v1"} 1`,
		`apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="POST",version="v1"} 2`,
		`apiserver_request_total{code="201",component="apiserver",dry_run="All",group="",resource="configmaps",scope="resource",subresource="",verb="POST",version="v1"} 1`,
		`apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="configmaps",scope="namespace",subresource="",verb="LIST",version="v1"} 1`,
		`apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="configmaps",scope="cluster",subresource="",verb="LIST",version="v1"} 1`,
		`apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="APPLY",version="v1"} 1`,
		`apiserver_request_duration_seconds_bucket{component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="POST",version="v1",le="0.005"}`,
		`apiserver_request_duration_seconds_bucket{component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="POST",version="v1",le="+Inf"} 2`,
		longRunning,
		// kube-apiserver counts its health reports (the /livez above).
		`apiserver_request_total{code="200",component="",dry_run="",group="",resource="",scope="",subresource="/livez",verb="GET",version=""} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	// Other paths that are no served resource are not counted.
	if strings.Contains(body, `apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="",`) {
		t.Errorf("non-resource requests counted:\n%s", body)
	}
}

func TestOpenAPIMounted(t *testing.T) {
	oa := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"swagger":"2.0","path":"` + r.URL.Path + `"}`))
	})
	e := newEnv(t, func(c *apiserver.Config) { c.OpenAPI = oa })
	r := e.do("GET", "/openapi/v2", nil)
	if r.code != 200 || !strings.Contains(string(r.body), `"path":"/openapi/v2"`) {
		t.Fatalf("openapi: %d %s", r.code, r.body)
	}
	e2 := newEnv(t, nil)
	r = e2.do("GET", "/openapi/v2", nil)
	expectStatus(t, r, http.StatusNotFound, metav1.StatusReasonNotFound, "")
}

func TestConfigErrors(t *testing.T) {
	if _, err := apiserver.New(apiserver.Config{}); err == nil {
		t.Fatal("New without storage succeeded")
	}
	_, err := apiserver.New(apiserver.Config{StorageFactory: failingFactory{}, Resources: registry.All()})
	if err == nil || !errors.Is(err, errNoStorage) {
		t.Fatalf("failing storage: %v", err)
	}
	srv, err := apiserver.New(apiserver.Config{StorageFactory: failingFactory{}})
	if err != nil {
		t.Fatalf("no resources: %v", err)
	}
	if err := srv.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "serving certificate") {
		t.Fatalf("Run without a certificate: %v", err)
	}
}

func TestShutdownLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	t.Run("server", func(t *testing.T) {
		e := newEnv(t, nil)
		c := ctx(t)
		// an open watch must not hold shutdown up.
		w, err := e.cs.CoreV1().ConfigMaps("default").Watch(c, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		if _, err := e.cs.CoreV1().ConfigMaps("default").Create(c, configMap("", "g", nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		<-w.ResultChan()
	})
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before+2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before+2 {
		buf := make([]byte, 1<<20)
		t.Fatalf("goroutines: %d before, %d after shutdown\n%s", before, n, buf[:runtime.Stack(buf, true)])
	}
}

var errNoStorage = errors.New("no storage")

type failingFactory struct{}

func (failingFactory) New(storage.ResourceConfig) (storage.Interface, storage.DestroyFunc, error) {
	return nil, nil, errNoStorage
}
