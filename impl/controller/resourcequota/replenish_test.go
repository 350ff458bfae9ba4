package resourcequota_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeproof/kubeproof/impl/controller/resourcequota"
)

func statuses(m map[string]string) podOpt {
	return func(p *corev1.Pod) {
		var out []corev1.ContainerStatus
		for name, cpu := range m {
			cs := corev1.ContainerStatus{Name: name}
			if cpu != "" {
				cs.Resources = &corev1.ResourceRequirements{Requests: list(map[string]string{"cpu": cpu})}
			}
			out = append(out, cs)
		}
		p.Status.ContainerStatuses = out
	}
}

func initStatus(cpu string) podOpt {
	return func(p *corev1.Pod) {
		p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "init",
			Resources: &corev1.ResourceRequirements{Requests: list(map[string]string{"cpu": cpu})}}}
	}
}

func service(typ corev1.ServiceType, ports ...int32) *corev1.Service {
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}, Spec: corev1.ServiceSpec{Type: typ}}
	for _, p := range ports {
		s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Port: p})
	}
	return s
}

// TestReplenishOnUpdateAsUpstream: the updates kube-controller-manager
// 1.37's default update filter passes to the quota controller (pods:
// container status resources changed, Terminating scope entered or
// left, stopped counting; services: quota type changed) and the ones it
// does not.
func TestReplenishOnUpdateAsUpstream(t *testing.T) {
	running := phase(corev1.PodRunning)
	cpu := requests(map[string]string{"cpu": "100m"})
	pods := corev1.Resource("pods")
	services := corev1.Resource("services")
	cases := []struct {
		name     string
		gr       schema.GroupResource
		old, cur runtime.Object
		want     bool
	}{
		{"pod unchanged (a resync)", pods, pod("p", running), pod("p", running), false},
		{"pod labelled", pods, pod("p", running), pod("p", running, func(p *corev1.Pod) { p.Labels = map[string]string{"a": "b"} }), false},
		{"pod gets an active deadline: enters Terminating", pods, pod("p", running), pod("p", running, deadline(60)), true},
		{"active deadline 0 is Terminating", pods, pod("p"), pod("p", deadline(0)), true},
		{"active deadline shortened: stays Terminating", pods, pod("p", deadline(60)), pod("p", deadline(30)), false},
		{"pod succeeds", pods, pod("p", running), pod("p", phase(corev1.PodSucceeded)), true},
		{"pod fails", pods, pod("p", running), pod("p", phase(corev1.PodFailed)), true},
		{"terminal pod updated again", pods, pod("p", phase(corev1.PodFailed)), pod("p", phase(corev1.PodFailed), func(p *corev1.Pod) { p.Labels = map[string]string{"a": "b"} }), false},
		{"deletion starts, grace period not over", pods, pod("p", running), pod("p", running, deleting(time.Now(), 30)), false},
		{"deletion grace period over", pods, pod("p", running), pod("p", running, deleting(time.Now().Add(-time.Minute), 30)), true},
		{"deleting pod updated after its grace period", pods, pod("p", deleting(time.Now().Add(-time.Minute), 30)), pod("p", deleting(time.Now().Add(-time.Minute), 30), phase(corev1.PodFailed)), false},
		{"node reports a resize", pods, pod("p", cpu, statuses(map[string]string{"app": "100m"})), pod("p", cpu, statuses(map[string]string{"app": "500m"})), true},
		{"node reports resources where it reported none", pods, pod("p", cpu, statuses(map[string]string{"app": ""})), pod("p", cpu, statuses(map[string]string{"app": "100m"})), true},
		{"first container status (the old pod had none): not a resize upstream in 1.37", pods, pod("p", cpu), pod("p", cpu, statuses(map[string]string{"app": "100m"})), false},
		{"container status gone", pods, pod("p", cpu, statuses(map[string]string{"app": "100m"})), pod("p", cpu), false},
		{"init container resized", pods, pod("p", cpu, initStatus("100m")), pod("p", cpu, initStatus("200m")), true},
		{"spec resized, not yet carried out", pods, pod("p", cpu), pod("p", requests(map[string]string{"cpu": "500m"})), false},
		{"ClusterIP to LoadBalancer", services, service(corev1.ServiceTypeClusterIP, 80), service(corev1.ServiceTypeLoadBalancer, 80), true},
		{"ClusterIP to NodePort", services, service(corev1.ServiceTypeClusterIP, 80), service(corev1.ServiceTypeNodePort, 80), true},
		{"NodePort to LoadBalancer", services, service(corev1.ServiceTypeNodePort, 80), service(corev1.ServiceTypeLoadBalancer, 80), true},
		{"LoadBalancer to ClusterIP", services, service(corev1.ServiceTypeLoadBalancer, 80), service(corev1.ServiceTypeClusterIP, 80), true},
		{"ClusterIP to ExternalName", services, service(corev1.ServiceTypeClusterIP, 80), service(corev1.ServiceTypeExternalName), false},
		{"NodePort gains a port", services, service(corev1.ServiceTypeNodePort, 80), service(corev1.ServiceTypeNodePort, 80, 443), false},
		{"configmap changed", corev1.Resource("configmaps"), &corev1.ConfigMap{}, &corev1.ConfigMap{Data: map[string]string{"a": "b"}}, false},
		{"pods resource with other objects", pods, &corev1.ConfigMap{}, &corev1.ConfigMap{}, false},
	}
	for _, tc := range cases {
		if got := resourcequota.ReplenishOnUpdate(tc.gr, tc.old, tc.cur, time.Now()); got != tc.want {
			t.Errorf("%s: ReplenishOnUpdate = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestReplenishesByStatusHard: a replenishment for a resource recounts
// the quotas whose status.hard names one its upstream evaluator matches.
func TestReplenishesByStatusHard(t *testing.T) {
	pods, services := corev1.Resource("pods"), corev1.Resource("services")
	configmaps, pvcs := corev1.Resource("configmaps"), corev1.Resource("persistentvolumeclaims")
	widgets := schema.GroupResource{Group: "example.com", Resource: "widgets"}
	cases := []struct {
		hard string
		gr   schema.GroupResource
		want bool
	}{
		{"pods", pods, true},
		{"count/pods", pods, true},
		{"cpu", pods, true},
		{"requests.memory", pods, true},
		{"limits.ephemeral-storage", pods, true},
		{"hugepages-2Mi", pods, true},
		{"requests.hugepages-1Gi", pods, true},
		{"requests.example.com/gpu", pods, true},
		{"requests.deviceclass.resource.kubernetes.io/gpu", pods, true},
		{"requests.kubernetes.io/native", pods, false},
		{"limits.hugepages-2Mi", pods, false},
		{"configmaps", pods, false},
		{"requests.storage", pods, false},
		{"services", services, true},
		{"count/services", services, true},
		{"services.loadbalancers", services, true},
		{"services.nodeports", services, true},
		{"pods", services, false},
		{"configmaps", configmaps, true},
		{"count/configmaps", configmaps, true},
		{"secrets", configmaps, false},
		{"persistentvolumeclaims", pvcs, true},
		{"requests.storage", pvcs, true},
		{"gold.storageclass.storage.k8s.io/requests.storage", pvcs, true},
		{"gold.storageclass.storage.k8s.io/persistentvolumeclaims", pvcs, true},
		{"count/widgets.example.com", widgets, true},
		{"count/widgets", widgets, false},
	}
	for _, tc := range cases {
		q := quota(map[string]string{"cpu": "1"}) // spec.hard does not decide
		q.Status.Hard = list(map[string]string{tc.hard: "1"})
		if got := resourcequota.Replenishes(q, tc.gr); got != tc.want {
			t.Errorf("status.hard %s, replenishing %s: %v, want %v", tc.hard, tc.gr, got, tc.want)
		}
	}
	if q := quota(map[string]string{"pods": "1"}); resourcequota.Replenishes(q, pods) {
		t.Error("a quota not yet synced (no status.hard) is recounted by its own add event, not by a replenishment")
	}
}
