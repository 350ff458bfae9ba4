package kubelet

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// TestSafeOpen: the openat walk of a subPath (upstream's doSafeOpen)
// opens a path inside its volume and refuses a symlink anywhere on the
// way (in the middle, at the end, absolute or leading back inside), a
// path leading out with "..", and a volume that is itself a symlink.
func TestSafeOpen(t *testing.T) {
	base := t.TempDir()
	outside := t.TempDir()
	mustMkdir(t, filepath.Join(base, "a", "b", "c"))
	mustWrite(t, filepath.Join(base, "a", "f"), "f")
	for link, target := range map[string]string{
		"a/mid": "b",     // inside the volume, in the middle of the path
		"a/lf":  "f",     // inside, at the end
		"abs":   outside, // absolute, out of the volume
		"a/up":  "../..", // relative, out of the volume
	} {
		if err := os.Symlink(target, filepath.Join(base, link)); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{base, filepath.Join(base, "a", "b", "c"), filepath.Join(base, "a", "f")} {
		fd, err := safeOpen(p, base)
		if err != nil {
			t.Errorf("safeOpen(%s): %v", p, err)
			continue
		}
		var got, want syscall.Stat_t
		if err := syscall.Fstat(fd, &got); err != nil {
			t.Fatal(err)
		}
		syscall.Close(fd)
		if err := syscall.Stat(p, &want); err != nil {
			t.Fatal(err)
		}
		if got.Ino != want.Ino || got.Dev != want.Dev {
			t.Errorf("safeOpen(%s) opened another file", p)
		}
	}
	for p, want := range map[string]string{
		"a/mid/c":   "unexpected symlink found " + filepath.Join(base, "a", "mid"),
		"a/lf":      "unexpected symlink found " + filepath.Join(base, "a", "lf"),
		"abs":       "unexpected symlink found " + filepath.Join(base, "abs"),
		"abs/x":     "unexpected symlink found " + filepath.Join(base, "abs"),
		"a/up/tmp":  "unexpected symlink found " + filepath.Join(base, "a", "up"),
		"../escape": "path " + filepath.Dir(base) + " is outside of allowed base " + base,
		"a/nope":    "cannot open " + filepath.Join(base, "a", "nope") + ": no such file or directory",
	} {
		fd, err := safeOpen(filepath.Join(base, p), base)
		if err == nil {
			syscall.Close(fd)
			t.Errorf("safeOpen(%s) succeeded, want %q", p, want)
		} else if err.Error() != want {
			t.Errorf("safeOpen(%s): %v, want %q", p, err, want)
		}
	}
	link := filepath.Join(t.TempDir(), "vol")
	if err := os.Symlink(base, link); err != nil {
		t.Fatal(err)
	}
	if fd, err := safeOpen(filepath.Join(link, "a"), link); err == nil || !errors.Is(err, syscall.ELOOP) {
		if err == nil {
			syscall.Close(fd)
		}
		t.Errorf("safeOpen in a volume that is a symlink: %v, want ELOOP", err)
	}
}

// TestSafeMakeDir: a missing subPath's directories are made with the
// volume's mode (sticky and setgid bits too, whatever the umask), through
// a symlink leading inside the volume, never through one leading out.
func TestSafeMakeDir(t *testing.T) {
	base := t.TempDir()
	outside := t.TempDir()
	mustMkdir(t, filepath.Join(base, "real"))
	if err := os.Symlink("real", filepath.Join(base, "in")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(base, "out")); err != nil {
		t.Fatal(err)
	}
	mode := os.ModePerm | os.ModeSticky | os.ModeSetgid
	if err := safeMakeDir(filepath.Join(base, "x", "y"), base, mode); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"x", "x/y"} {
		st, err := os.Stat(filepath.Join(base, d))
		if err != nil || !st.IsDir() || st.Mode()&(os.ModePerm|os.ModeSticky|os.ModeSetgid) != mode {
			t.Errorf("%s: %v %v, want a directory of mode %v", d, st.Mode(), err, mode)
		}
	}
	if err := safeMakeDir(filepath.Join(base, "in", "z"), base, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(base, "real", "z")); err != nil {
		t.Errorf("through a link inside the volume: %v", err)
	}
	if err := safeMakeDir(filepath.Join(base, "out", "z"), base, 0o755); err == nil || !strings.Contains(err.Error(), "is outside of allowed base") {
		t.Errorf("through a link out of the volume: %v, want refused", err)
	}
	mustWrite(t, filepath.Join(base, "file"), "")
	if err := safeMakeDir(filepath.Join(base, "file"), base, 0o755); !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("over a file: %v, want ENOTDIR", err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("made outside the volume: %v", ents)
	}
}

