package status

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/kubeproof/kubeproof/impl/kubelet/podstate"
)

// TestPodStatusResources: every pod reports its pod-level
// status.allocatedResources and status.resources, as upstream 1.37's
// kubelet (convertStatusToAPIStatus, InPlacePodLevelResourcesVerticalScaling
// on by default): the requests PodRequests adds up (every resource, the
// overhead included) as allocatedResources; while the pod is not Running,
// PodRequests and PodLimits as resources; once it is, the pod cgroup's
// CPU request, CPU limit and memory limit as read, the memory request
// allocated, the last reported value (else the pod-level one with the
// overhead) where the cgroup says nothing.
func TestPodStatusResources(t *testing.T) {
	single := func(req, lim v1.ResourceList) v1.PodSpec {
		return v1.PodSpec{Containers: []v1.Container{{Name: "a", Resources: v1.ResourceRequirements{Requests: req, Limits: lim}}}}
	}
	// Two app containers, an init container and overhead: cpu requests
	// max(100m+200m, 500m)+50m, memory 128Mi+64Mi+10Mi; a CPU limit only
	// a's (1) plus the overhead, memory limits 256Mi+128Mi plus it.
	multi := v1.PodSpec{
		InitContainers: []v1.Container{{Name: "init", Resources: v1.ResourceRequirements{Requests: rl("cpu", "500m")}}},
		Containers: []v1.Container{
			{Name: "a", Resources: v1.ResourceRequirements{Requests: rl("cpu", "100m", "memory", "128Mi", "ephemeral-storage", "1Gi"), Limits: rl("cpu", "1", "memory", "256Mi")}},
			{Name: "b", Resources: v1.ResourceRequirements{Requests: rl("cpu", "200m", "memory", "64Mi"), Limits: rl("memory", "128Mi")}},
		},
		Overhead: rl("cpu", "50m", "memory", "10Mi"),
	}
	podLevel := single(rl("cpu", "100m"), nil)
	podLevel.Resources = &v1.ResourceRequirements{Requests: rl("cpu", "1", "memory", "1Gi"), Limits: rl("cpu", "2", "memory", "2Gi")}
	podLevel.Overhead = rl("cpu", "100m", "memory", "50Mi")
	burstable := single(rl("cpu", "100m", "memory", "128Mi", "ephemeral-storage", "1Gi"), rl("memory", "256Mi"))

	for _, tc := range []struct {
		name      string
		spec      v1.PodSpec
		status    v1.PodStatus
		cg        PodCgroup
		allocated v1.ResourceList
		resources v1.ResourceRequirements
	}{{
		name:      "pending: one container's requests and limits, ephemeral-storage too",
		spec:      burstable,
		status:    v1.PodStatus{Phase: v1.PodPending},
		allocated: rl("cpu", "100m", "memory", "128Mi", "ephemeral-storage", "1Gi"),
		resources: v1.ResourceRequirements{Requests: rl("cpu", "100m", "memory", "128Mi", "ephemeral-storage", "1Gi"), Limits: rl("memory", "256Mi")},
	}, {
		name:      "pending: init containers, sidecar arithmetic and overhead",
		spec:      multi,
		status:    v1.PodStatus{Phase: v1.PodPending},
		allocated: rl("cpu", "550m", "memory", "202Mi", "ephemeral-storage", "1Gi"),
		resources: v1.ResourceRequirements{Requests: rl("cpu", "550m", "memory", "202Mi", "ephemeral-storage", "1Gi"), Limits: rl("cpu", "1050m", "memory", "394Mi")},
	}, {
		name:      "pending best-effort: empty resources",
		spec:      single(nil, nil),
		status:    v1.PodStatus{Phase: v1.PodPending},
		resources: v1.ResourceRequirements{},
	}, {
		name:      "running: the pod cgroup's values, the memory request allocated, no other resource",
		spec:      burstable,
		status:    v1.PodStatus{Phase: v1.PodRunning},
		cg:        PodCgroup{CPUShares: 102, CPUQuota: -1, CPUPeriod: 100000, Memory: 256 << 20},
		allocated: rl("cpu", "100m", "memory", "128Mi", "ephemeral-storage", "1Gi"),
		resources: v1.ResourceRequirements{Requests: rl("cpu", "100m", "memory", "128Mi"), Limits: rl("memory", "256Mi")},
	}, {
		name:      "running: the cgroup's rounding shows (cgroup v2 weight 4: 80 shares, 79m)",
		spec:      burstable,
		status:    v1.PodStatus{Phase: v1.PodRunning},
		cg:        PodCgroup{CPUShares: 80, CPUQuota: 20000, CPUPeriod: 100000, Memory: 256 << 20},
		allocated: rl("cpu", "100m", "memory", "128Mi", "ephemeral-storage", "1Gi"),
		resources: v1.ResourceRequirements{Requests: rl("cpu", "79m", "memory", "128Mi"), Limits: rl("cpu", "200m", "memory", "256Mi")},
	}, {
		name: "running, nothing read: the last reported values kept",
		spec: multi,
		status: v1.PodStatus{Phase: v1.PodRunning, Resources: &v1.ResourceRequirements{
			Requests: rl("cpu", "300m", "memory", "1Gi"), Limits: rl("cpu", "2"),
		}},
		allocated: rl("cpu", "550m", "memory", "202Mi", "ephemeral-storage", "1Gi"),
		resources: v1.ResourceRequirements{Requests: rl("cpu", "300m", "memory", "202Mi"), Limits: rl("cpu", "2")},
	}, {
		name:      "running with pod-level resources, nothing read or reported: pod-level values with the overhead",
		spec:      podLevel,
		status:    v1.PodStatus{Phase: v1.PodRunning},
		allocated: rl("cpu", "1100m", "memory", "1074Mi"),
		resources: v1.ResourceRequirements{Requests: rl("cpu", "1100m", "memory", "1074Mi"), Limits: rl("cpu", "2100m", "memory", "2098Mi")},
	}, {
		name:      "running best-effort: 2 shares are no request",
		spec:      single(nil, nil),
		status:    v1.PodStatus{Phase: v1.PodRunning},
		cg:        PodCgroup{CPUShares: 2, CPUQuota: -1, CPUPeriod: 100000, Memory: -1},
		resources: v1.ResourceRequirements{},
	}, {
		name:      "succeeded: as allocated again",
		spec:      burstable,
		status:    v1.PodStatus{Phase: v1.PodSucceeded, Resources: &v1.ResourceRequirements{Requests: rl("cpu", "79m")}},
		cg:        PodCgroup{CPUShares: 80},
		allocated: rl("cpu", "100m", "memory", "128Mi", "ephemeral-storage", "1Gi"),
		resources: v1.ResourceRequirements{Requests: rl("cpu", "100m", "memory", "128Mi", "ephemeral-storage", "1Gi"), Limits: rl("memory", "256Mi")},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: tc.spec, Status: tc.status}
			st := GenerateAPIPodStatus(Input{Pod: pod, Runtime: &podstate.Pod{}, RuntimeType: "sim", Now: now, PodCgroup: tc.cg})
			if !apiequality.Semantic.DeepEqual(st.AllocatedResources, tc.allocated) {
				t.Errorf("allocatedResources %v, want %v", st.AllocatedResources, tc.allocated)
			}
			if st.Resources == nil {
				t.Fatalf("no resources, want %+v", tc.resources)
			}
			if !apiequality.Semantic.DeepEqual(*st.Resources, tc.resources) {
				t.Errorf("resources %+v, want %+v", *st.Resources, tc.resources)
			}
		})
	}
}

