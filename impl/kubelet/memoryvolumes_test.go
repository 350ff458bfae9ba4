package kubelet

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// TestMemoryBacked: the volumes upstream's plugins set up on a tmpfs (an
// emptyDir of medium Memory, and the emptyDir of medium Memory the
// secret, downwardAPI and projected plugins wrap) and those they do not
// (a disk emptyDir, the configMap plugin's disk emptyDir, hostPath).
func TestMemoryBacked(t *testing.T) {
	for _, tc := range []struct {
		src  v1.VolumeSource
		want bool
	}{
		{v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory}}, true},
		{v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "s"}}, true},
		{v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{}}, true},
		{v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{}}, true},
		{v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}, false},
		{v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumHugePages}}, false},
		{v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{}}, false},
		{v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/"}}, false},
	} {
		v := v1.Volume{Name: "v", VolumeSource: tc.src}
		if got := memoryBacked(&v); got != tc.want {
			t.Errorf("memoryBacked(%s) = %v, want %v", volumePlugin(&v)+"/"+string(mediumOf(&v)), got, tc.want)
		}
	}
}

func mediumOf(v *v1.Volume) v1.StorageMedium {
	if v.EmptyDir != nil {
		return v.EmptyDir.Medium
	}
	return ""
}

// TestTmpfsSize: a memory-backed volume's tmpfs is sized as upstream's
// calculateEmptyDirMemorySize: the node's allocatable memory, the pod's
// memory limit (its cgroup's: every container limits memory, init
// containers by their peak, with the overhead) when above 0 and not
// above that, an emptyDir's sizeLimit when above 0 and not above what
// was reached.
func TestTmpfsSize(t *testing.T) {
	const gi = 1 << 30
	limited := func(mem ...string) *v1.Pod {
		p := &v1.Pod{}
		for i, m := range mem {
			c := v1.Container{Name: "c" + string(rune('0'+i))}
			if m != "" {
				c.Resources.Limits = v1.ResourceList{v1.ResourceMemory: resource.MustParse(m)}
			}
			p.Spec.Containers = append(p.Spec.Containers, c)
		}
		return p
	}
	memDir := func(limit string) *v1.Volume {
		v := &v1.Volume{Name: "m", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory}}}
		if limit != "" {
			q := resource.MustParse(limit)
			v.EmptyDir.SizeLimit = &q
		}
		return v
	}
	secret := &v1.Volume{Name: "s", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "s"}}}
	withOverhead := limited("1Gi")
	withOverhead.Spec.Overhead = v1.ResourceList{v1.ResourceMemory: resource.MustParse("128Mi")}
	withInit := limited("1Gi")
	withInit.Spec.InitContainers = []v1.Container{{Name: "init", Resources: v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("3Gi")}}}}
	podLevel := limited("")
	podLevel.Spec.Resources = &v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("2Gi")}}
	for _, tc := range []struct {
		name        string
		pod         *v1.Pod
		vol         *v1.Volume
		allocatable int64
		want        int64
	}{
		{"best effort: allocatable", limited(""), memDir(""), 8 * gi, 8 * gi},
		{"a container without a limit: allocatable", limited("1Gi", ""), memDir(""), 8 * gi, 8 * gi},
		{"pod limit", limited("1Gi", "1Gi"), memDir(""), 8 * gi, 2 * gi},
		{"pod limit equal to allocatable", limited("8Gi"), memDir(""), 8 * gi, 8 * gi},
		{"pod limit above allocatable", limited("16Gi"), memDir(""), 8 * gi, 8 * gi},
		{"pod limit with the overhead", withOverhead, memDir(""), 8 * gi, gi + 128<<20},
		{"init container's peak", withInit, memDir(""), 8 * gi, 3 * gi},
		{"pod-level limit", podLevel, memDir(""), 8 * gi, 2 * gi},
		{"sizeLimit below the pod limit", limited("2Gi"), memDir("64Mi"), 8 * gi, 64 << 20},
		{"sizeLimit above the pod limit", limited("2Gi"), memDir("4Gi"), 8 * gi, 2 * gi},
		{"sizeLimit equal to the pod limit", limited("2Gi"), memDir("2Gi"), 8 * gi, 2 * gi},
		{"sizeLimit, no pod limit", limited(""), memDir("64Mi"), 8 * gi, 64 << 20},
		{"sizeLimit above allocatable", limited(""), memDir("16Gi"), 8 * gi, 8 * gi},
		{"sizeLimit 0", limited(""), memDir("0"), 8 * gi, 8 * gi},
		{"secret: the pod limit", limited("512Mi"), secret, 8 * gi, 512 << 20},
		{"secret: allocatable", limited(""), secret, 8 * gi, 8 * gi},
		{"no allocatable memory: no size", limited("1Gi"), memDir("64Mi"), 0, 0},
	} {
		if got := tmpfsSize(tc.pod, tc.vol, tc.allocatable); got != tc.want {
			t.Errorf("%s: tmpfsSize = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestTmpfsMountData: size=<bytes> when there is a size, noswap when the
// kernel has it, as upstream's generateTmpfsMountOptions.
func TestTmpfsMountData(t *testing.T) {
	for _, tc := range []struct {
		size   int64
		noswap bool
		want   string
	}{
		{1 << 20, true, "size=1048576,noswap"},
		{1 << 20, false, "size=1048576"},
		{0, true, "noswap"},
		{0, false, ""},
	} {
		if got := tmpfsMountData(tc.size, tc.noswap); got != tc.want {
			t.Errorf("tmpfsMountData(%d, %v) = %q, want %q", tc.size, tc.noswap, got, tc.want)
		}
	}
}

// TestKernelAtLeast: tmpfs has noswap from Linux 6.4 (upstream's
// TmpfsNoswapSupportKernelVersion).
func TestKernelAtLeast(t *testing.T) {
	for release, want := range map[string]bool{
		"6.18.44-fc-v669": true, "6.4.0": true, "6.4": true, "7.0.1": true, "6.4-rc1": true,
		"6.3.9": false, "5.15.0-91-generic": false, "": false, "x.y": false, "6": false,
	} {
		if got := kernelAtLeast(release, 6, 4); got != want {
			t.Errorf("kernelAtLeast(%q, 6, 4) = %v, want %v", release, got, want)
		}
	}
}

// TestTmpfsNoswapCheck: as upstream's IsTmpfsNoswapOptionSupported, a
// kernel of 6.4 or later has noswap without a trial; on an older one the
// trial mount is made in a new tmpfs-noswap-test-* directory under the
// directory given (the kubelet's root or its emptyDir plugin directory,
// not os.TempDir), removed after; a failed mount, or a directory that
// cannot be made there, is no noswap; a kernel release that does not
// parse (upstream's GetVersion error) is no noswap, without a trial. As root, the real trial mount
// under a kubelet root directory leaves nothing behind.
func TestTmpfsNoswapCheck(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	mounted := func(dirs *[]string, err error) func(string) error {
		return func(dir string) error {
			if fi, statErr := os.Stat(dir); statErr != nil || !fi.IsDir() {
				t.Errorf("trial mount at %s: not a directory: %v", dir, statErr)
			}
			*dirs = append(*dirs, dir)
			return err
		}
	}
	for _, tc := range []struct {
		name, release string
		userNS        bool  // in a user namespace
		missing       bool  // the parent directory does not exist
		mountErr      error // the trial mount's error
		want          bool
		trial         bool // a trial mount is made
	}{
		{"6.4 and later: no trial", "6.18.44-fc-v669", false, false, nil, true, false},
		{"older, mount succeeds", "5.15.0-91-generic", false, false, nil, true, true},
		{"older, mount fails", "5.15.0-91-generic", false, false, syscall.EINVAL, false, true},
		{"older, no directory to try in", "5.15.0-91-generic", false, true, nil, false, false},
		// upstream's kernel version error: not supported, no trial
		{"unreadable release", "", false, false, nil, false, false},
		{"unparsable release", "6", false, false, nil, false, false},
		{"user namespace", "6.18.44-fc-v669", true, false, nil, false, false},
		{"user namespace, older", "5.15.0-91-generic", true, false, nil, false, false},
	} {
		root := filepath.Join(t.TempDir(), "kubelet")
		if !tc.missing {
			if err := os.Mkdir(root, 0o750); err != nil {
				t.Fatal(err)
			}
		}
		var dirs []string
		if got := tmpfsNoswapCheck(log, tc.userNS, tc.release, root, mounted(&dirs, tc.mountErr)); got != tc.want {
			t.Errorf("%s: supported %v, want %v", tc.name, got, tc.want)
		}
		switch {
		case !tc.trial && len(dirs) != 0:
			t.Errorf("%s: trial mounts at %q, want none", tc.name, dirs)
		case tc.trial && len(dirs) != 1:
			t.Errorf("%s: trial mounts at %q, want one under %s", tc.name, dirs, root)
		case tc.trial && (filepath.Dir(dirs[0]) != root || !strings.HasPrefix(filepath.Base(dirs[0]), "tmpfs-noswap-test-")):
			t.Errorf("%s: trial mount at %s, want %s/tmpfs-noswap-test-*", tc.name, dirs[0], root)
		}
		if !tc.missing {
			if left, err := os.ReadDir(root); err != nil || len(left) != 0 {
				t.Errorf("%s: left under %s: %v (%v)", tc.name, root, left, err)
			}
		}
	}

	// The real trial mount, as root: a kernel that takes noswap says so
	// and nothing is left mounted or behind under the root directory.
	root := needMounts(t)
	noswapKernel := syscall.Mount("tmpfs", root, "tmpfs", 0, "noswap") == nil
	if noswapKernel {
		if err := syscall.Unmount(root, 0); err != nil {
			t.Fatal(err)
		}
	}
	if got := tmpfsNoswapCheck(log, false, "5.15.0", root, func(dir string) error { return mountNoswapTrial(log, dir) }); got != noswapKernel {
		t.Errorf("real trial: supported %v, want %v (a noswap tmpfs mounts: %v)", got, noswapKernel, noswapKernel)
	}
	if m := mountsUnder(t, root); len(m) != 0 {
		t.Errorf("left mounted: %q", m)
	}
	if left, err := os.ReadDir(root); err != nil || len(left) != 0 {
		t.Errorf("left under %s: %v (%v)", root, left, err)
	}
}

// TestInUserNS: as upstream's RunningInUserNS, the initial user
// namespace maps the whole uid range from 0; any other first line of
// /proc/self/uid_map is a user namespace, but one that does not read as
// three numbers is not; an empty file is not.
func TestInUserNS(t *testing.T) {
	for uidMap, want := range map[string]bool{
		"         0          0 4294967295\n": false,
		"0 0 4294967295":                     false,
		"         0       1000          1\n": true,
		"0 100000 65536\n1 2 3\n":            true,
		"\n":                                 true,
		"":                                   false,
		// a first line that is not three numbers (upstream's Sscanf
		// error): not a user namespace
		"0 0\n":     false,
		"0 0 x\n":   false,
		"uid map\n": false,
		"1 2 3 4\n": true,
	} {
		if got := inUserNS(uidMap); got != want {
			t.Errorf("inUserNS(%q) = %v, want %v", uidMap, got, want)
		}
	}
}

// tmpfsOf reports whether dir is the root of a tmpfs mount, and its size
// in bytes.
func tmpfsOf(t *testing.T, dir string) (bool, int64) {
	t.Helper()
	if !isMountPoint(t, dir) {
		return false, 0
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return st.Type == tmpfsMagic, int64(st.Blocks) * st.Bsize
}

// mountOptions are the super block options /proc/self/mountinfo lists
// for the mount at dir.
func mountOptions(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && f[4] == dir {
			return f[len(f)-1]
		}
	}
	return ""
}

// memoryVolumesPod is a pod of every volume kind the kubelet sets up, its
// container limited to 64Mi of memory.
func memoryVolumesPod(h *harness, name string, mutate func(*v1.Pod)) *v1.Pod {
	limit := resource.MustParse("1Mi")
	return h.pod(name, func(p *v1.Pod) {
		p.Spec.Volumes = []v1.Volume{
			{Name: "cache", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory, SizeLimit: &limit}}},
			{Name: "shm", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory}}},
			{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
			{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "site"}}}},
			{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "creds"}}},
			{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
				{Path: "name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}}},
			{Name: "api", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
				{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}}}}}},
		}
		p.Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")}
		p.Status.QOSClass = v1.PodQOSBurstable
		if mutate != nil {
			mutate(p)
		}
	})
}

