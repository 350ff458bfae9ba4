package kubelet

import (
	"testing"

	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// sandboxRes is a LinuxContainerResources of the fields the kubelet sets
// on a sandbox: CPU shares, CFS quota and period, memory limit.
func sandboxRes(shares, quota, memory int64) *runtimeapi.LinuxContainerResources {
	return &runtimeapi.LinuxContainerResources{CpuShares: shares, CpuQuota: quota, CpuPeriod: cpuPeriod, MemoryLimitInBytes: memory}
}

func resList(kv ...string) v1.ResourceList {
	l := v1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		l[v1.ResourceName(kv[i])] = resourceMust(kv[i+1])
	}
	return l
}

func withResources(req, lim v1.ResourceList) v1.Container {
	return v1.Container{Name: "c", Resources: v1.ResourceRequirements{Requests: req, Limits: lim}}
}

// TestSandboxResources: RunPodSandbox gets the pod's aggregated requests
// and limits (overhead left out) and its overhead (requests equal to
// limits; empty without one) as cgroup values, as upstream's kubelet
// (applySandboxResources, calculateLinuxResources with the CFS quota on,
// its default, and a 100 ms period).
func TestSandboxResources(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	for _, tc := range []struct {
		name          string
		spec          v1.PodSpec
		res, overhead *runtimeapi.LinuxContainerResources
	}{{
		name:     "no resources: minimum shares, no quota, the period all the same",
		spec:     v1.PodSpec{Containers: []v1.Container{{Name: "app"}}},
		res:      sandboxRes(2, 0, 0),
		overhead: &runtimeapi.LinuxContainerResources{},
	}, {
		name: "app containers summed; the overhead apart",
		spec: v1.PodSpec{
			Containers: []v1.Container{
				withResources(resList("cpu", "250m", "memory", "64Mi"), resList("cpu", "500m", "memory", "128Mi")),
				withResources(resList("cpu", "250m"), resList("cpu", "1")),
			},
			Overhead: resList("cpu", "250m", "memory", "120Mi"),
		},
		res:      sandboxRes(512, 150000, 128<<20),
		overhead: sandboxRes(256, 25000, 120<<20),
	}, {
		name:     "no CPU request: shares from the limit",
		spec:     v1.PodSpec{Containers: []v1.Container{withResources(nil, resList("cpu", "2"))}},
		res:      sandboxRes(2048, 200000, 0),
		overhead: &runtimeapi.LinuxContainerResources{},
	}, {
		name: "init containers and sidecars: the larger of the running sum and the init peak",
		spec: v1.PodSpec{
			InitContainers: []v1.Container{
				withResources(resList("cpu", "300m"), resList("cpu", "300m")),
				{Name: "sidecar", RestartPolicy: &always, Resources: v1.ResourceRequirements{Requests: resList("cpu", "50m"), Limits: resList("cpu", "100m")}},
				withResources(resList("cpu", "1"), resList("cpu", "2", "memory", "1Gi")),
			},
			Containers: []v1.Container{withResources(resList("cpu", "100m"), resList("cpu", "200m", "memory", "256Mi"))},
		},
		res:      sandboxRes(1075, 210000, 1<<30),
		overhead: &runtimeapi.LinuxContainerResources{},
	}, {
		name: "pod-level resources replace the containers' sums",
		spec: v1.PodSpec{
			Resources:  &v1.ResourceRequirements{Requests: resList("cpu", "1"), Limits: resList("cpu", "2", "memory", "1Gi")},
			Containers: []v1.Container{withResources(resList("cpu", "100m"), nil)},
		},
		res:      sandboxRes(1024, 200000, 1<<30),
		overhead: &runtimeapi.LinuxContainerResources{},
	}, {
		name:     "bounds: at least 2 shares and a 1 ms quota",
		spec:     v1.PodSpec{Containers: []v1.Container{withResources(resList("cpu", "1m"), resList("cpu", "5m"))}},
		res:      sandboxRes(2, 1000, 0),
		overhead: &runtimeapi.LinuxContainerResources{},
	}, {
		name:     "bounds: at most 262144 shares",
		spec:     v1.PodSpec{Containers: []v1.Container{withResources(resList("cpu", "300"), nil)}},
		res:      sandboxRes(262144, 0, 0),
		overhead: &runtimeapi.LinuxContainerResources{},
	}, {
		name:     "an overhead of memory only: minimum shares, no quota",
		spec:     v1.PodSpec{Containers: []v1.Container{{Name: "app"}}, Overhead: resList("memory", "100Mi")},
		res:      sandboxRes(2, 0, 0),
		overhead: sandboxRes(2, 0, 100<<20),
	}} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: tc.spec}
			pod.Name, pod.Namespace, pod.UID = "p", "default", "uid-p"
			cfg := sandboxConfig(pod, 0, t.TempDir(), cgroupParams{}, rootQOS)
			if got := cfg.GetLinux().GetResources(); !proto.Equal(got, tc.res) {
				t.Errorf("resources\n got %v\nwant %v", got, tc.res)
			}
			if got := cfg.GetLinux().GetOverhead(); got == nil || !proto.Equal(got, tc.overhead) {
				t.Errorf("overhead\n got %v\nwant %v", got, tc.overhead)
			}
		})
	}
}

// TestSandboxResourcesOverCRI: a pod's resources and overhead reach the
// runtime over CRI with RunPodSandbox.
func TestSandboxResourcesOverCRI(t *testing.T) {
	h, _ := newRecordingCRIHarness(t)
	p := h.create(h.pod("kata", func(p *v1.Pod) {
		p.Spec.Containers[0].Resources = v1.ResourceRequirements{Requests: resList("cpu", "500m", "memory", "64Mi"), Limits: resList("cpu", "1", "memory", "64Mi")}
		p.Spec.Overhead = resList("cpu", "250m", "memory", "120Mi")
	}))
	if cs := cstatus(h.sync(p), "app"); cs.State.Running == nil {
		t.Fatalf("container not running: %+v", cs.State)
	}
	sbs, err := h.rt.ListPodSandbox(h.ctx, nil)
	if err != nil || len(sbs) != 1 {
		t.Fatalf("sandboxes %v %v", sbs, err)
	}
	linux, err := h.rt.SandboxLinux(sbs[0].Id)
	if err != nil {
		t.Fatal(err)
	}
	if want := sandboxRes(512, 100000, 64<<20); !proto.Equal(linux.GetResources(), want) {
		t.Errorf("sandbox resources over CRI\n got %v\nwant %v", linux.GetResources(), want)
	}
	if want := sandboxRes(256, 25000, 120<<20); !proto.Equal(linux.GetOverhead(), want) {
		t.Errorf("sandbox overhead over CRI\n got %v\nwant %v", linux.GetOverhead(), want)
	}
}