// TestPodStatusResourcesCopiesNothing: a resync of a running pod whose
// pod-level resources have not changed reuses the last reported ones, and
// a one-container pod's first ones are its container's lists: nothing is
// allocated.
func TestPodStatusResourcesCopiesNothing(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "a", Resources: v1.ResourceRequirements{
		Requests: rl("cpu", "100m", "memory", "128Mi"), Limits: rl("memory", "256Mi"),
	}}}}}
	pod.Status.Phase = v1.PodPending
	if n := testing.AllocsPerRun(100, func() { PodStatusResources(pod, PodCgroup{}) }); n != 0 {
		t.Errorf("pending one-container pod: %v allocations, want 0", n)
	}
	_, r := PodStatusResources(pod, PodCgroup{})
	if r != &pod.Spec.Containers[0].Resources {
		t.Errorf("pending one-container pod: resources %+v are not the container's", r)
	}
	pod.Status.Phase = v1.PodRunning
	pod.Status.Resources = &v1.ResourceRequirements{Requests: rl("cpu", "100m", "memory", "128Mi"), Limits: rl("memory", "256Mi")}
	pod.Status.AllocatedResources = rl("cpu", "100m", "memory", "128Mi")
	cg := PodCgroup{CPUShares: 102, CPUQuota: -1, CPUPeriod: 100000, Memory: 256 << 20}
	if n := testing.AllocsPerRun(100, func() { PodStatusResources(pod, cg) }); n != 0 {
		t.Errorf("running pod resynced: %v allocations, want 0", n)
	}
	if a, r := PodStatusResources(pod, cg); r != pod.Status.Resources || len(a) != 2 {
		t.Errorf("running pod resynced: resources %+v not the last reported ones", r)
	}
}