// TestMemoryVolumesOnTmpfs: a real runtime's kubelet mounts a tmpfs at
// the directory of each memory-backed volume (an emptyDir of medium
// Memory, a secret, a downwardAPI and a projected volume), sized as
// upstream (the emptyDir's sizeLimit, else the pod's memory limit), with
// noswap where the kernel has it, mode 1777; a disk emptyDir and a
// configMap stay directories on the kubelet's disk. The files are
// written into the tmpfs. Once the pod has terminated (a finished Job's,
// still in the API) every volume is torn down: the tmpfs unmounted, the
// directories removed with their contents, and not set up again by
// later syncs; nothing of the pod remains mounted.
func TestMemoryVolumesOnTmpfs(t *testing.T) {
	root := needMounts(t)
	h := newVolumeHarness(t)
	h.krt = criTyped{h.rt}
	h.k = h.newKubelet(func(c *Config) { c.RootDir = filepath.Join(root, "kubelet") })
	p := h.create(memoryVolumesPod(h, "tmpfs", func(p *v1.Pod) {
		p.Spec.RestartPolicy = v1.RestartPolicyNever
		p.Annotations[sim.AnnotationExitCode] = "0"
		p.Annotations[sim.AnnotationExitAfter] = "5m"
	}))
	if got := h.sync(p); got.Status.Phase != v1.PodRunning {
		t.Fatalf("phase %s: %+v", got.Status.Phase, cstatus(got, "app"))
	}
	dir := func(plugin, name string) string { return h.k.volumeDir(p.UID, plugin, name) }
	for _, tc := range []struct {
		dir  string
		size int64 // 0: not a tmpfs
	}{
		{dir("kubernetes.io~empty-dir", "cache"), 1 << 20},
		{dir("kubernetes.io~empty-dir", "shm"), 64 << 20},
		{dir("kubernetes.io~secret", "sec"), 64 << 20},
		{dir("kubernetes.io~downward-api", "info"), 64 << 20},
		{dir("kubernetes.io~projected", "api"), 64 << 20},
		{dir("kubernetes.io~empty-dir", "scratch"), 0},
		{dir("kubernetes.io~configmap", "cfg"), 0},
	} {
		onTmpfs, size := tmpfsOf(t, tc.dir)
		switch {
		case tc.size == 0 && onTmpfs:
			t.Errorf("%s: a tmpfs, want a directory of the kubelet's disk", tc.dir)
		case tc.size == 0:
		case !onTmpfs:
			t.Errorf("%s: not a tmpfs mount point", tc.dir)
		case size != tc.size:
			t.Errorf("%s: tmpfs of %d bytes, want %d", tc.dir, size, tc.size)
		default:
			opts := mountOptions(t, tc.dir)
			if noswap := tmpfsNoswapSupported(h.k.log, h.k.noswapTrialDir()); noswap != strings.Contains(opts, "noswap") {
				t.Errorf("%s: options %q, noswap supported %v", tc.dir, opts, noswap)
			}
			if _, _, perm := statOf(t, tc.dir); perm != 0o1777 {
				t.Errorf("%s: mode %#o, want 01777", tc.dir, perm)
			}
		}
	}
	assertFile(t, filepath.Join(dir("kubernetes.io~secret", "sec"), "password"), "pw")
	assertFile(t, filepath.Join(dir("kubernetes.io~downward-api", "info"), "name"), "tmpfs")
	mustWrite(t, filepath.Join(dir("kubernetes.io~empty-dir", "cache"), "data"), "x")
	mustWrite(t, filepath.Join(dir("kubernetes.io~empty-dir", "scratch"), "data"), "y")
	// A set-up again (the periodic refresh) mounts nothing more.
	h.step(2 * time.Minute)
	h.sync(p)
	if m := mountsUnder(t, h.k.podDir(p.UID)); len(m) != 5 {
		t.Errorf("mounts under the pod directory after a refresh: %v, want the 5 tmpfs", m)
	}

	h.step(3 * time.Minute)
	if got := h.sync(p); got == nil || got.Status.Phase != v1.PodSucceeded {
		t.Fatalf("pod %v, want Succeeded and still in the API", got)
	}
	check := func(when string) {
		t.Helper()
		if m := mountsUnder(t, h.k.podDir(p.UID)); len(m) != 0 {
			t.Errorf("%s: mounts left under the terminated pod's directory: %v", when, m)
		}
		for _, v := range p.Spec.Volumes {
			d := dir(volumePlugin(&v), v.Name)
			if _, err := os.Lstat(d); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s: %s left: %v", when, d, err)
			}
		}
	}
	check("terminated")
	tokens := tokenRequests(h)
	h.step(2 * time.Minute) // past a sync period: no refresh of its volumes
	h.sync(p)
	check("synced again")
	if n := tokenRequests(h); n != tokens {
		t.Errorf("%d token requests for the terminated pod's projected volume, want none", n-tokens)
	}
}