// TestBindSubPath: a subPath is bind-mounted from the descriptor opened
// in the volume at <pod dir>/volume-subpaths/<volume>/<container>/<index>
// (a directory or a file), so swapping it for a symlink afterwards does
// not change what the target shows; mounting it again keeps the mount,
// a changed file is mounted anew, one resolving out of the volume is
// refused; cleanSubPaths unmounts and removes the targets and leaves the
// volume's content.
func TestBindSubPath(t *testing.T) {
	root := needMounts(t)
	vol := filepath.Join(root, "vol")
	podDir := filepath.Join(root, "pod")
	outside := filepath.Join(root, "outside")
	mustMkdir(t, filepath.Join(vol, "sub"))
	mustMkdir(t, outside)
	mustWrite(t, filepath.Join(vol, "sub", "hello"), "hi")
	mustWrite(t, filepath.Join(vol, "file"), "one")
	mustWrite(t, filepath.Join(outside, "hello"), "outside")

	dirTarget, err := bindSubPath(podDir, "scratch", "app", 0, filepath.Join(vol, "sub"), vol)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(podDir, "volume-subpaths", "scratch", "app", "0"); dirTarget != want || !isMountPoint(t, dirTarget) {
		t.Fatalf("target %s (mounted %v), want %s mounted", dirTarget, isMountPoint(t, dirTarget), want)
	}
	fileTarget, err := bindSubPath(podDir, "scratch", "app", 1, filepath.Join(vol, "file"), vol)
	if err != nil {
		t.Fatal(err)
	}
	assertFile(t, filepath.Join(dirTarget, "hello"), "hi")
	assertFile(t, fileTarget, "one")

	// A container swaps the directory for a link out of the volume.
	if err := os.Rename(filepath.Join(vol, "sub"), filepath.Join(vol, "old")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(vol, "sub")); err != nil {
		t.Fatal(err)
	}
	assertFile(t, filepath.Join(dirTarget, "hello"), "hi")
	if _, err := bindSubPath(podDir, "scratch", "app", 2, filepath.Join(vol, "sub"), vol); err == nil || !strings.Contains(err.Error(), "not within volume path") {
		t.Errorf("subPath leading out: %v, want not within volume path", err)
	}
	if _, err := os.Lstat(filepath.Join(podDir, "volume-subpaths", "scratch", "app", "2")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("refused subPath left a target: %v", err)
	}

	// Started again: the same mount; the file replaced: mounted anew.
	if again, err := bindSubPath(podDir, "scratch", "app", 1, filepath.Join(vol, "file"), vol); err != nil || again != fileTarget {
		t.Fatalf("again: %s %v", again, err)
	}
	mustWrite(t, filepath.Join(vol, "file.new"), "two")
	if err := os.Rename(filepath.Join(vol, "file.new"), filepath.Join(vol, "file")); err != nil {
		t.Fatal(err)
	}
	assertFile(t, fileTarget, "one")
	if _, err := bindSubPath(podDir, "scratch", "app", 1, filepath.Join(vol, "file"), vol); err != nil {
		t.Fatal(err)
	}
	assertFile(t, fileTarget, "two")

	if err := cleanSubPaths(podDir, "scratch"); err != nil {
		t.Fatal(err)
	}
	if isMountPoint(t, dirTarget) || isMountPoint(t, fileTarget) {
		t.Error("still mounted after cleanSubPaths")
	}
	if _, err := os.Lstat(filepath.Join(podDir, "volume-subpaths")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("volume-subpaths left: %v", err)
	}
	assertFile(t, filepath.Join(vol, "old", "hello"), "hi")
	assertFile(t, filepath.Join(vol, "file"), "two")
}

