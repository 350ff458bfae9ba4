package apiserver_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/apiserver/admission"
)

// evictionAdmission records what the admission chain sees of pods and
// refuses the DELETE of any pod, and the eviction of the pod "guarded".
type evictionAdmission struct {
	mu   sync.Mutex
	seen []admission.Attributes
}

func (p *evictionAdmission) record(a *admission.Attributes) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen = append(p.seen, *a)
}

func (p *evictionAdmission) Admit(_ context.Context, a *admission.Attributes) error {
	if a.Resource.Resource != "pods" {
		return nil
	}
	p.record(a)
	if a.Subresource == "eviction" && a.Name == "guarded" {
		return apierrors.NewForbidden(corev1.Resource("pods"), a.Name, errors.New("eviction refused by a mutating plugin"))
	}
	return nil
}

func (p *evictionAdmission) Validate(_ context.Context, a *admission.Attributes) error {
	if a.Resource.Resource == "pods" && a.Operation == admission.Delete {
		return apierrors.NewForbidden(corev1.Resource("pods"), a.Name, errors.New("pod deletes refused by a validating plugin"))
	}
	return nil
}

// As kube-apiserver: the create of pods/eviction goes through the
// admission chain (a policy/v1 Eviction, subresource eviction), before
// anything is written; the pod delete it makes does not (the eviction
// REST deletes with rest.ValidateAllObjectFunc).
func TestEvictionAdmission(t *testing.T) {
	p := &evictionAdmission{}
	e := newEnv(t, func(c *apiserver.Config) {
		c.AdmissionMutators = []admission.Mutator{p}
		c.AdmissionValidators = []admission.Validator{p}
	})
	c := ctx(t)
	pods := e.cs.CoreV1().Pods("default")
	for _, name := range []string{"victim", "guarded"} {
		if _, err := pods.Create(c, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	r := e.do("DELETE", "/api/v1/namespaces/default/pods/victim", nil)
	expectStatus(t, r, http.StatusForbidden, metav1.StatusReasonForbidden, "pod deletes refused by a validating plugin")

	p.mu.Lock()
	p.seen = nil
	p.mu.Unlock()
	if err := pods.EvictV1(c, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "victim", Namespace: "default"}}); err != nil {
		t.Fatalf("evicting a pod whose DELETE admission refuses: %v", err)
	}
	if _, err := pods.Get(c, "victim", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the evicted pod: %v", err)
	}
	p.mu.Lock()
	seen := p.seen
	p.mu.Unlock()
	if len(seen) != 1 {
		t.Fatalf("admission saw %d pod requests for an eviction, want the eviction's create only: %+v", len(seen), seen)
	}
	a := seen[0]
	if _, ok := a.Object.(*policyv1.Eviction); !ok || a.Operation != admission.Create || a.Subresource != "eviction" || a.Name != "victim" || a.Namespace != "default" ||
		a.Kind != policyv1.SchemeGroupVersion.WithKind("Eviction") || a.Resource != corev1.SchemeGroupVersion.WithResource("pods") {
		t.Fatalf("the eviction's admission attributes: %+v", a)
	}

	err := pods.EvictV1(c, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "guarded", Namespace: "default"}})
	if !apierrors.IsForbidden(err) || err.Error() != `pods "guarded" is forbidden: eviction refused by a mutating plugin` {
		t.Fatalf("an eviction admission refuses: %v", err)
	}
	got, err := pods.Get(c, "guarded", metav1.GetOptions{})
	if err != nil || got.DeletionTimestamp != nil || len(got.Status.Conditions) != 0 {
		t.Fatalf("a pod whose eviction was refused: %v, deletion %v, conditions %+v", err, got.DeletionTimestamp, got.Status.Conditions)
	}
}

