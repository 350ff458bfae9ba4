package admission

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestResourceQuotaLimitedResources: with ResourceQuota's configuration
// limiting pods' consumption of names containing "cpu", a pod that
// requests cpu needs a quota covering every such name it consumes
// ("insufficient quota to consume: ..."), even in a namespace without
// quotas; a pod that consumes none, and other resources, are not
// limited.
func TestResourceQuotaLimitedResources(t *testing.T) {
	limited := []LimitedResource{{Resource: "pods", MatchContains: []string{"cpu"}}}
	cpuPod := newPod("p", container("a", rl("cpu", "100m", "memory", "64Mi"), rl("cpu", "200m")))
	memPod := newPod("p", container("a", rl("memory", "64Mi"), nil))
	tests := []struct {
		name   string
		quotas []*corev1.ResourceQuota
		pod    *corev1.Pod
		want   string
	}{
		{"no quota", nil, cpuPod, `pods "p" is forbidden: insufficient quota to consume: cpu,limits.cpu,requests.cpu`},
		{"quota of other names", []*corev1.ResourceQuota{quota("q", rl("pods", "5"), rl("pods", "0"))}, cpuPod,
			`insufficient quota to consume: cpu,limits.cpu,requests.cpu`},
		{"one name covered", []*corev1.ResourceQuota{quota("q", rl("requests.cpu", "1"), rl("requests.cpu", "0"))}, cpuPod,
			`insufficient quota to consume: cpu,limits.cpu`},
		{"covered by two quotas", []*corev1.ResourceQuota{quota("q", rl("requests.cpu", "1"), rl("requests.cpu", "0")),
			quota("r", rl("cpu", "1", "limits.cpu", "1"), rl("cpu", "0", "limits.cpu", "0"))}, cpuPod, ""},
		{"nothing limited consumed", nil, memPod, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &memQuotas{quotas: map[string]*corev1.ResourceQuota{}}
			for _, q := range tt.quotas {
				store.quotas[q.Name] = q
			}
			err := (&ResourceQuota{Store: store, LimitedResources: limited}).Validate(context.Background(), podCreate(tt.pod.DeepCopy()))
			wantForbidden(t, err, tt.want)
		})
	}
}

// TestResourceQuotaConfiguration: ResourceQuota's configuration
// (apiserver.config.k8s.io/v1 ResourceQuotaConfiguration, or
// resourcequota.admission.k8s.io/v1beta1 Configuration) reaches Options;
// a limited resource without a resource is refused.
func TestResourceQuotaConfiguration(t *testing.T) {
	dir := t.TempDir()
	file := func(rq string) string {
		return writeFile(t, dir, "a.yaml", "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: ResourceQuota\n  configuration:\n"+rq)
	}
	for _, rq := range []string{
		"    apiVersion: apiserver.config.k8s.io/v1\n    kind: ResourceQuotaConfiguration\n    limitedResources:\n    - resource: pods\n      matchContains: [cpu]\n      matchScopes: [{scopeName: PriorityClass, operator: In, values: [cluster-services]}]\n",
		"    apiVersion: resourcequota.admission.k8s.io/v1beta1\n    kind: Configuration\n    limitedResources:\n    - resource: pods\n      matchContains: [cpu]\n      matchScopes: [{scopeName: PriorityClass, operator: In, values: [cluster-services]}]\n",
	} {
		c, err := ReadAdmissionConfiguration(file(rq))
		if err != nil {
			t.Fatal(err)
		}
		var o Options
		ignored, err := c.Apply(DefaultPlugins(), &o)
		if err != nil || len(ignored) != 0 {
			t.Fatalf("%v %v", err, ignored)
		}
		if len(o.QuotaLimitedResources) != 1 || o.QuotaLimitedResources[0].Resource != "pods" || strings.Join(o.QuotaLimitedResources[0].MatchContains, ",") != "cpu" ||
			len(o.QuotaLimitedResources[0].MatchScopes) != 1 || o.QuotaLimitedResources[0].MatchScopes[0].Values[0] != "cluster-services" {
			t.Fatalf("limited %+v", o.QuotaLimitedResources)
		}
	}
	for rq, want := range map[string]string{
		"    apiVersion: apiserver.config.k8s.io/v1\n    kind: ResourceQuotaConfiguration\n    limitedResources:\n    - matchContains: [cpu]\n": `couldn't init admission plugin "ResourceQuota": limitedResources[0].resource: Required value`,
	} {
		c, err := ReadAdmissionConfiguration(file(rq))
		if err != nil {
			t.Fatal(err)
		}
		var o Options
		if _, err := c.Apply(DefaultPlugins(), &o); err == nil || err.Error() != want {
			t.Fatalf("error %v, want %q", err, want)
		}
	}
}