// TestBindSubPathMountsWhatWasOpened: what is mounted is the subPath
// opened in the volume, not its path: a container swapping the directory
// for a symlink out of the volume between the kubelet's checks and its
// mount (upstream's reason to mount /proc/<pid>/fd/<fd>) changes nothing.
func TestBindSubPathMountsWhatWasOpened(t *testing.T) {
	root := needMounts(t)
	vol := filepath.Join(root, "vol")
	outside := filepath.Join(root, "outside")
	mustMkdir(t, filepath.Join(vol, "sub"))
	mustMkdir(t, outside)
	mustWrite(t, filepath.Join(vol, "sub", "hello"), "hi")
	mustWrite(t, filepath.Join(outside, "hello"), "outside")
	subPathOpened = func() {
		if err := os.Rename(filepath.Join(vol, "sub"), filepath.Join(vol, "old")); err != nil {
			t.Error(err)
		}
		if err := os.Symlink(outside, filepath.Join(vol, "sub")); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(func() { subPathOpened = nil })
	target, err := bindSubPath(filepath.Join(root, "pod"), "scratch", "app", 0, filepath.Join(vol, "sub"), vol)
	if err != nil {
		t.Fatal(err)
	}
	assertFile(t, filepath.Join(target, "hello"), "hi")
}

// criTyped is the simulation under another runtime's name: the kubelet
// takes it for a real runtime (bindsSubPaths).
type criTyped struct{ *sim.Runtime }

func (criTyped) Type() string { return "containerd" }

// TestSubPathBindMountedForRealRuntime: a real runtime's kubelet gives the
// runtime the bind mount of each subPath (of an emptyDir and of a
// hostPath), not the path in the volume; deleting the pod unmounts them
// and removes the pod directory without touching the hostPath's files.
// A kubelet restarted after the pod was deleted, with nothing of it left
// in the runtime, finds its directory and does the same.
func TestSubPathBindMountedForRealRuntime(t *testing.T) {
	root := needMounts(t)
	hostDir := filepath.Join(root, "host")
	mustMkdir(t, filepath.Join(hostDir, "sub"))
	mustWrite(t, filepath.Join(hostDir, "sub", "keep"), "host file")
	h := newHarness(t, nil)
	h.krt = criTyped{h.rt}
	h.k = h.newKubelet(func(c *Config) { c.RootDir = filepath.Join(root, "kubelet") })
	mkPod := func(name string) *v1.Pod {
		return h.create(h.pod(name, func(p *v1.Pod) {
			p.Spec.Volumes = []v1.Volume{
				{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
				{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: hostDir}}},
			}
			p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{
				{Name: "scratch", MountPath: "/data", SubPath: "logs"},
				{Name: "host", MountPath: "/host", SubPath: "sub"},
			}
		}))
	}
	p := mkPod("bindsub")
	if got := h.sync(p); got.Status.Phase != v1.PodRunning {
		t.Fatalf("phase %s: %+v", got.Status.Phase, cstatus(got, "app"))
	}
	podDir := h.k.podDir(p.UID)
	targets := []string{subPathTarget(podDir, "scratch", "app", 0), subPathTarget(podDir, "host", "app", 1)}
	for _, tg := range targets {
		if !isMountPoint(t, tg) {
			t.Errorf("%s not mounted", tg)
		}
	}
	mustWrite(t, filepath.Join(h.k.volumeDir(p.UID, "kubernetes.io~empty-dir", "scratch"), "logs", "hello"), "hi")
	id := cstatus(h.get(p), "app").ContainerID
	id = id[strings.Index(id, "://")+3:]
	for path, want := range map[string]string{"/data/hello": "hi", "/host/keep": "host file"} {
		if out, _, code, err := h.rt.ExecSync(h.ctx, id, []string{"cat", path}, time.Second); err != nil || code != 0 || string(out) != want {
			t.Errorf("cat %s = %q %d %v, want %q", path, out, code, err, want)
		}
	}

	deletePod(t, h, p, 0)
	if got := h.sync(p); got != nil { // killed, then deleted from the API
		t.Fatalf("pod still in the API: %+v", got.Status)
	}
	h.sync(p) // gone: cleaned up
	for _, tg := range targets {
		if isMountPoint(t, tg) {
			t.Errorf("%s still mounted after the pod was deleted", tg)
		}
	}
	if _, err := os.Stat(podDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pod directory left: %v", err)
	}
	assertFile(t, filepath.Join(hostDir, "sub", "keep"), "host file")

	// Deleted while the kubelet was down, its sandbox already removed.
	p = mkPod("bindsub-restart")
	h.sync(p)
	podDir = h.k.podDir(p.UID)
	targets = []string{subPathTarget(podDir, "scratch", "app", 0), subPathTarget(podDir, "host", "app", 1)}
	if !isMountPoint(t, targets[1]) {
		t.Fatalf("%s not mounted", targets[1])
	}
	sandboxes, err := h.rt.ListPodSandbox(h.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sandboxes {
		if err := h.rt.StopPodSandbox(h.ctx, s.Id); err != nil {
			t.Fatal(err)
		}
		if err := h.rt.RemovePodSandbox(h.ctx, s.Id); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.client.CoreV1().Pods(p.Namespace).Delete(h.ctx, p.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	k := h.newKubelet(func(c *Config) { c.RootDir = filepath.Join(root, "kubelet") })
	if err := k.adoptRuntimeState(h.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := k.syncPod(h.ctx, p.UID); err != nil {
		t.Fatal(err)
	}
	for _, tg := range targets {
		if isMountPoint(t, tg) {
			t.Errorf("%s still mounted after the restarted kubelet's cleanup", tg)
		}
	}
	if _, err := os.Stat(podDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pod directory left after restart: %v", err)
	}
	assertFile(t, filepath.Join(hostDir, "sub", "keep"), "host file")
}

// TestSubPathUnmountedWhenPodTerminates: a real runtime's kubelet undoes
// a pod's subPath bind mounts once the pod has terminated, while it is
// still in the API (a finished Job's pod), as upstream's volume manager
// unmounts a terminated pod's volumes (CleanSubPaths first), then the
// volumes themselves (an emptyDir removed); the pod directory stays until
// the pod leaves the API.
func TestSubPathUnmountedWhenPodTerminates(t *testing.T) {
	root := needMounts(t)
	hostDir := filepath.Join(root, "host")
	mustMkdir(t, filepath.Join(hostDir, "sub"))
	mustWrite(t, filepath.Join(hostDir, "sub", "keep"), "host file")
	h := newHarness(t, nil)
	h.krt = criTyped{h.rt}
	h.k = h.newKubelet(func(c *Config) { c.RootDir = filepath.Join(root, "kubelet") })
	p := h.create(h.pod("job", func(p *v1.Pod) {
		p.Spec.RestartPolicy = v1.RestartPolicyNever
		p.Annotations[sim.AnnotationExitCode] = "0"
		p.Annotations[sim.AnnotationExitAfter] = "5s"
		p.Spec.Volumes = []v1.Volume{
			{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
			{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: hostDir}}},
		}
		p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{
			{Name: "scratch", MountPath: "/data", SubPath: "logs"},
			{Name: "host", MountPath: "/host", SubPath: "sub"},
		}
	}))
	if got := h.sync(p); got.Status.Phase != v1.PodRunning {
		t.Fatalf("phase %s, want Running", got.Status.Phase)
	}
	podDir := h.k.podDir(p.UID)
	targets := []string{subPathTarget(podDir, "scratch", "app", 0), subPathTarget(podDir, "host", "app", 1)}
	for _, tg := range targets {
		if !isMountPoint(t, tg) {
			t.Fatalf("%s not mounted", tg)
		}
	}
	mustWrite(t, filepath.Join(h.k.volumeDir(p.UID, "kubernetes.io~empty-dir", "scratch"), "logs", "out"), "result")

	h.step(5 * time.Second)
	if got := h.sync(p); got == nil || got.Status.Phase != v1.PodSucceeded {
		t.Fatalf("pod %v, want Succeeded and still in the API", got)
	}
	if m := mountsUnder(t, podDir); len(m) != 0 {
		t.Errorf("mounts left under the terminated pod's directory: %v", m)
	}
	if _, err := os.Lstat(filepath.Join(podDir, volumeSubpathsDir)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s left: %v", volumeSubpathsDir, err)
	}
	// The emptyDir is torn down with it (memoryvolumes.go), the
	// hostPath's files untouched.
	if _, err := os.Lstat(h.k.volumeDir(p.UID, "kubernetes.io~empty-dir", "scratch")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("emptyDir of the terminated pod left: %v", err)
	}
	assertFile(t, filepath.Join(hostDir, "sub", "keep"), "host file")
}

// needMounts skips the test unless it runs as root (bind mounts), and
// returns a temporary directory whose mounts are undone when it ends,
// before the directory is removed.
func needMounts(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("bind mounts need root")
	}
	root := t.TempDir()
	t.Cleanup(func() {
		for _, m := range mountsUnder(t, root) {
			if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil {
				t.Errorf("unmounting %s left by the test: %v", m, err)
			}
		}
	})
	return root
}

// mountsUnder lists the mount points at or under dir (/proc/self/mountinfo).
func mountsUnder(t *testing.T, dir string) []string {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && pathWithin(fields[4], dir) {
			out = append(out, fields[4])
		}
	}
	return out
}

func isMountPoint(t *testing.T, path string) bool {
	t.Helper()
	for _, m := range mountsUnder(t, path) {
		if m == path {
			return true
		}
	}
	return false
}

func mustMkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func mustWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func assertFile(t *testing.T, path, want string) {
	t.Helper()
	if got, err := os.ReadFile(path); err != nil || string(got) != want {
		t.Errorf("%s = %q %v, want %q", path, got, err, want)
	}
}