// The dryRun query parameter of the eviction's create (CreateOptions) is
// the eviction's, as kube-apiserver's propagateDryRun: ?dryRun=All evicts
// nothing and the admission chain sees a dry run.
func TestEvictionDryRunQuery(t *testing.T) {
	p := &evictionAdmission{}
	e := newEnv(t, func(c *apiserver.Config) { c.AdmissionMutators = []admission.Mutator{p} })
	c := ctx(t)
	pods := e.cs.CoreV1().Pods("default")
	if _, err := pods.Create(c, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "victim"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.seen = nil
	p.mu.Unlock()
	r := e.do("POST", "/api/v1/namespaces/default/pods/victim/eviction?dryRun=All",
		[]byte(`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"victim","namespace":"default"}}`), "Content-Type", "application/json")
	if r.code != http.StatusCreated {
		t.Fatalf("dry-run eviction: %d %s", r.code, r.body)
	}
	got, err := pods.Get(c, "victim", metav1.GetOptions{})
	if err != nil || got.DeletionTimestamp != nil || len(got.Status.Conditions) != 0 {
		t.Fatalf("a pod evicted with ?dryRun=All: %v, deletion %v, conditions %+v", err, got.DeletionTimestamp, got.Status.Conditions)
	}
	p.mu.Lock()
	seen := p.seen
	p.mu.Unlock()
	if len(seen) != 1 || !seen[0].DryRun {
		t.Fatalf("admission saw %+v, want one dry-run eviction", seen)
	}
	r = e.do("POST", "/api/v1/namespaces/default/pods/victim/eviction?dryRun=Later",
		[]byte(`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"victim","namespace":"default"}}`), "Content-Type", "application/json")
	expectStatus(t, r, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, `CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["Later"]`)
	r = e.do("POST", "/api/v1/namespaces/default/pods/victim/eviction?dryRun=All&dryRun=All",
		[]byte(`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"victim","namespace":"default"},"deleteOptions":{"dryRun":["All"]}}`), "Content-Type", "application/json")
	expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest, "Non-matching dry-run options in request and content: [All All] and [All]")
	if _, err := pods.Get(c, "victim", metav1.GetOptions{}); err != nil {
		t.Fatalf("after the refused evictions: %v", err)
	}
}

// An eviction's create options are checked as any create's: a
// fieldValidation other than Strict, Warn or Ignore is a 422 Invalid
// CreateOptions that evicts nothing, and the directive applies to the
// Eviction body (Strict: unknown fields are a 400; Warn, the default:
// warnings), as kube-apiserver's create handler, which serves
// pods/eviction.
func TestEvictionFieldValidation(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	pods := e.cs.CoreV1().Pods("default")
	if _, err := pods.Create(c, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "victim"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eviction := []byte(`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"victim","namespace":"default"}}`)
	unknown := []byte(`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"victim","namespace":"default"},"bogus":1}`)

	r := e.do("POST", "/api/v1/namespaces/default/pods/victim/eviction?fieldValidation=Bogus", eviction)
	expectStatus(t, r, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, `CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "Bogus"`)
	r = e.do("POST", "/api/v1/namespaces/default/pods/victim/eviction?fieldValidation=Strict", unknown)
	expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest, `unknown field "bogus"`)
	if got, err := pods.Get(c, "victim", metav1.GetOptions{}); err != nil || got.DeletionTimestamp != nil {
		t.Fatalf("after the refused evictions: %v", err)
	}
	r = e.do("POST", "/api/v1/namespaces/default/pods/victim/eviction?dryRun=All", unknown)
	if r.code != http.StatusCreated || !strings.Contains(strings.Join(r.header.Values("Warning"), "\n"), `unknown field \"bogus\"`) {
		t.Fatalf("Warn: %d %q %s", r.code, r.header.Values("Warning"), r.body)
	}
	r = e.do("POST", "/api/v1/namespaces/default/pods/victim/eviction?dryRun=All&fieldValidation=Ignore", unknown)
	if r.code != http.StatusCreated || len(r.header.Values("Warning")) != 0 {
		t.Fatalf("Ignore: %d %q %s", r.code, r.header.Values("Warning"), r.body)
	}
}
