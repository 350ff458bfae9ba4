package server_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/util/exec"

	"github.com/kubeproof/kubeproof/impl/fakeclient"
	"github.com/kubeproof/kubeproof/impl/kubelet"
	"github.com/kubeproof/kubeproof/impl/kubelet/podsync"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
	"github.com/kubeproof/kubeproof/impl/kubelet/server"
	"github.com/kubeproof/kubeproof/impl/kubelet/server/streamtest"
)

// growingRuntime is the simulated runtime whose containers can be given
// more output after they started, for `logs --follow`.
type growingRuntime struct {
	*sim.Runtime
	mu    sync.Mutex
	extra map[string][]runtime.LogLine // by container id
}

func (g *growingRuntime) ContainerLogs(ctx context.Context, id string, opts runtime.LogOptions) ([]runtime.LogLine, error) {
	lines, err := g.Runtime.ContainerLogs(ctx, id, opts)
	if err != nil {
		return nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return append(lines, g.extra[id]...), nil
}

// appendAll adds a line to every container's output.
func (g *growingRuntime) appendAll(ctx context.Context, text string) {
	cs, _ := g.Runtime.ListContainers(ctx, nil)
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, c := range cs {
		g.extra[c.Id] = append(g.extra[c.Id], runtime.LogLine{Time: time.Now(), Stream: "stdout", Text: text})
	}
}

// env is kubelets behind one Mux on a TLS port requiring client certs.
type env struct {
	t        *testing.T
	ctx      context.Context
	client   *fake.Clientset
	mux      *server.Mux
	rts      map[string]*growingRuntime
	kubelets map[string]*kubelet.Kubelet
	base     string
	rest     *restclient.Config
	http     *http.Client
	caKey    *ecdsa.PrivateKey
	caCert   *x509.Certificate
}

func newEnv(t *testing.T, nodes ...string) *env {
	t.Helper()
	return newEnvWith(t, nil, nodes...)
}

// newEnvWith is newEnv with a client for the Auth that auth builds (nil:
// no Auth; certificates alone, as before).
func newEnvWith(t *testing.T, auth func(client *fake.Clientset) *server.Auth, nodes ...string) *env {
	t.Helper()
	before := goruntime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	// The kubelets' pod source trims and interns the pods its watch
	// delivers in place, as client-go lets an informer transform do with a
	// real client's freshly decoded objects; the fake tracker hands a new
	// watch the pods it stores themselves (those created between the
	// informer's list and its watch), so the watches must deliver copies.
	client := fakeclient.CopyingWatches(fake.NewClientset())
	opts := server.Options{FollowPollInterval: 10 * time.Millisecond}
	if auth != nil {
		opts.Auth = auth(client)
	}
	e := &env{t: t, ctx: ctx, client: client, rts: map[string]*growingRuntime{}, kubelets: map[string]*kubelet.Kubelet{},
		mux: server.NewMux(opts)}
	var wg sync.WaitGroup
	for i, n := range nodes {
		rt, err := sim.New(sim.Config{PodCIDR: fmt.Sprintf("10.244.%d.0/24", i)})
		if err != nil {
			t.Fatal(err)
		}
		g := &growingRuntime{Runtime: rt, extra: map[string][]runtime.LogLine{}}
		k, err := kubelet.New(ctx, e.client, kubelet.Config{NodeName: n, RelistPeriod: 10 * time.Millisecond,
			Backoff: podsync.BackoffConfig{Base: 10 * time.Millisecond, Max: 20 * time.Millisecond}}, g)
		if err != nil {
			t.Fatal(err)
		}
		e.rts[n], e.kubelets[n] = g, k
		e.mux.Add(k)
		wg.Add(1)
		go func() { defer wg.Done(); _ = k.Run(ctx) }()
	}

	dir := t.TempDir()
	caKey, caCert := newCA(t)
	caFile := filepath.Join(dir, "ca.crt")
	writePEM(t, caFile, "CERTIFICATE", caCert.Raw)
	tlsCfg, err := server.TLSConfig(server.TLSOptions{Hosts: []string{"127.0.0.1"}, ClientCAFile: caFile, OptionalClientCert: auth != nil})
	if err != nil {
		t.Fatal(err)
	}
	e.caKey, e.caCert = caKey, caCert
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	wg.Add(1)
	go func() { defer wg.Done(); _ = server.Serve(ctx, ln, e.mux, tlsCfg) }()
	e.base = "https://" + ln.Addr().String()
	servingCert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsCfg.Certificates[0].Certificate[0]})
	certPEM, keyPEM := newClientCert(t, caKey, caCert, "kube-apiserver-kubelet-client")
	e.rest = &restclient.Config{Host: e.base, TLSClientConfig: restclient.TLSClientConfig{CAData: servingCert, CertData: certPEM, KeyData: keyPEM}}
	transport, err := restclient.TransportFor(e.rest)
	if err != nil {
		t.Fatal(err)
	}
	e.http = &http.Client{Transport: transport}
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		if tr, ok := transport.(interface{ CloseIdleConnections() }); ok {
			tr.CloseIdleConnections()
		}
		// No goroutine leaks: allow the HTTP client's idle connections a
		// moment to go.
		deadline := time.Now().Add(5 * time.Second)
		for goruntime.NumGoroutine() > before+2 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if n := goruntime.NumGoroutine(); n > before+2 {
			buf := make([]byte, 1<<20)
			t.Errorf("goroutines: %d before, %d after shutdown\n%s", before, n, buf[:goruntime.Stack(buf, true)])
		}
	})
	return e
}

