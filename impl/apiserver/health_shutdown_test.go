package apiserver_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/registry"
	"github.com/kubeproof/kubeproof/impl/storage"
	"github.com/kubeproof/kubeproof/impl/storage/storagebackend"
)

// blockingLeaseDelete holds, once armed, the delete of the lease of
// address until released is closed, saying on entered when it starts: a
// graceful shutdown is then under way (the server removes itself from
// the kubernetes endpoints before it stops serving). Unarmed, the start's
// removal of a lease left behind goes through.
type blockingLeaseDelete struct {
	storage.Factory
	address           string
	armed             atomic.Bool
	entered, released chan struct{}
}

func (f *blockingLeaseDelete) New(cfg storage.ResourceConfig) (storage.Interface, storage.DestroyFunc, error) {
	st, destroy, err := f.Factory.New(cfg)
	if err != nil {
		return st, destroy, err
	}
	return &blockingDeleteStore{Interface: st, f: f}, destroy, nil
}

type blockingDeleteStore struct {
	storage.Interface
	f *blockingLeaseDelete
}

func (s *blockingDeleteStore) Delete(ctx context.Context, key string, out k8sruntime.Object, pre *storage.Preconditions, validate storage.ValidateObjectFunc) error {
	if strings.HasSuffix(key, "/"+s.f.address) && s.f.armed.Load() {
		close(s.f.entered)
		<-s.f.released
	}
	return s.Interface.Delete(ctx, key, out, pre, validate)
}

// During a graceful shutdown /readyz fails with its shutdown check while
// /livez and /healthz still pass, as kube-apiserver's; once Run has
// returned, the log check's flushing goroutine (started by the first
// check) is gone.
func TestHealthDuringGracefulShutdown(t *testing.T) {
	factory := storagebackend.NewFactory(storagebackend.Config{Client: etcdServer.Client(),
		Prefix: fmt.Sprintf("/test-shutdown%d-%d", time.Now().UnixNano(), prefixSeq.Add(1))})
	defer factory.Close()
	f := &blockingLeaseDelete{Factory: factory, address: "192.0.2.77", entered: make(chan struct{}), released: make(chan struct{})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := apiserver.New(apiserver.Config{StorageFactory: f, Resources: registry.All(), ServingCert: &serving,
		ClientCA: ca.Pool(), Listener: ln, AdvertiseAddress: net.ParseIP(f.address)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	clientCert, err := admin.TLSCertificate()
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{ForceAttemptHTTP2: true,
		TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{clientCert}}}}
	defer client.CloseIdleConnections()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := client.Get("https://" + ln.Addr().String() + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if code, _ := get("/readyz"); code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("server never became ready")
		}
	}
	f.armed.Store(true)
	cancel()
	select {
	case <-f.entered:
	case <-time.After(20 * time.Second):
		t.Fatal("the shutdown did not remove the server's lease")
	}
	code, body := get("/readyz?verbose")
	if code != http.StatusInternalServerError || !strings.Contains(body, "[-]shutdown failed: reason withheld\n") ||
		!strings.HasSuffix(body, "readyz check failed\n") {
		t.Errorf("readyz during shutdown: %d\n%s", code, body)
	}
	for _, p := range []string{"/livez", "/healthz"} {
		if code, body := get(p); code != http.StatusOK || body != "ok" {
			t.Errorf("%s during shutdown: %d %q", p, code, body)
		}
	}
	close(f.released)
	client.CloseIdleConnections()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	frame := apiserver.LogCheckFrame(srv)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		buf := make([]byte, 1<<24)
		stacks := string(buf[:runtime.Stack(buf, true)])
		if !strings.Contains(stacks, frame) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the log check's goroutine (%s) outlived the server:\n%s", frame, stacks)
		}
	}
}
