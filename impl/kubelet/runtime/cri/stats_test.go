package cri_test

import (
	"context"
	"net"
	"path/filepath"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/cri"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/cri/fakecri"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// serve dials a fake CRI server backed by rt.
func serve(t *testing.T, rt runtime.Runtime) *cri.Runtime {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "cri.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	fakecri.New(rt).Register(g)
	go g.Serve(lis)
	t.Cleanup(g.Stop)
	c, err := cri.Dial(t.Context(), "unix://"+sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// runPod starts a sandbox with annotations and one running container
// "app" of image "nginx" through the client.
func runPod(t *testing.T, c *cri.Runtime, uid string, ann map[string]string) (sandbox, container string) {
	t.Helper()
	ctx := t.Context()
	labels := map[string]string{runtime.LabelPodUID: uid}
	sc := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p-" + uid, Namespace: "default", Uid: uid}, Labels: labels, Annotations: ann}
	sb, err := c.RunPodSandbox(ctx, sc, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PullImage(ctx, &runtimeapi.ImageSpec{Image: "nginx"}); err != nil {
		t.Fatal(err)
	}
	id, err := c.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "app"}, Image: &runtimeapi.ImageSpec{Image: "nginx"},
		Labels: map[string]string{runtime.LabelPodUID: uid, runtime.LabelContainerName: "app"},
	}, sc)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	return sb, id
}

func TestStatsOverCRI(t *testing.T) {
	rt, err := sim.New(sim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	rt.SetImageFsMountpoint("/var/lib/containerd")
	rt.SetImageSize("nginx", 60<<20)
	c := serve(t, rt)
	ctx := t.Context()
	sb, id := runPod(t, c, "uid-a", map[string]string{
		sim.AnnotationMemoryUsage: "300Mi", sim.AnnotationDiskUsage: "5Mi", sim.AnnotationCPUUsage: "250m", sim.AnnotationProcesses: "3",
	})

	stats, err := c.ListContainerStats(ctx, &runtimeapi.ContainerStatsFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(stats) != 1 {
		t.Fatalf("%d container stats, want 1", len(stats))
	}
	s := stats[0]
	if s.Attributes.Id != id || s.Attributes.Labels[runtime.LabelContainerName] != "app" ||
		s.Memory.WorkingSetBytes.Value != 300<<20 || s.WritableLayer.UsedBytes.Value != 5<<20 || s.Cpu.UsageNanoCores.Value != 250_000_000 {
		t.Errorf("container stats: %v", s)
	}

	pods, err := c.ListPodSandboxStats(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 1 || pods[0].Attributes.Id != sb || pods[0].Linux.Process.ProcessCount.Value != 3 ||
		pods[0].Linux.Memory.WorkingSetBytes.Value != 300<<20 || len(pods[0].Linux.Containers) != 1 {
		t.Errorf("pod sandbox stats: %v", pods)
	}

	imgFs, _, err := c.ImageFsInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(imgFs) != 1 || imgFs[0].FsId.Mountpoint != "/var/lib/containerd" || imgFs[0].UsedBytes.Value != 60<<20+5<<20 {
		t.Errorf("image fs: %v", imgFs)
	}

	images, err := c.ListImages(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(images) != 1 || images[0].RepoTags[0] != "docker.io/library/nginx:latest" || images[0].Size != 60<<20 || images[0].Id == "" {
		t.Fatalf("images: %v", images)
	}
	// Removed by id; removing it again is no error.
	for range 2 {
		if err := c.RemoveImage(ctx, &runtimeapi.ImageSpec{Image: images[0].Id}); err != nil {
			t.Fatal(err)
		}
	}
	if images, err = c.ListImages(ctx, nil); err != nil || len(images) != 0 {
		t.Fatalf("images after removal: %v %v", images, err)
	}
	if ref, _ := c.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: "nginx"}); ref != "" {
		t.Errorf("removed image still present: %s", ref)
	}

	// A stopped container uses no memory; its writable layer stays.
	if err := c.StopContainer(ctx, id, 0); err != nil {
		t.Fatal(err)
	}
	stats, _ = c.ListContainerStats(ctx, &runtimeapi.ContainerStatsFilter{Id: id})
	if len(stats) != 1 || stats[0].Memory.WorkingSetBytes.Value != 0 || stats[0].WritableLayer.UsedBytes.Value != 5<<20 {
		t.Errorf("stopped container stats: %v", stats)
	}
}

// bare hides the simulation's stats and image methods.
type bare struct{ runtime.Runtime }

func TestStatsUnimplementedOverCRI(t *testing.T) {
	rt, err := sim.New(sim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	c := serve(t, bare{rt})
	_, err = c.ListContainerStats(context.Background(), nil)
	if status.Code(err) != codes.Unimplemented {
		t.Errorf("ListContainerStats of a runtime without stats: %v", err)
	}
	if err := c.RemoveImage(t.Context(), &runtimeapi.ImageSpec{Image: "nginx"}); status.Code(err) != codes.Unimplemented {
		t.Errorf("RemoveImage of a runtime without image management: %v", err)
	}
}

// SandboxImage reads containerd's verbose Status config.
func TestSandboxImageOverCRI(t *testing.T) {
	rt, err := sim.New(sim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "cri.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	srv := fakecri.New(rt)
	srv.Register(g)
	go g.Serve(lis)
	t.Cleanup(g.Stop)
	c, err := cri.Dial(t.Context(), "unix://"+sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got, err := c.SandboxImage(t.Context()); err != nil || got != "" {
		t.Errorf("SandboxImage of a runtime that says none = %q, %v", got, err)
	}
	srv.SetSandboxImage("registry.k8s.io/pause:3.6")
	if got, err := c.SandboxImage(t.Context()); err != nil || got != "registry.k8s.io/pause:3.6" {
		t.Errorf("SandboxImage = %q, %v", got, err)
	}
}
