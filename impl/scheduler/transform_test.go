package scheduler

import (
	"fmt"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fw "github.com/kubeproof/kubeproof/impl/scheduler/framework"
)

func TestTransformKeepsWhatSchedulingReads(t *testing.T) {
	prio := int32(7)
	now := metav1.Now()
	req := v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")}
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "p", Namespace: "ns", UID: "u", Labels: map[string]string{"app": "web"},
			Annotations:   map[string]string{"note": "x", "kubectl.kubernetes.io/last-applied-configuration": `{"huge":"json"}`},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
			Finalizers:    []string{"f"}, GenerateName: "p-",
			OwnerReferences: []metav1.OwnerReference{
				{APIVersion: "v1", Kind: "ConfigMap", Name: "other", UID: "o1"},
				{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "rs1", Controller: ptrTo(true)},
			},
		},
		Spec: v1.PodSpec{
			NodeName: "n1", SchedulerName: "default-scheduler", Priority: &prio,
			NodeSelector:              map[string]string{"zone": "a"},
			Tolerations:               []v1.Toleration{{Key: "k", Operator: v1.TolerationOpExists}},
			Affinity:                  &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{}},
			TopologySpreadConstraints: []v1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone"}},
			Overhead:                  req,
			Volumes: []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
				{Name: "pd", VolumeSource: v1.VolumeSource{GCEPersistentDisk: &v1.GCEPersistentDiskVolumeSource{PDName: "disk"}}}},
			SecurityContext:               &v1.PodSecurityContext{},
			DNSPolicy:                     v1.DNSClusterFirst,
			TerminationGracePeriodSeconds: ptrTo(int64(30)),
			HostNetwork:                   true,
			Containers: []v1.Container{{
				Name: "c", Image: "nginx", Command: []string{"sleep"}, Env: []v1.EnvVar{{Name: "A", Value: "b"}},
				Ports:     []v1.ContainerPort{{ContainerPort: 80, HostPort: 8080}},
				Resources: v1.ResourceRequirements{Requests: req},
			}},
			InitContainers: []v1.Container{{Name: "sidecar", Image: "envoy", RestartPolicy: ptrTo(v1.ContainerRestartPolicyAlways), Resources: v1.ResourceRequirements{Requests: req}}},
		},
		Status: v1.PodStatus{
			Phase: v1.PodRunning, NominatedNodeName: "n2", StartTime: &now, QOSClass: v1.PodQOSBurstable,
			Conditions:        []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionTrue}, {Type: v1.PodReady, Status: v1.ConditionTrue}},
			ContainerStatuses: []v1.ContainerStatus{{Name: "c", Image: "nginx"}},
			PodIPs:            []v1.PodIP{{IP: "10.0.0.1"}},
		},
	}
	out, err := NewTransformer().Transform(pod.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*v1.Pod)
	want := pod.DeepCopy()
	want.ManagedFields, want.Annotations, want.Finalizers, want.GenerateName = nil, nil, nil, ""
	want.OwnerReferences = want.OwnerReferences[1:]
	want.Spec.Volumes = want.Spec.Volumes[1:]
	want.Spec.SecurityContext, want.Spec.DNSPolicy, want.Spec.TerminationGracePeriodSeconds = nil, "", nil
	want.Spec.Containers[0] = v1.Container{Name: "c", Image: "nginx", Ports: pod.Spec.Containers[0].Ports, Resources: pod.Spec.Containers[0].Resources}
	want.Spec.InitContainers[0] = v1.Container{Name: "sidecar", Image: "envoy", RestartPolicy: pod.Spec.InitContainers[0].RestartPolicy, Resources: pod.Spec.InitContainers[0].Resources}
	// An assigned pod keeps no conditions.
	want.Status = v1.PodStatus{Phase: v1.PodRunning, NominatedNodeName: "n2", StartTime: &now}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("trimmed pod:\n got %+v\nwant %+v", got, want)
	}
	// A pod not yet assigned keeps its PodScheduled condition (and only it).
	pending := pod.DeepCopy()
	pending.Spec.NodeName = ""
	pending.Status.Conditions[0] = v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: "Unschedulable", Message: "0/3 nodes are available"}
	out, _ = NewTransformer().Transform(pending.DeepCopy())
	if got := out.(*v1.Pod).Status.Conditions; !reflect.DeepEqual(got, pending.Status.Conditions[:1]) {
		t.Errorf("pending pod's conditions %+v, want only PodScheduled %+v", got, pending.Status.Conditions[:1])
	}

	node := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"zone": "a"}, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}},
		Spec:       v1.NodeSpec{Unschedulable: true, Taints: []v1.Taint{{Key: "k", Effect: v1.TaintEffectNoSchedule}}, PodCIDR: "10.0.0.0/24"},
		Status: v1.NodeStatus{
			Allocatable: req, Capacity: req,
			Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now}},
			Images:     []v1.ContainerImage{{Names: []string{"nginx"}, SizeBytes: 1 << 20}},
			NodeInfo:   v1.NodeSystemInfo{KubeletVersion: "v1.37.2"},
		},
	}
	out, _ = NewTransformer().Transform(node.DeepCopy())
	gotNode := out.(*v1.Node)
	wantNode := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"zone": "a"}},
		Spec:       v1.NodeSpec{Unschedulable: true, Taints: node.Spec.Taints},
		Status: v1.NodeStatus{Allocatable: req, Conditions: []v1.NodeCondition{
			{Type: v1.NodeReady, Status: v1.ConditionTrue},
		}, Images: node.Status.Images},
	}
	if !reflect.DeepEqual(gotNode, wantNode) {
		t.Errorf("trimmed node:\n got %+v\nwant %+v", gotNode, wantNode)
	}

	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", Labels: map[string]string{"team": "a"}, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "x"}}}}
	out, _ = NewTransformer().Transform(ns)
	if got := out.(*v1.Namespace); got.ManagedFields != nil || got.Labels["team"] != "a" {
		t.Errorf("namespace: %+v", got)
	}
}

