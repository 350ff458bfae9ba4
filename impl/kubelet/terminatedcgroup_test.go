package kubelet

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// volumeCheckingCgroups is plainCgroups recording, at each destroy,
// whether the volume directory volumeDir was still there; destroy fails
// while fail is above 0 (counted down), as a cgroup a process will not
// leave.
type volumeCheckingCgroups struct {
	*plainCgroups
	volumeDir  string
	volumeLeft []bool
	fail       int
}

func (c *volumeCheckingCgroups) destroy(name string) error {
	_, err := os.Lstat(c.volumeDir)
	c.volumeLeft = append(c.volumeLeft, err == nil)
	if c.fail > 0 {
		c.fail--
		return errors.New("device or resource busy")
	}
	return c.plainCgroups.destroy(name)
}

// TestTerminatedPodCgroupRemoved: a terminated pod's cgroup is removed by
// the pod's own sync right after its volumes are torn down, as
// upstream's SyncTerminatedPod destroys it once its volumes are unmounted
// (not only by the orphaned pod cgroup clean-up, the backstop, which is
// not run here), once: a resync of the finished pod, still in the API,
// does not remove it again. A removal that fails fails the sync and
// keeps a deleted pod in the API (no final delete: upstream's
// TerminatePod, which lets the status manager delete the pod, comes after
// the cgroup's Destroy); the retried sync removes it and deletes the pod.
func TestTerminatedPodCgroupRemoved(t *testing.T) {
	for _, deleted := range []bool{false, true} {
		t.Run(map[bool]string{false: "completed", true: "deleted"}[deleted], func(t *testing.T) {
			dir := t.TempDir()
			for _, hier := range []string{"cpu", "memory"} {
				os.Mkdir(filepath.Join(dir, hier), 0o755)
			}
			root := t.TempDir()
			h, _ := resizeHarness(t, func(c *Config) { c.CgroupDir, c.RootDir = dir, root })
			fake := &volumeCheckingCgroups{plainCgroups: &plainCgroups{cgroupfs: h.k.cgroups.(cgroupfs)}}
			h.k.cgroups = fake
			p := h.create(h.pod("job", func(p *v1.Pod) {
				p.Spec.RestartPolicy = v1.RestartPolicyNever
				if !deleted {
					p.Annotations[sim.AnnotationExitAfter] = "5s"
				}
				p.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
				p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "scratch", MountPath: "/data"}}
			}))
			fake.volumeDir = h.k.volumeDir(p.UID, "kubernetes.io~empty-dir", "scratch")
			if got := h.sync(p); got.Status.Phase != v1.PodRunning {
				t.Fatalf("phase %s", got.Status.Phase)
			}
			cg := "/kubepods/besteffort/pod" + string(p.UID)
			if !fake.exists(cg) {
				t.Fatalf("%s not made", cg)
			}
			if _, err := os.Stat(fake.volumeDir); err != nil {
				t.Fatalf("volume not set up: %v", err)
			}
			if deleted {
				fake.fail = 1
				deletePod(t, h, p, 30)
				h.k.HandlePod(h.get(p))
				if _, err := h.k.syncPod(h.ctx, p.UID); err == nil {
					t.Fatal("the sync whose cgroup removal failed succeeded")
				}
				if h.get(p) == nil {
					t.Fatal("pod finally deleted though its cgroup removal failed")
				}
				if !fake.exists(cg) {
					t.Fatalf("%s gone though its removal failed", cg)
				}
			} else {
				h.step(5 * time.Second)
			}
			got := h.sync(p)
			switch {
			case deleted && got != nil:
				t.Fatalf("deleted pod not finally deleted once terminated: %s", got.Status.Phase)
			case !deleted && (got == nil || got.Status.Phase != v1.PodSucceeded):
				t.Fatalf("pod %v, want Succeeded and still in the API", got)
			}
			if !slices.Equal(fake.destroyed, []string{cg}) {
				t.Fatalf("destroyed %v by the sync, want [%s]", fake.destroyed, cg)
			}
			if slices.Contains(fake.volumeLeft, true) {
				t.Errorf("cgroup removed before the volumes were torn down: %v", fake.volumeLeft)
			}
			if left := cgroupLeft(dir, cg, "cpu", "memory"); len(left) != 0 {
				t.Errorf("terminated pod's cgroup left in %v", left)
			}
			if deleted {
				return
			}
			h.step(time.Minute)
			h.sync(p)
			if len(fake.destroyed) != 1 {
				t.Errorf("removed again by a resync of the finished pod: %v", fake.destroyed)
			}
		})
	}
}

// TestTerminatedPodCgroupBackstop: a terminated pod whose sync failed to
// remove its cgroup (a process that would not leave) has it removed by
// the orphaned pod cgroup clean-up, the backstop, while the pod is still
// in the API, as upstream's HandlePodCleanups does for a pod its workers
// no longer run.
func TestTerminatedPodCgroupBackstop(t *testing.T) {
	dir := t.TempDir()
	for _, hier := range []string{"cpu", "memory"} {
		os.Mkdir(filepath.Join(dir, hier), 0o755)
	}
	h, _ := resizeHarness(t, func(c *Config) { c.CgroupDir, c.RootDir = dir, t.TempDir() })
	fake := &volumeCheckingCgroups{plainCgroups: &plainCgroups{cgroupfs: h.k.cgroups.(cgroupfs)}}
	h.k.cgroups = fake
	p := h.sync(h.create(h.pod("job", func(p *v1.Pod) {
		p.Spec.RestartPolicy = v1.RestartPolicyNever
		p.Annotations[sim.AnnotationExitAfter] = "5s"
	})))
	cg := "/kubepods/besteffort/pod" + string(p.UID)
	fake.volumeDir = filepath.Join(dir, "none")
	fake.fail = 1
	h.step(5 * time.Second)
	h.k.HandlePod(h.get(p))
	if _, err := h.k.syncPod(h.ctx, p.UID); err == nil {
		t.Fatal("the sync whose cgroup removal failed succeeded")
	}
	if got := h.get(p); got == nil || got.Status.Phase != v1.PodSucceeded || !fake.exists(cg) {
		t.Fatalf("pod %v, cgroup there %v; want Succeeded, its cgroup left", got, fake.exists(cg))
	}
	h.k.cleanupOrphanedPodCgroups(h.ctx)
	if !slices.Equal(fake.destroyed, []string{cg}) || fake.exists(cg) {
		t.Fatalf("destroyed %v by the clean-up, want [%s]", fake.destroyed, cg)
	}
}
