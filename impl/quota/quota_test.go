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

// TestPodComputeUsageAsUpstream: a pod's requests and limits are added up
// as kube-apiserver's pod quota evaluator does (component-helpers'
// PodRequests and PodLimits with the status resources considered): sidecars
// (restartable init containers) run beside the app containers and under
// every later init container; pod-level cpu and memory (spec.resources)
// replace the containers' sums; the overhead goes onto the requests and
// onto non-zero limits only; a container status reporting more than its
// spec counts the larger.
func TestPodComputeUsageAsUpstream(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	sidecar := func(c corev1.Container) corev1.Container { c.RestartPolicy = &always; return c }
	named := func(name string, c corev1.Container) corev1.Container { c.Name = name; return c }
	zeroCPULimit := container("100m", "")
	zeroCPULimit.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0")}
	for _, tc := range []struct {
		name string
		pod  corev1.Pod
		want map[corev1.ResourceName]string
	}{{
		name: "a sidecar beside the app containers and under the init container after it",
		pod: corev1.Pod{Spec: corev1.PodSpec{
			Containers:     []corev1.Container{container("100m", "64Mi")},
			InitContainers: []corev1.Container{sidecar(container("200m", "32Mi")), container("500m", "")},
		}},
		// app 100m + sidecar 200m = 300m; the init container runs with the
		// sidecar: 700m. Memory: 64Mi + 32Mi.
		want: map[corev1.ResourceName]string{
			"pods": "1", "cpu": "700m", "requests.cpu": "700m", "limits.cpu": "700m",
			"memory": "96Mi", "requests.memory": "96Mi", "limits.memory": "96Mi",
		},
	}, {
		name: "pod-level cpu and memory in place of the sums",
		pod: corev1.Pod{Spec: corev1.PodSpec{
			Containers: []corev1.Container{container("100m", "64Mi"), container("100m", "")},
			Resources: &corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("2Gi")},
			},
		}},
		want: map[corev1.ResourceName]string{
			"pods": "1", "cpu": "1", "requests.cpu": "1", "limits.cpu": "2",
			"memory": "1Gi", "requests.memory": "1Gi", "limits.memory": "2Gi",
		},
	}, {
		name: "the overhead onto the requests and a non-zero limit, not onto a zero one",
		pod: corev1.Pod{Spec: corev1.PodSpec{
			Containers: []corev1.Container{zeroCPULimit},
			Overhead:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("1Mi")},
		}},
		want: map[corev1.ResourceName]string{
			"pods": "1", "cpu": "110m", "requests.cpu": "110m", "limits.cpu": "0",
			"memory": "1Mi", "requests.memory": "1Mi",
		},
	}, {
		name: "a container status reporting more than the spec",
		pod: corev1.Pod{
			Spec: corev1.PodSpec{Containers: []corev1.Container{named("app", container("100m", ""))}},
			Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
				Name:               "app",
				AllocatedResources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("300m")},
				Resources: &corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("300m")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("400m")},
				},
			}}},
		},
		want: map[corev1.ResourceName]string{"pods": "1", "cpu": "300m", "requests.cpu": "300m", "limits.cpu": "400m"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := PodComputeUsage(&tc.pod)
			if len(got) != len(tc.want) {
				t.Errorf("usage %v, want %v", got, tc.want)
			}
			for n, v := range tc.want {
				if q, ok := got[n]; !ok || q.Cmp(resource.MustParse(v)) != 0 {
					t.Errorf("%s = %v, want %s", n, got[n], v)
				}
			}
		})
	}
}

// TestPodComputeUsageNames: as upstream's podComputeUsageHelper, a
// hugepages request counts bare and as requests.hugepages-<size>; an
// extended resource only as requests.<name>; hugepages and extended
// limits are not counted.
func TestPodComputeUsageNames(t *testing.T) {
	c := corev1.Container{Name: "c", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{"hugepages-2Mi": resource.MustParse("4Mi"), "example.com/gpu": resource.MustParse("1")},
		Limits:   corev1.ResourceList{"hugepages-2Mi": resource.MustParse("4Mi"), "example.com/gpu": resource.MustParse("1")},
	}}
	got := PodComputeUsage(&corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{c}}})
	want := map[corev1.ResourceName]string{
		"pods": "1", "hugepages-2Mi": "4Mi", "requests.hugepages-2Mi": "4Mi", "requests.example.com/gpu": "1",
	}
	if len(got) != len(want) {
		t.Errorf("usage %v, want %v", got, want)
	}
	for n, v := range want {
		if q, ok := got[n]; !ok || q.Cmp(resource.MustParse(v)) != 0 {
			t.Errorf("%s = %v, want %s", n, got[n], v)
		}
	}
}

