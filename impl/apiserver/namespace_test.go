package apiserver_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/apiserver/admission"
)

// refuseConfigMaps is a mutating admission plugin that refuses every
// configmap write.
type refuseConfigMaps struct{}

func (refuseConfigMaps) Admit(_ context.Context, a *admission.Attributes) error {
	if a.Resource.Resource == "configmaps" {
		return errors.New("a mutating plugin ran")
	}
	return nil
}

// The built-in NamespaceLifecycle refuses a create in a missing namespace
// before any mutating plugin runs, as kube-apiserver's (a mutating plugin,
// first in the chain) does.
func TestNamespaceLifecycleBeforeMutators(t *testing.T) {
	e := newEnv(t, func(c *apiserver.Config) { c.AdmissionMutators = []admission.Mutator{refuseConfigMaps{}} })
	r := e.do("POST", "/api/v1/namespaces/nope/configmaps", []byte(`{"metadata":{"name":"x"}}`))
	expectStatus(t, r, http.StatusNotFound, metav1.StatusReasonNotFound, `namespaces "nope" not found`)
}

func TestNamespaceLifecycle(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	// creating in a missing namespace: 404 for the namespace.
	r := e.do("POST", "/api/v1/namespaces/nope/configmaps", []byte(`{"metadata":{"name":"x"}}`))
	st := expectStatus(t, r, http.StatusNotFound, metav1.StatusReasonNotFound, `namespaces "nope" not found`)
	if st.Details == nil || st.Details.Kind != "namespaces" || st.Details.Name != "nope" {
		t.Fatalf("details: %s", r.body)
	}

	nss := e.cs.CoreV1().Namespaces()
	ns, err := nss.Create(c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ns.Spec.Finalizers) != 1 || ns.Spec.Finalizers[0] != corev1.FinalizerKubernetes {
		t.Fatalf("spec.finalizers %v", ns.Spec.Finalizers)
	}
	if _, err := e.cs.CoreV1().ConfigMaps("team").Create(c, configMap("", "in", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// delete: Terminating, kept while spec.finalizers remain.
	if err := nss.Delete(c, "team", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ns, err = nss.Get(c, "team", metav1.GetOptions{})
	if err != nil || ns.Status.Phase != corev1.NamespaceTerminating || ns.DeletionTimestamp == nil {
		t.Fatalf("terminating: %v %+v", err, ns)
	}
	// admission reads namespaces from a watch-fed cache, which may lag the
	// delete by a moment (as kube-apiserver's informer does); a namespace
	// deleted through this server is read fresh meanwhile, as
	// kube-apiserver's forceLiveLookupCache does, so a create right after
	// the delete is refused.
	r = e.do("POST", "/api/v1/namespaces/team/configmaps", []byte(`{"metadata":{"name":"late"}}`))
	st = expectStatus(t, r, http.StatusForbidden, metav1.StatusReasonForbidden,
		`configmaps "late" is forbidden: unable to create new content in namespace team because it is being terminated`)
	if st.Details == nil || len(st.Details.Causes) == 0 || st.Details.Causes[0].Type != corev1.NamespaceTerminatingCause {
		t.Fatalf("causes: %s", r.body)
	}
	// updates and deletes in a terminating namespace still work.
	if err := e.cs.CoreV1().ConfigMaps("team").Delete(c, "in", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := nss.Delete(c, "team", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := nss.Get(c, "team", metav1.GetOptions{}); err != nil {
		t.Fatalf("namespace with spec.finalizers removed: %v", err)
	}
	// the namespace controller's finalize removes the last finalizer and the namespace goes.
	ns.Spec.Finalizers = nil
	if _, err := nss.Finalize(c, ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := nss.Get(c, "team", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("after finalize: %v", err)
	}
	// system namespaces cannot be deleted.
	if err := nss.Delete(c, "kube-system", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("deleting kube-system: %v", err)
	}
}

// refuseDeletes is a mutating admission plugin that refuses every DELETE
// of a configmap and counts the DELETEs it sees.
type refuseDeletes struct{ deletes atomic.Int32 }

func (p *refuseDeletes) Admit(_ context.Context, a *admission.Attributes) error {
	if a.Operation != admission.Delete {
		return nil
	}
	p.deletes.Add(1)
	if a.Resource.Resource == "configmaps" {
		return apierrors.NewForbidden(corev1.Resource("configmaps"), a.Name, errors.New("refused by a mutating plugin"))
	}
	return nil
}

// kube-apiserver's DELETE and DELETE of a collection run the mutating
// admission plugins before the validating ones (the delete handlers'
// AdmissionToValidateObjectDeleteFunc), and NamespaceLifecycle, first of
// the mutating plugins, refuses deleting an immortal namespace before
// any other mutating plugin (a mutating webhook) is called.
func TestDeleteRunsMutatingAdmission(t *testing.T) {
	p := &refuseDeletes{}
	e := newEnv(t, func(c *apiserver.Config) { c.AdmissionMutators = []admission.Mutator{p} })
	if _, err := e.cs.CoreV1().ConfigMaps("default").Create(ctx(t), configMap("", "kept", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r := e.do("DELETE", "/api/v1/namespaces/default/configmaps/kept", nil)
	expectStatus(t, r, http.StatusForbidden, metav1.StatusReasonForbidden, `configmaps "kept" is forbidden: refused by a mutating plugin`)
	// A deletecollection's items are admitted with no name.
	r = e.do("DELETE", "/api/v1/namespaces/default/configmaps", nil)
	expectStatus(t, r, http.StatusForbidden, metav1.StatusReasonForbidden, `configmaps is forbidden: refused by a mutating plugin`)
	if _, err := e.cs.CoreV1().ConfigMaps("default").Get(ctx(t), "kept", metav1.GetOptions{}); err != nil {
		t.Fatalf("a configmap whose deletion was refused: %v", err)
	}
	before := p.deletes.Load()
	r = e.do("DELETE", "/api/v1/namespaces/kube-public", nil)
	expectStatus(t, r, http.StatusForbidden, metav1.StatusReasonForbidden, `namespaces "kube-public" is forbidden: this namespace may not be deleted`)
	if n := p.deletes.Load() - before; n != 0 {
		t.Fatalf("a mutating plugin after NamespaceLifecycle saw the refused namespace delete (%d calls)", n)
	}
}
