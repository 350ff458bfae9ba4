package admission

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
)

// The webhook clients are a least-recently-used cache of
// webhookClientCacheSize (kube-apiserver's ClientManager: 200): the
// client unused longest is dropped when a new one would exceed it, and a
// client asked for again is a new one.
func TestWebhookClientsAreCappedLRU(t *testing.T) {
	resolver := &serviceResolver{service: func(context.Context, string, string) (*corev1.Service, error) {
		return nil, fmt.Errorf("not used")
	}}
	c := &webhookClients{}
	ref := func(i int) *admissionregistrationv1.ServiceReference {
		return &admissionregistrationv1.ServiceReference{Namespace: "ns", Name: fmt.Sprintf("svc-%d", i)}
	}
	get := func(i int) *http.Client {
		t.Helper()
		cl, err := c.get(nil, ref(i), resolver)
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	first := map[int]*http.Client{}
	for i := range webhookClientCacheSize {
		first[i] = get(i)
	}
	if webhookClientCacheSize != 200 {
		t.Fatalf("cache size %d, kube-apiserver's is 200", webhookClientCacheSize)
	}
	if n := c.len(); n != webhookClientCacheSize {
		t.Fatalf("%d clients cached, want %d", n, webhookClientCacheSize)
	}
	// Client 0 used again: client 1 is now the least recently used.
	if get(0) != first[0] {
		t.Fatal("client 0 was rebuilt while the cache had room")
	}
	get(webhookClientCacheSize) // one more: evicts client 1
	if n := c.len(); n != webhookClientCacheSize {
		t.Fatalf("%d clients cached after one more, want %d", n, webhookClientCacheSize)
	}
	if get(0) != first[0] {
		t.Error("client 0, used recently, was evicted")
	}
	if get(2) != first[2] {
		t.Error("client 2 was evicted before client 1")
	}
	if get(1) == first[1] {
		t.Error("client 1, the least recently used, was kept past the cap")
	}
}