// tokenRequests counts the TokenRequests the kubelet has sent.
func tokenRequests(h *harness) int {
	n := 0
	for _, a := range h.client.Actions() {
		if a.GetVerb() == "create" && a.GetSubresource() == "token" {
			n++
		}
	}
	return n
}

// TestTerminatedPodVolumesTornDownOnSimulatedNode: the simulated
// runtime's kubelet mounts nothing but decides as a real one: a
// memory-backed volume's directory has the tmpfs root's mode (1777, a
// downwardAPI volume's too), and once the pod has terminated its volume
// directories are removed with their contents while it stays in the API.
func TestTerminatedPodVolumesTornDownOnSimulatedNode(t *testing.T) {
	h := newVolumeHarness(t)
	p := h.create(memoryVolumesPod(h, "simtmpfs", func(p *v1.Pod) {
		p.Spec.RestartPolicy = v1.RestartPolicyNever
		p.Annotations[sim.AnnotationExitCode] = "1"
		p.Annotations[sim.AnnotationExitAfter] = "5s"
	}))
	if got := h.sync(p); got.Status.Phase != v1.PodRunning {
		t.Fatalf("phase %s: %+v", got.Status.Phase, cstatus(got, "app"))
	}
	for _, v := range p.Spec.Volumes {
		d := h.k.volumeDir(p.UID, volumePlugin(&v), v.Name)
		want := uint32(0o777)
		if memoryBacked(&v) {
			want = 0o1777
		}
		if _, _, perm := statOf(t, d); perm != want {
			t.Errorf("%s: mode %#o, want %#o", d, perm, want)
		}
	}
	mustWrite(t, filepath.Join(h.k.volumeDir(p.UID, "kubernetes.io~empty-dir", "scratch"), "data"), "y")
	h.step(5 * time.Second)
	if got := h.sync(p); got == nil || got.Status.Phase != v1.PodFailed {
		t.Fatalf("pod %v, want Failed and still in the API", got)
	}
	h.step(2 * time.Minute)
	h.sync(p)
	for _, v := range p.Spec.Volumes {
		d := h.k.volumeDir(p.UID, volumePlugin(&v), v.Name)
		if _, err := os.Lstat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left after the pod terminated: %v", d, err)
		}
	}
}

