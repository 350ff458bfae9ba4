package kubelet

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// stepRecorder records a terminated pod's last steps in order: status
// writes (phase, and whether the volume directory and the pod cgroup
// were still there), the cgroup's removal, the final delete.
type stepRecorder struct {
	*plainCgroups
	mu        sync.Mutex
	volumeDir string
	cgroup    string
	steps     []string
}

func (r *stepRecorder) add(step string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.steps = append(r.steps, step)
}

func (r *stepRecorder) left() string {
	_, err := os.Lstat(r.volumeDir)
	return fmt.Sprintf("volume %v, cgroup %v", err == nil, r.exists(r.cgroup))
}

func (r *stepRecorder) destroy(name string) error {
	r.add("cgroup removed (" + r.left() + ")")
	return r.plainCgroups.destroy(name)
}

// TestTerminatedPodFinalStatusAfterTeardown: a pod deleted while Pending
// (its init container running) is written, once its kill succeeded, the
// plain terminal status (Pending, as generated), then has its volumes
// torn down and its cgroup removed, and only then gets its final status
// (upstream's TerminatePod: Failed) and, last, its final delete, as
// upstream's SyncTerminatingPod writes the status of the terminated pod
// and SyncTerminatedPod unmounts the volumes, destroys the cgroup and
// ends with TerminatePod, which lets the status manager delete the pod.
// Before, the final status was written first, the volumes and the cgroup
// still there.
func TestTerminatedPodFinalStatusAfterTeardown(t *testing.T) {
	dir := t.TempDir()
	for _, hier := range []string{"cpu", "memory"} {
		if err := os.Mkdir(filepath.Join(dir, hier), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	h, _ := resizeHarness(t, func(c *Config) { c.CgroupDir, c.RootDir = dir, t.TempDir() })
	rec := &stepRecorder{plainCgroups: &plainCgroups{cgroupfs: h.k.cgroups.(cgroupfs)}}
	h.k.cgroups = rec
	p := h.create(h.pod("init", func(p *v1.Pod) {
		p.Spec.InitContainers = []v1.Container{{Name: "setup", Image: "busybox"}}
		p.Annotations[sim.AnnotationExitAfter+".setup"] = "1h"
		p.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
		p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "scratch", MountPath: "/data"}}
	}))
	rec.volumeDir = h.k.volumeDir(p.UID, "kubernetes.io~empty-dir", "scratch")
	rec.cgroup = "/kubepods/besteffort/pod" + string(p.UID)
	if got := h.sync(p); got.Status.Phase != v1.PodPending {
		t.Fatalf("phase %s", got.Status.Phase)
	}
	if _, err := os.Stat(rec.volumeDir); err != nil || !rec.exists(rec.cgroup) {
		t.Fatalf("volume (%v) or cgroup (%v) not set up", err, rec.exists(rec.cgroup))
	}
	h.client.PrependReactor("update", "pods", func(a clienttesting.Action) (bool, k8sruntime.Object, error) {
		if a.GetSubresource() == "status" {
			pod := a.(clienttesting.UpdateAction).GetObject().(*v1.Pod)
			rec.add(fmt.Sprintf("status %s (%s)", pod.Status.Phase, rec.left()))
		}
		return false, nil, nil
	})
	h.client.PrependReactor("delete", "pods", func(clienttesting.Action) (bool, k8sruntime.Object, error) {
		rec.add("final delete (" + rec.left() + ")")
		return false, nil, nil
	})
	deletePod(t, h, p, 30)
	if got := h.sync(p); got != nil {
		t.Fatalf("not finally deleted: %s", got.Status.Phase)
	}
	want := []string{
		"status Pending (volume true, cgroup true)",
		"cgroup removed (volume false, cgroup true)",
		"status Failed (volume false, cgroup false)",
		"final delete (volume false, cgroup false)",
	}
	if !slices.Equal(rec.steps, want) {
		t.Fatalf("steps:\n%q\nwant:\n%q", rec.steps, want)
	}
}
