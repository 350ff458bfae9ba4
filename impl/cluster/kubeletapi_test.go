package cluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"testing"

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
	if resp, err := (&http.Client{Transport: anon}).Get(url); err == nil {
		resp.Body.Close()
		t.Fatalf("a client without a certificate got %s", resp.Status)
	}
}