// runPod creates a pod on node and waits until its containers run.
func (e *env) runPod(node, name string, annotations map[string]string, containers ...string) *v1.Pod {
	e.t.Helper()
	if len(containers) == 0 {
		containers = []string{"app"}
	}
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name), Annotations: annotations},
		Spec: v1.PodSpec{NodeName: node, RestartPolicy: v1.RestartPolicyAlways}}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: c, Image: "busybox"})
	}
	if _, err := e.client.CoreV1().Pods("default").Create(e.ctx, p, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.eventually(func() bool {
		for _, c := range containers {
			if !e.kubelets[node].ContainerRunning(e.ctx, "default", name, c) {
				return false
			}
		}
		return true
	}, "pod %s running", name)
	return p
}

func (e *env) eventually(cond func() bool, format string, args ...any) {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for "+format, args...)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (e *env) get(path string) (int, string) {
	e.t.Helper()
	resp, err := e.http.Get(e.base + path)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestContainerLogsQueryAsUpstream: /containerLogs reads its query as
// upstream's kubelet (getContainerLogs): the legacy "tail"; the v1
// PodLogOptions query conversion (booleans true for anything but "0" and
// "false", an empty value too; sinceTime empty or "null" set to the zero
// time); a query that does not decode is a 400 and one that does not
// validate a 422, each with upstream's fixed body, both before the pod is
// looked up; a stream other than All is refused (its feature gate is off).
func TestContainerLogsQueryAsUpstream(t *testing.T) {
	e := newEnv(t, "node-a")
	e.runPod("node-a", "web", map[string]string{sim.AnnotationLogs: "one\ntwo\nthree"})
	const decode, invalid = `{"message": "Unable to decode query."}` + "\n", `{"message": "Invalid request."}` + "\n"
	for _, tc := range []struct {
		query, want string
		code        int
	}{
		{"/containerLogs/default/web/app?tail=1", "three\n", 200},
		{"/containerLogs/default/web/app?tail=all&tailLines=1", "one\ntwo\nthree\n", 200},
		{"/containerLogs/default/web/app?tail=2&tailLines=1", "two\nthree\n", 200},
		{"/containerLogs/default/web/app?tail=x", decode, 400},
		{"/containerLogs/default/web/app?tailLines=x", decode, 400},
		{"/containerLogs/default/web/app?limitBytes=1.5", decode, 400},
		{"/containerLogs/default/web/app?sinceSeconds=", decode, 400},
		{"/containerLogs/default/web/app?sinceTime=2020-01-01", decode, 400},
		{"/containerLogs/default/nope/app?tailLines=x", decode, 400},
		{"/containerLogs/default/web/app?limitBytes=0", invalid, 422},
		{"/containerLogs/default/web/app?sinceSeconds=0", invalid, 422},
		{"/containerLogs/default/web/app?sinceSeconds=5&sinceTime=", invalid, 422},
		{"/containerLogs/default/web/app?stream=Both", invalid, 422},
		{"/containerLogs/default/web/app?stream=Stdout&tailLines=1", invalid, 422},
		{"/containerLogs/default/nope/app?tailLines=-1", invalid, 422},
		{"/containerLogs/default/web/app?stream=Stderr", "unable to return the given log stream: \"Stderr\". Please enable PodLogsQuerySplitStreams feature gate in kubelet\n", 400},
		{"/containerLogs/default/web/app?stream=All&tailLines=1", "three\n", 200},
		{"/containerLogs/default/web/app?sinceTime=null", "one\ntwo\nthree\n", 200},
		{"/containerLogs/default/web/app?sinceTime=2099-01-01T00:00:00Z", "", 200},
		{"/containerLogs/default/web/app?follow=0&previous=FALSE&limitBytes=3", "one", 200},
		{"/containerLogs/default/web/app?previous=maybe", "previous terminated container \"app\" in pod \"web\" not found\n", 400},
		{"/containerLogs/default/web/app?previous=", "previous terminated container \"app\" in pod \"web\" not found\n", 400},
	} {
		code, body := e.get(tc.query)
		if code != tc.code || body != tc.want {
			t.Errorf("GET %s = %d %q, want %d %q", tc.query, code, body, tc.code, tc.want)
		}
	}
	// timestamps= (empty) is set: the line carries its time.
	code, body := e.get("/containerLogs/default/web/app?timestamps=&tailLines=1")
	if code != 200 || !strings.HasSuffix(body, " three\n") || len(body) < len("2006-01-02T15:04:05Z three\n") {
		t.Errorf("GET ?timestamps=&tailLines=1 = %d %q, want the line with its time", code, body)
	}
}

func TestContainerLogs(t *testing.T) {
	e := newEnv(t, "node-a")
	e.runPod("node-a", "web", map[string]string{sim.AnnotationLogs: "one\ntwo\nthree"})
	e.runPod("node-a", "two", nil, "a", "b")
	for _, tc := range []struct {
		query, want string
		code        int
	}{
		{"/containerLogs/default/web/app", "one\ntwo\nthree\n", 200},
		{"/containerLogs/default/web/app?tailLines=2", "two\nthree\n", 200},
		{"/containerLogs/default/web/app?tailLines=0", "", 200},
		{"/containerLogs/default/web/app?limitBytes=6", "one\ntw", 200},
		{"/containerLogs/default/web/app?sinceSeconds=3600", "one\ntwo\nthree\n", 200},
		{"/containerLogs/default/web/app?tailLines=-1", `{"message": "Invalid request."}` + "\n", 422},
		{"/containerLogs/default/web/app?previous=true", "previous terminated container \"app\" in pod \"web\" not found\n", 400},
		{"/containerLogs/default/nope/app", "pod \"nope\" does not exist\n", 404},
		{"/containerLogs/default/web/nope", "container \"nope\" not found in pod \"web\"\n", 404},
		{"/containerLogs/default/web", "path must be /containerLogs/{namespace}/{pod}/{container}\n", 400},
	} {
		code, body := e.get(tc.query)
		if code != tc.code || body != tc.want {
			t.Errorf("GET %s = %d %q, want %d %q", tc.query, code, body, tc.code, tc.want)
		}
	}

	code, body := e.get("/containerLogs/default/web/app?timestamps=true&tailLines=1")
	stamp, text, _ := strings.Cut(body, " ")
	if _, err := time.Parse(time.RFC3339Nano, stamp); code != 200 || err != nil || text != "three\n" {
		t.Errorf("timestamps: %d %q (%v)", code, body, err)
	}
}

func TestContainerLogsPrevious(t *testing.T) {
	e := newEnv(t, "node-a")
	// Each instance prints its lines and exits 1; the kubelet restarts it.
	e.runPod("node-a", "crash", map[string]string{sim.AnnotationLogs: "boom", sim.AnnotationExitCode: "1",
		sim.AnnotationExitAfter: "50ms"})
	e.eventually(func() bool {
		code, _ := e.get("/containerLogs/default/crash/app?previous=true")
		return code == 200
	}, "a previous instance")
	if code, body := e.get("/containerLogs/default/crash/app?previous=true"); code != 200 || body != "boom\n" {
		t.Errorf("previous: %d %q", code, body)
	}
}

func TestContainerLogsFollow(t *testing.T) {
	e := newEnv(t, "node-a")
	e.runPod("node-a", "web", map[string]string{sim.AnnotationLogs: "one\ntwo"})
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.base+"/containerLogs/default/web/app?follow=true&tailLines=1", nil)
	resp, err := e.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	readLine := func() string {
		t.Helper()
		l, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading followed log: %v", err)
		}
		return l
	}
	if l := readLine(); l != "two\n" {
		t.Fatalf("first line %q, want the tail %q", l, "two\n")
	}
	e.rts["node-a"].appendAll(e.ctx, "three")
	if l := readLine(); l != "three\n" {
		t.Fatalf("followed line %q, want %q", l, "three\n")
	}
	e.rts["node-a"].appendAll(e.ctx, "four")
	if l := readLine(); l != "four\n" {
		t.Fatalf("followed line %q, want %q", l, "four\n")
	}
	// The stream ends when the container stops running.
	if err := e.client.CoreV1().Pods("default").Delete(e.ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if rest, err := io.ReadAll(r); err != nil || len(rest) != 0 {
		t.Fatalf("after the container stopped: %q, %v", rest, err)
	}
}

