package kubelet

import (
	"context"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// TestContainerOOMScoreAdj: a container's CRI oom_score_adj is upstream's
// GetContainerOOMScoreAdjust (its feature gates at their defaults):
// system-node-critical pods (critical by priority, static or mirror) and
// Guaranteed pods -997, BestEffort 1000, Burstable 1000 less the
// container's share of the node's memory capacity in thousandths, within
// 3..999; a pod-level memory request not given to any container is
// shared among all of them; a sidecar scores no higher than the
// smallest-request app container. The QoS class is status.qosClass when
// set, else computed as upstream's ComputePodQOS.
func TestContainerOOMScoreAdj(t *testing.T) {
	const capacity = 10 << 30 // 10 GiB
	always := v1.ContainerRestartPolicyAlways
	prio := func(p int32) *int32 { return &p }
	guaranteed := withResources(resList("cpu", "1", "memory", "1Gi"), resList("cpu", "1", "memory", "1Gi"))
	burstable := func(name, mem string) v1.Container {
		c := withResources(resList("memory", mem), nil)
		c.Name = name
		return c
	}
	for _, tc := range []struct {
		name string
		pod  v1.Pod
		c    string // the container's name; "" the first app container
		want int64
	}{{
		name: "BestEffort",
		pod:  v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}},
		want: 1000,
	}, {
		name: "Guaranteed",
		pod:  v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{guaranteed}}},
		want: -997,
	}, {
		name: "Burstable: 1000 less the request's thousandths of capacity",
		pod:  v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{burstable("c", "1Gi")}}},
		want: 900,
	}, {
		name: "Burstable without a memory request: 999, below BestEffort",
		pod:  v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{withResources(resList("cpu", "100m"), nil)}}},
		want: 999,
	}, {
		name: "Burstable requesting all the memory: 3, above Guaranteed",
		pod:  v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{burstable("c", "10Gi")}}},
		want: 3,
	}, {
		name: "Burstable: another container's limits do not count",
		pod:  v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{burstable("c", "2Gi"), guaranteed}}},
		want: 800,
	}, {
		name: "status.qosClass decides when set",
		pod: v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{burstable("c", "1Gi")}},
			Status: v1.PodStatus{QOSClass: v1.PodQOSBestEffort}},
		want: 1000,
	}, {
		name: "system-node-critical by priority: -997 whatever the QoS",
		pod: v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}},
			PriorityClassName: "system-node-critical", Priority: prio(2000001000)}},
		want: -997,
	}, {
		name: "system-cluster-critical: only the QoS counts",
		pod: v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}},
			PriorityClassName: "system-cluster-critical", Priority: prio(2000000000)}},
		want: 1000,
	}, {
		name: "system-node-critical by name on a static pod",
		pod: v1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"kubernetes.io/config.source": "file"}},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}, PriorityClassName: "system-node-critical"}},
		want: -997,
	}, {
		name: "a system-node-critical name without the priority or a static source is not critical",
		pod: v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}},
			PriorityClassName: "system-node-critical"}},
		want: 1000,
	}, {
		name: "sidecar: no higher than the smallest app container's",
		pod: v1.Pod{Spec: v1.PodSpec{
			InitContainers: []v1.Container{func() v1.Container {
				c := burstable("side", "512Mi")
				c.RestartPolicy = &always
				return c
			}()},
			Containers: []v1.Container{burstable("a", "1Gi"), burstable("b", "2Gi")}}},
		c:    "side",
		want: 900,
	}, {
		name: "sidecar: its own when lower",
		pod: v1.Pod{Spec: v1.PodSpec{
			InitContainers: []v1.Container{func() v1.Container {
				c := burstable("side", "3Gi")
				c.RestartPolicy = &always
				return c
			}()},
			Containers: []v1.Container{burstable("a", "1Gi")}}},
		c:    "side",
		want: 700,
	}, {
		name: "a regular init container scores by its own request",
		pod: v1.Pod{Spec: v1.PodSpec{
			InitContainers: []v1.Container{burstable("init", "512Mi")},
			Containers:     []v1.Container{burstable("a", "1Gi")}}},
		c:    "init",
		want: 950,
	}, {
		name: "pod-level request: the unassigned rest shared among all containers",
		pod: v1.Pod{Spec: v1.PodSpec{
			Resources:      &v1.ResourceRequirements{Requests: resList("memory", "4Gi")},
			InitContainers: []v1.Container{{Name: "init"}},
			Containers:     []v1.Container{burstable("a", "1Gi"), {Name: "b"}}}},
		c:    "a",
		want: 800, // (4Gi - 1Gi) / 3 = 1Gi more: 2Gi of 10Gi
	}, {
		name: "pod-level request: a sidecar's minimum gets the share too",
		pod: v1.Pod{Spec: v1.PodSpec{
			Resources: &v1.ResourceRequirements{Requests: resList("memory", "3Gi")},
			InitContainers: []v1.Container{func() v1.Container {
				c := v1.Container{Name: "side", RestartPolicy: &always}
				return c
			}()},
			Containers: []v1.Container{burstable("a", "1Gi")}}},
		c:    "side",
		want: 800, // 1Gi more each: the sidecar's 1Gi (900) is lowered to the smallest app container's 1Gi + 1Gi
	}, {
		name: "pod-level resources equal: Guaranteed",
		pod: v1.Pod{Spec: v1.PodSpec{
			Resources:  &v1.ResourceRequirements{Requests: resList("cpu", "1", "memory", "1Gi"), Limits: resList("cpu", "1", "memory", "1Gi")},
			Containers: []v1.Container{burstable("a", "512Mi")}}},
		want: -997,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &tc.pod
			var c *v1.Container
			for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
				for i := range list {
					if list[i].Name == tc.c || (tc.c == "" && c == nil && len(pod.Spec.Containers) > 0 && &list[i] == &pod.Spec.Containers[0]) {
						c = &list[i]
					}
				}
			}
			if c == nil {
				t.Fatalf("no container %q", tc.c)
			}
			if got := containerOOMScoreAdj(pod, c, capacity); got != tc.want {
				t.Errorf("containerOOMScoreAdj = %d, want %d", got, tc.want)
			}
			// The container's CRI config carries it.
			if got := containerConfig(pod, c, false, 0, nil, nil, cgroupParams{nodeMemory: capacity}).GetLinux().GetResources().GetOomScoreAdj(); got != tc.want {
				t.Errorf("CRI oom_score_adj = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestPodQOS: computed as upstream's ComputePodQOS when status.qosClass
// is empty: pod-level resources alone when they name one; else each container's
// cpu and memory, Guaranteed only when every container's requests equal
// its limits, BestEffort only when none names either.
func TestPodQOS(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec v1.PodSpec
		want v1.PodQOSClass
	}{
		{"nothing", v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}, v1.PodQOSBestEffort},
		{"ephemeral storage only", v1.PodSpec{Containers: []v1.Container{withResources(resList("ephemeral-storage", "1Gi"), nil)}}, v1.PodQOSBestEffort},
		{"equal", v1.PodSpec{Containers: []v1.Container{withResources(resList("cpu", "1", "memory", "1Gi"), resList("cpu", "1", "memory", "1Gi"))}}, v1.PodQOSGuaranteed},
		{"memory missing", v1.PodSpec{Containers: []v1.Container{withResources(resList("cpu", "1"), resList("cpu", "1"))}}, v1.PodQOSBurstable},
		{"one BestEffort beside a Guaranteed", v1.PodSpec{
			InitContainers: []v1.Container{{Name: "i"}},
			Containers:     []v1.Container{withResources(resList("cpu", "1", "memory", "1Gi"), resList("cpu", "1", "memory", "1Gi"))}}, v1.PodQOSBurstable},
		{"pod-level decides", v1.PodSpec{
			Resources:  &v1.ResourceRequirements{Requests: resList("memory", "1Gi")},
			Containers: []v1.Container{withResources(resList("cpu", "1", "memory", "1Gi"), resList("cpu", "1", "memory", "1Gi"))}}, v1.PodQOSBurstable},
		{"empty pod-level: the containers decide (1.37's PodLevelResourcesFixKubeletQOSClass)", v1.PodSpec{
			Resources:  &v1.ResourceRequirements{},
			Containers: []v1.Container{withResources(resList("cpu", "1"), nil)}}, v1.PodQOSBurstable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := podQOS(&v1.Pod{Spec: tc.spec}); got != tc.want {
				t.Errorf("podQOS = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestHugepageLimits: a container's hugepage limits go to the CRI as
// upstream's GetHugepageLimitsFromResources makes them: one per page size
// the node has, in the node's order, named in runc's units (2Mi as "2MB",
// 1Gi as "1GB"), the container's limit or 0; limits of sizes the node
// lacks, of sizes that do not parse or are not whole in their largest
// unit are left out; none on a node without huge pages.
func TestHugepageLimits(t *testing.T) {
	node := []HugePages{{PageSize: 64 << 10}, {PageSize: 2 << 20, Pages: 512}, {PageSize: 1 << 30, Pages: 2}}
	zero := func(sizes ...string) []*runtimeapi.HugepageLimit {
		var out []*runtimeapi.HugepageLimit
		for _, s := range sizes {
			out = append(out, &runtimeapi.HugepageLimit{PageSize: s})
		}
		return out
	}
	for _, tc := range []struct {
		name string
		node []HugePages
		lim  v1.ResourceList
		want []*runtimeapi.HugepageLimit
	}{
		{"no hugepages limited: every node size 0", node, resList("cpu", "1", "memory", "1Gi"), zero("64KB", "2MB", "1GB")},
		{"two sizes limited", node, resList("hugepages-1Gi", "2Gi", "hugepages-2Mi", "6Mi", "memory", "1Gi"), []*runtimeapi.HugepageLimit{
			{PageSize: "64KB"}, {PageSize: "2MB", Limit: 6 << 20}, {PageSize: "1GB", Limit: 2 << 30}}},
		{"64Ki pages", node, resList("hugepages-64Ki", "128Ki"), []*runtimeapi.HugepageLimit{
			{PageSize: "64KB", Limit: 128 << 10}, {PageSize: "2MB"}, {PageSize: "1GB"}}},
		{"a size the node lacks is left out", node[1:], resList("hugepages-64Ki", "128Ki"), zero("2MB", "1GB")},
		{"an unparsable size is skipped", node[1:], resList("hugepages-x", "1Mi", "hugepages-2Mi", "2Mi"), []*runtimeapi.HugepageLimit{
			{PageSize: "2MB", Limit: 2 << 20}, {PageSize: "1GB"}}},
		{"a size not whole in its largest unit is skipped", node[1:], resList("hugepages-1025Ki", "1025Ki"), zero("2MB", "1GB")},
		{"a node without huge pages", nil, resList("hugepages-2Mi", "2Mi"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check := func(what string, got []*runtimeapi.HugepageLimit) {
				t.Helper()
				if len(got) != len(tc.want) {
					t.Fatalf("%s = %v, want %v", what, got, tc.want)
				}
				for i := range got {
					if !proto.Equal(got[i], tc.want[i]) {
						t.Errorf("%s[%d] = %v, want %v", what, i, got[i], tc.want[i])
					}
				}
			}
			check("hugepageLimits", hugepageLimits(tc.node, nil, tc.lim))
			c := withResources(nil, tc.lim)
			pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{c}}}
			check("CRI hugepage limits", containerConfig(pod, &pod.Spec.Containers[0], false, 0, nil, nil, cgroupParams{nodeMemory: 32 << 30, hugePages: tc.node}).GetLinux().GetResources().GetHugepageLimits())
		})
	}
}

// createRecorder is the simulated runtime, keeping the resources each
// container was created with (the sim itself keeps none).
type createRecorder struct {
	*sim.Runtime
	mu  sync.Mutex
	res map[string]*runtimeapi.LinuxContainerResources // by container name
}

func (r *createRecorder) CreateContainer(ctx context.Context, sandboxID string, config *runtimeapi.ContainerConfig, sb *runtimeapi.PodSandboxConfig) (string, error) {
	r.mu.Lock()
	r.res[config.GetMetadata().GetName()] = config.GetLinux().GetResources()
	r.mu.Unlock()
	return r.Runtime.CreateContainer(ctx, sandboxID, config, sb)
}

// TestOOMScoreAdjReachesRuntime: the kubelet creates containers with the
// oom_score_adj of its node's memory capacity (Config.Memory) and their
// hugepage limits.
func TestOOMScoreAdjReachesRuntime(t *testing.T) {
	h := newHarness(t, nil)
	rec := &createRecorder{Runtime: h.rt, res: map[string]*runtimeapi.LinuxContainerResources{}}
	h.krt = rec
	h.k = h.newKubelet(func(c *Config) {
		c.Memory = resourceMust("4Gi")
		c.HugePages = []HugePages{{PageSize: 2 << 20, Pages: 8}, {PageSize: 1 << 30}}
	})
	p := h.create(h.pod("burstable", func(p *v1.Pod) {
		p.Status.QOSClass = v1.PodQOSBurstable
		p.Spec.Containers[0].Resources = v1.ResourceRequirements{
			Requests: resList("memory", "1Gi"),
			Limits:   resList("hugepages-2Mi", "4Mi", "memory", "2Gi"),
		}
	}))
	if cs := cstatus(h.sync(p), "app"); cs.State.Running == nil {
		t.Fatalf("container not running: %+v", cs.State)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	got := rec.res["app"]
	if got.GetOomScoreAdj() != 750 { // 1000 - 1000 * 1Gi / 4Gi
		t.Errorf("oom_score_adj = %d, want 750", got.GetOomScoreAdj())
	}
	// Every page size of the node, 0 unless limited (upstream's
	// GetHugepageLimitsFromResources).
	if hl := got.GetHugepageLimits(); len(hl) != 2 || hl[0].PageSize != "2MB" || hl[0].Limit != 4<<20 || hl[1].PageSize != "1GB" || hl[1].Limit != 0 {
		t.Errorf("hugepage limits = %v, want 2MB: %d, 1GB: 0", hl, 4<<20)
	}
}