// TestPodScopesAsUpstream: BestEffort is upstream's QoS class — only
// positive cpu or memory counts, and pod-level resources, when set, decide
// alone; CrossNamespacePodAffinity covers the pods with a pod (anti-)
// affinity term naming other namespaces or a namespace selector.
func TestPodScopesAsUpstream(t *testing.T) {
	scoped := func(s corev1.ResourceQuotaScope) *corev1.ResourceQuota {
		return &corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Scopes: []corev1.ResourceQuotaScope{s}}}
	}
	bestEffort, crossNS := scoped(corev1.ResourceQuotaScopeBestEffort), scoped(corev1.ResourceQuotaScopeCrossNamespacePodAffinity)
	zero := container("0", "0")
	podLevel := &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}
	term := corev1.PodAffinityTerm{TopologyKey: "zone", Namespaces: []string{"other"}}
	sameNS := corev1.PodAffinityTerm{TopologyKey: "zone"}
	for _, tc := range []struct {
		name  string
		quota *corev1.ResourceQuota
		spec  corev1.PodSpec
		want  bool
	}{
		{"zero cpu and memory are best effort", bestEffort, corev1.PodSpec{Containers: []corev1.Container{zero}}, true},
		{"pod-level cpu is not best effort", bestEffort, corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}, Resources: podLevel}, false},
		{"empty pod-level resources: the containers decide (1.37's QoS fix)", bestEffort, corev1.PodSpec{Containers: []corev1.Container{container("1", "")}, Resources: &corev1.ResourceRequirements{}}, false},
		{"pod-level hugepages alone decide: BestEffort", bestEffort, corev1.PodSpec{Containers: []corev1.Container{container("1", "")}, Resources: &corev1.ResourceRequirements{Limits: corev1.ResourceList{"hugepages-2Mi": resource.MustParse("2Mi")}}}, true},
		{"no affinity", crossNS, corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}, false},
		{"affinity in its own namespace", crossNS, corev1.PodSpec{Affinity: &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{sameNS}}}}, false},
		{"affinity naming another namespace", crossNS, corev1.PodSpec{Affinity: &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term}}}}, true},
		{"preferred anti-affinity with a namespace selector", crossNS, corev1.PodSpec{Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 1, PodAffinityTerm: corev1.PodAffinityTerm{
				TopologyKey: "zone", NamespaceSelector: &metav1.LabelSelector{}}}}}}}, true},
	} {
		if got := Covers(tc.quota, podResource, &corev1.Pod{Spec: tc.spec}); got != tc.want {
			t.Errorf("%s: Covers = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestServiceUsageAsUpstream: as upstream's service quota evaluator, a
// LoadBalancer uses one services.loadbalancers and a node port per port
// (only the ports naming one when allocateLoadBalancerNodePorts is
// false), a NodePort service a node port per port, and a ClusterIP
// service neither; both names count services.
func TestServiceUsageAsUpstream(t *testing.T) {
	ports := []corev1.ServicePort{{Port: 80}, {Port: 443, NodePort: 30443}}
	no := false
	for _, tc := range []struct {
		name          string
		spec          corev1.ServiceSpec
		lbs, nodePort int64
	}{
		{"ClusterIP", corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Ports: ports}, 0, 0},
		{"NodePort", corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: ports}, 0, 2},
		{"LoadBalancer", corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: ports}, 1, 2},
		{"LoadBalancer without node ports", corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: ports, AllocateLoadBalancerNodePorts: &no}, 1, 1},
		{"ExternalName", corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.com"}, 0, 0},
	} {
		got := ObjectUsage(corev1.Resource("services"), &corev1.Service{Spec: tc.spec}, time.Now())
		lb, np := got[corev1.ResourceServicesLoadBalancers], got[corev1.ResourceServicesNodePorts]
		if lb.Value() != tc.lbs || np.Value() != tc.nodePort {
			t.Errorf("%s: services.loadbalancers %s, services.nodeports %s; want %d, %d", tc.name, lb.String(), np.String(), tc.lbs, tc.nodePort)
		}
		if c := got["services"]; c.Value() != 1 {
			t.Errorf("%s: services %s, want 1", tc.name, c.String())
		}
	}
	for _, n := range []corev1.ResourceName{corev1.ResourceServicesLoadBalancers, corev1.ResourceServicesNodePorts} {
		if gr, ok := CountedResource(n); !ok || gr != corev1.Resource("services") {
			t.Errorf("CountedResource(%s) = %v %v, want services", n, gr, ok)
		}
	}
}
