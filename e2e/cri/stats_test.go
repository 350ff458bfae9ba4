package cri

import (
	"os"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/e2e/cri/harness"
	"github.com/kubeproof/kubeproof/e2e/cri/images"
	"github.com/kubeproof/kubeproof/impl/kubelet/eviction"
	kruntime "github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

// TestCRIStatsOnContainerd: containerd's ListContainerStats, through our
// CRI client, reports a running container's memory working set and what it
// wrote to its writable layer, and the eviction manager's host provider
// turns them into the pod's usage; ImageFsInfo names a directory on this
// host, ListImages lists the pod's image and the verbose Status names the
// sandbox image. Read-only: nothing is removed.
func TestCRIStatsOnContainerd(t *testing.T) {
	ns := newNamespace(t)
	p := podSpec("stats", "dd if=/dev/zero of=/fill bs=1M count=8 2>/dev/null; echo filled; exec sleep 3600")
	p.Spec.TerminationGracePeriodSeconds = ptr(int64(1))
	createPod(t, ns, p)
	got := waitPod(t, ns, p.Name, 60*time.Second, "Running", isRunning)
	var n *harness.Node
	for _, cand := range env.Nodes {
		if cand.Name == got.Spec.NodeName {
			n = cand
		}
	}
	if n == nil || n.CRI == nil {
		t.Fatalf("pod on node %q, not one of the suite's CRI nodes", got.Spec.NodeName)
	}
	ctx := ctxFor(t, 60*time.Second)
	selector := map[string]string{kruntime.LabelPodUID: string(got.UID)}

	// The writable layer holds the 8 MiB once dd is done (the log line
	// says so; stats may lag it by containerd's collection period).
	var cs *runtimeapi.ContainerStats
	for deadline := time.Now().Add(30 * time.Second); ; {
		stats, err := n.CRI.ListContainerStats(ctx, &runtimeapi.ContainerStatsFilter{LabelSelector: selector})
		if err != nil {
			t.Fatalf("ListContainerStats: %v", err)
		}
		if len(stats) == 1 && stats[0].GetWritableLayer().GetUsedBytes().GetValue() >= 8<<20 && stats[0].GetMemory().GetWorkingSetBytes().GetValue() > 0 {
			cs = stats[0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("container stats of the pod: %v", stats)
		}
		time.Sleep(time.Second)
	}
	if cs.Attributes.Labels[kruntime.LabelContainerName] != "main" {
		t.Errorf("container stats attributes: %v", cs.Attributes)
	}

	hp := eviction.HostProvider{RootDir: os.TempDir(), Stats: n.CRI}
	_, podStats, err := hp.Observe(ctx, []*v1.Pod{got})
	if err != nil {
		t.Fatal(err)
	}
	if ps := podStats[0]; ps.Memory["main"] <= 0 || ps.Disk < 8<<20 {
		t.Errorf("host provider's pod usage: memory %v, disk %d", ps.Memory, ps.Disk)
	}

	sandboxes, err := n.CRI.ListPodSandboxStats(ctx, &runtimeapi.PodSandboxStatsFilter{LabelSelector: selector})
	switch {
	case status.Code(err) == codes.Unimplemented:
		t.Logf("this containerd has no ListPodSandboxStats: %v", err)
	case err != nil:
		t.Fatalf("ListPodSandboxStats: %v", err)
	case len(sandboxes) != 1:
		t.Errorf("pod sandbox stats: %v", sandboxes)
	}

	imageFs, _, err := n.CRI.ImageFsInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(imageFs) == 0 || imageFs[0].GetUsedBytes().GetValue() == 0 {
		t.Fatalf("image filesystems: %v", imageFs)
	}
	if fi, err := os.Stat(imageFs[0].GetFsId().GetMountpoint()); err != nil || !fi.IsDir() {
		t.Errorf("image filesystem mountpoint %q: %v", imageFs[0].GetFsId().GetMountpoint(), err)
	}
	list, err := n.CRI.ListImages(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, img := range list {
		for _, tag := range img.RepoTags {
			found = found || tag == busybox
		}
	}
	if !found {
		t.Errorf("ListImages has no %s: %v", busybox, list)
	}
	// The image GC keeps the sandbox image, which containerd names in
	// its verbose status.
	if si, err := n.CRI.SandboxImage(ctx); err != nil || si != images.PauseRef {
		t.Errorf("SandboxImage = %q, %v; want %s", si, err, images.PauseRef)
	}
}
