package kubelet

import (
	"bufio"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// plainCgroups is cgroupfs on a plain directory tree standing in for a
// cgroup filesystem: a cgroup's files are real files there, not the
// kernel's, so destroy removes them first and then lets cgroupfs's
// destroy remove the directories (the cgroups under it first).
type plainCgroups struct {
	cgroupfs
	destroyed []string
}

func (p *plainCgroups) destroy(name string) error {
	hs, err := p.hierarchies()
	if err != nil {
		return err
	}
	for _, h := range hs {
		filepath.WalkDir(filepath.Join(h, name), func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				os.Remove(path)
			}
			return nil
		})
	}
	p.destroyed = append(p.destroyed, name)
	return p.cgroupfs.destroy(name)
}

// sleeper starts a process that waits to be killed. It never outlives
// the test: killed and reaped at the test's end whatever its outcome
// (t.Cleanup), and, should the test process die without its clean-ups
// (a panic, a timeout, a signal), sent SIGTERM by the kernel
// (Pdeathsig; not SIGKILL, which the tests look for), so that no
// process of a test is left holding what it inherited (a file lock of
// flock's).
func sleeper(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait() // reaped (an error when killedBy already waited)
	})
	return cmd
}

// killedBy reports whether cmd ended by SIGKILL, waiting for its end a
// generous while (a process killed ends at once).
func killedBy(cmd *exec.Cmd) bool {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
		return false
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// cgroupLeft lists the hierarchies of dir (a cgroup v1 layout, or v2's
// with "") in which cgroup name still is.
func cgroupLeft(dir, name string, hierarchies ...string) []string {
	var left []string
	for _, h := range hierarchies {
		if _, err := os.Stat(filepath.Join(dir, h, name)); err == nil {
			left = append(left, h)
		}
	}
	return left
}

// The orphaned pod cgroup clean-up, as upstream's HandlePodCleanups
// (cleanupOrphanedPodCgroups), on cgroup v1 and v2: the cgroup of a pod
// the kubelet never had (deleted while no kubelet ran, say), found in any
// hierarchy, has the processes left in it and in the cgroups under it
// killed and is removed from every hierarchy; a finished pod's cgroup
// goes while the pod is still in the API; a running pod's stays; nothing
// is removed before the pod source has synced.
func TestOrphanedPodCgroupsRemoved(t *testing.T) {
	for _, unified := range []bool{false, true} {
		t.Run(map[bool]string{false: "v1", true: "v2"}[unified], func(t *testing.T) {
			dir := t.TempDir()
			hierarchies := []string{"cpu", "memory", "pids"}
			if unified {
				hierarchies = []string{""}
				os.WriteFile(filepath.Join(dir, "cgroup.controllers"), []byte("cpu memory pids\n"), 0o644)
			} else {
				for _, hier := range hierarchies {
					os.Mkdir(filepath.Join(dir, hier), 0o755)
				}
			}
			h, _ := resizeHarness(t, func(c *Config) { c.CgroupDir = dir })
			fake := &plainCgroups{cgroupfs: h.k.cgroups.(cgroupfs)}
			h.k.cgroups = fake

			running := h.sync(h.create(h.pod("running", func(p *v1.Pod) {
				p.Status.QOSClass = v1.PodQOSBurstable
				p.Spec.Containers[0].Resources = req("100m", "", "", "")
			})))
			job := h.sync(h.create(h.pod("job", func(p *v1.Pod) {
				p.Spec.RestartPolicy = v1.RestartPolicyNever
				p.Annotations[sim.AnnotationExitCode] = "0"
				p.Annotations[sim.AnnotationExitAfter] = "5s"
			})))
			runningCg, jobCg := "/kubepods/burstable/pod"+string(running.UID), "/kubepods/besteffort/pod"+string(job.UID)
			// A pod this kubelet never had: its cgroup in every hierarchy
			// (the runtime's), a container's cgroup under it in the
			// last, with a process in each.
			const never = "/kubepods/pod0c4a-never"
			last := hierarchies[len(hierarchies)-1]
			ctr := filepath.Join(dir, last, never, "ctr")
			for _, hier := range hierarchies {
				os.MkdirAll(filepath.Join(dir, hier, never), 0o755)
			}
			os.MkdirAll(ctr, 0o755)
			inPod, inCtr := sleeper(t), sleeper(t)
			os.WriteFile(filepath.Join(dir, last, never, "cgroup.procs"), []byte(strconv.Itoa(inPod.Process.Pid)+"\n"), 0o644)
			os.WriteFile(filepath.Join(ctr, "cgroup.procs"), []byte(strconv.Itoa(inCtr.Process.Pid)+"\n"), 0o644)
			// Not a pod's (no "pod" in its name, or twice): left alone.
			os.MkdirAll(filepath.Join(dir, last, "/kubepods/besteffort/other"), 0o755)
			os.MkdirAll(filepath.Join(dir, last, "/kubepods/besteffort/podpod1"), 0o755)

			// Until the pod source has synced, nothing is an orphan.
			h.k.mu.Lock()
			h.k.sourceSynced = false
			h.k.mu.Unlock()
			h.k.cleanupOrphanedPodCgroups(h.ctx)
			if len(fake.destroyed) != 0 {
				t.Fatalf("removed before the source synced: %v", fake.destroyed)
			}
			h.k.MarkSourceSynced()

			// The job runs: only the cgroup of the pod never had goes.
			h.k.cleanupOrphanedPodCgroups(h.ctx)
			if !slices.Equal(fake.destroyed, []string{never}) {
				t.Fatalf("removed %v; want [%s]", fake.destroyed, never)
			}
			if !killedBy(inPod) || !killedBy(inCtr) {
				t.Error("the processes left in the orphaned cgroup were not killed")
			}
			if left := cgroupLeft(dir, never, hierarchies...); len(left) != 0 {
				t.Errorf("orphaned cgroup left in %v", left)
			}
			for _, name := range []string{runningCg, jobCg} {
				if left := cgroupLeft(dir, name, hierarchies[0]); len(left) == 0 {
					t.Errorf("%s removed", name)
				}
			}
			for _, name := range []string{"/kubepods/besteffort/other", "/kubepods/besteffort/podpod1"} {
				if left := cgroupLeft(dir, name, last); len(left) == 0 {
					t.Errorf("%s removed", name)
				}
			}

			// The job finishes (Succeeded, still in the API): its cgroup
			// goes (removed by its sync, removeTerminatedPodCgroup; the
			// clean-up is the backstop, TestTerminatedPodCgroupBackstop);
			// the running pod's stays.
			h.step(5 * time.Second)
			if got := h.sync(job); got.Status.Phase != v1.PodSucceeded {
				t.Fatalf("job phase %s", got.Status.Phase)
			}
			h.k.cleanupOrphanedPodCgroups(h.ctx)
			if !slices.Equal(fake.destroyed, []string{never, jobCg}) {
				t.Fatalf("removed %v; want [%s %s]", fake.destroyed, never, jobCg)
			}
			if left := cgroupLeft(dir, jobCg, hierarchies...); len(left) != 0 {
				t.Errorf("finished pod's cgroup left in %v", left)
			}
			if h.get(job) == nil {
				t.Fatal("the job left the API")
			}
			if left := cgroupLeft(dir, runningCg, "cpu", ""); len(left) == 0 {
				t.Error("running pod's cgroup removed")
			}
		})
	}
}

// orphanedPodCgroups picks the pods not possibly running: unknown, or
// rejected, or terminated (phase terminal; their cgroups still kept while
// something of them runs, TestOrphanedPodCgroupKeptUntilKilled); a pod
// gone from the API that is not cleaned up yet, one not admitted yet and
// a running one are possibly running.
func TestOrphanedPodCgroupsDecision(t *testing.T) {
	phase := func(ph v1.PodPhase) *v1.Pod { return &v1.Pod{Status: v1.PodStatus{Phase: ph}} }
	pods := map[types.UID]*podRecord{
		"running":  {pod: phase(v1.PodRunning), admitted: true},
		"pending":  {pod: phase(v1.PodPending)},
		"gone":     {admitted: true},
		"done":     {pod: phase(v1.PodSucceeded), admitted: true},
		"failed":   {pod: phase(v1.PodFailed), admitted: true},
		"rejected": {pod: phase(v1.PodFailed), rejected: true},
	}
	found := map[types.UID]string{}
	for _, uid := range []types.UID{"running", "pending", "gone", "done", "failed", "rejected", "unknown"} {
		found[uid] = "/kubepods/pod" + string(uid)
	}
	got := orphanedPodCgroups(found, pods)
	want := map[types.UID]string{"done": "/kubepods/poddone", "failed": "/kubepods/podfailed",
		"rejected": "/kubepods/podrejected", "unknown": "/kubepods/podunknown"}
	if len(got) != len(want) {
		t.Fatalf("orphans %v; want %v", got, want)
	}
	for uid, name := range want {
		if got[uid] != name {
			t.Errorf("orphans %v; want %v", got, want)
		}
	}
}

// An orphaned pod cgroup whose pod still has a volume mounted (a mount
// point under its volumes directory) stays, its CPU shares brought down
// to 2, as upstream keeps it until the volumes are torn down; once
// unmounted, it goes.
func TestOrphanedPodCgroupKeptWhileVolumesMounted(t *testing.T) {
	dir := t.TempDir()
	for _, hier := range []string{"cpu", "memory"} {
		os.Mkdir(filepath.Join(dir, hier), 0o755)
	}
	h, _ := resizeHarness(t, func(c *Config) { c.CgroupDir = dir })
	fake := &plainCgroups{cgroupfs: h.k.cgroups.(cgroupfs)}
	h.k.cgroups = fake
	const uid, name = "0c4a-mounted", "/kubepods/burstable/pod0c4a-mounted"
	if err := fake.create(name, cgroupConfig{cpuShares: 512}); err != nil {
		t.Fatal(err)
	}
	vol := h.k.volumeDir(uid, "kubernetes.io~empty-dir", "cache")
	if err := os.MkdirAll(vol, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", vol, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	mounted := true
	t.Cleanup(func() {
		if mounted {
			syscall.Unmount(vol, syscall.MNT_DETACH)
		}
	})
	h.k.cleanupOrphanedPodCgroups(h.ctx)
	if len(fake.destroyed) != 0 {
		t.Fatalf("removed with a volume mounted: %v", fake.destroyed)
	}
	if got := readCgroupFile(t, dir, "cpu", name, "cpu.shares"); got != "2" {
		t.Errorf("cpu.shares of the orphan with a volume mounted: %q; want 2", got)
	}
	if err := syscall.Unmount(vol, 0); err != nil {
		t.Fatal(err)
	}
	mounted = false
	h.k.cleanupOrphanedPodCgroups(h.ctx)
	if !slices.Equal(fake.destroyed, []string{name}) {
		t.Errorf("removed %v once unmounted; want [%s]", fake.destroyed, name)
	}
}

// kubepods has the node's allocatable, as upstream's kubelet enforces it
// with --enforce-node-allocatable=pods: its CPU capacity as shares, its
// memory capacity as the memory limit, huge pages not taken off (as
// upstream's, whose capacity is the machine's MemTotal, the huge pages'
// pool in it: kubernetes#84426), nor an eviction threshold, on cgroup v1 and v2, written when made and at start (its
// NodeAllocatableEnforced event); a write that fails is upstream's
// FailedNodeAllocatableEnforcement warning and is tried again.
func TestKubepodsHasNodeAllocatable(t *testing.T) {
	capacity := func(c *Config) {
		c.CPU = resource.MustParse("3")
		c.Memory = resource.MustParse("8Gi")
		c.HugePages = []HugePages{{PageSize: 2 << 20, Pages: 512}}
	}
	want := cgroupConfig{cpuShares: 3072, memory: 8 << 30}
	want.hugetlb.add(2<<20, 1<<30) // the allocatable huge pages (hugetlb.go)
	if got := nodeAllocatableCgroupConfig((&Config{CPU: resource.MustParse("3"), Memory: resource.MustParse("8Gi"),
		HugePages: []HugePages{{PageSize: 2 << 20, Pages: 512}}}).capacity(), 0); got != want {
		t.Errorf("nodeAllocatableCgroupConfig: %+v; want %+v", got, want)
	}
	for _, unified := range []bool{false, true} {
		t.Run(map[bool]string{false: "v1", true: "v2"}[unified], func(t *testing.T) {
			dir := t.TempDir()
			if unified {
				os.WriteFile(filepath.Join(dir, "cgroup.controllers"), []byte("cpu memory\n"), 0o644)
			} else {
				os.Mkdir(filepath.Join(dir, "cpu"), 0o755)
				os.Mkdir(filepath.Join(dir, "memory"), 0o755)
			}
			h, rec := resizeHarness(t, func(c *Config) { c.CgroupDir = dir; capacity(c) })
			if err := h.k.updateQOSCgroups(); err != nil {
				t.Fatal(err)
			}
			shares, memory := filepath.Join("cpu", "kubepods", "cpu.shares"), filepath.Join("memory", "kubepods", "memory.limit_in_bytes")
			wantShares, wantMemory := "3072", strconv.Itoa(8<<30)
			if unified {
				shares, memory = filepath.Join("kubepods", "cpu.weight"), filepath.Join("kubepods", "memory.max")
				wantShares = strconv.FormatInt(cpuWeight(3072), 10)
			}
			if got := readCgroupFile(t, dir, shares); got != wantShares {
				t.Errorf("kubepods %s = %q; want %s", shares, got, wantShares)
			}
			if got := readCgroupFile(t, dir, memory); got != wantMemory {
				t.Errorf("kubepods %s = %q; want %s", memory, got, wantMemory)
			}
			// Changed behind the kubelet: written again at start.
			os.WriteFile(filepath.Join(dir, memory), []byte("1"), 0o644)
			if !h.k.enforceNodeAllocatable() || readCgroupFile(t, dir, memory) != wantMemory {
				t.Errorf("kubepods %s after enforcement: %q; want %s", memory, readCgroupFile(t, dir, memory), wantMemory)
			}
			if evs := drain(rec); !slices.Contains(evs, "Normal NodeAllocatableEnforced Updated Node Allocatable limit across pods") {
				t.Errorf("events %q", evs)
			}
			// A write that fails (the file a directory).
			os.Remove(filepath.Join(dir, memory))
			os.Mkdir(filepath.Join(dir, memory), 0o755)
			if h.k.enforceNodeAllocatable() {
				t.Error("enforcement reported written")
			}
			evs := drain(rec)
			if len(evs) != 1 || !strings.HasPrefix(evs[0], `Warning FailedNodeAllocatableEnforcement Failed to update Node Allocatable Limits ["kubepods"]: `) {
				t.Errorf("events %q", evs)
			}
		})
	}
}

// A running pod whose cgroup is gone is killed and started again in a
// cgroup made anew (a new sandbox, its containers again), as upstream's
// syncPod; one of restartPolicy Never is killed, not started again
// (terminal) and gets no cgroup; a pod whose cgroup exists is not
// killed.
func TestPodWithoutCgroupKilled(t *testing.T) {
	dir := t.TempDir()
	for _, hier := range []string{"cpu", "memory"} {
		os.Mkdir(filepath.Join(dir, hier), 0o755)
	}
	h, _ := resizeHarness(t, func(c *Config) { c.CgroupDir = dir })
	fake := &plainCgroups{cgroupfs: h.k.cgroups.(cgroupfs)}
	h.k.cgroups = fake
	sandboxes := func(p *v1.Pod) (all, ready int) {
		sbs, _ := h.rt.ListPodSandbox(h.ctx, nil)
		for _, sb := range sbs {
			if sb.Metadata.Uid == string(p.UID) {
				all++
				if sb.State == 0 { // SANDBOX_READY
					ready++
				}
			}
		}
		return all, ready
	}
	for _, never := range []bool{false, true} {
		name := map[bool]string{false: "always", true: "never"}[never]
		p := h.create(h.pod(name, func(p *v1.Pod) {
			if never {
				p.Spec.RestartPolicy = v1.RestartPolicyNever
			}
		}))
		p = h.sync(p)
		h.sync(p) // running, cgroup there: nothing killed
		cg := "/kubepods/besteffort/pod" + string(p.UID)
		if all, ready := sandboxes(p); all != 1 || ready != 1 || !fake.exists(cg) {
			t.Fatalf("%s: %d sandboxes (%d ready), cgroup there %v", name, all, ready, fake.exists(cg))
		}
		for _, hier := range []string{"cpu", "memory"} {
			os.RemoveAll(filepath.Join(dir, hier, cg))
		}
		got := h.sync(p)
		all, ready := sandboxes(p)
		if never {
			if ready != 0 || fake.exists(cg) || (got.Status.Phase != v1.PodFailed && got.Status.Phase != v1.PodSucceeded) {
				t.Errorf("never: %d sandboxes ready, cgroup made %v, phase %s; want none, no cgroup, terminal", ready, fake.exists(cg), got.Status.Phase)
			}
			continue
		}
		if all != 2 || ready != 1 || !fake.exists(cg) {
			t.Errorf("always: %d sandboxes (%d ready), cgroup made %v; want a new sandbox in a new cgroup", all, ready, fake.exists(cg))
		}
	}
}

// A sleeper is killed and reaped when its test ends, and dies with the
// test process when that ends without running its clean-ups.
func TestSleeperNeverOutlivesTest(t *testing.T) {
	if os.Getenv("KUBEPROOF_SLEEPER_CHILD") != "" {
		// The test process of the second check: its sleeper's pid out,
		// then an exit without clean-ups once told to.
		cmd := sleeper(t)
		os.Stdout.WriteString(strconv.Itoa(cmd.Process.Pid) + "\n")
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	var cmd *exec.Cmd
	t.Run("ends", func(t *testing.T) { cmd = sleeper(t) })
	if cmd.ProcessState == nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Error("sleeper not reaped at the end of its test")
	}

	child := exec.Command(os.Args[0], "-test.run=^TestSleeperNeverOutlivesTest$")
	child.Env = append(os.Environ(), "KUBEPROOF_SLEEPER_CHILD=1")
	stdin, err := child.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { child.Process.Kill(); child.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	pid, perr := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || perr != nil {
		t.Fatalf("child's sleeper pid: %q %v %v", line, err, perr)
	}
	// A pidfd of the sleeper before its parent ends (no pid reuse).
	fd, _, errno := syscall.Syscall(434 /* pidfd_open */, uintptr(pid), 0, 0)
	if errno != 0 {
		t.Fatalf("pidfd_open(%d): %v", pid, errno)
	}
	pidfd := int(fd)
	defer syscall.Close(pidfd)
	stdin.Close()
	io.Copy(&out, stdout)
	child.Wait()
	// Readable once the sleeper ended; a generous bound, a failure
	// only: the sleeper is killed then.
	var readable syscall.FdSet
	readable.Bits[pidfd/64] |= 1 << (pidfd % 64)
	if n, err := syscall.Select(pidfd+1, &readable, nil, nil, &syscall.Timeval{Sec: 30}); err != nil || n != 1 {
		syscall.Syscall6(424 /* pidfd_send_signal */, uintptr(pidfd), uintptr(syscall.SIGKILL), 0, 0, 0, 0)
		t.Errorf("the sleeper of a test process that ended outlived it (poll %d, %v)", n, err)
	}
}

// A pod whose phase turned terminal in the API (written by another, or
// by the kubelet while a sandbox's kill failed) keeps its cgroup and its
// processes until the kill that ends it, with its grace period, is done,
// as upstream's possiblyRunningPods holds a terminating pod's: then it
// goes at the next clean-up.
func TestOrphanedPodCgroupKeptUntilKilled(t *testing.T) {
	dir := t.TempDir()
	for _, hier := range []string{"cpu", "memory"} {
		os.Mkdir(filepath.Join(dir, hier), 0o755)
	}
	h, _ := resizeHarness(t, func(c *Config) { c.CgroupDir = dir })
	fake := &plainCgroups{cgroupfs: h.k.cgroups.(cgroupfs)}
	h.k.cgroups = fake
	p := h.sync(h.create(h.pod("failing", nil)))
	cg := "/kubepods/besteffort/pod" + string(p.UID)
	p.Status.Phase = v1.PodFailed
	p, err := h.client.CoreV1().Pods(p.Namespace).UpdateStatus(h.ctx, p, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h.k.HandlePod(p) // not synced yet: its kill not done
	h.k.cleanupOrphanedPodCgroups(h.ctx)
	if len(fake.destroyed) != 0 || !fake.exists(cg) {
		t.Fatalf("cgroup of a pod not killed yet removed: %v", fake.destroyed)
	}
	h.sync(p) // killed
	h.k.cleanupOrphanedPodCgroups(h.ctx)
	if !slices.Equal(fake.destroyed, []string{cg}) {
		t.Errorf("removed %v once killed; want [%s]", fake.destroyed, cg)
	}
}