func TestHealthzAndMetrics(t *testing.T) {
	e := newEnv(t, "node-a", "node-b")
	e.runPod("node-b", "web", nil)
	if code, body := e.get("/healthz"); code != 200 || body != "ok" {
		t.Errorf("healthz: %d %q", code, body)
	}
	e.eventually(func() bool {
		_, body := e.get("/metrics")
		return strings.Contains(body, `kubelet_running_pods{node="node-b"} 1`) && strings.Contains(body, `kubelet_running_pods{node="node-a"} 0`)
	}, "kubelet_running_pods per node")
	_, body := e.get("/metrics")
	if !strings.Contains(body, `kubelet_http_requests_total{method="GET",path="healthz"} 1`) {
		t.Errorf("metrics lack the healthz request count:\n%s", body)
	}
}

func TestClientCertificateRequired(t *testing.T) {
	e := newEnv(t, "node-a")
	noCert := *e.rest
	noCert.TLSClientConfig.CertData, noCert.TLSClientConfig.KeyData = nil, nil
	transport, err := restclient.TransportFor(&noCert)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: transport}).Get(e.base + "/healthz")
	if err == nil {
		resp.Body.Close()
		t.Fatalf("a client without a certificate got %s", resp.Status)
	}
	// A certificate from another CA is refused too.
	otherKey, otherCA := newCA(t)
	certPEM, keyPEM := newClientCert(t, otherKey, otherCA, "intruder")
	bad := *e.rest
	bad.TLSClientConfig.CertData, bad.TLSClientConfig.KeyData = certPEM, keyPEM
	if transport, err = restclient.TransportFor(&bad); err != nil {
		t.Fatal(err)
	}
	resp, err = (&http.Client{Transport: transport}).Get(e.base + "/healthz")
	if err == nil {
		resp.Body.Close()
		t.Fatalf("a client with a foreign certificate got %s", resp.Status)
	}
}