// TestOrphanedPodTmpfsTornDown: a pod deleted while the kubelet was down
// (nothing of it left in the runtime) has its tmpfs volumes unmounted and
// its directory removed by the restarted kubelet, as upstream's volume
// manager tears down the volumes it reconstructs from disk before
// cleanupOrphanedPodDirs removes the directory; a pod directory holding a
// mount the kubelet did not make (a volume directory of a plugin it does
// not know) is left as it is, mount and contents, as upstream refuses to
// remove an orphaned pod's directory while a volume is mounted there.
func TestOrphanedPodTmpfsTornDown(t *testing.T) {
	root := needMounts(t)
	h := newVolumeHarness(t)
	h.krt = criTyped{h.rt}
	rootDir := filepath.Join(root, "kubelet")
	h.k = h.newKubelet(func(c *Config) { c.RootDir = rootDir })
	p := h.create(memoryVolumesPod(h, "orphan", nil))
	q := h.create(h.pod("foreign", func(p *v1.Pod) {
		p.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	}))
	for _, pod := range []*v1.Pod{p, q} {
		if got := h.sync(pod); got.Status.Phase != v1.PodRunning {
			t.Fatalf("%s: phase %s", pod.Name, got.Status.Phase)
		}
	}
	if m := mountsUnder(t, h.k.podDir(p.UID)); len(m) != 5 {
		t.Fatalf("mounts under the pod directory: %v, want the 5 tmpfs", m)
	}
	foreign := filepath.Join(h.k.podDir(q.UID), "volumes", "example.com~other", "data")
	mustMkdir(t, foreign)
	if err := syscall.Mount("tmpfs", foreign, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(foreign, "keep"), "kept")

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
	for _, pod := range []*v1.Pod{p, q} {
		if err := h.client.CoreV1().Pods(pod.Namespace).Delete(h.ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			t.Fatal(err)
		}
	}
	k := h.newKubelet(func(c *Config) { c.RootDir = rootDir })
	if err := k.adoptRuntimeState(h.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := k.syncPod(h.ctx, p.UID); err != nil {
		t.Fatal(err)
	}
	if m := mountsUnder(t, k.podDir(p.UID)); len(m) != 0 {
		t.Errorf("mounts left after the restarted kubelet's clean-up: %v", m)
	}
	if _, err := os.Stat(k.podDir(p.UID)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pod directory left after the restarted kubelet's clean-up: %v", err)
	}

	if _, err := k.syncPod(h.ctx, q.UID); err == nil || !strings.Contains(err.Error(), "volumes are not cleaned up") {
		t.Errorf("clean-up of a pod directory with a foreign mount: %v, want it refused", err)
	}
	if !isMountPoint(t, foreign) {
		t.Errorf("%s unmounted", foreign)
	}
	assertFile(t, filepath.Join(foreign, "keep"), "kept")
}

// TestPossibleMemoryBackedVolumesOnDisk: a real runtime's kubelet on a
// node with swap (--fail-swap-on=false) whose tmpfs has no noswap warns
// on the Node at start with upstream's PossibleMemoryBackedVolumesOnDisk
// event; not with noswap, nor without swap, nor on a simulated node.
func TestPossibleMemoryBackedVolumesOnDisk(t *testing.T) {
	saved := tmpfsNoswapSupported
	t.Cleanup(func() { tmpfsNoswapSupported = saved })
	const want = "Warning PossibleMemoryBackedVolumesOnDisk The tmpfs noswap option is not supported. Memory-backed volumes (e.g. secrets, emptyDirs, etc.) might be swapped to disk and should no longer be considered secure."
	for _, tc := range []struct {
		name            string
		real            bool
		swap            string
		noswap, warning bool
	}{
		{"swap, no noswap", true, "8Gi", false, true},
		{"swap, noswap", true, "8Gi", true, false},
		{"no swap", true, "0", false, false},
		{"simulated node", false, "8Gi", false, false},
	} {
		var trialDirs []string
		tmpfsNoswapSupported = func(_ *slog.Logger, dir string) bool {
			trialDirs = append(trialDirs, dir)
			return tc.noswap
		}
		rec := record.NewFakeRecorder(100)
		h := newHarness(t, nil)
		if tc.real {
			h.krt = criTyped{h.rt}
		}
		root := t.TempDir()
		h.k = h.newKubelet(func(c *Config) {
			c.Recorder, c.SwapCapacity, c.FailSwapOn, c.RootDir = rec, resource.MustParse(tc.swap), ptr.To(false), root
		})
		h.k.warnMemoryVolumesOnDisk()
		got := drain(rec)
		if tc.warning && (len(got) != 1 || got[0] != want) || !tc.warning && len(got) != 0 {
			t.Errorf("%s: events %q, want the warning: %v", tc.name, got, tc.warning)
		}
		// The check's trial directory is the kubelet's root, as upstream's
		// container manager passes KubeletRootDir.
		if len(trialDirs) > 1 || len(trialDirs) == 1 && trialDirs[0] != root {
			t.Errorf("%s: noswap checked in %q, want at most once in %s", tc.name, trialDirs, root)
		}
	}

	// Run warns at start.
	tmpfsNoswapSupported = func(*slog.Logger, string) bool { return false }
	rec := record.NewFakeRecorder(100)
	h := newHarness(t, nil)
	h.krt = criTyped{h.rt}
	k := h.newKubelet(func(c *Config) {
		c.Recorder, c.SwapCapacity, c.FailSwapOn, c.RootDir = rec, resource.MustParse("8Gi"), ptr.To(false), t.TempDir()
	})
	ctx, cancel := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() { runErr <- k.Run(ctx) }()
	var got []string
	eventually(t, "the PossibleMemoryBackedVolumesOnDisk event", func() bool {
		got = append(got, drain(rec)...)
		return slices.Contains(got, want)
	})
	cancel()
	if err := <-runErr; err != nil {
		t.Errorf("Run: %v", err)
	}
}

// TestMemoryEmptyDirWithDataNotMountedOver: an emptyDir of medium Memory
// and a secret volume found as plain directories holding files (made by a
// kubelet before its volumes were tmpfs) while the pod runs get no tmpfs
// over them, neither from the periodic refresh nor from the set-up before
// a container is started again: the running containers bound those
// directories (private propagation, as the runtime's), so a tmpfs over
// them would take every later update (a changed Secret, a projected token
// renewed) out of their sight; the update is written into the directory
// they see. For a new sandbox (nothing of the pod running) the secret
// volume gets its tmpfs, written again, and the emptyDir still none: its
// files would be hidden, as upstream's volume manager does not set up
// again an emptyDir it has mounted.
func TestMemoryEmptyDirWithDataNotMountedOver(t *testing.T) {
	root := needMounts(t)
	h := newVolumeHarness(t)
	h.krt = criTyped{h.rt}
	h.k = h.newKubelet(func(c *Config) { c.RootDir = filepath.Join(root, "kubelet") })
	p := h.create(memoryVolumesPod(h, "olddata", nil))
	if got := h.sync(p); got.Status.Phase != v1.PodRunning {
		t.Fatalf("phase %s", got.Status.Phase)
	}
	cache := h.k.volumeDir(p.UID, "kubernetes.io~empty-dir", "cache")
	sec := h.k.volumeDir(p.UID, "kubernetes.io~secret", "sec")
	for _, d := range []string{cache, sec} {
		if err := syscall.Unmount(d, 0); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite(t, filepath.Join(cache, "data"), "kept")
	// The secret as the earlier kubelet wrote it, and a running
	// container's view of it: a private bind mount of the directory.
	if _, err := atomicWrite(sec, map[string]volumeFile{"password": {data: []byte("pw"), mode: 0o644}}, nil); err != nil {
		t.Fatal(err)
	}
	view := filepath.Join(root, "container-view")
	mustMkdir(t, view)
	if err := syscall.Mount(sec, view, "", syscall.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("", view, "", syscall.MS_PRIVATE, ""); err != nil {
		t.Fatal(err)
	}
	defer syscall.Unmount(view, syscall.MNT_DETACH)
	s, err := h.client.CoreV1().Secrets("default").Get(h.ctx, "creds", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Data["password"] = []byte("pw2")
	if _, err := h.client.CoreV1().Secrets("default").Update(h.ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	checkCache := func(when string) {
		t.Helper()
		if onTmpfs, _ := tmpfsOf(t, cache); onTmpfs {
			t.Errorf("%s: %s: a tmpfs mounted over the emptyDir's files", when, cache)
		}
		assertFile(t, filepath.Join(cache, "data"), "kept")
	}
	check := func(when string) {
		t.Helper()
		checkCache(when)
		if onTmpfs, _ := tmpfsOf(t, sec); onTmpfs {
			t.Errorf("%s: %s: a tmpfs mounted over the secret volume its containers see", when, sec)
		}
		assertFile(t, filepath.Join(view, "password"), "pw2")
	}
	h.step(2 * time.Minute)
	h.sync(p)
	check("refreshed")

	// Its container ended: the set-up before it is started again.
	cs, err := h.rt.ListContainers(h.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if err := h.rt.StopContainer(h.ctx, c.Id, 0); err != nil {
			t.Fatal(err)
		}
	}
	h.step(time.Minute)
	if got := h.sync(p); cstatus(got, "app").RestartCount != 1 || cstatus(got, "app").State.Running == nil {
		t.Fatalf("container not started again: %+v", cstatus(got, "app"))
	}
	check("container started again")

	// Its sandbox gone (a reboot): the new one's set-up.
	if err := syscall.Unmount(view, 0); err != nil {
		t.Fatal(err)
	}
	sandboxes, err := h.rt.ListPodSandbox(h.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, sb := range sandboxes {
		if err := h.rt.StopPodSandbox(h.ctx, sb.Id); err != nil {
			t.Fatal(err)
		}
	}
	h.step(time.Second)
	h.sync(p)
	checkCache("new sandbox")
	if onTmpfs, _ := tmpfsOf(t, sec); !onTmpfs {
		t.Errorf("new sandbox: %s: no tmpfs", sec)
	}
	assertFile(t, filepath.Join(sec, "password"), "pw2")
}

// TestFinalDeleteWaitsForVolumeTeardown: a deleted pod whose tmpfs cannot
// be unmounted (busy: a file open in it) is not deleted from the API: its
// sync fails and its volume stays mounted, as upstream's status manager
// deletes a pod only once its volumes are unmounted; once the file is
// closed the next sync unmounts it and sends the final delete.
func TestFinalDeleteWaitsForVolumeTeardown(t *testing.T) {
	root := needMounts(t)
	h := newVolumeHarness(t)
	h.krt = criTyped{h.rt}
	h.k = h.newKubelet(func(c *Config) { c.RootDir = filepath.Join(root, "kubelet") })
	p := h.create(memoryVolumesPod(h, "busy", nil))
	if got := h.sync(p); got.Status.Phase != v1.PodRunning {
		t.Fatalf("phase %s", got.Status.Phase)
	}
	cache := h.k.volumeDir(p.UID, "kubernetes.io~empty-dir", "cache")
	mustWrite(t, filepath.Join(cache, "open"), "x")
	f, err := os.Open(filepath.Join(cache, "open"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	deletePod(t, h, p, 0)
	h.k.HandlePod(h.get(p))
	if _, err := h.k.syncPod(h.ctx, p.UID); err == nil || !strings.Contains(err.Error(), `UnmountVolume.TearDown failed for volume "cache"`) {
		t.Errorf("sync with the volume busy: %v, want its teardown's failure", err)
	}
	if h.get(p) == nil {
		t.Fatal("pod deleted from the API with a volume still mounted")
	}
	if onTmpfs, _ := tmpfsOf(t, cache); !onTmpfs {
		t.Errorf("%s: not mounted after a failed unmount", cache)
	}
	f.Close()
	h.step(time.Second)
	if got := h.sync(p); got != nil {
		t.Errorf("pod still in the API once its volumes could be torn down: %+v", got.Status)
	}
	if m := mountsUnder(t, h.k.podDir(p.UID)); len(m) != 0 {
		t.Errorf("mounts left: %v", m)
	}
}

// TestHugePageSize: the page size of an emptyDir of huge pages medium, as
// upstream's getPageSizeMountOption: HugePages takes the one huge page
// size the pod's containers (init containers too) or its pod-level
// resources request, HugePages-<size> that size if requested; errors
// otherwise with upstream's messages.
func TestHugePageSize(t *testing.T) {
	req := func(sizes ...string) v1.ResourceList {
		l := v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi")}
		for _, s := range sizes {
			l[v1.ResourceName(v1.ResourceHugePagesPrefix+s)] = resource.MustParse("2Gi")
		}
		return l
	}
	pod := func(c, init, podLevel v1.ResourceList) *v1.Pod {
		p := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: c}}}}}
		if init != nil {
			p.Spec.InitContainers = []v1.Container{{Name: "i", Resources: v1.ResourceRequirements{Requests: init}}}
		}
		if podLevel != nil {
			p.Spec.Resources = &v1.ResourceRequirements{Requests: podLevel}
		}
		return p
	}
	for _, tc := range []struct {
		name    string
		medium  v1.StorageMedium
		pod     *v1.Pod
		want    string
		wantErr string
	}{
		{"HugePages, one size", v1.StorageMediumHugePages, pod(req("2Mi"), nil, nil), "2Mi", ""},
		{"HugePages, the size in an init container", v1.StorageMediumHugePages, pod(req(), req("1Gi"), nil), "1Gi", ""},
		{"HugePages, pod-level", v1.StorageMediumHugePages, pod(req(), nil, req("2Mi")), "2Mi", ""},
		{"HugePages, two sizes", v1.StorageMediumHugePages, pod(req("2Mi"), req("1Gi"), nil), "",
			"medium: HugePages can't be used if container requests multiple huge page sizes"},
		{"HugePages, none", v1.StorageMediumHugePages, pod(req(), nil, nil), "",
			"medium HugePages: hugePages storage requested, but there is no resource request for huge pages"},
		{"HugePages-2Mi", "HugePages-2Mi", pod(req("2Mi", "1Gi"), nil, nil), "2Mi", ""},
		{"HugePages-1Gi", "HugePages-1Gi", pod(req("2Mi"), req("1Gi"), nil), "1Gi", ""},
		{"HugePages-1Gi not requested", "HugePages-1Gi", pod(req("2Mi"), nil, nil), "",
			"medium HugePages-1Gi: hugePages storage requested, but there is no resource request for huge pages"},
	} {
		got, err := hugePageSize(tc.medium, tc.pod)
		switch {
		case tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr):
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.wantErr)
		case tc.wantErr == "" && (err != nil || got.String() != tc.want):
			t.Errorf("%s: %s %v, want %s", tc.name, got.String(), err, tc.want)
		}
	}
}

// TestHugePagesEmptyDirOnHugetlbfs: a real runtime's kubelet mounts a
// hugetlbfs of the requested page size at an emptyDir of medium
// HugePages-2Mi (upstream's setupHugepages), unmounts it when the pod has
// terminated; a pod requesting no such pages fails the volume's set-up
// with upstream's message, on a simulated node too.
func TestHugePagesEmptyDirOnHugetlbfs(t *testing.T) {
	root := needMounts(t)
	if _, err := os.Stat("/sys/kernel/mm/hugepages/hugepages-2048kB"); err != nil {
		t.Skip("no 2Mi huge pages on this machine")
	}
	hugePod := func(h *harness, name string, request bool) *v1.Pod {
		return h.pod(name, func(p *v1.Pod) {
			p.Spec.RestartPolicy = v1.RestartPolicyNever
			p.Annotations[sim.AnnotationExitCode] = "0"
			p.Annotations[sim.AnnotationExitAfter] = "5m"
			p.Spec.Volumes = []v1.Volume{{Name: "huge", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: "HugePages-2Mi"}}}}
			if request {
				l := v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi"), "hugepages-2Mi": resource.MustParse("4Mi")}
				p.Spec.Containers[0].Resources = v1.ResourceRequirements{Requests: l, Limits: l}
			}
		})
	}
	h := newHarness(t, nil)
	h.krt = criTyped{h.rt}
	h.k = h.newKubelet(func(c *Config) {
		c.RootDir = filepath.Join(root, "kubelet")
		c.HugePages = []HugePages{{PageSize: 2 << 20, Pages: 8}}
	})
	p := h.create(hugePod(h, "huge", true))
	if got := h.sync(p); got.Status.Phase != v1.PodRunning {
		t.Fatalf("phase %s: %+v", got.Status.Phase, got.Status)
	}
	dir := h.k.volumeDir(p.UID, "kubernetes.io~empty-dir", "huge")
	var st syscall.Statfs_t
	if !isMountPoint(t, dir) || syscall.Statfs(dir, &st) != nil || st.Type != hugetlbfsMagic || st.Bsize != 2<<20 {
		t.Errorf("%s: mount point %v, statfs type %#x page size %d; want a hugetlbfs of 2Mi pages", dir, isMountPoint(t, dir), st.Type, st.Bsize)
	}
	h.step(2 * time.Minute)
	h.sync(p) // the refresh: nothing more mounted
	if m := mountsUnder(t, h.k.podDir(p.UID)); len(m) != 1 {
		t.Errorf("mounts under the pod directory: %v, want the hugetlbfs", m)
	}
	h.step(4 * time.Minute)
	if got := h.sync(p); got == nil || got.Status.Phase != v1.PodSucceeded {
		t.Fatalf("pod %v, want Succeeded", got)
	}
	if m := mountsUnder(t, h.k.podDir(p.UID)); len(m) != 0 {
		t.Errorf("mounts left under the terminated pod's directory: %v", m)
	}

	for _, real := range []bool{true, false} {
		h := newHarness(t, func(c *Config) { c.RootDir = t.TempDir() })
		if real {
			h.krt = criTyped{h.rt}
			h.k = h.newKubelet(func(c *Config) { c.RootDir = filepath.Join(root, "kubelet2") })
		}
		p := h.create(hugePod(h, "nohuge", false))
		h.k.HandlePod(p)
		_, err := h.k.syncPod(h.ctx, p.UID)
		if want := `MountVolume.SetUp failed for volume "huge" : medium HugePages-2Mi: hugePages storage requested, but there is no resource request for huge pages`; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("real runtime %v: sync %v, want %q", real, err, want)
		}
	}
}

