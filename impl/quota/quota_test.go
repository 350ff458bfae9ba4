package quota

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func container(cpu, mem string) corev1.Container {
	l := corev1.ResourceList{}
	if cpu != "" {
		l[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		l[corev1.ResourceMemory] = resource.MustParse(mem)
	}
	return corev1.Container{Name: "c", Resources: corev1.ResourceRequirements{Requests: l, Limits: l}}
}

func TestPodComputeUsage(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		Containers:     []corev1.Container{container("100m", "64Mi"), container("200m", "")},
		InitContainers: []corev1.Container{container("500m", "")},
		Overhead:       corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")},
	}}
	got := PodComputeUsage(pod)
	want := map[corev1.ResourceName]string{
		"pods": "1", "cpu": "510m", "requests.cpu": "510m", "limits.cpu": "510m",
		"memory": "64Mi", "requests.memory": "64Mi", "limits.memory": "64Mi",
	}
	if len(got) != len(want) {
		t.Fatalf("usage %v, want %v", got, want)
	}
	for n, v := range want {
		if q, ok := got[n]; !ok || q.Cmp(resource.MustParse(v)) != 0 {
			t.Errorf("%s = %v, want %s", n, got[n], v)
		}
	}
}

func TestPodCountsAndCovers(t *testing.T) {
	now := time.Now()
	grace := int64(30)
	past := metav1.NewTime(now.Add(-time.Minute))
	tests := []struct {
		name   string
		pod    corev1.Pod
		counts bool
	}{
		{"running", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}, true},
		{"succeeded", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}, false},
		{"past its grace period", corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &past, DeletionGracePeriodSeconds: &grace}}, false},
	}
	for _, tt := range tests {
		if got := PodCounts(&tt.pod, now); got != tt.counts {
			t.Errorf("%s: PodCounts = %v", tt.name, got)
		}
		if _, ok := ObjectUsage(podResource, &tt.pod, now)[corev1.ResourcePods]; ok != tt.counts {
			t.Errorf("%s: pods usage present = %v", tt.name, ok)
		}
	}
	bestEffort := &corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}}}
	if !Covers(bestEffort, podResource, &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}}) {
		t.Error("a BestEffort quota does not cover a pod without resources")
	}
	if Covers(bestEffort, podResource, &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{container("1", "")}}}) {
		t.Error("a BestEffort quota covers a pod that requests cpu")
	}
	if Covers(bestEffort, corev1.Resource("configmaps"), &corev1.ConfigMap{}) {
		t.Error("a scoped quota covers a configmap")
	}
	if gr, ok := CountedResource("count/deployments.apps"); !ok || gr.Group != "apps" || gr.Resource != "deployments" {
		t.Errorf("CountedResource(count/deployments.apps) = %v %v", gr, ok)
	}
}
