package fakecri

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// TestResizeOverCRI: the CRI client's UpdateContainerResources and
// UpdatePodSandboxResources reach the runtime over gRPC, the container's
// ContainerStatus reports the new cgroup values, and an unknown
// container's update is runtime.ErrNotFound.
func TestResizeOverCRI(t *testing.T) {
	ctx := context.Background()
	rt, err := sim.New(sim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	client := dial(t, rt)
	sb, err := client.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "ns", Uid: "p"},
		Labels:   map[string]string{runtime.LabelPodUID: "p"},
	}, "")
	if err != nil {
		t.Fatal(err)
	}
	img := &runtimeapi.ImageSpec{Image: "busybox:1"}
	ref, err := client.PullImage(ctx, img)
	if err != nil {
		t.Fatal(err)
	}
	id, err := client.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "c"}, Image: &runtimeapi.ImageSpec{Image: ref},
		Labels: map[string]string{runtime.LabelPodUID: "p"},
		Linux:  &runtimeapi.LinuxContainerConfig{Resources: &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := client.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	want := &runtimeapi.LinuxContainerResources{CpuShares: 512, CpuPeriod: 100000, CpuQuota: 50000, MemoryLimitInBytes: 64 << 20}
	if err := client.UpdateContainerResources(ctx, id, want); err != nil {
		t.Fatal(err)
	}
	st, err := client.ContainerStatus(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.GetResources().GetLinux(); !proto.Equal(got, want) {
		t.Errorf("ContainerStatus resources %v, want %v", got, want)
	}
	if err := client.UpdatePodSandboxResources(ctx, sb, nil, want); err != nil {
		t.Fatal(err)
	}
	if l, err := rt.SandboxLinux(sb); err != nil || !proto.Equal(l.GetResources(), want) {
		t.Errorf("sandbox resources %v (%v), want %v", l.GetResources(), err, want)
	}
	if err := client.UpdateContainerResources(ctx, "nosuch", want); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("unknown container: err = %v, want runtime.ErrNotFound", err)
	}
}
