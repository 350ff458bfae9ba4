package registry

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
)

func leases(now func() time.Time) *resource.Resource {
	k := kind[*coordinationv1.Lease]{
		namespaced: true,
		validate:   validateLease,
		table: &tableSpec[*coordinationv1.Lease]{
			columns: []metav1.TableColumnDefinition{
				nameColumn(),
				column("Holder", "string", coordinationv1.LeaseSpec{}.SwaggerDoc()["holderIdentity"]),
				ageColumn(),
			},
			cells: func(l *coordinationv1.Lease, now time.Time) []any {
				holder := ""
				if l.Spec.HolderIdentity != nil {
					holder = *l.Spec.HolderIdentity
				}
				return []any{l.Name, holder, age(l.CreationTimestamp, now)}
			},
		},
	}
	return &resource.Resource{
		GroupVersion: coordinationv1.SchemeGroupVersion,
		Name:         "leases", SingularName: "lease", Kind: "Lease",
		Namespaced: true, Verbs: allVerbs,
		New:      func() runtime.Object { return &coordinationv1.Lease{} },
		NewList:  func() runtime.Object { return &coordinationv1.LeaseList{} },
		Strategy: newStrategy(k, now),

		AllowCreateOnUpdate: true, // as in Kubernetes
	}
}

func validateLease(l *coordinationv1.Lease) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if d := l.Spec.LeaseDurationSeconds; d != nil && *d <= 0 {
		errs = append(errs, field.Invalid(spec.Child("leaseDurationSeconds"), *d, "must be greater than 0"))
	}
	if t := l.Spec.LeaseTransitions; t != nil && *t < 0 {
		errs = append(errs, field.Invalid(spec.Child("leaseTransitions"), *t, "must be greater than or equal to 0"))
	}
	if s := l.Spec.Strategy; s != nil && *s != coordinationv1.OldestEmulationVersion {
		errs = append(errs, field.NotSupported(spec.Child("strategy"), *s, []string{string(coordinationv1.OldestEmulationVersion)}))
	}
	if l.Spec.PreferredHolder != nil && *l.Spec.PreferredHolder != "" && l.Spec.Strategy == nil {
		errs = append(errs, field.Forbidden(spec.Child("preferredHolder"), "may only be specified if `strategy` is defined"))
	}
	return errs
}
