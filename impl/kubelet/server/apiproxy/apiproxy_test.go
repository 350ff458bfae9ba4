package apiproxy_test

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
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/util/exec"

	"github.com/kubeproof/kubeproof/impl/fakeclient"
	"github.com/kubeproof/kubeproof/impl/kubelet"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
	"github.com/kubeproof/kubeproof/impl/kubelet/server"
	"github.com/kubeproof/kubeproof/impl/kubelet/server/apiproxy"
)

// lookup reads pods and nodes from the fake clientset the kubelets use.
type lookup struct{ client *fake.Clientset }

func (l lookup) GetPod(ctx context.Context, ns, name string) (*corev1.Pod, error) {
	return l.client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
}

func (l lookup) GetNode(ctx context.Context, name string) (*corev1.Node, error) {
	return l.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
}

type env struct {
	t       *testing.T
	ctx     context.Context
	client  *fake.Clientset
	kubelet *kubelet.Kubelet
	api     *httptest.Server // the "API server": routes to the Proxy
}

// newEnv runs one kubelet behind the kubelet API (client certs required,
// on a port the node reports) and an HTTP front that routes pods/log,
// pods/exec, pods/attach, pods/portforward and nodes/proxy to a Proxy, as
// the API server does.
func newEnv(t *testing.T) *env {
	t.Helper()
	before := goruntime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	e := &env{t: t, ctx: ctx, client: fakeclient.CopyingWatches(fake.NewClientset())}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	rt, _ := sim.New(sim.Config{PodCIDR: "10.244.0.0/24"})
	k, err := kubelet.New(ctx, e.client, kubelet.Config{NodeName: "node-1", NodeIP: "127.0.0.1", Port: int32(port), RelistPeriod: 10 * time.Millisecond}, rt)
	if err != nil {
		t.Fatal(err)
	}
	e.kubelet = k
	mux := server.NewMux(server.Options{FollowPollInterval: 10 * time.Millisecond})
	mux.Add(k)

	caKey, ca := newCA(t)
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	tlsCfg, err := server.TLSConfig(server.TLSOptions{Hosts: []string{"127.0.0.1"}, ClientCAFile: caFile})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = k.Run(ctx) }()
	go func() { defer wg.Done(); _ = server.Serve(ctx, ln, mux, tlsCfg) }()

	clientCert := newClientCert(t, caKey, ca)
	p := apiproxy.New(lookup{e.client}, &tls.Config{Certificates: []tls.Certificate{clientCert}, InsecureSkipVerify: true})
	e.api = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
		var err error
		switch {
		case len(parts) == 7 && parts[5] == "pods" && parts[6] == "log" || len(parts) == 7 && parts[6] == "log":
			err = p.PodLog(w, r, parts[3], parts[5])
		case len(parts) == 7 && parts[6] == "exec":
			err = p.PodExec(w, r, parts[3], parts[5])
		case len(parts) == 7 && parts[6] == "attach":
			err = p.PodAttach(w, r, parts[3], parts[5])
		case len(parts) == 7 && parts[6] == "portforward":
			err = p.PodPortForward(w, r, parts[3], parts[5])
		case len(parts) >= 5 && parts[2] == "nodes" && parts[4] == "proxy":
			err = p.NodeProxy(w, r, parts[3], strings.Join(parts[5:], "/"))
		default:
			http.NotFound(w, r)
			return
		}
		if err != nil {
			var se apierrors.APIStatus
			if !errors.As(err, &se) {
				se = apierrors.NewInternalError(err)
			}
			st := se.Status()
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(int(st.Code))
			_ = json.NewEncoder(w).Encode(st)
		}
	}))
	t.Cleanup(func() {
		e.api.CloseClientConnections()
		e.api.Close()
		p.Close()
		cancel()
		wg.Wait()
		deadline := time.Now().Add(5 * time.Second)
		for goruntime.NumGoroutine() > before+2 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if n := goruntime.NumGoroutine(); n > before+2 {
			buf := make([]byte, 1<<20)
			t.Errorf("goroutines: %d before, %d after\n%s", before, n, buf[:goruntime.Stack(buf, true)])
		}
	})
	return e
}