// TestResourceQuotaLimitedScopes: a limited resource's matchScopes (the
// documented use: pods of a PriorityClass only where a quota names that
// scope) refuses a pod in one of them unless some quota's scope
// selectors, matching the pod, name the same scope ("insufficient quota to
// match these scopes: ...", upstream's message as it is, without the
// forbidden prefix: kube-apiserver answers it as a plain error, a 500; a
// 403 here); as upstream, every limited entry's scopes count for a pod,
// whatever its resource.
func TestResourceQuotaLimitedScopes(t *testing.T) {
	critical := corev1.ScopedResourceSelectorRequirement{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn, Values: []string{"cluster-services"}}
	limited := []LimitedResource{{Resource: "services", MatchScopes: []corev1.ScopedResourceSelectorRequirement{critical}}}
	pod := func(class string) *corev1.Pod {
		p := newPod("p", container("a", rl("cpu", "100m"), nil))
		p.Spec.PriorityClassName = class
		return p
	}
	scoped := quota("q", rl("pods", "10"), rl("pods", "0"))
	scoped.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{critical}}
	tests := []struct {
		name   string
		quotas []*corev1.ResourceQuota
		pod    *corev1.Pod
		want   string
	}{
		{"no quota", nil, pod("cluster-services"), `insufficient quota to match these scopes: [{PriorityClass In [cluster-services]}]`},
		{"unscoped quota", []*corev1.ResourceQuota{quota("q", rl("pods", "10"), rl("pods", "0"))}, pod("cluster-services"),
			`insufficient quota to match these scopes: [{PriorityClass In [cluster-services]}]`},
		{"quota of that scope", []*corev1.ResourceQuota{scoped}, pod("cluster-services"), ""},
		{"other class", nil, pod("other"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &memQuotas{quotas: map[string]*corev1.ResourceQuota{}}
			for _, q := range tt.quotas {
				store.quotas[q.Name] = q.DeepCopy()
			}
			err := (&ResourceQuota{Store: store, LimitedResources: limited}).Validate(context.Background(), podCreate(tt.pod))
			wantForbidden(t, err, tt.want)
			if err != nil && err.Error() != tt.want {
				t.Fatalf("message %q, want upstream's %q", err.Error(), tt.want)
			}
		})
	}
}

