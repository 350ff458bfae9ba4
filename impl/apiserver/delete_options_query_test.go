package apiserver_test

import (
	"net/http"
	"testing"
)

// TestDeleteOptionsQueryOnlyWithoutBody: as kube-apiserver's delete
// handlers, the query's DeleteOptions parameters are read only when the
// request has no body; a DeleteOptions body is the options, whatever the
// query says (here a gracePeriodSeconds that would be a 400 alone).
func TestDeleteOptionsQueryOnlyWithoutBody(t *testing.T) {
	e := newEnv(t, nil)
	e.waitReady()
	const cms = "/api/v1/namespaces/default/configmaps"
	for _, name := range []string{"a", "b"} {
		if r := e.do(http.MethodPost, cms, []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"`+name+`"}}`), "Content-Type", "application/json"); r.code != http.StatusCreated {
			t.Fatalf("create %s: %d %s", name, r.code, r.body)
		}
	}
	const opts = `{"apiVersion":"v1","kind":"DeleteOptions"}`
	if r := e.do(http.MethodDelete, cms+"/a?gracePeriodSeconds=soon", []byte(opts), "Content-Type", "application/json"); r.code != http.StatusOK {
		t.Errorf("delete with a body and a bad query: %d %s, want 200 (query not read)", r.code, r.body)
	}
	if r := e.do(http.MethodDelete, cms+"?gracePeriodSeconds=soon", []byte(opts), "Content-Type", "application/json"); r.code != http.StatusOK {
		t.Errorf("deletecollection with a body and a bad query: %d %s, want 200 (query not read)", r.code, r.body)
	}
	if r := e.do(http.MethodDelete, cms+"/b?gracePeriodSeconds=soon", nil); r.code != http.StatusBadRequest {
		t.Errorf("delete without a body, bad query: %d %s, want 400", r.code, r.body)
	}
}
