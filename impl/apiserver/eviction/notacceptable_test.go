package eviction_test

import (
	"context"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/cluster/clustertest"
)

// TestEvictionNotAcceptableEvictsNothing: an eviction whose Accept header
// names no media type the server can answer in is refused with 406 before
// anything happens, as kube-apiserver's create handler negotiates the
// output type first. A FuzzHTTP corpus replay found the pod evicted (etcd
// written) and then the 406 (fuzz/README.md, session 29).
func TestEvictionNotAcceptableEvictsNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	_, cs := clustertest.Start(t, clustertest.Options{})
	ctx := context.Background()
	pods := cs.CoreV1().Pods("default")
	if _, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "victim"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var code int
	err := cs.CoreV1().RESTClient().Post().Namespace("default").Resource("pods").Name("victim").SubResource("eviction").
		SetHeader("Content-Type", "application/json").
		SetHeader("Accept", "application/json;as=APIGroupDiscoveryList;v=v2;g=apidiscovery.k8s.io").
		Body([]byte(`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"victim","namespace":"default"}}`)).
		Do(ctx).StatusCode(&code).Error()
	if code != http.StatusNotAcceptable {
		t.Errorf("eviction with an unacceptable Accept: %d %v, want 406", code, err)
	}
	got, err := pods.Get(ctx, "victim", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the pod is gone after a refused eviction: %v", err)
	}
	if got.DeletionTimestamp != nil {
		t.Fatal("the pod is terminating after a refused eviction")
	}
}
