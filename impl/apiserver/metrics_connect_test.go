package apiserver_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver"
)

// TestConnectCountedAsLongRunning: an open nodes/proxy request (a connect
// subresource) is in apiserver_longrunning_requests with verb CONNECT
// while it lasts, as kube-apiserver tracks its connect handlers, and out
// of it once answered.
func TestConnectCountedAsLongRunning(t *testing.T) {
	reg := prometheus.NewRegistry()
	e := newEnv(t, func(c *apiserver.Config) { c.Metrics = reg })
	// A kubelet whose answer waits for the test.
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	kubelet := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		_, _ = w.Write([]byte("ok"))
	}))
	defer kubelet.Close()
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	host, portText, err := net.SplitHostPort(kubelet.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(portText)
	ctx := context.Background()
	node, err := e.cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: host}}
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(port)
	if _, err := e.cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	const open = `apiserver_longrunning_requests{component="apiserver",group="",resource="nodes",scope="resource",subresource="proxy",verb="CONNECT",version="v1"} `
	type answer struct {
		code int
		body string
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		resp, err := e.client.Get(e.url + "/api/v1/nodes/n1/proxy/healthz")
		if err != nil {
			done <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		done <- answer{code: resp.StatusCode, body: string(b), err: err}
	}()
	select {
	case <-arrived:
	case a := <-done:
		t.Fatalf("nodes/proxy answered before reaching the kubelet: %d %s %v", a.code, a.body, a.err)
	}
	if body := string(e.do("GET", "/metrics", nil).body); !strings.Contains(body, open+"1") {
		t.Errorf("open nodes/proxy request not long-running:\n%s", grepLines(body, "apiserver_longrunning_requests{"))
	}
	close(release)
	if a := <-done; a.err != nil || a.code != http.StatusOK || a.body != "ok" {
		t.Fatalf("nodes/proxy: %d %s %v", a.code, a.body, a.err)
	}
	if body := string(e.do("GET", "/metrics", nil).body); !strings.Contains(body, open+"0") {
		t.Errorf("answered nodes/proxy request still long-running:\n%s", grepLines(body, "apiserver_longrunning_requests{"))
	}
}

// TestReviewRequestsCounted: the review resources (here a
// SelfSubjectReview and a SelfSubjectAccessReview), served without
// storage, are counted in apiserver_request_total as kube-apiserver
// counts every request its resource handlers answer.
func TestReviewRequestsCounted(t *testing.T) {
	reg := prometheus.NewRegistry()
	e := newEnv(t, func(c *apiserver.Config) { c.Metrics = reg })
	if r := e.do("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
		[]byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`)); r.code != http.StatusCreated {
		t.Fatalf("selfsubjectreviews: %d %s", r.code, r.body)
	}
	if r := e.do("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
		[]byte(`{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":{"verb":"get","resource":"pods"}}}`)); r.code != http.StatusCreated {
		t.Fatalf("selfsubjectaccessreviews: %d %s", r.code, r.body)
	}
	body := string(e.do("GET", "/metrics", nil).body)
	for _, want := range []string{
		`apiserver_request_total{code="201",component="apiserver",dry_run="",group="authentication.k8s.io",resource="selfsubjectreviews",scope="resource",subresource="",verb="POST",version="v1"} 1`,
		`apiserver_request_total{code="201",component="apiserver",dry_run="",group="authorization.k8s.io",resource="selfsubjectaccessreviews",scope="resource",subresource="",verb="POST",version="v1"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s:\n%s", want, grepLines(body, "apiserver_request_total{"))
		}
	}
}