// TestRefreshMountsNothingOverRunningPodsVolume: the periodic refresh of
// a running pod's volumes mounts no tmpfs over a memory-backed volume's
// directory found without one, even empty (a kubelet before its volumes
// were tmpfs made it a plain directory): the running containers bound
// that directory (private propagation), so a tmpfs over it would split
// the volume between them and the containers started next; nor does the
// set-up before a container is started again while others run. A new
// sandbox (nothing of the pod running) gets the tmpfs.
func TestRefreshMountsNothingOverRunningPodsVolume(t *testing.T) {
	root := needMounts(t)
	h := newVolumeHarness(t)
	h.krt = criTyped{h.rt}
	h.k = h.newKubelet(func(c *Config) { c.RootDir = filepath.Join(root, "kubelet") })
	p := h.create(memoryVolumesPod(h, "split", nil))
	if got := h.sync(p); got.Status.Phase != v1.PodRunning {
		t.Fatalf("phase %s", got.Status.Phase)
	}
	shm := h.k.volumeDir(p.UID, "kubernetes.io~empty-dir", "shm")
	if err := syscall.Unmount(shm, 0); err != nil {
		t.Fatal(err)
	}
	view := filepath.Join(root, "container-view")
	mustMkdir(t, view)
	if err := syscall.Mount(shm, view, "", syscall.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("", view, "", syscall.MS_PRIVATE, ""); err != nil {
		t.Fatal(err)
	}
	h.step(2 * time.Minute)
	h.sync(p)
	if onTmpfs, _ := tmpfsOf(t, shm); onTmpfs {
		t.Errorf("%s: a tmpfs mounted over the directory the running containers share", shm)
	}
	mustWrite(t, filepath.Join(view, "sem"), "x")
	assertFile(t, filepath.Join(shm, "sem"), "x")
	if err := os.Remove(filepath.Join(shm, "sem")); err != nil {
		t.Fatal(err)
	}

	// A container of it started again while the others run (no new
	// sandbox): nor before that.
	cs, err := h.rt.ListContainers(h.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if err := h.rt.StopContainer(h.ctx, c.Id, 0); err != nil {
			t.Fatal(err)
		}
	}
	h.step(time.Minute)
	if got := h.sync(p); cstatus(got, "app").RestartCount != 1 || cstatus(got, "app").State.Running == nil {
		t.Fatalf("container not started again: %+v", cstatus(got, "app"))
	}
	if onTmpfs, _ := tmpfsOf(t, shm); onTmpfs {
		t.Errorf("%s: a tmpfs mounted over the shared directory before a container was started again", shm)
	}
	mustWrite(t, filepath.Join(view, "sem"), "y")
	assertFile(t, filepath.Join(shm, "sem"), "y")
	if err := syscall.Unmount(view, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(shm, "sem")); err != nil {
		t.Fatal(err)
	}

	// Its sandbox gone (a reboot): the new one's set-up mounts the tmpfs.
	sandboxes, err := h.rt.ListPodSandbox(h.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sandboxes {
		if err := h.rt.StopPodSandbox(h.ctx, s.Id); err != nil {
			t.Fatal(err)
		}
	}
	h.step(time.Second)
	h.sync(p)
	if onTmpfs, _ := tmpfsOf(t, shm); !onTmpfs {
		t.Errorf("%s: no tmpfs once the pod's sandbox was made again", shm)
	}
}

// TestOrphanedPodVolumesDirRemovedDirsOnly: once the kubelet's own
// volumes of a pod gone from the API are torn down, what is left of its
// volumes directory is removed directories only, as upstream's
// cleanupOrphanedPodDirs (removeOrphanedPodVolumeDirs:
// RemoveDirsOneFilesystem): a file there (another plugin's, here seen
// through a bind mount of a directory of the same filesystem, which no
// device comparison tells from a directory) is an error and stays, with
// the pod directory.
func TestOrphanedPodVolumesDirRemovedDirsOnly(t *testing.T) {
	root := needMounts(t)
	h := newVolumeHarness(t)
	h.krt = criTyped{h.rt}
	rootDir := filepath.Join(root, "kubelet")
	h.k = h.newKubelet(func(c *Config) { c.RootDir = rootDir })
	p := h.create(memoryVolumesPod(h, "bound", nil))
	if got := h.sync(p); got.Status.Phase != v1.PodRunning {
		t.Fatalf("phase %s", got.Status.Phase)
	}
	data := filepath.Join(root, "host-data")
	mustMkdir(t, data)
	mustWrite(t, filepath.Join(data, "keep"), "kept")
	foreign := filepath.Join(h.k.podDir(p.UID), "volumes", "example.com~other", "data")
	mustMkdir(t, foreign)
	if err := syscall.Mount(data, foreign, "", syscall.MS_BIND, ""); err != nil {
		t.Fatal(err)
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
	if err := h.client.CoreV1().Pods(p.Namespace).Delete(h.ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	k := h.newKubelet(func(c *Config) { c.RootDir = rootDir })
	if err := k.adoptRuntimeState(h.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := k.syncPod(h.ctx, p.UID); err == nil || !strings.Contains(err.Error(), "error occurred when trying to remove the volumes dir") {
		t.Errorf("clean-up of a pod directory with a file left in its volumes: %v, want it refused", err)
	}
	assertFile(t, filepath.Join(data, "keep"), "kept")
	if m := mountsUnder(t, k.podDir(p.UID)); len(m) != 1 || m[0] != foreign {
		t.Errorf("mounts under the pod directory: %v, want only %s (the kubelet's tmpfs torn down)", m, foreign)
	}
}
