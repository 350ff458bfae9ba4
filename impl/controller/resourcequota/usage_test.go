package resourcequota_test

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeproof/kubeproof/impl/controller/resourcequota"
)

var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func quota(hard map[string]string, scopes ...corev1.ResourceQuotaScope) *corev1.ResourceQuota {
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "q"}}
	q.Spec.Hard = list(hard)
	q.Spec.Scopes = scopes
	return q
}

func list(m map[string]string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for n, v := range m {
		l[corev1.ResourceName(n)] = resource.MustParse(v)
	}
	return l
}

type podOpt func(*corev1.Pod)

func pod(name string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox"}}}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func requests(m map[string]string) podOpt {
	return func(p *corev1.Pod) { p.Spec.Containers[0].Resources.Requests = list(m) }
}

func limits(m map[string]string) podOpt {
	return func(p *corev1.Pod) { p.Spec.Containers[0].Resources.Limits = list(m) }
}

func phase(ph corev1.PodPhase) podOpt { return func(p *corev1.Pod) { p.Status.Phase = ph } }

func deleting(at time.Time, grace int64) podOpt {
	return func(p *corev1.Pod) {
		t := metav1.NewTime(at)
		p.DeletionTimestamp = &t
		p.DeletionGracePeriodSeconds = &grace
	}
}

func deadline(s int64) podOpt { return func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = &s } }

func priorityClass(n string) podOpt { return func(p *corev1.Pod) { p.Spec.PriorityClassName = n } }

func initContainer(req map[string]string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: "init", Image: "busybox",
			Resources: corev1.ResourceRequirements{Requests: list(req)}})
	}
}

func objects(m map[schema.GroupResource][]runtime.Object) resourcequota.Observed {
	return resourcequota.Observed{Objects: m, Now: now}
}

var (
	configmaps  = corev1.Resource("configmaps")
	secrets     = corev1.Resource("secrets")
	deployments = appsv1.Resource("deployments")
)

func TestUsage(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "d"}}
	cpuReq := requests(map[string]string{"cpu": "250m", "memory": "64Mi"})
	cases := []struct {
		name     string
		quota    *corev1.ResourceQuota
		observed resourcequota.Observed
		want     map[string]string
	}{
		{"nothing observed counts zero",
			quota(map[string]string{"pods": "5", "configmaps": "3"}),
			objects(map[schema.GroupResource][]runtime.Object{podResource: nil, configmaps: nil}),
			map[string]string{"pods": "0", "configmaps": "0"}},
		{"pods and object counts",
			quota(map[string]string{"pods": "5", "count/pods": "5", "configmaps": "3", "count/configmaps": "3", "count/deployments.apps": "2"}),
			objects(map[schema.GroupResource][]runtime.Object{
				podResource: {pod("a"), pod("b")}, configmaps: {cm}, deployments: {dep, dep}}),
			map[string]string{"pods": "2", "count/pods": "2", "configmaps": "1", "count/configmaps": "1", "count/deployments.apps": "2"}},
		{"requests, limits and bare cpu/memory as requests",
			quota(map[string]string{"cpu": "4", "memory": "1Gi", "requests.cpu": "4", "requests.memory": "1Gi", "limits.cpu": "8", "limits.memory": "2Gi"}),
			objects(map[schema.GroupResource][]runtime.Object{podResource: {
				pod("a", cpuReq, limits(map[string]string{"cpu": "500m", "memory": "128Mi"})),
				pod("b", cpuReq)}}),
			map[string]string{"cpu": "500m", "memory": "128Mi", "requests.cpu": "500m", "requests.memory": "128Mi", "limits.cpu": "500m", "limits.memory": "128Mi"}},
		{"init container larger than the app containers raises the request",
			quota(map[string]string{"requests.cpu": "4"}),
			objects(map[schema.GroupResource][]runtime.Object{podResource: {
				pod("a", cpuReq, initContainer(map[string]string{"cpu": "1"}))}}),
			map[string]string{"requests.cpu": "1"}},
		{"pod overhead adds to requests",
			quota(map[string]string{"requests.cpu": "4"}),
			objects(map[schema.GroupResource][]runtime.Object{podResource: {
				pod("a", cpuReq, func(p *corev1.Pod) { p.Spec.Overhead = list(map[string]string{"cpu": "100m"}) })}}),
			map[string]string{"requests.cpu": "350m"}},
		{"terminal pods keep count/pods only",
			quota(map[string]string{"pods": "5", "count/pods": "5", "requests.cpu": "4"}),
			objects(map[schema.GroupResource][]runtime.Object{podResource: {
				pod("a", cpuReq, phase(corev1.PodSucceeded)), pod("b", cpuReq, phase(corev1.PodFailed)), pod("c", cpuReq, phase(corev1.PodRunning))}}),
			map[string]string{"pods": "1", "count/pods": "3", "requests.cpu": "250m"}},
		{"a pod past its deletion grace period stops counting, one within it counts",
			quota(map[string]string{"pods": "5", "count/pods": "5"}),
			objects(map[schema.GroupResource][]runtime.Object{podResource: {
				pod("gone", deleting(now.Add(-31*time.Second), 30)), pod("going", deleting(now.Add(-10*time.Second), 30))}}),
			map[string]string{"pods": "1", "count/pods": "2"}},
		{"resources not observed are left out",
			quota(map[string]string{"pods": "5", "secrets": "3"}),
			objects(map[schema.GroupResource][]runtime.Object{podResource: {pod("a")}}),
			map[string]string{"pods": "1"}},
		{"a scoped quota counts only pods in its scopes",
			quota(map[string]string{"pods": "5", "configmaps": "5"}, corev1.ResourceQuotaScopeBestEffort),
			objects(map[schema.GroupResource][]runtime.Object{podResource: {pod("be"), pod("burstable", cpuReq)}, configmaps: {cm}}),
			map[string]string{"pods": "1", "configmaps": "0"}},
		{"NotBestEffort and Terminating together",
			quota(map[string]string{"pods": "5"}, corev1.ResourceQuotaScopeNotBestEffort, corev1.ResourceQuotaScopeTerminating),
			objects(map[schema.GroupResource][]runtime.Object{podResource: {
				pod("a", cpuReq, deadline(30)), pod("b", cpuReq), pod("c", deadline(30))}}),
			map[string]string{"pods": "1"}},
		{"NotTerminating",
			quota(map[string]string{"pods": "5"}, corev1.ResourceQuotaScopeNotTerminating),
			objects(map[schema.GroupResource][]runtime.Object{podResource: {pod("a", deadline(30)), pod("b")}}),
			map[string]string{"pods": "1"}},
		{"objects of other resources do not count",
			quota(map[string]string{"count/secrets": "5"}),
			objects(map[schema.GroupResource][]runtime.Object{secrets: {&corev1.Secret{}}, configmaps: {cm}}),
			map[string]string{"count/secrets": "1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := resourcequota.Usage(tc.quota, tc.observed)
			if want := list(tc.want); !apiequality.Semantic.DeepEqual(got, want) {
				t.Fatalf("Usage = %v, want %v", got, want)
			}
		})
	}
}

