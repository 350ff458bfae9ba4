package kubelet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestClientCertificateExit: the kubelet exits, with upstream's message
// (its structured one since Kubernetes 1.21, which no longer says how
// long), only when it has had no valid client certificate for longer
// than exitAfter and the API server is responsive.
func TestClientCertificateExit(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const msg = "No valid client certificate is found and the server is responsive, exiting."
	for _, c := range []struct {
		name           string
		now            time.Time
		valid, healthy bool
		exitAfter      time.Duration
		want           string
	}{
		{"valid", t0.Add(time.Hour), true, true, 5 * time.Minute, ""},
		{"invalid for less than exitAfter", t0.Add(5 * time.Minute), false, true, 5 * time.Minute, ""},
		{"invalid for longer", t0.Add(5*time.Minute + time.Second), false, true, 5 * time.Minute, msg},
		{"server unresponsive", t0.Add(time.Hour), false, false, 5 * time.Minute, ""},
		{"no exitAfter", t0.Add(time.Hour), false, true, 0, ""},
	} {
		if got := ClientCertificateExit(c.now, t0, c.valid, c.healthy, c.exitAfter); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestWatchExpiryExits: a client certificate manager without a valid
// certificate past exitAfter (short here), whose request the API server
// refused, returns upstream's error, which
// the kubelet command returns; before, nothing stopped the kubelet.
func TestWatchExpiryExits(t *testing.T) {
	m, err := NewClientCertificateManager(t.TempDir(), "n1", nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Its request refused: the API server answers.
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "certificates.k8s.io", Resource: "certificatesigningrequests"}, "", errors.New("no"))
	if err := m.rotate(context.Background(), refusingClientset(forbidden)); err == nil {
		t.Fatal("rotation succeeded")
	}
	err = m.WatchExpiry(context.Background(), time.Millisecond, time.Millisecond)
	if want := "No valid client certificate is found and the server is responsive, exiting."; err == nil || err.Error() != want {
		t.Errorf("WatchExpiry: %v, want %q", err, want)
	}
}

// TestServerAnswered: as upstream's certificate manager, the API server
// is responsive when a certificate request's creation was answered 401,
// 403 or 404 by it, and not when the answer was another status, not the
// API server's (no Status in it), or none.
func TestServerAnswered(t *testing.T) {
	gr := schema.GroupResource{Group: "certificates.k8s.io", Resource: "certificatesigningrequests"}
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"401", apierrors.NewUnauthorized("Unauthorized"), true},
		{"401 without a Status (a TLS terminating proxy)", apierrors.NewGenericServerResponse(http.StatusUnauthorized, "POST", gr, "", "", 0, true), true},
		{"403", apierrors.NewForbidden(gr, "", errors.New("no")), true},
		{"404", apierrors.NewNotFound(gr, ""), true},
		{"403 wrapped", fmt.Errorf("creating: %w", apierrors.NewForbidden(gr, "", errors.New("no"))), true},
		{"500", apierrors.NewInternalError(errors.New("boom")), false},
		{"503 without a Status (a load balancer)", apierrors.NewGenericServerResponse(http.StatusServiceUnavailable, "POST", gr, "", "", 0, true), false},
		{"403 without a Status", apierrors.NewGenericServerResponse(http.StatusForbidden, "POST", gr, "", "", 0, true), false},
		{"409", apierrors.NewAlreadyExists(gr, "x"), false},
		{"422", apierrors.NewInvalid(schema.GroupKind{Group: gr.Group, Kind: "CertificateSigningRequest"}, "", nil), false},
		{"429", apierrors.NewTooManyRequests("slow down", 1), false},
		{"no answer", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}, false},
	} {
		if got := ServerAnswered(c.err); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// refusingClientset answers every CertificateSigningRequest creation
// with err.
func refusingClientset(err error) *fake.Clientset {
	client := fake.NewClientset()
	client.PrependReactor("create", "certificatesigningrequests", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, err
	})
	return client
}

// TestServerHealthy: a client certificate manager takes the API server
// as responsive as upstream's: not before it asked, then as the last
// request's creation was answered, and once a certificate is issued.
// Before, it was responsive unless the last request got no Status (a 500
// was responsive, and so was a server never asked).
func TestServerHealthy(t *testing.T) {
	m, err := NewClientCertificateManager(t.TempDir(), "n1", nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m.ServerHealthy() {
		t.Error("responsive before any request")
	}
	gr := schema.GroupResource{Group: "certificates.k8s.io", Resource: "certificatesigningrequests"}
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"403", apierrors.NewForbidden(gr, "", errors.New("no")), true},
		{"500", apierrors.NewInternalError(errors.New("boom")), false},
		{"401", apierrors.NewUnauthorized("Unauthorized"), true},
		{"no answer", errors.New("connection refused"), false},
	} {
		if err := m.rotate(context.Background(), refusingClientset(c.err)); err == nil {
			t.Fatalf("%s: rotation succeeded", c.name)
		}
		if got := m.ServerHealthy(); got != c.want {
			t.Errorf("after %s: responsive %v, want %v", c.name, got, c.want)
		}
	}
	if err := m.rotate(context.Background(), issuingClientset(t)); err != nil {
		t.Fatal(err)
	}
	if !m.ServerHealthy() {
		t.Error("not responsive after a certificate was issued")
	}
}

// TestWatchExpiryServerNotResponsive: without a valid client certificate
// past exitAfter, the kubelet does not exit while the API server is not
// responsive (never asked; its last answer a 500), as upstream's, which
// only logs then. Before, both exited.
func TestWatchExpiryServerNotResponsive(t *testing.T) {
	for _, c := range []struct {
		name   string
		answer error // nil: never asked
	}{
		{"never asked", nil},
		{"500", apierrors.NewInternalError(errors.New("boom"))},
	} {
		m, err := NewClientCertificateManager(t.TempDir(), "n1", nil, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if c.answer != nil {
			_ = m.rotate(context.Background(), refusingClientset(c.answer))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err = m.WatchExpiry(ctx, time.Millisecond, time.Millisecond)
		cancel()
		if err != nil {
			t.Errorf("%s: %v, want no exit", c.name, err)
		}
	}
}