func (e *env) runPod(name string, nodeName string, annotations map[string]string, containers ...string) {
	e.t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name), Annotations: annotations},
		Spec: corev1.PodSpec{NodeName: nodeName}}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c, Image: "busybox"})
	}
	if _, err := e.client.CoreV1().Pods("default").Create(e.ctx, p, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	if nodeName == "" {
		return
	}
	deadline := time.Now().Add(10 * time.Second)
	for !e.kubelet.ContainerRunning(e.ctx, "default", name, containers[0]) {
		if time.Now().After(deadline) {
			e.t.Fatalf("pod %s not running", name)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (e *env) get(path string) (int, string) {
	e.t.Helper()
	resp, err := http.Get(e.api.URL + path)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.Header.Get("Content-Type") == "application/json" {
		var st metav1.Status
		_ = json.Unmarshal(b, &st)
		return resp.StatusCode, st.Message
	}
	return resp.StatusCode, string(b)
}

func TestPodLog(t *testing.T) {
	e := newEnv(t)
	e.waitNode()
	e.runPod("web", "node-1", map[string]string{sim.AnnotationLogs: "one\ntwo"}, "app")
	e.runPod("multi", "node-1", nil, "a", "b")
	e.runPod("pending", "", nil, "app")
	const base = "/api/v1/namespaces/default/pods/"
	for _, tc := range []struct {
		path, want string
		code       int
	}{
		{base + "web/log", "one\ntwo\n", 200},
		{base + "web/log?container=app&tailLines=1", "two\n", 200},
		{base + "multi/log", "a container name must be specified for pod multi, choose one of: [a b]", 400},
		{base + "multi/log?container=c", "container c is not valid for pod multi", 400},
		{base + "nope/log", `pods "nope" not found`, 404},
		{base + "pending/log", "", 204},
		{base + "web/log?tailLines=-1", `PodLogOptions "web" is invalid: tailLines: Invalid value: -1: must be greater than or equal to 0`, 422},
		{base + "web/log?previous=true", `previous terminated container "app" in pod "web" not found`, 400},
	} {
		if code, body := e.get(tc.path); code != tc.code || body != tc.want {
			t.Errorf("GET %s = %d %q, want %d %q", tc.path, code, body, tc.code, tc.want)
		}
	}
	// follow streams until the client goes away.
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.api.URL+base+"web/log?follow=true", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	for _, want := range []string{"one\n", "two\n"} {
		if l, err := r.ReadString('\n'); l != want || err != nil {
			t.Fatalf("followed %q %v, want %q", l, err, want)
		}
	}
}

// TestPodLogOptionsAsKubeApiserver: pods/log decodes its options as
// kube-apiserver's query conversion (a boolean is true for any value but
// "0" and "false", even empty; an integer or time that does not parse is a
// 400 with the parser's message; sinceTime empty or "null" is set, to the
// zero time), validates them with ValidatePodLogOptions' messages in a 422
// naming the pod, and answers a pod on no node 204 No Content (no log
// location). FuzzPodLog found these.
func TestPodLogOptionsAsKubeApiserver(t *testing.T) {
	e := newEnv(t)
	e.waitNode()
	e.runPod("web", "node-1", map[string]string{sim.AnnotationLogs: "one\ntwo"}, "app")
	e.runPod("pending", "", nil, "app")
	const base = "/api/v1/namespaces/default/pods/"
	for _, tc := range []struct {
		path, want string
		code       int
	}{
		{base + "web/log?tailLines=-1", `PodLogOptions "web" is invalid: tailLines: Invalid value: -1: must be greater than or equal to 0`, 422},
		{base + "web/log?limitBytes=0", `PodLogOptions "web" is invalid: limitBytes: Invalid value: 0: must be greater than 0`, 422},
		{base + "web/log?sinceSeconds=0", `PodLogOptions "web" is invalid: sinceSeconds: Invalid value: 0: must be greater than 0`, 422},
		{base + "web/log?sinceSeconds=5&sinceTime=", "PodLogOptions \"web\" is invalid: []: Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified", 422},
		{base + "web/log?tailLines=x", `strconv.ParseInt: parsing "x": invalid syntax`, 400},
		{base + "web/log?limitBytes=1.5&tailLines=x", `strconv.ParseInt: parsing "x": invalid syntax`, 400},
		{base + "web/log?sinceTime=2020-01-01", `parsing time "2020-01-01" as "2006-01-02T15:04:05Z07:00": cannot parse "" as "T"`, 400},
		{base + "web/log?sinceTime=null", "one\ntwo\n", 200},
		{base + "web/log?follow=0&timestamps=false&tailLines=1", "two\n", 200},
		{base + "web/log?previous=maybe", `previous terminated container "app" in pod "web" not found`, 400},
		{base + "web/log?previous=", `previous terminated container "app" in pod "web" not found`, 400},
		{base + "web/log?previous=FALSE&limitBytes=2", "on", 200},
		{base + "nope/log?tailLines=-1", `PodLogOptions "nope" is invalid: tailLines: Invalid value: -1: must be greater than or equal to 0`, 422},
		{base + "pending/log", "", 204},
		{base + "pending/log?timestamps=x", "", 204},
	} {
		if code, body := e.get(tc.path); code != tc.code || body != tc.want {
			t.Errorf("GET %s = %d %q, want %d %q", tc.path, code, body, tc.code, tc.want)
		}
	}
	// timestamps with an empty value is set: every line has its time.
	code, body := e.get(base + "web/log?timestamps=")
	if lines := strings.Split(strings.TrimSuffix(body, "\n"), "\n"); code != 200 || len(lines) != 2 || !strings.HasSuffix(lines[0], " one") || len(lines[0]) < len("2006-01-02T15:04:05Z one") {
		t.Errorf("GET web/log?timestamps= = %d %q, want two lines with their times", code, body)
	}
}

func (e *env) waitNode() {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := e.client.CoreV1().Nodes().Get(e.ctx, "node-1", metav1.GetOptions{}); err == nil {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatal("node not registered")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestPodExecThroughTheProxy(t *testing.T) {
	e := newEnv(t)
	e.waitNode()
	e.runPod("web", "node-1", nil, "app")
	q := url.Values{"command": {"sh", "-c", "echo hi; exit 2"}, "stdout": {"true"}, "stderr": {"true"}}
	for name, ex := range e.executors("/api/v1/namespaces/default/pods/web/exec?" + q.Encode()) {
		var out bytes.Buffer
		err := ex.StreamWithContext(e.ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: io.Discard})
		var exitErr exec.CodeExitError
		if !errors.As(err, &exitErr) || exitErr.Code != 2 || out.String() != "hi\n" {
			t.Errorf("%s: out %q err %v, want \"hi\\n\" and exit code 2", name, out.String(), err)
		}
	}
	// Refused before reaching the kubelet.
	ex := e.executors("/api/v1/namespaces/default/pods/web/exec?stdout=true")["spdy"]
	if err := ex.StreamWithContext(e.ctx, remotecommand.StreamOptions{Stdout: io.Discard}); err == nil || !strings.Contains(err.Error(), "at least one command") {
		t.Errorf("exec without a command: %v", err)
	}
}

func TestNodeProxy(t *testing.T) {
	e := newEnv(t)
	e.waitNode()
	if code, body := e.get("/api/v1/nodes/node-1/proxy/healthz"); code != 200 || body != "ok" {
		t.Errorf("nodes/proxy/healthz: %d %q", code, body)
	}
	if code, body := e.get("/api/v1/nodes/node-9/proxy/healthz"); code != 404 || body != `nodes "node-9" not found` {
		t.Errorf("proxy to a missing node: %d %q", code, body)
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

func newClientCert(t *testing.T, caKey *ecdsa.PrivateKey, ca *x509.Certificate) tls.Certificate {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-apiserver-kubelet-client"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
