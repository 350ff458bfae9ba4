package apiserver_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubeproof/kubeproof/impl/apiserver"
)

// proxyNet stands for the cluster network in the proxy tests: the API
// server's ProxyDial connects a pod or endpoint address ("10.0.0.7:8080")
// to the test backend registered for it, and records what was dialed.
type proxyNet struct {
	mu     sync.Mutex
	routes map[string]string
	dialed []string
}

func (n *proxyNet) route(addr string, backend *httptest.Server) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.routes[addr] = backend.Listener.Addr().String()
}

func (n *proxyNet) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	n.mu.Lock()
	n.dialed = append(n.dialed, addr)
	real, ok := n.routes[addr]
	n.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("dial %s %s: connection refused", network, addr)
	}
	return (&net.Dialer{}).DialContext(ctx, network, real)
}

// echoBackend answers with what it received: method, path, query, body
// and the X-Forwarded-Uri header; tag tells the backends apart.
func echoBackend(tag string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "%s %s %s ?%s body=%s fwd=%s", tag, r.Method, r.URL.Path, r.URL.RawQuery, body, r.Header.Get("X-Forwarded-Uri"))
	}
}

func newProxyEnv(t *testing.T, configure func(*apiserver.Config)) (*env, *proxyNet) {
	t.Helper()
	n := &proxyNet{routes: map[string]string{}}
	e := newEnv(t, func(c *apiserver.Config) {
		c.ProxyDial = n.dial
		if configure != nil {
			configure(c)
		}
	})
	return e, n
}