func ptrTo[T any](v T) *T { return &v }

func TestTransformSharesEqualValues(t *testing.T) {
	tr := NewTransformer()
	secs := int64(300)
	mk := func(name, app, cpu string) *v1.Pod {
		return &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": app, "tier": "front"}},
			Spec: v1.PodSpec{
				Tolerations: []v1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: &secs}},
				Containers:  []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}}}},
			},
		}
	}
	transform := func(p *v1.Pod) *v1.Pod {
		out, err := tr.Transform(p)
		if err != nil {
			t.Fatal(err)
		}
		return out.(*v1.Pod)
	}
	a, b, c := transform(mk("a", "web", "100m")), transform(mk("b", "web", "0.1")), transform(mk("c", "db", "200m"))
	same := func(x, y any) bool { return reflect.ValueOf(x).Pointer() == reflect.ValueOf(y).Pointer() }
	if !same(a.Labels, b.Labels) || !same(a.Spec.Tolerations, b.Spec.Tolerations) || !same(a.Spec.Containers[0].Resources.Requests, b.Spec.Containers[0].Resources.Requests) {
		t.Error("equal labels, tolerations and requests (100m == 0.1 cpu) must be shared")
	}
	if !same(a.Spec.Containers, b.Spec.Containers) {
		t.Error("equal trimmed containers must be shared")
	}
	if same(a.Labels, c.Labels) || same(a.Spec.Containers[0].Resources.Requests, c.Spec.Containers[0].Resources.Requests) || same(a.Spec.Containers, c.Spec.Containers) {
		t.Error("different values must not be shared")
	}
	if !same(a.Spec.Tolerations, c.Spec.Tolerations) {
		t.Error("c's tolerations equal a's")
	}
	if want := mk("b", "web", "100m"); !reflect.DeepEqual(b.Labels, want.Labels) || b.Spec.Containers[0].Resources.Requests.Cpu().MilliValue() != 100 {
		t.Errorf("interning changed b: %v %v", b.Labels, b.Spec.Containers[0].Resources.Requests)
	}

	// A full table stops growing; values it does not hold stay unshared.
	var in interner[map[string]string]
	for i := 0; i < maxInterned+10; i++ {
		in.intern(map[string]string{"i": fmt.Sprint(i)}, labelsKey)
	}
	if len(in.table) != maxInterned {
		t.Errorf("table holds %d values, want at most %d", len(in.table), maxInterned)
	}
	late := map[string]string{"i": fmt.Sprint(maxInterned + 5)}
	if got := in.intern(late, labelsKey); !same(got, late) {
		t.Error("a value not in a full table comes back as it is")
	}
}

// TestTransformKeepsResizeStatus: a pod being resized in place keeps, of
// its status, what its accounting reads (the containers' allocated and
// actual requests, the PodResizePending condition); a pod whose node
// reports its spec's requests keeps none of it.
func TestTransformKeepsResizeStatus(t *testing.T) {
	cpu := func(q string) v1.ResourceList { return v1.ResourceList{v1.ResourceCPU: resource.MustParse(q)} }
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
		Spec: v1.PodSpec{NodeName: "n1", Containers: []v1.Container{{Name: "c", Image: "nginx",
			Resources: v1.ResourceRequirements{Requests: cpu("100m"), Limits: cpu("1")}}}},
		Status: v1.PodStatus{
			Phase: v1.PodRunning,
			Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue},
				{Type: v1.PodResizeInProgress, Status: v1.ConditionTrue}},
			ContainerStatuses: []v1.ContainerStatus{{Name: "c", Image: "nginx", ImageID: "sha", Ready: true,
				State:              v1.ContainerState{Running: &v1.ContainerStateRunning{}},
				AllocatedResources: cpu("100m"),
				Resources:          &v1.ResourceRequirements{Requests: cpu("100m"), Limits: cpu("1")}}},
		},
	}
	out, _ := NewTransformer().Transform(pod.DeepCopy())
	if s := out.(*v1.Pod).Status; s.ContainerStatuses != nil || s.Conditions != nil {
		t.Errorf("not resizing: status kept %+v", s)
	}

	resizedDown := pod.DeepCopy()
	resizedDown.Spec.Containers[0].Resources.Requests = cpu("50m")
	resizedDown.Status.Conditions = append(resizedDown.Status.Conditions,
		v1.PodCondition{Type: v1.PodResizePending, Status: v1.ConditionTrue, Reason: v1.PodReasonDeferred, Message: "no room"})
	out, _ = NewTransformer().Transform(resizedDown.DeepCopy())
	got := out.(*v1.Pod).Status
	wantStatuses := []v1.ContainerStatus{{Name: "c", AllocatedResources: cpu("100m"), Resources: &v1.ResourceRequirements{Requests: cpu("100m")}}}
	if !reflect.DeepEqual(got.ContainerStatuses, wantStatuses) {
		t.Errorf("resizing: container statuses %+v, want %+v", got.ContainerStatuses, wantStatuses)
	}
	wantConds := []v1.PodCondition{{Type: v1.PodResizePending, Status: v1.ConditionTrue, Reason: v1.PodReasonDeferred}}
	if !reflect.DeepEqual(got.Conditions, wantConds) {
		t.Errorf("resizing: conditions %+v, want %+v", got.Conditions, wantConds)
	}
}

