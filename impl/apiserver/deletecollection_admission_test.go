package apiserver_test

import (
	"context"
	"slices"
	"sort"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/apiserver/admission"
)

// collectionAdmission records the config map deletes the admission
// chain's mutating and validating plugins see.
type collectionAdmission struct {
	mu   sync.Mutex
	seen []string // "admit|validate ns/name old-object-name"
}

func (p *collectionAdmission) record(kind string, a *admission.Attributes) {
	if a.Resource.Resource != "configmaps" || a.Operation != admission.Delete {
		return
	}
	old := ""
	if cm, ok := a.OldObject.(*corev1.ConfigMap); ok {
		old = cm.Name
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen = append(p.seen, kind+" "+a.Namespace+"/"+a.Name+" "+old)
}

func (p *collectionAdmission) Admit(_ context.Context, a *admission.Attributes) error {
	p.record("admit", a)
	return nil
}

func (p *collectionAdmission) Validate(_ context.Context, a *admission.Attributes) error {
	p.record("validate", a)
	return nil
}

func (p *collectionAdmission) take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.seen
	p.seen = nil
	sort.Strings(s)
	return s
}

// As kube-apiserver (handlers.DeleteCollection's static attributes, which
// rest.AdmissionToValidateObjectDeleteFunc gives each item): every item of
// a deletecollection is admitted with the request's namespace and an empty
// name, the item as the old object; a DELETE of one object is admitted
// under its name.
func TestDeleteCollectionAdmissionAttributes(t *testing.T) {
	p := &collectionAdmission{}
	e := newEnv(t, func(c *apiserver.Config) {
		c.AdmissionMutators = []admission.Mutator{p}
		c.AdmissionValidators = []admission.Validator{p}
	})
	c := ctx(t)
	cms := e.cs.CoreV1().ConfigMaps("default")
	for _, n := range []string{"a", "b", "c"} {
		if _, err := cms.Create(c, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := cms.Delete(c, "c", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, want := p.take(), []string{"admit default/c c", "validate default/c c"}; !slices.Equal(got, want) {
		t.Fatalf("a DELETE was admitted as %q, want %q", got, want)
	}
	if err := cms.DeleteCollection(c, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	want := []string{"admit default/ a", "admit default/ b", "validate default/ a", "validate default/ b"}
	if got := p.take(); !slices.Equal(got, want) {
		t.Fatalf("a deletecollection's items were admitted as %q, want %q", got, want)
	}
	// Across namespaces kube-apiserver has no deletecollection route:
	// the router's 405, nothing admitted or deleted.
	if _, err := cms.Create(c, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "d"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p.take()
	err := e.cs.CoreV1().ConfigMaps("").DeleteCollection(c, metav1.DeleteOptions{}, metav1.ListOptions{FieldSelector: "metadata.name=d"})
	if !apierrors.IsMethodNotSupported(err) {
		t.Fatalf("a cluster-wide deletecollection: %v, want 405", err)
	}
	if got := p.take(); len(got) > 0 {
		t.Fatalf("a refused cluster-wide deletecollection admitted %q", got)
	}
	if _, err := cms.Get(c, "d", metav1.GetOptions{}); err != nil {
		t.Fatalf("a refused cluster-wide deletecollection deleted: %v", err)
	}
}
