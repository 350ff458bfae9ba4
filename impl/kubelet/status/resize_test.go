package status

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/podstate"
)

func rl(kv ...string) v1.ResourceList {
	l := v1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

// TestContainerStatusResources: a running container's status resources
// are its allocated ones with the runtime's CPU limit, memory limit and
// CPU request in their place, as upstream's kubelet converts them; values
// below what cgroups tell apart stay the allocated ones.
func TestContainerStatusResources(t *testing.T) {
	for _, tc := range []struct {
		name  string
		alloc v1.ResourceRequirements
		r     *runtimeapi.LinuxContainerResources
		want  v1.ResourceRequirements
	}{{
		name:  "nothing reported: the allocated resources",
		alloc: v1.ResourceRequirements{Requests: rl("cpu", "100m", "memory", "64Mi"), Limits: rl("cpu", "200m", "memory", "128Mi")},
		want:  v1.ResourceRequirements{Requests: rl("cpu", "100m", "memory", "64Mi"), Limits: rl("cpu", "200m", "memory", "128Mi")},
	}, {
		name:  "the runtime's values (a resize not yet applied shows the old ones)",
		alloc: v1.ResourceRequirements{Requests: rl("cpu", "500m", "memory", "64Mi"), Limits: rl("cpu", "1", "memory", "256Mi")},
		r:     &runtimeapi.LinuxContainerResources{CpuShares: 102, CpuPeriod: 100000, CpuQuota: 20000, MemoryLimitInBytes: 128 << 20},
		want:  v1.ResourceRequirements{Requests: rl("cpu", "100m", "memory", "64Mi"), Limits: rl("cpu", "200m", "memory", "128Mi")},
	}, {
		name:  "no limits allocated: none reported; ephemeral-storage and other requests as allocated",
		alloc: v1.ResourceRequirements{Requests: rl("cpu", "250m", "ephemeral-storage", "1Gi")},
		r:     &runtimeapi.LinuxContainerResources{CpuShares: 256, CpuPeriod: 100000},
		want:  v1.ResourceRequirements{Requests: rl("cpu", "250m", "ephemeral-storage", "1Gi")},
	}, {
		name:  "minimum shares and quota: the allocated values stay",
		alloc: v1.ResourceRequirements{Requests: rl("cpu", "1m"), Limits: rl("cpu", "5m")},
		r:     &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000, CpuQuota: 1000},
		want:  v1.ResourceRequirements{Requests: rl("cpu", "1m"), Limits: rl("cpu", "5m")},
	}, {
		name:  "no CPU request allocated and minimum shares: none reported",
		alloc: v1.ResourceRequirements{Requests: rl("memory", "64Mi")},
		r:     &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000},
		want:  v1.ResourceRequirements{Requests: rl("memory", "64Mi")},
	}, {
		name: "no resources at all: empty",
		r:    &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000},
		want: v1.ResourceRequirements{},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			orig := tc.alloc.DeepCopy()
			got := ContainerStatusResources(&tc.alloc, tc.r)
			if !apiequality.Semantic.DeepEqual(*got, tc.want) {
				t.Errorf("got %+v, want %+v", *got, tc.want)
			}
			if !apiequality.Semantic.DeepEqual(tc.alloc, *orig) {
				t.Errorf("the allocated resources were changed: %+v", tc.alloc)
			}
			if same := got == &tc.alloc; same != apiequality.Semantic.DeepEqual(*got, *orig) {
				t.Errorf("result is the allocated resources themselves: %v, though it equals them: %v", same, !same)
			}
		})
	}
}