// executors are client-go's two exec transports, as kubectl uses them.
func executors(t *testing.T, e *env, path string) map[string]remotecommand.Executor {
	t.Helper()
	return streamtest.Executors(t, e.rest, e.base+path)
}

func execQuery(container string, cmd ...string) string {
	q := url.Values{"stdout": {"1"}, "stderr": {"1"}, "command": cmd}
	return "/exec/default/web/" + container + "?" + q.Encode()
}

func TestExec(t *testing.T) {
	e := newEnv(t, "node-a")
	e.runPod("node-a", "web", nil)
	for _, tc := range []struct {
		name           string
		cmd            []string
		stdout, stderr string
		exitCode       int
	}{
		{"echo", []string{"echo", "hi"}, "hi\n", "", 0},
		{"exit code", []string{"sh", "-c", "exit 3"}, "", "", 3},
		{"missing command", []string{"frobnicate"}, "", "sh: frobnicate: not found\n", 127},
	} {
		for transport, ex := range executors(t, e, execQuery("app", tc.cmd...)) {
			t.Run(tc.name+"/"+transport, func(t *testing.T) {
				var stdout, stderr bytes.Buffer
				err := ex.StreamWithContext(e.ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr})
				code := 0
				var exitErr exec.CodeExitError
				if errors.As(err, &exitErr) {
					code = exitErr.Code
				} else if err != nil {
					t.Fatalf("exec: %v", err)
				}
				if code != tc.exitCode || stdout.String() != tc.stdout || (tc.stderr != "" && stderr.String() != tc.stderr) {
					t.Errorf("exec %v: code %d stdout %q stderr %q; want %d %q %q", tc.cmd, code, stdout.String(), stderr.String(), tc.exitCode, tc.stdout, tc.stderr)
				}
			})
		}
	}
}

