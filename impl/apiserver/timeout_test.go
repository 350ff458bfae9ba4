package apiserver_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/apiserver/admission"
)

// waitForDeadline holds configmap creates until their request's context
// ends, as a write waiting on an unreachable etcd would.
type waitForDeadline struct{}

func (waitForDeadline) Admit(ctx context.Context, a *admission.Attributes) error {
	if a.Resource.Resource != "configmaps" {
		return nil
	}
	<-ctx.Done()
	return ctx.Err()
}

// A request still at work when the request timeout passes gets
// kube-apiserver's 504 Timeout Status (the deadline kept in the request's
// context node ends the context the handler waits on), and the object is
// not created.
func TestRequestPastItsDeadlineGetsTimeout(t *testing.T) {
	e := newEnv(t, func(c *apiserver.Config) {
		c.RequestTimeout = 300 * time.Millisecond
		c.AdmissionMutators = []admission.Mutator{waitForDeadline{}}
	})
	r := e.do("POST", "/api/v1/namespaces/default/configmaps", []byte(`{"metadata":{"name":"late"}}`))
	expectStatus(t, r, http.StatusGatewayTimeout, metav1.StatusReasonTimeout, "request did not complete within the allowed duration")
	if _, err := e.cs.CoreV1().ConfigMaps("default").Get(context.Background(), "late", metav1.GetOptions{}); err == nil {
		t.Fatal("the timed-out create stored its object")
	}
	// Requests that do not wait are not affected.
	if r := e.do("GET", "/api/v1/namespaces/default/configmaps", nil); r.code != http.StatusOK {
		t.Fatalf("list after the timeout: %d %s", r.code, r.body)
	}
}
