package registry

import (
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
)

func roleBindings(now func() time.Time) *resource.Resource {
	k := kind[*rbacv1.RoleBinding]{
		namespaced: true,
		nameFn:     rbacName,
		defaults: func(b *rbacv1.RoleBinding) {
			defaultRoleRef(&b.RoleRef)
			defaultSubjects(b.Subjects)
		},
		validate: func(b *rbacv1.RoleBinding) field.ErrorList {
			errs := validateRoleRef(b.RoleRef, []string{"Role", "ClusterRole"})
			return append(errs, validateSubjects(b.Subjects, true)...)
		},
		validateUpdate: func(b, old *rbacv1.RoleBinding) field.ErrorList {
			return validateRoleRefUnchanged(b.RoleRef, old.RoleRef)
		},
		table: bindingTable(func(b *rbacv1.RoleBinding) (rbacv1.RoleRef, []rbacv1.Subject) { return b.RoleRef, b.Subjects }, "roleBinding"),
	}
	return &resource.Resource{
		GroupVersion: rbacv1.SchemeGroupVersion,
		Name:         "rolebindings", SingularName: "rolebinding", Kind: "RoleBinding",
		Namespaced: true, Verbs: allVerbs,
		New:      func() runtime.Object { return &rbacv1.RoleBinding{} },
		NewList:  func() runtime.Object { return &rbacv1.RoleBindingList{} },
		Strategy: newStrategy(k, now),

		AllowCreateOnUpdate: true, // as in Kubernetes
	}
}

func clusterRoleBindings(now func() time.Time) *resource.Resource {
	k := kind[*rbacv1.ClusterRoleBinding]{
		namespaced: false,
		nameFn:     rbacName,
		defaults: func(b *rbacv1.ClusterRoleBinding) {
			defaultRoleRef(&b.RoleRef)
			defaultSubjects(b.Subjects)
		},
		validate: func(b *rbacv1.ClusterRoleBinding) field.ErrorList {
			errs := validateRoleRef(b.RoleRef, []string{"ClusterRole"})
			return append(errs, validateSubjects(b.Subjects, false)...)
		},
		validateUpdate: func(b, old *rbacv1.ClusterRoleBinding) field.ErrorList {
			return validateRoleRefUnchanged(b.RoleRef, old.RoleRef)
		},
		table: bindingTable(func(b *rbacv1.ClusterRoleBinding) (rbacv1.RoleRef, []rbacv1.Subject) { return b.RoleRef, b.Subjects }, "clusterRoleBinding"),
	}
	return &resource.Resource{
		GroupVersion: rbacv1.SchemeGroupVersion,
		Name:         "clusterrolebindings", SingularName: "clusterrolebinding", Kind: "ClusterRoleBinding",
		Namespaced: false, Verbs: allVerbs,
		New:      func() runtime.Object { return &rbacv1.ClusterRoleBinding{} },
		NewList:  func() runtime.Object { return &rbacv1.ClusterRoleBindingList{} },
		Strategy: newStrategy(k, now),

		AllowCreateOnUpdate: true, // as in Kubernetes
	}
}

func defaultRoleRef(ref *rbacv1.RoleRef) {
	if ref.APIGroup == "" {
		ref.APIGroup = rbacv1.GroupName
	}
}

// defaultSubjects gives User and Group subjects the RBAC API group.
func defaultSubjects(subjects []rbacv1.Subject) {
	for i := range subjects {
		s := &subjects[i]
		if s.APIGroup == "" && (s.Kind == rbacv1.UserKind || s.Kind == rbacv1.GroupKind) {
			s.APIGroup = rbacv1.GroupName
		}
	}
}

func validateRoleRef(ref rbacv1.RoleRef, kinds []string) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("roleRef")
	if ref.APIGroup != rbacv1.GroupName {
		errs = append(errs, field.NotSupported(p.Child("apiGroup"), ref.APIGroup, []string{rbacv1.GroupName}))
	}
	ok := false
	for _, k := range kinds {
		ok = ok || ref.Kind == k
	}
	if !ok {
		errs = append(errs, field.NotSupported(p.Child("kind"), ref.Kind, kinds))
	}
	if ref.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	} else {
		for _, msg := range rbacName(ref.Name, false) {
			errs = append(errs, field.Invalid(p.Child("name"), ref.Name, msg))
		}
	}
	return errs
}

func validateRoleRefUnchanged(ref, old rbacv1.RoleRef) field.ErrorList {
	if ref != old {
		return field.ErrorList{field.Invalid(field.NewPath("roleRef"), ref, "cannot change roleRef")}
	}
	return nil
}

func validateSubjects(subjects []rbacv1.Subject, namespaced bool) field.ErrorList {
	var errs field.ErrorList
	for i, s := range subjects {
		p := field.NewPath("subjects").Index(i)
		if s.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		}
		switch s.Kind {
		case rbacv1.ServiceAccountKind:
			if s.Name != "" {
				for _, msg := range apivalidation.NameIsDNSSubdomain(s.Name, false) {
					errs = append(errs, field.Invalid(p.Child("name"), s.Name, msg))
				}
			}
			if s.APIGroup != "" {
				errs = append(errs, field.NotSupported(p.Child("apiGroup"), s.APIGroup, []string{""}))
			}
			if !namespaced && s.Namespace == "" {
				errs = append(errs, field.Required(p.Child("namespace"), ""))
			}
		case rbacv1.UserKind, rbacv1.GroupKind:
			if s.APIGroup != rbacv1.GroupName {
				errs = append(errs, field.NotSupported(p.Child("apiGroup"), s.APIGroup, []string{rbacv1.GroupName}))
			}
		default:
			errs = append(errs, field.NotSupported(p.Child("kind"), s.Kind, []string{rbacv1.ServiceAccountKind, rbacv1.UserKind, rbacv1.GroupKind}))
		}
	}
	return errs
}

// bindingTable is the table of role bindings: NAME ROLE AGE, with USERS,
// GROUPS and SERVICEACCOUNTS in -o wide.
func bindingTable[T object](get func(T) (rbacv1.RoleRef, []rbacv1.Subject), noun string) *tableSpec[T] {
	return &tableSpec[T]{
		columns: []metav1.TableColumnDefinition{
			nameColumn(),
			column("Role", "string", rbacv1.RoleBinding{}.SwaggerDoc()["roleRef"]),
			ageColumn(),
			wideColumn("Users", "string", "Users in the "+noun),
			wideColumn("Groups", "string", "Groups in the "+noun),
			wideColumn("ServiceAccounts", "string", "ServiceAccounts in the "+noun),
		},
		cells: func(b T, now time.Time) []any {
			ref, subjects := get(b)
			users, groups, sas := subjectStrings(subjects)
			return []any{b.GetName(), ref.Kind + "/" + ref.Name, age(b.GetCreationTimestamp(), now),
				strings.Join(users, ", "), strings.Join(groups, ", "), strings.Join(sas, ", ")}
		},
	}
}

// subjectStrings splits subjects into users, groups and service accounts
// ("namespace/name").
func subjectStrings(subjects []rbacv1.Subject) (users, groups, sas []string) {
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.UserKind:
			users = append(users, s.Name)
		case rbacv1.GroupKind:
			groups = append(groups, s.Name)
		case rbacv1.ServiceAccountKind:
			if s.Namespace != "" {
				sas = append(sas, s.Namespace+"/"+s.Name)
			} else {
				sas = append(sas, s.Name)
			}
		}
	}
	return users, groups, sas
}
