package registry

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
)

func namespaces(now func() time.Time) *resource.Resource {
	k := kind[*corev1.Namespace]{
		namespaced:       false,
		nameFn:           apivalidation.NameIsDNSLabel,
		defaults:         defaultNamespace,
		prepareForCreate: prepareNamespaceForCreate,
		prepareForUpdate: func(ns, old *corev1.Namespace) {
			// spec.finalizers change only through /finalize; status only
			// through /status.
			ns.Spec.Finalizers = old.Spec.Finalizers
			ns.Status = old.Status
		},
		validate: validateNamespace,
		fields: func(ns *corev1.Namespace) fields.Set {
			// "name" is kept for compatibility with old clients, as upstream does.
			return fields.Set{"status.phase": string(ns.Status.Phase), "name": ns.Name}
		},
		table: &tableSpec[*corev1.Namespace]{
			columns: []metav1.TableColumnDefinition{
				nameColumn(),
				column("Status", "string", "The phase of the namespace."),
				ageColumn(),
			},
			cells: func(ns *corev1.Namespace, now time.Time) []any {
				return []any{ns.Name, string(ns.Status.Phase), age(ns.CreationTimestamp, now)}
			},
		},
	}
	s := newStrategy(k, now)
	return &resource.Resource{
		GroupVersion: corev1.SchemeGroupVersion,
		Name:         "namespaces", SingularName: "namespace", Kind: "Namespace",
		Namespaced: false, ShortNames: []string{"ns"}, Verbs: verbsNoDeleteCollection,
		New:      func() runtime.Object { return &corev1.Namespace{} },
		NewList:  func() runtime.Object { return &corev1.NamespaceList{} },
		Strategy: s,

		// kube-apiserver's store answers a delete with the deleted object.
		ReturnDeletedObject: true,

		Status: statusStrategy[*corev1.Namespace]{s: s, k: statusKind[*corev1.Namespace]{
			keep:     func(ns, old *corev1.Namespace) { ns.Spec = old.Spec },
			validate: validateNamespaceStatus,
		}},
	}
}

// defaultNamespace sets phase Active and the immutable
// kubernetes.io/metadata.name label.
func defaultNamespace(ns *corev1.Namespace) {
	if ns.Status.Phase == "" {
		ns.Status.Phase = corev1.NamespaceActive
	}
	if ns.Name != "" {
		if ns.Labels == nil {
			ns.Labels = map[string]string{}
		}
		ns.Labels[corev1.LabelMetadataName] = ns.Name
	}
}

// prepareNamespaceForCreate makes a new namespace Active and adds the
// "kubernetes" finalizer the namespace controller removes once the
// namespace's content is gone.
func prepareNamespaceForCreate(ns *corev1.Namespace) {
	ns.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
	if !slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes) {
		ns.Spec.Finalizers = append(ns.Spec.Finalizers, corev1.FinalizerKubernetes)
	}
}

func validateNamespace(ns *corev1.Namespace) field.ErrorList {
	var errs field.ErrorList
	for i, f := range ns.Spec.Finalizers {
		errs = append(errs, validateFinalizerName(string(f), field.NewPath("spec", "finalizers").Index(i))...)
	}
	return errs
}

// validateFinalizerName accepts "kubernetes" and qualified names.
func validateFinalizerName(name string, path *field.Path) field.ErrorList {
	return apivalidation.ValidateFinalizerName(name, path)
}

func validateNamespaceStatus(ns, _ *corev1.Namespace) field.ErrorList {
	phase := field.NewPath("status", "phase")
	if ns.DeletionTimestamp.IsZero() {
		if ns.Status.Phase != corev1.NamespaceActive {
			return field.ErrorList{field.Invalid(phase, ns.Status.Phase, "may only be 'Active' if `deletionTimestamp` is empty")}
		}
		return nil
	}
	if ns.Status.Phase != corev1.NamespaceTerminating {
		return field.ErrorList{field.Invalid(phase, ns.Status.Phase, "may only be 'Terminating' if `deletionTimestamp` is not empty")}
	}
	return nil
}
