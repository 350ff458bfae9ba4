package endpoints

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kubeproof/kubeproof/impl/apiserver/admission"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
	"github.com/kubeproof/kubeproof/impl/storage"
)

// storedConfigMap answers every Get with one ConfigMap, and a Delete as
// the storage checks one (its preconditions, then the delete's
// validation, where the generic store admits it) without removing
// anything; anything else (another write) panics through the nil
// Interface.
type storedConfigMap struct {
	storage.Interface
	cm *corev1.ConfigMap
}

func (s storedConfigMap) Get(_ context.Context, _ string, _ storage.GetOptions, out runtime.Object) error {
	*out.(*corev1.ConfigMap) = *s.cm.DeepCopy()
	return nil
}

func (s storedConfigMap) Delete(ctx context.Context, key string, out runtime.Object, pre *storage.Preconditions, validate storage.ValidateObjectFunc) error {
	cm := s.cm.DeepCopy()
	if err := pre.Check(key, cm); err != nil {
		return err
	}
	if validate != nil {
		if err := validate(ctx, cm); err != nil {
			return err
		}
	}
	*out.(*corev1.ConfigMap) = *cm
	return nil
}

// refusingPlugin refuses every request in both admission phases and counts
// the calls.
type refusingPlugin struct{ admits, validates int }

func (p *refusingPlugin) Admit(context.Context, *admission.Attributes) error {
	p.admits++
	return apierrors.NewForbidden(corev1.Resource("configmaps"), "c", errors.New("refused by a mutating plugin"))
}

func (p *refusingPlugin) Validate(context.Context, *admission.Attributes) error {
	p.validates++
	return apierrors.NewForbidden(corev1.Resource("configmaps"), "c", errors.New("refused by a validating plugin"))
}

// A DELETE whose uid or resourceVersion precondition fails is refused with
// the precondition's 409 before any admission plugin runs, even one that
// would refuse it: kube-apiserver's generic store checks the preconditions
// (rest.BeforeDelete) before it calls the delete's admission (mutating,
// then validating, in rest.AdmissionToValidateObjectDeleteFunc). With the
// preconditions holding, the mutating plugin's refusal is the answer.
func TestDeletePreconditionBeforeAdmission(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", UID: "the-uid", ResourceVersion: "5"}}
	info := &request.Info{Verb: "delete", Resource: "configmaps", Namespace: "ns", Name: "c"}
	for name, tc := range map[string]struct {
		pre                    *metav1.Preconditions
		wantConflict           bool
		wantAdmits, wantValids int
	}{
		"uid":             {&metav1.Preconditions{UID: ptr.To(types.UID("not-the-uid"))}, true, 0, 0},
		"resourceVersion": {&metav1.Preconditions{ResourceVersion: ptr.To("4")}, true, 0, 0},
		"holding":         {&metav1.Preconditions{UID: ptr.To(types.UID("the-uid")), ResourceVersion: ptr.To("5")}, false, 1, 0},
	} {
		t.Run(name, func(t *testing.T) {
			p := &refusingPlugin{}
			h := configMapHandler(t, storedConfigMap{cm: cm})
			h.opts.Admission = &admission.Chain{Mutators: []admission.Mutator{p}, Validators: []admission.Validator{p}}
			_, _, err := h.DeleteObject(context.Background(), info, "/configmaps/ns/c", &metav1.DeleteOptions{Preconditions: tc.pre})
			if got := apierrors.IsConflict(err); got != tc.wantConflict || (!got && !apierrors.IsForbidden(err)) {
				t.Errorf("DELETE: %v, want a 409 %v (else the plugin's 403)", err, tc.wantConflict)
			}
			if p.admits != tc.wantAdmits || p.validates != tc.wantValids {
				t.Errorf("admitted %d, validated %d times, want %d, %d", p.admits, p.validates, tc.wantAdmits, tc.wantValids)
			}
		})
	}
}