// TestPodStatusResourcesMultiContainerResync: the resync of a running pod
// of several containers (init containers, sidecars, overhead) whose
// pod-level resources have not changed allocates nothing, and
// samePodRequests agrees with component-helpers' PodRequests.
func TestPodStatusResourcesMultiContainerResync(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	specs := map[string]v1.PodSpec{
		"init and overhead": {
			InitContainers: []v1.Container{{Name: "init", Resources: v1.ResourceRequirements{Requests: rl("cpu", "500m", "ephemeral-storage", "1Gi")}}},
			Containers: []v1.Container{
				{Name: "a", Resources: v1.ResourceRequirements{Requests: rl("cpu", "100m", "memory", "128Mi")}},
				{Name: "b", Resources: v1.ResourceRequirements{Requests: rl("cpu", "200m", "memory", "64Mi")}},
			},
			Overhead: rl("cpu", "50m", "memory", "10Mi"),
		},
		"sidecars": {
			InitContainers: []v1.Container{
				{Name: "side", RestartPolicy: &always, Resources: v1.ResourceRequirements{Requests: rl("cpu", "300m", "memory", "1Gi")}},
				{Name: "init", Resources: v1.ResourceRequirements{Requests: rl("cpu", "1", "memory", "100Mi")}},
			},
			Containers: []v1.Container{{Name: "a", Resources: v1.ResourceRequirements{Requests: rl("cpu", "100m")}}},
		},
		"pod-level": {
			Containers: []v1.Container{{Name: "a", Resources: v1.ResourceRequirements{Requests: rl("cpu", "100m", "example.com/gpu", "1")}}},
			Resources:  &v1.ResourceRequirements{Requests: rl("cpu", "2", "memory", "1Gi")},
		},
	}
	for name, spec := range specs {
		t.Run(name, func(t *testing.T) {
			pod := &v1.Pod{Spec: spec}
			want := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
			if !samePodRequests(pod, want) {
				t.Fatalf("samePodRequests(PodRequests %v) false", want)
			}
			for n := range want {
				other := want.DeepCopy()
				delete(other, n)
				if samePodRequests(pod, other) {
					t.Errorf("samePodRequests true without %s", n)
				}
				other = want.DeepCopy()
				q := other[n]
				q.Add(resource.MustParse("1"))
				other[n] = q
				if samePodRequests(pod, other) {
					t.Errorf("samePodRequests true with %s %s", n, q.String())
				}
			}
			if extra := want.DeepCopy(); true {
				extra["hugepages-2Mi"] = resource.MustParse("0")
				if samePodRequests(pod, extra) {
					t.Error("samePodRequests true with a resource nothing names")
				}
			}
			pod.Status.Phase = v1.PodRunning
			cg := PodCgroup{CPUShares: 512, CPUQuota: -1, CPUPeriod: 100000, Memory: -1}
			pod.Status.AllocatedResources, pod.Status.Resources = PodStatusResources(pod, cg)
			if n := testing.AllocsPerRun(100, func() { PodStatusResources(pod, cg) }); n != 0 {
				t.Errorf("%v allocations, want 0", n)
			}
		})
	}
}