// TestResourceQuotaLimitedOnUpdate: on an update, limitedResources are
// checked, as upstream's CheckRequest, only when the write adds usage to
// some quota covering the new object — its whole usage to one that did
// not cover the stored object, its growth to one that did — or, with no
// such quota, when the object grows. So an update that brings a pod into
// a quota's scope (activeDeadlineSeconds set: Terminating) needs its
// limited names covered even though the pod uses no more than before,
// while the same update with no quota entering, and a resize that does
// not grow, are admitted as before.
func TestResourceQuotaLimitedOnUpdate(t *testing.T) {
	limited := []LimitedResource{{Resource: "pods", MatchContains: []string{"cpu"}}}
	old := newPod("p", container("a", rl("cpu", "100m"), nil))
	old.ResourceVersion = "5"
	terminating := old.DeepCopy()
	terminating.Spec.ActiveDeadlineSeconds = ptr(int64(30))
	grown := old.DeepCopy()
	grown.Spec.Containers[0].Resources.Requests = rl("cpu", "200m")
	scoped := func(name string, s corev1.ResourceQuotaScope, hard ...string) *corev1.ResourceQuota {
		used := rl(hard...)
		for n := range used {
			used[n] = resource.MustParse("0")
		}
		q := quota(name, rl(hard...), used)
		if s != "" {
			q.Spec.Scopes = []corev1.ResourceQuotaScope{s}
		}
		return q
	}
	const uncovered = `pods "p" is forbidden: insufficient quota to consume: cpu,requests.cpu`
	tests := []struct {
		name        string
		quotas      []*corev1.ResourceQuota
		obj         *corev1.Pod
		subresource string
		want        string
		wantUsed    map[string]corev1.ResourceList
	}{
		{"enters a quota's scope, limited names uncovered", []*corev1.ResourceQuota{scoped("t", corev1.ResourceQuotaScopeTerminating, "pods", "10")},
			terminating, "", uncovered, nil},
		{"enters one quota's scope, another covered both", []*corev1.ResourceQuota{scoped("all", "", "pods", "10"), scoped("t", corev1.ResourceQuotaScopeTerminating, "pods", "10")},
			terminating, "", uncovered, nil},
		{"enters a quota's scope that covers the limited names", []*corev1.ResourceQuota{scoped("t", corev1.ResourceQuotaScopeTerminating, "pods", "10", "cpu", "1", "requests.cpu", "1")},
			terminating, "", "", map[string]corev1.ResourceList{"t": rl("pods", "1", "cpu", "100m", "requests.cpu", "100m")}},
		{"quota covered both, no growth", []*corev1.ResourceQuota{scoped("all", "", "pods", "10")},
			terminating, "", "", map[string]corev1.ResourceList{"all": rl("pods", "0")}},
		{"leaves a quota's scope, no growth", []*corev1.ResourceQuota{scoped("nt", corev1.ResourceQuotaScopeNotTerminating, "pods", "10")},
			terminating, "", "", map[string]corev1.ResourceList{"nt": rl("pods", "0")}},
		{"no quota, no growth", nil, terminating, "", "", nil},
		{"resize grows, no quota", nil, grown, "resize", uncovered, nil},
		{"resize grows, quota of other names", []*corev1.ResourceQuota{scoped("all", "", "pods", "10")}, grown, "resize", uncovered, nil},
		{"resize shrinks", []*corev1.ResourceQuota{scoped("all", "", "pods", "10")}, old, "resize", "", map[string]corev1.ResourceList{"all": rl("pods", "0")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &memQuotas{quotas: map[string]*corev1.ResourceQuota{}}
			for _, q := range tt.quotas {
				store.quotas[q.Name] = q.DeepCopy()
			}
			oldObj := old
			if tt.subresource == "resize" && tt.obj == old {
				oldObj = grown
			}
			a := &Attributes{Operation: Update, Resource: corev1.SchemeGroupVersion.WithResource("pods"), Subresource: tt.subresource,
				Kind: corev1.SchemeGroupVersion.WithKind("Pod"), Namespace: "ns", Name: "p", Object: tt.obj.DeepCopy(), OldObject: oldObj.DeepCopy()}
			err := (&ResourceQuota{Store: store, LimitedResources: limited}).Validate(context.Background(), a)
			wantForbidden(t, err, tt.want)
			if err != nil && err.Error() != tt.want {
				t.Fatalf("message %q, want %q", err.Error(), tt.want)
			}
			for name, want := range tt.wantUsed {
				if got := store.quotas[name].Status.Used; !apiequality.Semantic.DeepEqual(got, want) {
					t.Fatalf("quota %s used %v, want %v", name, got, want)
				}
			}
		})
	}
}
