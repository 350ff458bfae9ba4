package registry

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
)

// componentStatuses is core/v1 componentstatuses (`kubectl get cs`,
// deprecated since 1.19): the health of the control plane's components,
// computed by the API server on each get or list (resource.Computed), as
// kube-apiserver's componentstatus REST, a getter and lister only.
func componentStatuses(now func() time.Time) *resource.Resource {
	k := kind[*corev1.ComponentStatus]{
		table: &tableSpec[*corev1.ComponentStatus]{
			columns: []metav1.TableColumnDefinition{
				nameColumn(),
				column("Status", "string", "Status of the component conditions"),
				column("Message", "string", "Message of the component conditions"),
				column("Error", "string", "Error of the component conditions"),
			},
			cells: func(cs *corev1.ComponentStatus, _ time.Time) []any {
				status, message, errText := componentHealth(cs)
				return []any{cs.Name, status, message, errText}
			},
		},
	}
	return &resource.Resource{
		GroupVersion: corev1.SchemeGroupVersion,
		Name:         "componentstatuses", SingularName: "componentstatus", Kind: "ComponentStatus",
		ShortNames: []string{"cs"}, Verbs: []string{"get", "list"},
		New:      func() runtime.Object { return &corev1.ComponentStatus{} },
		NewList:  func() runtime.Object { return &corev1.ComponentStatusList{} },
		Strategy: newStrategy(k, now),
		Computed: true,
	}
}

// componentHealth is a ComponentStatus's STATUS, MESSAGE and ERROR cells,
// from its first Healthy condition as kubectl's printer reads it: Healthy
// when True, Unhealthy otherwise (Unknown included), and Unknown without
// such a condition.
func componentHealth(cs *corev1.ComponentStatus) (status, message, errText string) {
	for _, c := range cs.Conditions {
		if c.Type != corev1.ComponentHealthy {
			continue
		}
		status = "Unhealthy"
		if c.Status == corev1.ConditionTrue {
			status = "Healthy"
		}
		return status, c.Message, c.Error
	}
	return "Unknown", "", ""
}
