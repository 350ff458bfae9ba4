package sim

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

// TestUpdateContainerResources: a container reports the cgroup values it
// was created with (CRI ContainerStatus.Resources.Linux, and PodState)
// until an UpdateContainerResources gives it others, which it reports from
// then on; another container created with the same values keeps them (the
// created values are shared, an update is the container's own). An exited
// container is refused, an unknown one is runtime.ErrNotFound.
func TestUpdateContainerResources(t *testing.T) {
	ctx := context.Background()
	r, _ := newSim(t, "10.244.3.0/24")
	sb, err := r.RunPodSandbox(ctx, sandboxConfig("pod", nil), "")
	if err != nil {
		t.Fatal(err)
	}
	img := &runtimeapi.ImageSpec{Image: "busybox:1"}
	if _, err := r.PullImage(ctx, img); err != nil {
		t.Fatal(err)
	}
	created := &runtimeapi.LinuxContainerResources{CpuShares: 102, CpuPeriod: 100000, CpuQuota: 20000, MemoryLimitInBytes: 64 << 20}
	var ids []string
	for _, name := range []string{"a", "b"} {
		id, err := r.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: name}, Image: img,
			Labels: map[string]string{runtime.LabelPodUID: "pod", runtime.LabelContainerName: name},
			Linux:  &runtimeapi.LinuxContainerConfig{Resources: proto.Clone(created).(*runtimeapi.LinuxContainerResources)},
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.StartContainer(ctx, id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	reported := func(id string) (status, podState *runtimeapi.LinuxContainerResources) {
		t.Helper()
		ps, err := r.PodState(ctx, "pod")
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range ps.Containers {
			if c.ID == id {
				podState = c.Resources
			}
		}
		return state(t, r, id).GetResources().GetLinux(), podState
	}
	for _, id := range ids {
		if st, ps := reported(id); !proto.Equal(st, created) || !proto.Equal(ps, created) {
			t.Fatalf("container %s reports %v (ContainerStatus) and %v (PodState), want what it was created with, %v", id, st, ps, created)
		}
	}

	resized := &runtimeapi.LinuxContainerResources{CpuShares: 512, CpuPeriod: 100000, CpuQuota: 50000, MemoryLimitInBytes: 128 << 20}
	if err := r.UpdateContainerResources(ctx, ids[0], resized); err != nil {
		t.Fatal(err)
	}
	if st, ps := reported(ids[0]); !proto.Equal(st, resized) || !proto.Equal(ps, resized) {
		t.Fatalf("resized container reports %v (ContainerStatus) and %v (PodState), want %v", st, ps, resized)
	}
	if st, ps := reported(ids[1]); !proto.Equal(st, created) || !proto.Equal(ps, created) {
		t.Fatalf("the other container reports %v and %v after its neighbour's resize, want %v", st, ps, created)
	}

	if err := r.StopContainer(ctx, ids[1], 0); err != nil {
		t.Fatal(err)
	}
	if err := r.UpdateContainerResources(ctx, ids[1], resized); err == nil {
		t.Error("an exited container's resources were updated")
	}
	if err := r.UpdateContainerResources(ctx, "nosuch", resized); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("unknown container: err = %v, want runtime.ErrNotFound", err)
	}
}

// TestUpdatePodSandboxResources: a sandbox's Linux config holds the
// resources and overhead of its last UpdatePodSandboxResources, its
// cgroup parent and security context as created.
func TestUpdatePodSandboxResources(t *testing.T) {
	ctx := context.Background()
	r, _ := newSim(t, "10.244.3.0/24")
	cfg := sandboxConfig("pod", nil)
	cfg.Linux = &runtimeapi.LinuxPodSandboxConfig{
		CgroupParent: "/kubepods/podpod",
		Resources:    &runtimeapi.LinuxContainerResources{CpuShares: 102, CpuPeriod: 100000},
	}
	sb, err := r.RunPodSandbox(ctx, cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	res := &runtimeapi.LinuxContainerResources{CpuShares: 512, CpuPeriod: 100000, MemoryLimitInBytes: 1 << 30}
	if err := r.UpdatePodSandboxResources(ctx, sb, &runtimeapi.LinuxContainerResources{}, res); err != nil {
		t.Fatal(err)
	}
	l, err := r.SandboxLinux(sb)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(l.Resources, res) || l.CgroupParent != "/kubepods/podpod" {
		t.Errorf("sandbox Linux config after the update: %v", l)
	}
	if err := r.UpdatePodSandboxResources(ctx, "nosuch", nil, res); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("unknown sandbox: err = %v, want runtime.ErrNotFound", err)
	}
}
