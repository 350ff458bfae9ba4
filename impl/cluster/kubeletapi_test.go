package cluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/kubeproof/kubeproof/impl/pki"
)

func TestKubeletAPIRequiresTheAPIServersClientCertificate(t *testing.T) {
	ca, err := pki.NewCA("kubeproof-test-ca")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	k, err := NewKubeletAPI(ca, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- k.Serve(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	url := fmt.Sprintf("https://127.0.0.1:%d/healthz", k.Port)

	tr := &http.Transport{TLSClientConfig: k.ClientTLS}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get(url)
	if err != nil {
		t.Fatalf("with the API server's client certificate: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "ok" {
		t.Fatalf("healthz: %d %q", resp.StatusCode, body)
	}

	anon := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}}
	// The serving certificate is the cluster CA's, for 127.0.0.1.
	verified := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), Certificates: k.ClientTLS.Certificates}}
	defer verified.CloseIdleConnections()
	if resp, err := (&http.Client{Transport: verified}).Get(url); err != nil {
		t.Errorf("verifying the serving certificate against the cluster CA: %v", err)
	} else {
		resp.Body.Close()
	}
	defer anon.CloseIdleConnections()
	// The TLS layer lets clients without a certificate in (bearer tokens
	// are authenticated once webhook auth is on); until then they get 401.
	if resp, err := (&http.Client{Transport: anon}).Get(url); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("a client without a certificate got %s, want 401", resp.Status)
		}
	}
}

// TestKubeletAPIAuthorizesInACluster: in a started cluster the kubelet API
// authorizes every request with a SubjectAccessReview: the API server's
// kubelet client (bound to system:kubelet-api-admin) is served, another
// user of the cluster CA gets 403, a client without credentials 401.
func TestKubeletAPIAuthorizesInACluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := Start(ctx, Config{DataDir: t.TempDir(), BindAddress: "127.0.0.1:0", WatchCache: true, UnsafeNoFsync: true, Nodes: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	}()
	url := fmt.Sprintf("https://127.0.0.1:%d/healthz", c.kubeletAPI.Port)
	get := func(certs []tls.Certificate) int {
		t.Helper()
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: c.CA.Pool(), Certificates: certs}}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr}).Get(url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(c.kubeletAPI.ClientTLS.Certificates); code != http.StatusOK {
		t.Errorf("the API server's kubelet client got %d, want 200", code)
	}
	kp, err := c.CA.IssueClient("mallory", nil)
	if err != nil {
		t.Fatal(err)
	}
	mallory, err := kp.TLSCertificate()
	if err != nil {
		t.Fatal(err)
	}
	if code := get([]tls.Certificate{mallory}); code != http.StatusForbidden {
		t.Errorf("an unauthorized user of the cluster CA got %d, want 403", code)
	}
	if code := get(nil); code != http.StatusUnauthorized {
		t.Errorf("a client without credentials got %d, want 401", code)
	}
}
