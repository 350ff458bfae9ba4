package apiserver_test

import (
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// An eviction's fieldManager is validated as any create's (kube-apiserver's
// ValidateCreateOptions: at most 128 printable characters): a bad one is a
// 422 Invalid CreateOptions that evicts nothing.
func TestEvictionFieldManagerValidated(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	pods := e.cs.CoreV1().Pods("default")
	if _, err := pods.Create(c, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "victim"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eviction := []byte(`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"victim","namespace":"default"}}`)
	r := e.do("POST", "/api/v1/namespaces/default/pods/victim/eviction?fieldManager="+strings.Repeat("m", 129), eviction)
	expectStatus(t, r, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, `CreateOptions.meta.k8s.io "" is invalid: fieldManager: Too long`)
	if got, err := pods.Get(c, "victim", metav1.GetOptions{}); err != nil || got.DeletionTimestamp != nil {
		t.Fatalf("after the refused eviction: %v", err)
	}
	r = e.do("POST", "/api/v1/namespaces/default/pods/victim/eviction?dryRun=All&fieldManager=kubectl", eviction)
	if r.code != http.StatusCreated {
		t.Fatalf("a valid fieldManager: %d %s", r.code, r.body)
	}
}