// createPodWithIP creates a pod (its container declaring port 8080 when
// withPort) and sets its status IP through the status subresource.
func createPodWithIP(t *testing.T, e *env, name, ip string, withPort bool) {
	t.Helper()
	ctx := context.Background()
	c := corev1.Container{Name: "c", Image: "img"}
	if withPort {
		c.Ports = []corev1.ContainerPort{{ContainerPort: 8080}}
	}
	pod, err := e.cs.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{c}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ip == "" {
		return
	}
	pod.Status.PodIP = ip
	pod.Status.PodIPs = []corev1.PodIP{{IP: ip}}
	if _, err := e.cs.CoreV1().Pods("default").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestPodProxy: pods/proxy (kube-apiserver's pod ProxyREST) sends a
// request to the pod's IP at the port of its name segment
// ("[scheme:]name[:port]", else the first container port), with the path
// past …/proxy, the query and the body, and the X-Forwarded-Uri header of
// apimachinery's proxy transport; client-go's ProxyGet works; …/proxy
// without a trailing slash is redirected to …/proxy/ as upstream does;
// the request is a CONNECT in the request metrics.
func TestPodProxy(t *testing.T) {
	reg := prometheus.NewRegistry()
	e, n := newProxyEnv(t, func(c *apiserver.Config) { c.Metrics = reg })
	plain := httptest.NewServer(echoBackend("plain"))
	defer plain.Close()
	secure := httptest.NewTLSServer(echoBackend("tls"))
	defer secure.Close()
	n.route("10.0.0.7:8080", plain)
	n.route("10.0.0.7:8443", secure)
	createPodWithIP(t, e, "web", "10.0.0.7", true)
	ctx := context.Background()

	b, err := e.cs.CoreV1().Pods("default").ProxyGet("", "web", "8080", "hello/there", map[string]string{"q": "1"}).DoRaw(ctx)
	if err != nil {
		t.Fatalf("ProxyGet: %v", err)
	}
	if want := "plain GET /hello/there ?q=1 body= fwd=/api/v1/namespaces/default/pods/web:8080/proxy/hello/there"; string(b) != want {
		t.Errorf("ProxyGet answer\n got %s\nwant %s", b, want)
	}
	// No port: the first container port; the trailing slash kept.
	r := e.do("GET", "/api/v1/namespaces/default/pods/web/proxy/a/b/", nil)
	if r.code != http.StatusOK || !strings.HasPrefix(string(r.body), "plain GET /a/b/ ?") {
		t.Errorf("default port: %d %s", r.code, r.body)
	}
	r = e.do("POST", "/api/v1/namespaces/default/pods/http:web:8080/proxy/post", []byte(`{"x":1}`))
	if r.code != http.StatusOK || !strings.HasPrefix(string(r.body), `plain POST /post ? body={"x":1}`) {
		t.Errorf("POST: %d %s", r.code, r.body)
	}
	for _, m := range []string{"PUT", "PATCH", "DELETE", "OPTIONS"} {
		r = e.do(m, "/api/v1/namespaces/default/pods/web/proxy/m", nil)
		if r.code != http.StatusOK || !strings.HasPrefix(string(r.body), "plain "+m+" /m ") {
			t.Errorf("%s: %d %s", m, r.code, r.body)
		}
	}
	r = e.do("HEAD", "/api/v1/namespaces/default/pods/web/proxy/m", nil)
	if r.code != http.StatusOK {
		t.Errorf("HEAD: %d", r.code)
	}
	// https: scheme.
	b, err = e.cs.CoreV1().Pods("default").ProxyGet("https", "web", "8443", "s", nil).DoRaw(ctx)
	if err != nil || !strings.HasPrefix(string(b), "tls GET /s ") {
		t.Errorf("https ProxyGet: %v %s", err, b)
	}
	// …/proxy without a path: a redirect to …/proxy/, the query kept.
	noRedirect := *e.client
	noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	r = e.doWith(&noRedirect, "GET", "/api/v1/namespaces/default/pods/web/proxy?a=b", nil)
	if r.code != http.StatusMovedPermanently || r.header.Get("Location") != "/api/v1/namespaces/default/pods/web/proxy/?a=b" {
		t.Errorf("…/proxy: %d Location %q", r.code, r.header.Get("Location"))
	}
	metrics := string(e.do("GET", "/metrics", nil).body)
	const connect = `apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="proxy",verb="CONNECT",version="v1"}`
	if !strings.Contains(metrics, connect) {
		t.Errorf("no CONNECT pods/proxy request counted:\n%s", grepLines(metrics, `subresource="proxy"`))
	}
}

// TestPodProxyErrors: the pods/proxy location errors are upstream's
// Statuses: a pod not found is 404, an id that is not
// [scheme:]name[:port] with scheme http or https is 400 "invalid pod
// request", a pod without a global unicast IP (none yet, or a loopback
// one) is 400 "address not allowed", a backend not reached is 503 "error
// trying to reach service", a method the subresource does not connect is
// 405.
func TestPodProxyErrors(t *testing.T) {
	e, _ := newProxyEnv(t, nil)
	createPodWithIP(t, e, "noip", "", true)
	createPodWithIP(t, e, "loop", "127.0.0.1", true)
	createPodWithIP(t, e, "down", "10.0.0.9", true)
	base := "/api/v1/namespaces/default/pods/"
	expectStatus(t, e.do("GET", base+"nope/proxy/", nil), http.StatusNotFound, metav1.StatusReasonNotFound, `pods "nope" not found`)
	expectStatus(t, e.do("GET", base+"a:b:c:d/proxy/", nil), http.StatusBadRequest, metav1.StatusReasonBadRequest, `invalid pod request "a:b:c:d"`)
	expectStatus(t, e.do("GET", base+"ftp:noip:80/proxy/", nil), http.StatusBadRequest, metav1.StatusReasonBadRequest, `invalid pod request "ftp:noip:80"`)
	expectStatus(t, e.do("GET", base+"noip/proxy/", nil), http.StatusBadRequest, metav1.StatusReasonBadRequest, "address not allowed")
	expectStatus(t, e.do("GET", base+"loop:8080/proxy/", nil), http.StatusBadRequest, metav1.StatusReasonBadRequest, "address not allowed")
	st := expectStatus(t, e.do("GET", base+"down/proxy/x", nil), http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "error trying to reach service: ")
	if !strings.Contains(st.Message, "10.0.0.9:8080") {
		t.Errorf("503 does not name the address: %s", st.Message)
	}
	expectStatus(t, e.do("TRACE", base+"down/proxy/x", nil), http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, "")
}

// createService creates a Service with ports http (80) and https (443)
// and, when endpoints is not nil, an EndpointSlice for it labelled with
// its name whose ports http and https are 8080 and 8443.
func createService(t *testing.T, e *env, name string, endpoints []discoveryv1.Endpoint) {
	t.Helper()
	ctx := context.Background()
	_, err := e.cs.CoreV1().Services("default").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}, {Name: "https", Port: 443}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if endpoints == nil {
		return
	}
	_, err = e.cs.DiscoveryV1().EndpointSlices("default").Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name + "-abc", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   endpoints,
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080)},
			{Name: ptr.To("https"), Port: ptr.To[int32](8443)}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// TestServiceProxy: services/proxy sends the request to a ready endpoint
