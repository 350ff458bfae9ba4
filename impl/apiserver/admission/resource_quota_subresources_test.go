package admission

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestQuotaEverySubresourceServed: for every (resource, subresource,
// operation) this API serves on a quota-tracked resource, whether the
// ResourceQuota plugin evaluates the write, as kube-apiserver 1.33 and
// later do. There the plugin no longer skips subresources itself; each
// evaluator's Handles decides: the pod evaluator a create or an update
// into or out of the Terminating scope of the pod itself and an update
// of pods/resize, nothing else (status, binding, eviction, ephemeral
// containers); the service evaluator every create and update, of any
// subresource (services/status too, charged but never refused); the
// object-count evaluator of every other resource a create only (so no
// scale or status update, nor resourcequotas/status; of the creates of a
// subresource, serviceaccounts/token is not counted here); events are
// ignored; connects and deletes never reach the plugin. Each case runs
// against a quota that is full for the write's kind and would charge it
// something: "refused" is evaluated and over the quota, "charged" is
// evaluated and written to status.used without a refusal, "" is not
// evaluated (admitted, nothing written).
func TestQuotaEverySubresourceServed(t *testing.T) {
	full := func() *corev1.ResourceQuota {
		hard := rl("pods", "1", "requests.cpu", "100m", "services", "1", "services.loadbalancers", "0",
			"count/serviceaccounts", "1", "count/deployments.apps", "1", "count/replicasets.apps", "1",
			"resourcequotas", "1", "count/namespaces", "1", "count/configmaps", "1")
		return quota("full", hard, hard.DeepCopy())
	}
	small := newPod("p", container("c", rl("cpu", "100m"), nil))
	small.ResourceVersion = "7"
	bigger := small.DeepCopy()
	bigger.Spec.Containers[0].Resources.Requests = rl("cpu", "200m")
	terminating := small.DeepCopy()
	terminating.Spec.ActiveDeadlineSeconds = ptr(int64(30))
	clusterIP := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns", ResourceVersion: "3"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP}}
	lb := clusterIP.DeepCopy()
	lb.Spec.Type = corev1.ServiceTypeLoadBalancer
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "ns", ResourceVersion: "4"}}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns", ResourceVersion: "4"}}
	scale := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "ns"}, Spec: autoscalingv1.ScaleSpec{Replicas: 3}}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", ResourceVersion: "2"}}

	core := corev1.SchemeGroupVersion.WithResource
	apps := appsv1.SchemeGroupVersion.WithResource
	for _, tc := range []struct {
		res      schema.GroupVersionResource
		sub      string
		op       Operation
		obj, old runtime.Object
		want     string // "refused", "charged" or "" (not evaluated)
	}{
		// pods
		{core("pods"), "", Create, small, nil, "refused"},
		{core("pods"), "", Update, bigger, small, ""},
		{core("pods"), "", Update, terminating, small, "refused"},
		{core("pods"), "", Delete, nil, small, ""},
		{core("pods"), "resize", Update, bigger, small, "refused"},
		{core("pods"), "status", Update, bigger, small, ""},
		{core("pods"), "status", Update, terminating, small, ""},
		{core("pods"), "ephemeralcontainers", Update, bigger, small, ""},
		{core("pods"), "binding", Create, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
			Target: corev1.ObjectReference{Kind: "Node", Name: "n"}}, nil, ""},
		{core("pods"), "eviction", Create, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}, nil, ""},
		{core("pods"), "log", Connect, &corev1.PodLogOptions{}, nil, ""},
		{core("pods"), "exec", Connect, &corev1.PodExecOptions{}, nil, ""},
		{core("pods"), "attach", Connect, &corev1.PodAttachOptions{}, nil, ""},
		{core("pods"), "portforward", Connect, &corev1.PodPortForwardOptions{}, nil, ""},
		// services
		{core("services"), "", Create, clusterIP, nil, "refused"},
		{core("services"), "", Update, lb, clusterIP, "refused"},
		{core("services"), "status", Update, lb, clusterIP, "charged"},
		{core("services"), "proxy", Connect, &corev1.ServiceProxyOptions{}, nil, ""},
		{core("services"), "", Delete, nil, clusterIP, ""},
		// other resources: counted on create only
		{core("serviceaccounts"), "", Create, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "sa", Namespace: "ns"}}, nil, "refused"},
		// Our choice (quotaHandles): upstream's object-count evaluator
		// may count a TokenRequest, unconfirmed.
		{core("serviceaccounts"), "token", Create, &authenticationv1.TokenRequest{ObjectMeta: metav1.ObjectMeta{Name: "sa", Namespace: "ns"}}, nil, ""},
		{apps("deployments"), "", Create, dep, nil, "refused"},
		{apps("deployments"), "", Update, dep, dep, ""},
		{apps("deployments"), "scale", Update, scale, scale, ""},
		{apps("deployments"), "status", Update, dep, dep, ""},
		{apps("replicasets"), "", Create, rs, nil, "refused"},
		{apps("replicasets"), "scale", Update, scale, scale, ""},
		{apps("replicasets"), "status", Update, rs, rs, ""},
		{core("resourcequotas"), "", Create, quota("other", rl("pods", "1"), nil), nil, "refused"},
		{core("resourcequotas"), "status", Update, full(), full(), ""},
		{core("namespaces"), "status", Update, ns, ns, ""},
		{core("namespaces"), "finalize", Update, ns, ns, ""},
		{core("configmaps"), "", Create, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}}, nil, "refused"},
		// events are not quota'd
		{core("events"), "", Create, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "ns"}}, nil, ""},
	} {
		name := tc.res.Resource
		if tc.sub != "" {
			name += "/" + tc.sub
		}
		t.Run(string(tc.op)+" "+name, func(t *testing.T) {
			q := full()
			// A pod moving into the Terminating scope is charged all of
			// its usage by a quota of that scope.
			if tc.obj == terminating {
				q.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeTerminating}
			}
			store := &memQuotas{quotas: map[string]*corev1.ResourceQuota{"full": q}}
			a := &Attributes{Operation: tc.op, Resource: tc.res, Subresource: tc.sub, Namespace: "ns", Name: "x",
				Object: tc.obj, OldObject: tc.old}
			err := (&ResourceQuota{Store: store}).Validate(context.Background(), a)
			changed := !apiequality.Semantic.DeepEqual(store.quotas["full"].Status.Used, full().Status.Used)
			switch tc.want {
			case "refused":
				if err == nil || !strings.Contains(err.Error(), "exceeded quota: full") {
					t.Fatalf("want an exceeded quota refusal, got %v", err)
				}
			case "charged":
				if err != nil || !changed {
					t.Fatalf("want charged without refusal: err %v, used changed %v", err, changed)
				}
			default:
				if err != nil || changed || store.updates != 0 {
					t.Fatalf("want not evaluated: err %v, used changed %v, quota writes %d", err, changed, store.updates)
				}
			}
		})
	}
}
