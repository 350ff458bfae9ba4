package apiserver_test

import (
	"net/http"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDeleteCollectionStaysInItsNamespace: a deletecollection deletes the
// request namespace's objects only, as kube-apiserver's store, which lists
// under the namespace's key prefix and deletes each item by name in the
// request's namespace: not those of a namespace whose name starts with the
// same letters, nor those a field selector on metadata.namespace names in
// another namespace; and there is no deletecollection across namespaces
// (DELETE /api/v1/configmaps is the router's 405).
func TestDeleteCollectionStaysInItsNamespace(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	namespaces := []string{"a", "ab", "b"}
	for _, ns := range namespaces {
		if r := e.do("POST", "/api/v1/namespaces", []byte(`{"metadata":{"name":"`+ns+`"}}`)); r.code != http.StatusCreated {
			t.Fatalf("create namespace %s: %d %s", ns, r.code, r.body)
		}
		for _, n := range []string{"x", "y"} {
			if _, err := e.cs.CoreV1().ConfigMaps(ns).Create(c, configMap("", n, nil), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	left := func() []string {
		t.Helper()
		l, err := e.cs.CoreV1().ConfigMaps("").List(c, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, cm := range l.Items {
			if slices.Contains(namespaces, cm.Namespace) {
				out = append(out, cm.Namespace+"/"+cm.Name)
			}
		}
		slices.Sort(out)
		return out
	}

	if r := e.do("DELETE", "/api/v1/configmaps", nil); r.code != http.StatusMethodNotAllowed {
		t.Errorf("DELETE /api/v1/configmaps: %d %s, want 405", r.code, r.body)
	}
	if err := e.cs.CoreV1().ConfigMaps("b").DeleteCollection(c, metav1.DeleteOptions{}, metav1.ListOptions{FieldSelector: "metadata.namespace=a"}); err != nil {
		t.Fatal(err)
	}
	if got, want := left(), []string{"a/x", "a/y", "ab/x", "ab/y", "b/x", "b/y"}; !slices.Equal(got, want) {
		t.Fatalf("after deletecollection in b of metadata.namespace=a: %v, want %v", got, want)
	}
	if err := e.cs.CoreV1().ConfigMaps("a").DeleteCollection(c, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, want := left(), []string{"ab/x", "ab/y", "b/x", "b/y"}; !slices.Equal(got, want) {
		t.Fatalf("after deletecollection in a: %v, want %v", got, want)
	}
}