// of the Service's EndpointSlices at the port the name segment names (a
// port name, or a Service port number mapped to its name), over https
// with the https: scheme; an endpoint marked not ready is never chosen.
func TestServiceProxy(t *testing.T) {
	e, n := newProxyEnv(t, nil)
	plain := httptest.NewServer(echoBackend("plain"))
	defer plain.Close()
	secure := httptest.NewTLSServer(echoBackend("tls"))
	defer secure.Close()
	n.route("10.0.0.8:8080", plain)
	n.route("10.0.0.8:8443", secure)
	createService(t, e, "svc", []discoveryv1.Endpoint{
		{Addresses: []string{"10.0.0.8"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
		{Addresses: []string{"10.0.0.66"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}},
	})
	ctx := context.Background()
	for range 5 {
		b, err := e.cs.CoreV1().Services("default").ProxyGet("", "svc", "http", "hi", nil).DoRaw(ctx)
		if want := "plain GET /hi ? body= fwd=/api/v1/namespaces/default/services/svc:http/proxy/hi"; err != nil || string(b) != want {
			t.Fatalf("ProxyGet svc:http: %v\n got %s\nwant %s", err, b, want)
		}
	}
	r := e.do("GET", "/api/v1/namespaces/default/services/svc:80/proxy/p/", nil)
	if r.code != http.StatusOK || !strings.HasPrefix(string(r.body), "plain GET /p/ ") {
		t.Errorf("svc:80: %d %s", r.code, r.body)
	}
	r = e.do("GET", "/api/v1/namespaces/default/services/https:svc:https/proxy/s", nil)
	if r.code != http.StatusOK || !strings.HasPrefix(string(r.body), "tls GET /s ") {
		t.Errorf("https:svc:https: %d %s", r.code, r.body)
	}
	r = e.do("GET", "/api/v1/namespaces/default/services/https:svc:443/proxy/s", nil)
	if r.code != http.StatusOK || !strings.HasPrefix(string(r.body), "tls GET /s ") {
		t.Errorf("https:svc:443: %d %s", r.code, r.body)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, a := range n.dialed {
		if strings.HasPrefix(a, "10.0.0.66:") {
			t.Errorf("an endpoint marked not ready was dialed: %s", a)
		}
	}
}

// TestServiceProxyErrors: a Service without EndpointSlices, or without a
// ready endpoint for the port, is upstream's 503 "no endpoints available
// for service"; a port number the Service does not have is 503 "no
// service port N found"; a Service not found (when a port number must be
// looked up) is 404; a bad id is 400 "invalid service request".
func TestServiceProxyErrors(t *testing.T) {
	e, _ := newProxyEnv(t, nil)
	createService(t, e, "empty", nil)
	createService(t, e, "unready", []discoveryv1.Endpoint{
		{Addresses: []string{"10.0.0.5"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}}})
	base := "/api/v1/namespaces/default/services/"
	expectStatus(t, e.do("GET", base+"empty/proxy/", nil), http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, `no endpoints available for service "empty"`)
	expectStatus(t, e.do("GET", base+"unready:http/proxy/", nil), http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, `no endpoints available for service "unready:http"`)
	expectStatus(t, e.do("GET", base+"unready:81/proxy/", nil), http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, `no service port 81 found for service "unready"`)
	expectStatus(t, e.do("GET", base+"nope:80/proxy/", nil), http.StatusNotFound, metav1.StatusReasonNotFound, `services "nope" not found`)
	expectStatus(t, e.do("GET", base+"a:b:c:d/proxy/", nil), http.StatusBadRequest, metav1.StatusReasonBadRequest, `invalid service request "a:b:c:d"`)
}

// TestProxyDiscovery: /api/v1 lists pods/proxy and services/proxy as
// kube-apiserver does (PodProxyOptions and ServiceProxyOptions, the
// connect verbs).
func TestProxyDiscovery(t *testing.T) {
	e, _ := newProxyEnv(t, nil)
	var list metav1.APIResourceList
	if err := json.Unmarshal(e.do("GET", "/api/v1", nil).body, &list); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"pods/proxy": "PodProxyOptions", "services/proxy": "ServiceProxyOptions"}
	for _, r := range list.APIResources {
		kind, ok := want[r.Name]
		if !ok {
			continue
		}
		delete(want, r.Name)
		if r.Kind != kind || !r.Namespaced || strings.Join(r.Verbs, ",") != "create,delete,get,patch,update" {
			t.Errorf("%s: %+v", r.Name, r)
		}
	}
	if len(want) != 0 {
		t.Errorf("not in discovery: %v", want)
	}
}

// TestPodProxyRBAC: with the RBAC authorizer, a user allowed to get pods
// but not pods/proxy is refused the proxy (403 naming resource
// "pods/proxy" and the verb of the method), and allowed once a Role
// grants pods/proxy; POST needs create.
func TestPodProxyRBAC(t *testing.T) {
	e, n := newProxyEnv(t, fullChain)
	backend := httptest.NewServer(echoBackend("plain"))
	defer backend.Close()
	n.route("10.0.0.7:8080", backend)
	ctx := context.Background()
	// The ServiceAccount admission plugin wants the namespace's default
	// service account (no controller creates it here).
	if _, err := e.cs.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createPodWithIP(t, e, "web", "10.0.0.7", true)
	rbac := e.cs.RbacV1()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "reader"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}}}
	if _, err := rbac.Roles("default").Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rbac.RoleBindings("default").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "bob"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "reader"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "bob"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	asBob := func(method, path string) response {
		return e.do(method, path, nil, "Impersonate-User", "bob")
	}
	// Wait until bob may get the pod (the authorizer's cache has the role).
	waitFor(t, func() bool { return asBob("GET", "/api/v1/namespaces/default/pods/web").code == http.StatusOK })
	expectStatus(t, asBob("GET", "/api/v1/namespaces/default/pods/web/proxy/x"), http.StatusForbidden, metav1.StatusReasonForbidden,
		`pods "web" is forbidden: User "bob" cannot get resource "pods/proxy" in API group "" in the namespace "default"`)
	role.Rules = append(role.Rules, rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods/proxy"}})
	if _, err := rbac.Roles("default").Update(ctx, role, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return asBob("GET", "/api/v1/namespaces/default/pods/web/proxy/x").code == http.StatusOK })
	expectStatus(t, asBob("POST", "/api/v1/namespaces/default/pods/web/proxy/x"), http.StatusForbidden, metav1.StatusReasonForbidden,
		`pods "web" is forbidden: User "bob" cannot create resource "pods/proxy" in API group "" in the namespace "default"`)
}

