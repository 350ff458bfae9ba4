package registry

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
)

func serviceAccounts(now func() time.Time) *resource.Resource {
	k := kind[*corev1.ServiceAccount]{
		namespaced: true,
		table: &tableSpec[*corev1.ServiceAccount]{
			columns: []metav1.TableColumnDefinition{
				nameColumn(),
				column("Secrets", "string", corev1.ServiceAccount{}.SwaggerDoc()["secrets"]),
				ageColumn(),
			},
			cells: func(sa *corev1.ServiceAccount, now time.Time) []any {
				return []any{sa.Name, int64(len(sa.Secrets)), age(sa.CreationTimestamp, now)}
			},
		},
	}
	return &resource.Resource{
		GroupVersion: corev1.SchemeGroupVersion,
		Name:         "serviceaccounts", SingularName: "serviceaccount", Kind: "ServiceAccount",
		Namespaced: true, ShortNames: []string{"sa"}, Verbs: allVerbs,
		New:      func() runtime.Object { return &corev1.ServiceAccount{} },
		NewList:  func() runtime.Object { return &corev1.ServiceAccountList{} },
		Strategy: newStrategy(k, now),

		// kube-apiserver's store answers a delete with the deleted object.
		ReturnDeletedObject: true,
	}
}