func TestUsagePriorityClassSelector(t *testing.T) {
	pods := []runtime.Object{pod("none"), pod("high", priorityClass("high")), pod("low", priorityClass("low"))}
	cases := []struct {
		op     corev1.ScopeSelectorOperator
		values []string
		want   string
	}{
		{corev1.ScopeSelectorOpIn, []string{"high"}, "1"},
		{corev1.ScopeSelectorOpNotIn, []string{"high"}, "2"},
		{corev1.ScopeSelectorOpExists, nil, "2"},
		{corev1.ScopeSelectorOpDoesNotExist, nil, "1"},
	}
	for _, tc := range cases {
		q := quota(map[string]string{"pods": "10"})
		q.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{
			{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: tc.op, Values: tc.values}}}
		got := resourcequota.Usage(q, objects(map[schema.GroupResource][]runtime.Object{podResource: pods}))
		if u := got["pods"]; u.Cmp(resource.MustParse(tc.want)) != 0 {
			t.Errorf("PriorityClass %s %v: pods used %s, want %s", tc.op, tc.values, u.String(), tc.want)
		}
	}
}

func TestNextStatusKeepsUsageOfResourcesNotObserved(t *testing.T) {
	q := quota(map[string]string{"pods": "5", "count/widgets.example.com": "3", "secrets": "2"})
	q.Status.Used = list(map[string]string{"pods": "4", "count/widgets.example.com": "2"})
	got := resourcequota.NextStatus(q, objects(map[schema.GroupResource][]runtime.Object{podResource: {pod("a")}}))
	want := corev1.ResourceQuotaStatus{
		Hard: q.Spec.Hard,
		Used: list(map[string]string{"pods": "1", "count/widgets.example.com": "2", "secrets": "0"}),
	}
	if !apiequality.Semantic.DeepEqual(got, want) {
		t.Fatalf("NextStatus = %+v, want %+v", got, want)
	}
}

func TestTracked(t *testing.T) {
	q := quota(map[string]string{"requests.cpu": "1", "pods": "1", "configmaps": "1", "count/configmaps": "1", "count/deployments.apps": "1"})
	got := resourcequota.Tracked(q)
	want := []schema.GroupResource{configmaps, deployments, podResource}
	if len(got) != len(want) {
		t.Fatalf("Tracked = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Tracked = %v, want %v", got, want)
		}
	}
}