// waitFor polls cond for up to 10 seconds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestPodProxyUpgrade: an upgrade request (a WebSocket's) through
// pods/proxy reaches the pod and, once the pod switches protocols, the
// connection carries bytes both ways, as apimachinery's upgrade-aware
// proxy does for kube-apiserver.
func TestPodProxyUpgrade(t *testing.T) {
	e, n := newProxyEnv(t, nil)
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "echo" || r.URL.Path != "/ws" {
			http.Error(w, "want an echo upgrade of /ws", http.StatusBadRequest)
			return
		}
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n")
		_ = rw.Flush()
		line, err := rw.ReadString('\n')
		if err != nil {
			return
		}
		_, _ = rw.WriteString("echo: " + line)
		_ = rw.Flush()
	}))
	defer backend.Close()
	n.route("10.0.0.7:8080", backend)
	createPodWithIP(t, e, "web", "10.0.0.7", true)

	clientCert, err := admin.TLSCertificate()
	if err != nil {
		t.Fatal(err)
	}
	tr := e.client.Transport.(*http.Transport)
	cfg := tr.TLSClientConfig.Clone()
	cfg.Certificates = []tls.Certificate{clientCert}
	cfg.NextProtos = []string{"http/1.1"}
	conn, err := tls.Dial("tcp", strings.TrimPrefix(e.url, "https://"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	_, err = fmt.Fprintf(conn, "GET /api/v1/namespaces/default/pods/web/proxy/ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("upgrade answered %d: %s", resp.StatusCode, b)
	}
	if _, err := io.WriteString(conn, "ping\n"); err != nil {
		t.Fatal(err)
	}
	line, err := br.ReadString('\n')
	if err != nil || line != "echo: ping\n" {
		t.Fatalf("through the upgraded connection: %q %v", line, err)
	}
}