// TestTransformKeepsPodLevelResizeStatus: the kubelet reports every pod's
// pod-level status.allocatedResources and status.resources; the transform
// keeps them (requests only) for a pod whose accounting reads them — one
// resized down in spec, not yet actuated — so that the trimmed pod is
// accounted as the whole one, and drops them (no memory) where they give
// no more than the spec.
func TestTransformKeepsPodLevelResizeStatus(t *testing.T) {
	rl := func(cpu, mem string) v1.ResourceList {
		return v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}
	}
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
		Spec: v1.PodSpec{NodeName: "n1",
			Resources:  &v1.ResourceRequirements{Requests: rl("1", "1Gi"), Limits: rl("2", "2Gi")},
			Containers: []v1.Container{{Name: "c", Image: "nginx"}}},
		Status: v1.PodStatus{
			Phase:              v1.PodRunning,
			ContainerStatuses:  []v1.ContainerStatus{{Name: "c", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}},
			AllocatedResources: rl("1", "1Gi"),
			Resources:          &v1.ResourceRequirements{Requests: rl("1", "1Gi"), Limits: rl("2", "2Gi")},
		},
	}
	out, _ := NewTransformer().Transform(pod.DeepCopy())
	if s := out.(*v1.Pod).Status; s.AllocatedResources != nil || s.Resources != nil || s.ContainerStatuses != nil {
		t.Errorf("not resizing: status kept %+v", s)
	}

	resizedDown := pod.DeepCopy()
	resizedDown.Spec.Resources.Requests = rl("500m", "512Mi")
	out, _ = NewTransformer().Transform(resizedDown.DeepCopy())
	got := out.(*v1.Pod).Status
	if !reflect.DeepEqual(got.AllocatedResources, rl("1", "1Gi")) {
		t.Errorf("resizing: allocatedResources %v", got.AllocatedResources)
	}
	if want := (&v1.ResourceRequirements{Requests: rl("1", "1Gi")}); !reflect.DeepEqual(got.Resources, want) {
		t.Errorf("resizing: resources %+v, want %+v", got.Resources, want)
	}
	whole, _ := fw.AccountedPodRequests(resizedDown)
	trimmed, _ := fw.AccountedPodRequests(out.(*v1.Pod))
	if whole.MilliCPU != 1000 || trimmed.MilliCPU != whole.MilliCPU || trimmed.Memory != whole.Memory {
		t.Errorf("trimmed pod accounted cpu %dm memory %d, the whole one %dm %d", trimmed.MilliCPU, trimmed.Memory, whole.MilliCPU, whole.Memory)
	}
}

// TestScaledDownPodLevel: a pod whose pod-level requests were lowered is
// a scale-down (UpdatePodScaleDown) once it asks less, even where its node
// reports no pod-level status and its containers are unchanged (upstream
// counts the spec's pod-level requests then); an unchanged pod is none.
func TestScaledDownPodLevel(t *testing.T) {
	rl := func(cpu string) v1.ResourceList { return v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)} }
	old := &v1.Pod{Spec: v1.PodSpec{NodeName: "n1",
		Resources:  &v1.ResourceRequirements{Requests: rl("1")},
		Containers: []v1.Container{{Name: "c"}}}}
	lowered := old.DeepCopy()
	lowered.Spec.Resources.Requests = rl("500m")
	lowered.Spec.Containers = old.Spec.Containers // the transform interns them
	if !scaledDown(old, lowered) {
		t.Error("pod-level requests lowered: not a scale-down")
	}
	same := old.DeepCopy()
	same.Spec.Containers = old.Spec.Containers
	if scaledDown(old, same) {
		t.Error("unchanged: a scale-down")
	}
}
