package openapi

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
)

// The package only reads which subresources a resource has, so the tests
// mark them with these inert values.
type statusMarker struct{}

func (statusMarker) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}
func (statusMarker) ValidateUpdate(context.Context, runtime.Object, runtime.Object) field.ErrorList {
	return nil
}

type scaleMarker struct{}

func (scaleMarker) Scale(runtime.Object) (*autoscalingv1.Scale, error)        { return nil, nil }
func (scaleMarker) SetReplicas(runtime.Object, int32) (runtime.Object, error) { return nil, nil }

type gracefulMarker struct{}

func (gracefulMarker) GracePeriod(runtime.Object, *metav1.DeleteOptions) int64 {
	return 30
}

var standardVerbs = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

func testResource[T, L any, PT interface {
	*T
	runtime.Object
}, PL interface {
	*L
	runtime.Object
}](gv schema.GroupVersion, name, kind string, namespaced bool) *resource.Resource {
	return &resource.Resource{
		GroupVersion: gv, Name: name, Kind: kind, Namespaced: namespaced, Verbs: standardVerbs,
		New:     func() runtime.Object { return PT(new(T)) },
		NewList: func() runtime.Object { return PL(new(L)) },
	}
}

// issueResources are the resources issue 2 asks the API server to serve.
func issueResources() []*resource.Resource {
	core, apps := corev1.SchemeGroupVersion, appsv1.SchemeGroupVersion
	namespaces := testResource[corev1.Namespace, corev1.NamespaceList](core, "namespaces", "Namespace", false)
	namespaces.Status = statusMarker{}
	namespaces.Verbs = []string{"create", "delete", "get", "list", "patch", "update", "watch"}
	pods := testResource[corev1.Pod, corev1.PodList](core, "pods", "Pod", true)
	pods.Status, pods.EphemeralContainers, pods.GracefulDelete = statusMarker{}, statusMarker{}, gracefulMarker{}
	nodes := testResource[corev1.Node, corev1.NodeList](core, "nodes", "Node", false)
	nodes.Status = statusMarker{}
	quotas := testResource[corev1.ResourceQuota, corev1.ResourceQuotaList](core, "resourcequotas", "ResourceQuota", true)
	quotas.Status = statusMarker{}
	deployments := testResource[appsv1.Deployment, appsv1.DeploymentList](apps, "deployments", "Deployment", true)
	deployments.Status, deployments.Scale = statusMarker{}, scaleMarker{}
	replicaSets := testResource[appsv1.ReplicaSet, appsv1.ReplicaSetList](apps, "replicasets", "ReplicaSet", true)
	replicaSets.Status, replicaSets.Scale = statusMarker{}, scaleMarker{}
	return []*resource.Resource{
		namespaces, pods, nodes, quotas, deployments, replicaSets,
		testResource[corev1.Event, corev1.EventList](core, "events", "Event", true),
		testResource[corev1.ConfigMap, corev1.ConfigMapList](core, "configmaps", "ConfigMap", true),
		testResource[corev1.Secret, corev1.SecretList](core, "secrets", "Secret", true),
		testResource[corev1.ServiceAccount, corev1.ServiceAccountList](core, "serviceaccounts", "ServiceAccount", true),
		testResource[corev1.LimitRange, corev1.LimitRangeList](core, "limitranges", "LimitRange", true),
		testResource[coordinationv1.Lease, coordinationv1.LeaseList](coordinationv1.SchemeGroupVersion, "leases", "Lease", true),
		testResource[rbacv1.Role, rbacv1.RoleList](rbacv1.SchemeGroupVersion, "roles", "Role", true),
		testResource[rbacv1.RoleBinding, rbacv1.RoleBindingList](rbacv1.SchemeGroupVersion, "rolebindings", "RoleBinding", true),
		testResource[rbacv1.ClusterRole, rbacv1.ClusterRoleList](rbacv1.SchemeGroupVersion, "clusterroles", "ClusterRole", false),
		testResource[rbacv1.ClusterRoleBinding, rbacv1.ClusterRoleBindingList](rbacv1.SchemeGroupVersion, "clusterrolebindings", "ClusterRoleBinding", false),
		testResource[schedulingv1.PriorityClass, schedulingv1.PriorityClassList](schedulingv1.SchemeGroupVersion, "priorityclasses", "PriorityClass", false),
		testResource[eventsv1.Event, eventsv1.EventList](eventsv1.SchemeGroupVersion, "events", "Event", true),
	}
}