// TestResizeStatus: the resize conditions the kubelet decided are reported
// before its own five, as upstream's generateAPIPodStatus appends them
// (after the conditions it does not own from the API pod, before
// PodReadyToStartContainers, and mergePodStatus keeps the kubelet's in
// that order), with their own times and observedGeneration; a
// stale resize condition in the old status is not kept (the kubelet owns
// them); a running container reports its allocated requests and its
// resources, a waiting one neither.
func TestResizeStatus(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{
		{Name: "a", Resources: v1.ResourceRequirements{Requests: rl("cpu", "500m"), Limits: rl("cpu", "1")}},
		{Name: "b"},
	}}}
	pod.Generation = 3
	pod.Status.Conditions = []v1.PodCondition{{Type: v1.PodResizePending, Status: v1.ConditionTrue, Reason: v1.PodReasonDeferred}}
	rs := &podstate.Pod{
		Sandboxes:  []podstate.Sandbox{{ID: "s", Ready: true, IP: "10.0.0.1"}},
		Containers: []podstate.Container{{ID: "c1", Name: "a", SandboxID: "s", State: podstate.ContainerRunning, Resources: &runtimeapi.LinuxContainerResources{CpuShares: 512, CpuPeriod: 100000, CpuQuota: 100000}}},
	}
	inProgress := v1.PodCondition{Type: v1.PodResizeInProgress, Status: v1.ConditionTrue, ObservedGeneration: 2}
	st := GenerateAPIPodStatus(Input{Pod: pod, Runtime: rs, RuntimeType: "sim", Now: now, Resize: []v1.PodCondition{inProgress}})
	var types []v1.PodConditionType
	for _, c := range st.Conditions {
		types = append(types, c.Type)
	}
	want := []v1.PodConditionType{v1.PodResizeInProgress, PodReadyToStartContainers, v1.PodInitialized, v1.PodReady, v1.ContainersReady, v1.PodScheduled}
	if !apiequality.Semantic.DeepEqual(types, want) {
		t.Fatalf("conditions %v, want %v", types, want)
	}
	if got := st.Conditions[0]; !apiequality.Semantic.DeepEqual(got, inProgress) {
		t.Errorf("resize condition %+v, want it as decided %+v", got, inProgress)
	}
	a := st.ContainerStatuses[0]
	if !apiequality.Semantic.DeepEqual(a.AllocatedResources, rl("cpu", "500m")) || a.Resources == nil ||
		!apiequality.Semantic.DeepEqual(*a.Resources, v1.ResourceRequirements{Requests: rl("cpu", "500m"), Limits: rl("cpu", "1")}) {
		t.Errorf("running container: allocatedResources %v, resources %+v", a.AllocatedResources, a.Resources)
	}
	if b := st.ContainerStatuses[1]; b.AllocatedResources != nil || b.Resources != nil {
		t.Errorf("waiting container reports allocatedResources %v, resources %+v", b.AllocatedResources, b.Resources)
	}
}

// TestExitedContainerStatusResources: a container the runtime has but
// that is not running (a completed init container, an exited or created
// one) reports its allocated requests and, as its resources, its
// allocated ones (not the runtime's), as upstream's
// convertToAPIContainerStatuses does for every container it has a
// runtime status of; one the runtime never had reports neither.
func TestExitedContainerStatusResources(t *testing.T) {
	alloc := v1.ResourceRequirements{Requests: rl("cpu", "500m", "memory", "64Mi"), Limits: rl("cpu", "1", "memory", "128Mi")}
	pod := &v1.Pod{Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "init", Resources: alloc}},
		Containers:     []v1.Container{{Name: "a", Resources: alloc}, {Name: "b", Resources: alloc}, {Name: "c", Resources: alloc}},
	}}
	reported := &runtimeapi.LinuxContainerResources{CpuShares: 102, CpuPeriod: 100000, CpuQuota: 20000, MemoryLimitInBytes: 32 << 20}
	rs := &podstate.Pod{
		Sandboxes: []podstate.Sandbox{{ID: "s", Ready: true, IP: "10.0.0.1"}},
		Containers: []podstate.Container{
			{ID: "i1", Name: "init", Init: true, SandboxID: "s", State: podstate.ContainerExited, Resources: reported},
			{ID: "c1", Name: "a", SandboxID: "s", State: podstate.ContainerExited, ExitCode: 1, Resources: reported},
			{ID: "c2", Name: "b", SandboxID: "s", State: podstate.ContainerCreated},
		},
	}
	st := GenerateAPIPodStatus(Input{Pod: pod, Runtime: rs, RuntimeType: "sim", Now: now})
	for _, cs := range append(append([]v1.ContainerStatus(nil), st.InitContainerStatuses...), st.ContainerStatuses...) {
		if cs.Name == "c" {
			if cs.AllocatedResources != nil || cs.Resources != nil {
				t.Errorf("container %s never created reports allocatedResources %v, resources %+v", cs.Name, cs.AllocatedResources, cs.Resources)
			}
			continue
		}
		if !apiequality.Semantic.DeepEqual(cs.AllocatedResources, alloc.Requests) || cs.Resources == nil || !apiequality.Semantic.DeepEqual(*cs.Resources, alloc) {
			t.Errorf("container %s (%+v): allocatedResources %v, resources %+v, want %v and %+v", cs.Name, cs.State, cs.AllocatedResources, cs.Resources, alloc.Requests, alloc)
		}
	}
}
