package apiserver_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/pki"
	"github.com/kubeproof/kubeproof/impl/registry"
	"github.com/kubeproof/kubeproof/impl/storage/embedded"
	"github.com/kubeproof/kubeproof/impl/storage/storagebackend"
)

// One embedded etcd serves every test; each test server stores under its
// own key prefix.
var (
	etcdServer *embedded.Etcd
	prefixSeq  atomic.Int64
	ca         *pki.CA
	serving    tls.Certificate
	admin      pki.KeyPair
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "apiserver-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	etcdServer, err = embedded.Start(ctx, embedded.Config{DataDir: dir, UnsafeNoFsync: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting etcd:", err)
		return 1
	}
	defer etcdServer.Close()
	if ca, err = pki.NewCA("kubeproof-test-ca"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	kp, err := ca.IssueServing("apiserver", []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if serving, err = kp.TLSCertificate(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if admin, err = ca.IssueClient("admin", []string{"system:masters"}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// env is one running API server with clients for it.
type env struct {
	t      testing.TB
	prefix string // of the storage keys
	srv    *apiserver.Server
	url    string
	rest   *rest.Config
	cs     *kubernetes.Clientset
	client *http.Client // authenticated as admin
	anon   *http.Client // no client certificate
}

// newEnv starts a server over HTTPS on a fresh key prefix; configure may
// adjust the Config. The server stops when the test ends.
func newEnv(t testing.TB, configure func(*apiserver.Config)) *env {
	t.Helper()
	return newEnvAt(t, fmt.Sprintf("/test%d-%d", time.Now().UnixNano(), prefixSeq.Add(1)), configure)
}

// newEnvAt starts a server on the storage key prefix given (another
// server's, for a second server on the same storage).
func newEnvAt(t testing.TB, prefix string, configure func(*apiserver.Config)) *env {
	t.Helper()
	factory := storagebackend.NewFactory(storagebackend.Config{Client: etcdServer.Client(), Prefix: prefix})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := apiserver.Config{
		StorageFactory: factory,
		Resources:      registry.All(),
		ServingCert:    &serving,
		ClientCA:       ca.Pool(),
		Listener:       ln,
	}
	if configure != nil {
		configure(&cfg)
	}
	srv, err := apiserver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	url := "https://" + ln.Addr().String()
	e := &env{t: t, prefix: prefix, srv: srv, url: url, rest: pki.RESTConfig(url, ca.CertPEM, admin)}
	e.rest.QPS, e.rest.Burst = 1000, 1000
	var transports []http.RoundTripper
	var tmu sync.Mutex
	e.rest.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		tmu.Lock()
		transports = append(transports, rt)
		tmu.Unlock()
		return rt
	}
	clientCert, err := admin.TLSCertificate()
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	e.client = &http.Client{Transport: &http.Transport{ForceAttemptHTTP2: true,
		TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{clientCert}}}}
	e.anon = &http.Client{Transport: &http.Transport{ForceAttemptHTTP2: true,
		TLSClientConfig: &tls.Config{RootCAs: pool}}}
	t.Cleanup(func() {
		// Closing the clients' connections first spares the server
		// HTTP/2's one-second GOAWAY wait.
		e.client.CloseIdleConnections()
		e.anon.CloseIdleConnections()
		tmu.Lock()
		for _, rt := range transports {
			for rt != nil {
				if c, ok := rt.(interface{ CloseIdleConnections() }); ok {
					c.CloseIdleConnections()
					break
				}
				w, ok := rt.(utilnet.RoundTripperWrapper)
				if !ok {
					break
				}
				rt = w.WrappedRoundTripper()
			}
		}
		tmu.Unlock()
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("server Run: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Errorf("server did not shut down")
		}
		factory.Close()
		e.client.CloseIdleConnections()
		e.anon.CloseIdleConnections()
	})
	if e.cs, err = kubernetes.NewForConfig(e.rest); err != nil {
		t.Fatal(err)
	}
	e.waitReady()
	return e
}

func (e *env) waitReady() {
	e.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := e.client.Get(e.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.t.Fatal("server never became ready")
}

// response is an HTTP answer read whole.
type response struct {
	code   int
	header http.Header
	body   []byte
}

func (r response) status(t *testing.T) metav1.Status {
	t.Helper()
	var st metav1.Status
	if err := json.Unmarshal(r.body, &st); err != nil || st.Kind != "Status" {
		t.Fatalf("not a Status (code %d): %s", r.code, r.body)
	}
	return st
}

// do sends a request as admin; hdr alternates header names and values.
func (e *env) do(method, path string, body []byte, hdr ...string) response {
	e.t.Helper()
	return e.doWith(e.client, method, path, body, hdr...)
}

func (e *env) doWith(c *http.Client, method, path string, body []byte, hdr ...string) response {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, e.url+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatalf("%s %s: reading body: %v", method, path, err)
	}
	return response{code: resp.StatusCode, header: resp.Header, body: data}
}

// expectStatus checks code and reason of a Status answer and that its
// message contains msg.
func expectStatus(t *testing.T, r response, code int, reason metav1.StatusReason, msg string) metav1.Status {
	t.Helper()
	if r.code != code {
		t.Fatalf("code %d, want %d: %s", r.code, code, r.body)
	}
	st := r.status(t)
	if st.Code != int32(code) || st.Reason != reason {
		t.Fatalf("status code %d reason %q, want %d %q: %s", st.Code, st.Reason, code, reason, r.body)
	}
	if !strings.Contains(st.Message, msg) {
		t.Fatalf("message %q does not contain %q", st.Message, msg)
	}
	return st
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}
