package apiserver_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/apiserver/admission"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
)

// recordingAuthorizer allows everything and keeps what it was asked.
type recordingAuthorizer struct {
	mu    sync.Mutex
	asked []string // "verb resource/subresource ns name"
}

func (a *recordingAuthorizer) Authorize(_ context.Context, at auth.Attributes) (auth.Decision, string, error) {
	if i := at.Info; i != nil && i.IsResourceRequest {
		a.mu.Lock()
		a.asked = append(a.asked, i.Verb+" "+i.Resource+"/"+i.Subresource+" "+i.Namespace+" "+i.Name)
		a.mu.Unlock()
	}
	return auth.DecisionAllow, "", nil
}

func (a *recordingAuthorizer) saw(s string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Contains(a.asked, s)
}

// recordingAdmission keeps the attributes of every Binding it admits.
type recordingAdmission struct {
	mu   sync.Mutex
	seen []admission.Attributes
}

func (r *recordingAdmission) Admit(_ context.Context, a *admission.Attributes) error {
	if _, ok := a.Object.(*corev1.Binding); ok {
		r.mu.Lock()
		r.seen = append(r.seen, *a)
		r.mu.Unlock()
	}
	return nil
}

// TestLegacyBindings: POST /api/v1/namespaces/<ns>/bindings binds the pod
// the Binding names, as kube-apiserver serves its legacy bindings resource
// with pods/binding's storage: authorized and admitted as resource
// "bindings" without subresource, answered with a 201 success Status, the
// same 409 for a bound pod and 404 for a missing one; its one route is
// the namespaced collection's POST, and discovery lists it with the verb
// create.
func TestLegacyBindings(t *testing.T) {
	authz := &recordingAuthorizer{}
	adm := &recordingAdmission{}
	e := newEnv(t, func(cfg *apiserver.Config) {
		cfg.Authorizer = authz
		cfg.AdmissionMutators = append(cfg.AdmissionMutators, adm)
	})
	c := ctx(t)
	pods := e.cs.CoreV1().Pods("default")
	if _, err := pods.Create(c, pod("web"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bind := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "web", Annotations: map[string]string{"a": "b"}},
		Target: corev1.ObjectReference{Kind: "Node", Name: "node-1"}}
	// As a binder outside system:masters (admin impersonates it), whose
	// requests the authorizer is asked about.
	binderCfg := rest.CopyConfig(e.rest)
	binderCfg.Impersonate = rest.ImpersonationConfig{UserName: "binder"}
	binder, err := kubernetes.NewForConfig(binderCfg)
	if err != nil {
		t.Fatal(err)
	}
	post := func(b *corev1.Binding) (*metav1.Status, int, error) {
		var code int
		res := binder.CoreV1().RESTClient().Post().Namespace("default").Resource("bindings").Body(b).Do(c).StatusCode(&code)
		st := &metav1.Status{}
		err := res.Into(st)
		return st, code, err
	}
	st, code, err := post(bind)
	if err != nil {
		t.Fatalf("POST bindings: %v", err)
	}
	if code != http.StatusCreated || st.Status != metav1.StatusSuccess || st.Code != http.StatusCreated {
		t.Fatalf("answer %d %+v, want 201 and a success Status", code, st)
	}
	bound, err := pods.Get(c, "web", metav1.GetOptions{})
	if err != nil || bound.Spec.NodeName != "node-1" || bound.Annotations["a"] != "b" {
		t.Fatalf("pod after binding: %v, node %q, annotations %v", err, bound.Spec.NodeName, bound.Annotations)
	}
	if !authz.saw("create bindings/ default ") {
		t.Errorf("authorization not asked for create bindings in default: %v", authz.asked)
	}
	adm.mu.Lock()
	if len(adm.seen) != 1 {
		t.Fatalf("admitted %d bindings, want 1", len(adm.seen))
	}
	a := adm.seen[0]
	adm.mu.Unlock()
	if a.Resource != corev1.SchemeGroupVersion.WithResource("bindings") || a.Subresource != "" ||
		a.Kind != corev1.SchemeGroupVersion.WithKind("Binding") || a.Name != "web" || a.Namespace != "default" || a.Operation != admission.Create {
		t.Errorf("admission attributes %v %q %v %s/%s %s, want bindings, no subresource, Binding, default/web, CREATE",
			a.Resource, a.Subresource, a.Kind, a.Namespace, a.Name, a.Operation)
	}

	// Already bound: pods/binding's conflict.
	bind.Target.Name = "node-2"
	if _, _, err := post(bind); !apierrors.IsConflict(err) ||
		!strings.Contains(err.Error(), `Operation cannot be fulfilled on pods/binding "web": pod web is already assigned to node "node-1"`) {
		t.Errorf("rebinding: %v, want the 409 of a bound pod", err)
	}
	// A missing pod.
	if _, _, err := post(&corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "nope"}, Target: corev1.ObjectReference{Name: "node-1"}}); !apierrors.IsNotFound(err) ||
		!strings.Contains(err.Error(), `pods "nope" not found`) {
		t.Errorf("binding a missing pod: %v, want 404 pods \"nope\" not found", err)
	}
	// No name, no target.
	r := e.do("POST", "/api/v1/namespaces/default/bindings", []byte(`{"apiVersion":"v1","kind":"Binding","target":{"name":"n"}}`))
	expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest, "Name parameter required.")
	r = e.do("POST", "/api/v1/namespaces/default/bindings", []byte(`{"apiVersion":"v1","kind":"Binding","metadata":{"name":"web"}}`))
	expectStatus(t, r, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, "target.name: Required value")
	r = e.do("POST", "/api/v1/namespaces/default/bindings", []byte(`{"apiVersion":"v1","kind":"Binding","metadata":{"name":"web","namespace":"other"},"target":{"name":"n"}}`))
	expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest, "does not match the namespace")

	// The router's answers: only POST on the namespaced collection.
	for _, tc := range []struct {
		method, path string
		code         int
	}{
		{"GET", "/api/v1/namespaces/default/bindings", http.StatusMethodNotAllowed},
		{"GET", "/api/v1/namespaces/default/bindings?watch=true", http.StatusMethodNotAllowed},
		{"DELETE", "/api/v1/namespaces/default/bindings", http.StatusMethodNotAllowed},
		{"GET", "/api/v1/watch/namespaces/default/bindings", http.StatusNotFound},
		{"POST", "/api/v1/bindings", http.StatusNotFound},
		{"GET", "/api/v1/bindings", http.StatusNotFound},
		{"POST", "/api/v1/namespaces/default/bindings/web", http.StatusNotFound},
		{"GET", "/api/v1/namespaces/default/bindings/web", http.StatusNotFound},
		{"PUT", "/api/v1/namespaces/default/bindings/web", http.StatusNotFound},
		{"POST", "/api/v1/namespaces/default/bindings/web/status", http.StatusNotFound},
	} {
		r := e.do(tc.method, tc.path, []byte(`{"apiVersion":"v1","kind":"Binding","metadata":{"name":"web"},"target":{"name":"node-3"}}`))
		if r.code != tc.code {
			t.Errorf("%s %s: %d, want %d: %s", tc.method, tc.path, r.code, tc.code, r.body)
		}
	}
	if p, _ := pods.Get(c, "web", metav1.GetOptions{}); p.Spec.NodeName != "node-1" {
		t.Errorf("pod rebound to %q by a request the router refuses", p.Spec.NodeName)
	}

	// Discovery: a namespaced creater of kind Binding.
	rl, err := e.cs.Discovery().ServerResourcesForGroupVersion("v1")
	if err != nil {
		t.Fatal(err)
	}
	var found *metav1.APIResource
	for i := range rl.APIResources {
		if rl.APIResources[i].Name == "bindings" {
			found = &rl.APIResources[i]
		}
	}
	if found == nil || found.Kind != "Binding" || !found.Namespaced || found.SingularName != "binding" || !slices.Equal(found.Verbs, []string{"create"}) {
		t.Errorf("discovery of bindings: %+v, want namespaced Binding with verbs [create]", found)
	}
}