func TestExecRefusals(t *testing.T) {
	e := newEnv(t, "node-a")
	e.runPod("node-a", "web", nil)
	for name, tc := range map[string]struct {
		path, want string
	}{
		"unknown container": {execQuery("nope", "true"), `container "nope" not found in pod "web"`},
		"no stream":         {"/exec/default/web/app?command=true&tty=1", "at least 1 of stdin, stdout, stderr"},
		// As upstream's kubelet, only "1" sets a stream (kube-apiserver
		// sends "1"); "true" does not.
		"true is not 1": {"/exec/default/web/app?command=true&stdout=true&stderr=true&stdin=yes", "at least 1 of stdin, stdout, stderr"},
		"no command":    {"/exec/default/web/app?stdout=1", "at least one command"},
	} {
		for transport, ex := range executors(t, e, tc.path) {
			err := ex.StreamWithContext(e.ctx, remotecommand.StreamOptions{Stdout: io.Discard, Stderr: io.Discard})
			if err == nil {
				t.Errorf("%s over %s: no error", name, transport)
				continue
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s over %s: %v, want %q", name, transport, err, tc.want)
			}
		}
	}
}

func TestMuxDispatchesToTheKubeletRunningThePod(t *testing.T) {
	e := newEnv(t, "node-a", "node-b", "node-c")
	e.runPod("node-a", "pa", map[string]string{sim.AnnotationLogs: "from a"})
	e.runPod("node-c", "pc", map[string]string{sim.AnnotationLogs: "from c"})
	for pod, want := range map[string]string{"pa": "from a\n", "pc": "from c\n"} {
		if code, body := e.get("/containerLogs/default/" + pod + "/app"); code != 200 || body != want {
			t.Errorf("logs of %s: %d %q, want %q", pod, code, body, want)
		}
	}
	e.mux.Remove("node-c")
	if code, _ := e.get("/containerLogs/default/pc/app"); code != 404 {
		t.Errorf("logs of a pod of a removed kubelet: %d, want 404", code)
	}
	// exec reaches node-a's runtime, not another's.
	u := "/exec/default/pa/app?" + url.Values{"stdout": {"1"}, "command": {"echo", "a"}}.Encode()
	ex, err := remotecommand.NewWebSocketExecutor(e.rest, "GET", e.base+u)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := ex.StreamWithContext(e.ctx, remotecommand.StreamOptions{Stdout: &out}); err != nil || out.String() != "a\n" {
		t.Fatalf("exec: %q %v", out.String(), err)
	}
	if n := len(e.rts["node-a"].Execs()); n != 1 {
		t.Errorf("node-a ran %d execs, want 1", n)
	}
	if n := len(e.rts["node-b"].Execs()); n != 0 {
		t.Errorf("node-b ran %d execs, want 0", n)
	}
}

func TestSelfSignedCertificateCoversHosts(t *testing.T) {
	cfg, err := server.TLSConfig(server.TLSOptions{Hosts: []string{"node-1", "10.0.0.9"}})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(cfg.Certificates[0].Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if cert.VerifyHostname("node-1") != nil || cert.VerifyHostname("10.0.0.9") != nil {
		t.Errorf("self-signed certificate names %v %v", cert.DNSNames, cert.IPAddresses)
	}
	if cfg.ClientAuth != tls.NoClientCert {
		t.Errorf("without a client CA the API should not ask for client certificates")
	}
}

func newCA(t *testing.T) (*ecdsa.PrivateKey, *x509.Certificate) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return key, cert
}

func newClientCert(t *testing.T, caKey *ecdsa.PrivateKey, ca *x509.Certificate, cn string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
