package kubelet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// The QoS classes' cgroups under the root cgroup, as upstream names them
// (Guaranteed pods' is /kubepods itself), and qosCgroupsOf's for it.
const (
	burstableCgroup  = "/kubepods/burstable"
	bestEffortCgroup = "/kubepods/besteffort"
)

var rootQOS = qosCgroupsOf("")

// cgroupPod is a pod of uid with one app container of those requests and
// limits ("" leaves a value out), its QoS class left for podQOS to compute.
func cgroupPod(uid string, containers ...v1.ResourceRequirements) *v1.Pod {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: types.UID("u-" + uid)}}
	for i, r := range containers {
		pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: "c" + string(rune('0'+i)), Resources: r})
	}
	return pod
}

// req is requests and limits of cpu and memory ("" leaves one out).
func req(reqCPU, reqMem, limCPU, limMem string) v1.ResourceRequirements {
	r := v1.ResourceRequirements{}
	set := func(l *v1.ResourceList, name v1.ResourceName, q string) {
		if q == "" {
			return
		}
		if *l == nil {
			*l = v1.ResourceList{}
		}
		(*l)[name] = resource.MustParse(q)
	}
	set(&r.Requests, v1.ResourceCPU, reqCPU)
	set(&r.Requests, v1.ResourceMemory, reqMem)
	set(&r.Limits, v1.ResourceCPU, limCPU)
	set(&r.Limits, v1.ResourceMemory, limMem)
	return r
}

// The sandbox's cgroup parent is the pod's cgroup as upstream's cgroupfs
// driver names it with cgroups per QoS class (its defaults): Guaranteed
// pods under /kubepods itself, the others under their class's cgroup.
func TestPodCgroupNameByQOSClass(t *testing.T) {
	for _, tc := range []struct {
		pod  *v1.Pod
		want string
	}{
		{cgroupPod("g", req("100m", "64Mi", "100m", "64Mi")), "/kubepods/podu-g"},
		{cgroupPod("b", req("100m", "", "200m", "64Mi")), "/kubepods/burstable/podu-b"},
		{cgroupPod("e", req("", "", "", "")), "/kubepods/besteffort/podu-e"},
	} {
		if got := rootQOS.podCgroup(tc.pod); got != tc.want {
			t.Errorf("podCgroup(%s): %q; want %q", tc.pod.UID, got, tc.want)
		}
		if got := sandboxConfig(tc.pod, 0, t.TempDir(), cgroupParams{}, rootQOS).GetLinux().GetCgroupParent(); got != tc.want {
			t.Errorf("sandbox cgroup parent of %s: %q; want %q", tc.pod.UID, got, tc.want)
		}
	}
	// status.qosClass, when the API server has set it, decides (upstream's
	// GetPodQOS).
	p := cgroupPod("s", req("", "", "", ""))
	p.Status.QOSClass = v1.PodQOSBurstable
	if got := rootQOS.podCgroup(p); got != "/kubepods/burstable/podu-s" {
		t.Errorf("podCgroupName with status.qosClass Burstable: %q", got)
	}
}

// A pod cgroup's values are upstream's ResourceConfigForPod's (CFS quota
// enforced, 100 ms period), worked out by hand from its rules.
func TestPodCgroupConfigAsUpstream(t *testing.T) {
	mi := int64(1 << 20)
	withInit := cgroupPod("i", req("100m", "", "200m", "64Mi"))
	withInit.Spec.InitContainers = []v1.Container{{Name: "init", Resources: req("100m", "", "100m", "")}}
	withOverhead := cgroupPod("o", req("100m", "", "200m", "64Mi"))
	withOverhead.Spec.Overhead = v1.ResourceList{v1.ResourceCPU: resource.MustParse("50m"), v1.ResourceMemory: resource.MustParse("16Mi")}
	podLevel := cgroupPod("l", req("100m", "", "", ""))
	podLevel.Spec.Resources = &v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m")},
		Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("256Mi")},
	}
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		want cgroupConfig
	}{
		{"Guaranteed: shares of the requests, quota and memory of the limits",
			cgroupPod("g", req("100m", "64Mi", "100m", "64Mi"), req("250m", "128Mi", "250m", "128Mi")),
			cgroupConfig{cpuShares: 358, cpuQuota: 35000, cpuPeriod: 100000, memory: 192 * mi}},
		{"Burstable, every container limited",
			cgroupPod("b", req("100m", "", "200m", "64Mi")),
			cgroupConfig{cpuShares: 102, cpuQuota: 20000, cpuPeriod: 100000, memory: 64 * mi}},
		{"Burstable, a container without a CPU limit: no quota",
			cgroupPod("c", req("100m", "", "200m", "64Mi"), req("50m", "32Mi", "", "32Mi")),
			cgroupConfig{cpuShares: 153, memory: 96 * mi}},
		{"Burstable, an init container without a memory limit: no memory limit",
			withInit, cgroupConfig{cpuShares: 102, cpuQuota: 20000, cpuPeriod: 100000}},
		{"Burstable with overhead: added to the requests and the set limits",
			withOverhead, cgroupConfig{cpuShares: 153, cpuQuota: 25000, cpuPeriod: 100000, memory: 80 * mi}},
		{"Burstable, requests only",
			cgroupPod("r", req("500m", "64Mi", "", "")), cgroupConfig{cpuShares: 512}},
		{"Burstable, pod-level resources stand for the containers'",
			podLevel, cgroupConfig{cpuShares: 512, cpuQuota: 100000, cpuPeriod: 100000, memory: 256 * mi}},
		{"Burstable, tiny amounts: at least 2 shares and a 1 ms quota",
			cgroupPod("t", req("1m", "", "5m", "")), cgroupConfig{cpuShares: 2, cpuQuota: 1000, cpuPeriod: 100000}},
		{"BestEffort: 2 shares, nothing else",
			cgroupPod("e", req("", "", "", "")), cgroupConfig{cpuShares: 2}},
	} {
		if got := podCgroupConfig(tc.pod); got != tc.want {
			t.Errorf("%s: %+v; want %+v", tc.name, got, tc.want)
		}
	}
}

// readCgroupFile is a file of a cgroup dir, trimmed ("" if missing).
func readCgroupFile(t *testing.T, path ...string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(path...))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// readCgroup is what read gives of cgroup name's CPU and memory, both
// read.
func readCgroup(m podCgroups, name string) (cgroupConfig, error) {
	c, err := m.read(name, v1.ResourceCPU)
	if err != nil {
		return c, err
	}
	mem, err := m.read(name, v1.ResourceMemory)
	c.memory = mem.memory
	return c, err
}

// cgroupfs on cgroup v1 (a hierarchy per controller) and v2 (one
// hierarchy, controllers handed down through cgroup.subtree_control):
// create makes the cgroup and writes upstream's files in each version's
// units (cpu.weight from shares as upstream's getCPUWeight, cpu.max, "max"
// for none), read gives back what was written, of CPU and of memory
// separately as upstream's GetCgroupConfig (v1's unlimited memory limit
// the number the kernel shows, v2's "max" -1), set writes only the
// values given, and destroy removes the cgroup from every hierarchy.
func TestCgroupfsFiles(t *testing.T) {
	c := cgroupConfig{cpuShares: 102, cpuQuota: 20000, cpuPeriod: 100000, memory: 64 << 20}
	const name = "/kubepods/burstable/podx"

	v1dir := t.TempDir()
	for _, h := range []string{"cpu", "memory", "pids", "cpuset"} {
		if err := os.Mkdir(filepath.Join(v1dir, h), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	m := cgroupfs{root: v1dir}
	if m.exists(name) {
		t.Fatal("exists before create")
	}
	if err := m.create(name, c); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{"cpu/" + name + "/cpu.shares": "102", "cpu/" + name + "/cpu.cfs_quota_us": "20000",
		"cpu/" + name + "/cpu.cfs_period_us": "100000", "memory/" + name + "/memory.limit_in_bytes": "67108864"} {
		if got := readCgroupFile(t, v1dir, file); got != want {
			t.Errorf("v1 %s = %q; want %q", file, got, want)
		}
	}
	if got, err := readCgroup(m, name); err != nil || got != c {
		t.Errorf("v1 read: %+v, %v; want %+v", got, err, c)
	}
	if err := m.set(name, cgroupConfig{memory: 128 << 20}); err != nil {
		t.Fatal(err)
	}
	if got := readCgroupFile(t, v1dir, "memory", name, "memory.limit_in_bytes"); got != "134217728" {
		t.Errorf("v1 memory after set: %s", got)
	}
	if got := readCgroupFile(t, v1dir, "cpu", name, "cpu.shares"); got != "102" {
		t.Errorf("v1 cpu.shares changed by a memory set: %s", got)
	}
	os.WriteFile(filepath.Join(v1dir, "memory", name, "memory.limit_in_bytes"), []byte("9223372036854771712\n"), 0o644)
	os.WriteFile(filepath.Join(v1dir, "cpu", name, "cpu.cfs_quota_us"), []byte("-1\n"), 0o644)
	if got, err := readCgroup(m, name); err != nil || got.memory != 9223372036854771712 || got.cpuQuota != -1 {
		t.Errorf("v1 read of no limits: %+v, %v; want memory 9223372036854771712 (as the kernel shows it) and quota -1", got, err)
	}
	// Each resource on its own: memory unreadable, CPU still read.
	os.Rename(filepath.Join(v1dir, "memory", name, "memory.limit_in_bytes"), filepath.Join(v1dir, "memory", name, "moved"))
	if got, err := m.read(name, v1.ResourceCPU); err != nil || got != (cgroupConfig{cpuShares: 102, cpuQuota: -1, cpuPeriod: 100000}) {
		t.Errorf("v1 CPU read with memory unreadable: %+v, %v", got, err)
	}
	if _, err := m.read(name, v1.ResourceMemory); err == nil {
		t.Error("v1 memory read of no memory.limit_in_bytes: no error")
	}
	if _, err := m.read(name, v1.ResourcePods); err == nil {
		t.Error("read of pods: no error")
	}
	os.Rename(filepath.Join(v1dir, "memory", name, "moved"), filepath.Join(v1dir, "memory", name, "memory.limit_in_bytes"))
	// destroy: out of every hierarchy, the runtime's too (cpuset), once
	// empty (a real cgroup dir's files are not files).
	for _, h := range []string{"cpu", "memory"} {
		entries, _ := os.ReadDir(filepath.Join(v1dir, h, name))
		for _, e := range entries {
			os.Remove(filepath.Join(v1dir, h, name, e.Name()))
		}
	}
	os.MkdirAll(filepath.Join(v1dir, "cpuset", name), 0o755)
	if err := m.destroy(name); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"cpu", "memory", "cpuset"} {
		if _, err := os.Stat(filepath.Join(v1dir, h, name)); err == nil {
			t.Errorf("v1 %s/%s left", h, name)
		}
	}
	if err := m.destroy(name); err != nil {
		t.Errorf("destroy of a gone cgroup: %v", err)
	}

	v2dir := t.TempDir()
	for _, d := range []string{"", "kubepods", "kubepods/burstable"} {
		os.MkdirAll(filepath.Join(v2dir, d), 0o755)
		os.WriteFile(filepath.Join(v2dir, d, "cgroup.controllers"), []byte("cpuset cpu io memory hugetlb pids\n"), 0o644)
	}
	u := cgroupfs{root: v2dir, unified: true}
	if err := u.create(name, c); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{name + "/cpu.weight": "4", name + "/cpu.max": "20000 100000",
		name + "/memory.max": "67108864", "cgroup.subtree_control": "+cpu +memory +hugetlb +pids",
		"kubepods/cgroup.subtree_control": "+cpu +memory +hugetlb +pids", "kubepods/burstable/cgroup.subtree_control": "+cpu +memory +hugetlb +pids"} {
		if got := readCgroupFile(t, v2dir, file); got != want {
			t.Errorf("v2 %s = %q; want %q", file, got, want)
		}
	}
	if err := u.set(name, cgroupConfig{cpuShares: 2, cpuQuota: -1, cpuPeriod: 100000, memory: -1}); err != nil {
		t.Fatal(err)
	}
	got, err := readCgroup(u, name)
	if want := (cgroupConfig{cpuShares: 2, cpuQuota: -1, cpuPeriod: 100000, memory: -1}); err != nil || got != want {
		t.Errorf("v2 read: %+v, %v; want %+v", got, err, want)
	}
	if w := readCgroupFile(t, v2dir, name, "cpu.max"); w != "max 100000" {
		t.Errorf("v2 cpu.max of no quota: %q", w)
	}
	for shares, weight := range map[int64]int64{2: 1, 1024: 39, 262144: 10000} {
		if got := cpuWeight(shares); got != weight {
			t.Errorf("cpuWeight(%d) = %d; want %d", shares, got, weight)
		}
	}
}

// recordingCgroups is cgroupfs that records the pod cgroups made and
// removed and what the runtime held of the pod when each was made.
type recordingCgroups struct {
	cgroupfs
	rt        *sim.Runtime
	created   []string
	sandboxes []int // the runtime's sandboxes when each was created
	destroyed []string
	onSet     func(name string, c cgroupConfig) // if set, told of each set before it is made
	busy      int                               // removals of existing cgroups to fail first (a process still in it)
}

func (r *recordingCgroups) set(name string, c cgroupConfig) error {
	if r.onSet != nil {
		r.onSet(name, c)
	}
	return r.cgroupfs.set(name, c)
}

func (r *recordingCgroups) create(name string, c cgroupConfig) error {
	if !strings.Contains(name, "/pod") { // a QoS class's
		return r.cgroupfs.create(name, c)
	}
	r.created = append(r.created, name)
	sbs, _ := r.rt.ListPodSandbox(context.Background(), nil)
	r.sandboxes = append(r.sandboxes, len(sbs))
	return r.cgroupfs.create(name, c)
}

func (r *recordingCgroups) destroy(name string) error {
	if _, err := os.Stat(r.dir("cpu", name)); err == nil {
		if r.busy > 0 {
			r.busy--
			return fmt.Errorf("removing cgroup %s: device or resource busy", name)
		}
		r.destroyed = append(r.destroyed, name)
		for _, ctl := range v1Controllers {
			os.RemoveAll(r.dir(ctl, name))
		}
	}
	return nil
}

// A kubelet managing its node's cgroups (CgroupDir set) makes a pod's
// cgroup, named and valued as upstream's, before the pod's sandbox, whose
// parent it is, and removes it once the pod is gone and cleaned up; a
// cgroup that cannot be made is upstream's FailedToCreatePodContainer
// warning and sync error, and no sandbox is made.
func TestPodCgroupMadeBeforeSandboxAndRemoved(t *testing.T) {
	dir := t.TempDir()
	for _, h := range []string{"cpu", "memory"} {
		os.Mkdir(filepath.Join(dir, h), 0o755)
	}
	h, rec := eventHarness(t)
	k := h.newKubelet(func(c *Config) { c.Recorder = rec; c.CgroupDir = dir })
	h.k = k
	if _, ok := k.cgroups.(cgroupfs); !ok {
		t.Fatalf("a kubelet with CgroupDir manages no cgroups: %T", k.cgroups)
	}
	fake := &recordingCgroups{cgroupfs: k.cgroups.(cgroupfs), rt: h.rt}
	k.cgroups = fake
	p := h.create(h.pod("burst", func(p *v1.Pod) {
		p.Status.QOSClass = v1.PodQOSBurstable
		p.Spec.Containers[0].Resources = req("100m", "", "200m", "64Mi")
	}))
	h.sync(p)
	const name = "/kubepods/burstable/poduid-burst"
	if !slices.Equal(fake.created, []string{name}) || fake.sandboxes[0] != 0 {
		t.Fatalf("cgroups made %v with %v sandboxes in the runtime; want %s before the sandbox", fake.created, fake.sandboxes, name)
	}
	if got := readCgroupFile(t, dir, "cpu", name, "cpu.cfs_quota_us"); got != "20000" {
		t.Errorf("pod cgroup's cpu.cfs_quota_us = %q; want 20000", got)
	}
	sbs, _ := h.rt.ListPodSandbox(h.ctx, nil)
	if len(sbs) != 1 {
		t.Fatalf("sandboxes: %d", len(sbs))
	}
	// Synced again while it runs: nothing made again.
	h.sync(p)
	if len(fake.created) != 1 {
		t.Errorf("cgroup made again: %v", fake.created)
	}
	if err := h.client.CoreV1().Pods(p.Namespace).Delete(h.ctx, p.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.sync(p)
	if !slices.Equal(fake.destroyed, []string{name}) {
		t.Errorf("cgroups removed %v; want [%s]", fake.destroyed, name)
	}

	// A cgroup that cannot be made (the memory hierarchy is a file).
	os.RemoveAll(filepath.Join(dir, "memory"))
	os.WriteFile(filepath.Join(dir, "memory"), nil, 0o644)
	drain(rec)
	q := h.create(h.pod("nocg", func(p *v1.Pod) { p.Status.QOSClass = v1.PodQOSBestEffort }))
	h.k.HandlePod(h.get(q))
	_, err := h.k.syncPod(h.ctx, q.UID)
	if err == nil || !strings.Contains(err.Error(), "failed to ensure that the pod: uid-nocg cgroups exist and are correctly applied: ") {
		t.Errorf("sync error: %v", err)
	}
	evs := drain(rec)
	if len(evs) == 0 || !strings.HasPrefix(evs[0], "Warning FailedToCreatePodContainer unable to ensure pod container exists: creating cgroup /kubepods/besteffort/poduid-nocg: ") {
		t.Errorf("events: %q", evs)
	}
	if sbs, _ := h.rt.ListPodSandbox(h.ctx, nil); len(sbs) != 0 {
		t.Errorf("a sandbox made without its cgroup: %d", len(sbs))
	}
	// Synced again: the cgroup made in the cpu hierarchy only is not
	// taken for made (upstream's Exists wants it in every hierarchy); it
	// fails again, and no sandbox is made.
	if _, err := h.k.syncPod(h.ctx, q.UID); err == nil {
		t.Error("second sync of a pod whose cgroup is half made succeeded")
	}
	if sbs, _ := h.rt.ListPodSandbox(h.ctx, nil); len(sbs) != 0 {
		t.Errorf("a sandbox made in a half-made cgroup: %d", len(sbs))
	}
}

// A pod cgroup made whose values cannot be written is no failure: as
// upstream's cgroup manager Create (Apply, then Set with its error only
// logged), no FailedToCreatePodContainer event, and the sandbox is made.
func TestPodCgroupValuesNotWrittenIsNoFailure(t *testing.T) {
	dir := t.TempDir()
	for _, hier := range []string{"cpu", "memory"} {
		os.Mkdir(filepath.Join(dir, hier), 0o755)
	}
	h, rec := eventHarness(t)
	h.k = h.newKubelet(func(c *Config) { c.Recorder = rec; c.CgroupDir = dir })
	const name = "/kubepods/besteffort/poduid-novalues"
	// cpu.shares cannot be written: it is a directory.
	if err := os.MkdirAll(filepath.Join(dir, "cpu", name, "cpu.shares"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := h.create(h.pod("novalues", nil))
	h.sync(p)
	for _, e := range drain(rec) {
		if strings.Contains(e, EventFailedToCreatePodContainer) {
			t.Errorf("event %q", e)
		}
	}
	if sbs, _ := h.rt.ListPodSandbox(h.ctx, nil); len(sbs) != 1 {
		t.Errorf("sandboxes: %d; want 1", len(sbs))
	}
}

// A pod's cgroup is made before its volumes are set up, as upstream's
// syncPod makes it before it waits for the volumes: a pod whose configMap
// is missing has its cgroup, and the Burstable shares count it, while it
// waits (ContainerCreating) for its volume.
func TestPodCgroupMadeBeforeVolumes(t *testing.T) {
	dir := t.TempDir()
	for _, hier := range []string{"cpu", "memory"} {
		os.Mkdir(filepath.Join(dir, hier), 0o755)
	}
	h, _ := resizeHarness(t, func(c *Config) { c.CgroupDir = dir })
	fake := &recordingCgroups{cgroupfs: h.k.cgroups.(cgroupfs), rt: h.rt}
	h.k.cgroups = fake
	p := h.create(h.pod("novol", func(p *v1.Pod) {
		p.Status.QOSClass = v1.PodQOSBurstable
		p.Spec.Containers[0].Resources = req("300m", "", "", "")
		p.Spec.Volumes = []v1.Volume{{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
			LocalObjectReference: v1.LocalObjectReference{Name: "missing"}}}}}
	}))
	if _, err := h.k.syncPod(h.ctx, p.UID); err == nil {
		t.Fatal("sync of a pod whose configMap is missing succeeded")
	}
	if sbs, _ := h.rt.ListPodSandbox(h.ctx, nil); len(sbs) != 0 {
		t.Fatalf("a sandbox made before the volumes: %d", len(sbs))
	}
	const name = "/kubepods/burstable/poduid-novol"
	if !slices.Equal(fake.created, []string{name}) {
		t.Errorf("cgroups made while the volume is missing: %v; want [%s]", fake.created, name)
	}
	if got := readCgroupFile(t, dir, "cpu", burstableCgroup, "cpu.shares"); got != "307" {
		t.Errorf("burstable cpu.shares: %q; want 307", got)
	}
}

// A pod whose sandbox was never made (its RuntimeClass missing) has its
// cgroup removed all the same once it is deleted and cleaned up.
func TestPodCgroupRemovedWithoutSandbox(t *testing.T) {
	dir := t.TempDir()
	for _, hier := range []string{"cpu", "memory"} {
		os.Mkdir(filepath.Join(dir, hier), 0o755)
	}
	h, _ := resizeHarness(t, func(c *Config) { c.CgroupDir = dir })
	fake := &recordingCgroups{cgroupfs: h.k.cgroups.(cgroupfs), rt: h.rt}
	h.k.cgroups = fake
	class := "missing"
	p := h.create(h.pod("nosb", func(p *v1.Pod) { p.Spec.RuntimeClassName = &class }))
	if _, err := h.k.syncPod(h.ctx, p.UID); err == nil {
		t.Fatal("sync of a pod whose RuntimeClass is missing succeeded")
	}
	const name = "/kubepods/besteffort/poduid-nosb"
	if sbs, _ := h.rt.ListPodSandbox(h.ctx, nil); len(sbs) != 0 || !fake.exists(name) {
		t.Fatalf("%d sandboxes, cgroups made %v; want none and %s", len(sbs), fake.created, name)
	}
	if err := h.client.CoreV1().Pods(p.Namespace).Delete(h.ctx, p.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.sync(p)
	if fake.exists(name) || !slices.Equal(fake.destroyed, []string{name}) {
		t.Errorf("cgroups removed %v; want [%s]", fake.destroyed, name)
	}
}

// The pod cgroup's part of an in-place resize, as upstream's
// doPodResizeAction: for each resource, values that grow are written
// before the containers', values that shrink after; a limit the pod does
// not declare is left alone; none (-1) is more than any limit.
func TestPodCgroupStep(t *testing.T) {
	mi := int64(1 << 20)
	for _, tc := range []struct {
		name     string
		cur      cgroupConfig
		want     cgroupConfig
		res      v1.ResourceName
		up, down cgroupConfig
	}{
		{"memory up", cgroupConfig{memory: 64 * mi}, cgroupConfig{memory: 128 * mi}, v1.ResourceMemory, cgroupConfig{memory: 128 * mi}, cgroupConfig{}},
		{"memory down", cgroupConfig{memory: 128 * mi}, cgroupConfig{memory: 64 * mi}, v1.ResourceMemory, cgroupConfig{}, cgroupConfig{memory: 64 * mi}},
		{"memory from none", cgroupConfig{memory: -1}, cgroupConfig{memory: 64 * mi}, v1.ResourceMemory, cgroupConfig{}, cgroupConfig{memory: 64 * mi}},
		{"memory not declared", cgroupConfig{memory: 64 * mi}, cgroupConfig{}, v1.ResourceMemory, cgroupConfig{}, cgroupConfig{}},
		{"memory unchanged, CPU asked", cgroupConfig{memory: 64 * mi, cpuShares: 102}, cgroupConfig{memory: 64 * mi, cpuShares: 102}, v1.ResourceCPU, cgroupConfig{}, cgroupConfig{}},
		{"cpu up", cgroupConfig{cpuShares: 102, cpuQuota: 20000, cpuPeriod: 100000}, cgroupConfig{cpuShares: 204, cpuQuota: 40000, cpuPeriod: 100000},
			v1.ResourceCPU, cgroupConfig{cpuShares: 204, cpuQuota: 40000, cpuPeriod: 100000}, cgroupConfig{}},
		{"cpu shares up, quota down", cgroupConfig{cpuShares: 102, cpuQuota: 40000, cpuPeriod: 100000}, cgroupConfig{cpuShares: 204, cpuQuota: 30000, cpuPeriod: 100000},
			v1.ResourceCPU, cgroupConfig{cpuShares: 204}, cgroupConfig{cpuQuota: 30000, cpuPeriod: 100000}},
		{"cpu quota from none", cgroupConfig{cpuShares: 102, cpuQuota: -1, cpuPeriod: 100000}, cgroupConfig{cpuShares: 102, cpuQuota: 20000, cpuPeriod: 100000},
			v1.ResourceCPU, cgroupConfig{}, cgroupConfig{cpuQuota: 20000, cpuPeriod: 100000}},
		{"cpu quota not declared", cgroupConfig{cpuShares: 102, cpuQuota: 20000, cpuPeriod: 100000}, cgroupConfig{cpuShares: 51},
			v1.ResourceCPU, cgroupConfig{}, cgroupConfig{cpuShares: 51}},
	} {
		if got := podCgroupStep(tc.cur, tc.want, tc.res, true); got != tc.up {
			t.Errorf("%s: before the containers %+v; want %+v", tc.name, got, tc.up)
		}
		if got := podCgroupStep(tc.cur, tc.want, tc.res, false); got != tc.down {
			t.Errorf("%s: after the containers %+v; want %+v", tc.name, got, tc.down)
		}
	}
}

// An in-place resize changes the pod cgroup of a kubelet managing its
// node's cgroups in upstream's order: raised limits before the
// containers' updates (the container still has its old values when the
// pod cgroup is written), lowered ones after them (the container already
// has its new values), memory before CPU; the cgroup ends with the pod's
// new values.
func TestResizePodCgroupOrder(t *testing.T) {
	dir := t.TempDir()
	for _, hier := range []string{"cpu", "memory"} {
		os.Mkdir(filepath.Join(dir, hier), 0o755)
	}
	h, _ := resizeHarness(t, func(c *Config) { c.CgroupDir = dir })
	fake := &recordingCgroups{cgroupfs: h.k.cgroups.(cgroupfs), rt: h.rt}
	h.k.cgroups = fake
	p := h.create(h.pod("web", func(p *v1.Pod) {
		p.Status.QOSClass = v1.PodQOSBurstable
		p.Spec.Containers[0].Resources = resources("100m", "200m", "64Mi", "128Mi")
	}))
	h.sync(p)
	const name = "/kubepods/burstable/poduid-web"
	var log []string
	fake.onSet = func(n string, c cgroupConfig) {
		r := h.runtimeResources(p, "app")
		log = append(log, fmt.Sprintf("%s %+v with the container at memory %d quota %d shares %d", n, c, r.MemoryLimitInBytes, r.CpuQuota, r.CpuShares))
	}
	check := func(step string, want ...string) {
		t.Helper()
		if !slices.Equal(log, want) {
			t.Errorf("%s: pod cgroup writes\n%s\nwant\n%s", step, strings.Join(log, "\n"), strings.Join(want, "\n"))
		}
		log = nil
	}
	h.resize(p, "app", resources("300m", "400m", "64Mi", "256Mi"))
	h.sync(p)
	check("up",
		name+" {cpuShares:0 cpuQuota:0 cpuPeriod:0 memory:268435456 pids:0} with the container at memory 134217728 quota 20000 shares 102",
		name+" {cpuShares:307 cpuQuota:40000 cpuPeriod:100000 memory:0 pids:0} with the container at memory 268435456 quota 20000 shares 102")
	h.sync(p)
	h.resize(p, "app", resources("50m", "100m", "32Mi", "64Mi"))
	h.sync(p)
	check("down",
		name+" {cpuShares:0 cpuQuota:0 cpuPeriod:0 memory:67108864 pids:0} with the container at memory 67108864 quota 40000 shares 307",
		name+" {cpuShares:51 cpuQuota:10000 cpuPeriod:100000 memory:0 pids:0} with the container at memory 67108864 quota 10000 shares 51")
	if got, err := readCgroup(fake, name); err != nil || got != (cgroupConfig{cpuShares: 51, cpuQuota: 10000, cpuPeriod: 100000, memory: 64 << 20}) {
		t.Errorf("pod cgroup after the resizes: %+v, %v", got, err)
	}
}

// The Burstable QoS cgroup's shares are those of its pods' CPU requests
// summed, with their overhead, as upstream's QoS container manager; the
// other classes' pods do not count; none is 2.
func TestBurstableCPUShares(t *testing.T) {
	withOverhead := cgroupPod("o", req("250m", "", "", ""))
	withOverhead.Spec.Overhead = v1.ResourceList{v1.ResourceCPU: resource.MustParse("50m")}
	pods := []*v1.Pod{
		cgroupPod("g", req("1", "64Mi", "1", "64Mi")),
		cgroupPod("b", req("100m", "", "200m", "")),
		withOverhead,
		cgroupPod("e", req("", "", "", "")),
	}
	if got := burstableCPUShares(pods); got != 409 {
		t.Errorf("burstable shares: %d; want 409 (400m)", got)
	}
	if got := burstableCPUShares(pods[:1]); got != 2 {
		t.Errorf("burstable shares without Burstable pods: %d; want 2", got)
	}
}

// A kubelet managing its node's cgroups makes the QoS classes' cgroups at
// start (BestEffort 2 shares, Burstable 2 with no pods) and keeps the
// Burstable one's shares those of its active pods' CPU requests as pods
// come (before the pod's cgroup is made) and go. A pod being deleted is
// still active when its kill updates them (upstream's killPod runs within
// SyncTerminatingPod, before the pod worker has it terminated, and
// GetActivePods keeps a pod until then); the next update, here the
// periodic one, leaves it out, as does the one after its cgroup is
// removed.
func TestQOSCgroupShares(t *testing.T) {
	dir := t.TempDir()
	for _, hier := range []string{"cpu", "memory"} {
		os.Mkdir(filepath.Join(dir, hier), 0o755)
	}
	h, _ := resizeHarness(t, func(c *Config) { c.CgroupDir = dir })
	fake := &recordingCgroups{cgroupfs: h.k.cgroups.(cgroupfs), rt: h.rt}
	h.k.cgroups = fake
	shares := func(name string) string { return readCgroupFile(t, dir, "cpu", name, "cpu.shares") }
	// Another kubelet of the node, run until it has made them (its last,
	// BestEffort's, written).
	run := h.newKubelet(func(c *Config) { c.CgroupDir = dir })
	made := make(chan struct{})
	run.cgroups = &madeCgroups{cgroupfs: run.cgroups.(cgroupfs), made: made}
	ctx, cancel := context.WithCancel(h.ctx)
	done := make(chan error, 1)
	go func() { done <- run.Run(ctx) }()
	select {
	case <-made:
	case err := <-done:
		t.Fatalf("Run returned before making the QoS cgroups: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if be, b := shares(bestEffortCgroup), shares(burstableCgroup); be != "2" || b != "2" {
		t.Fatalf("at start: besteffort cpu.shares %q, burstable %q; want 2 and 2", be, b)
	}
	p := h.create(h.pod("b1", func(p *v1.Pod) {
		p.Status.QOSClass = v1.PodQOSBurstable
		p.Spec.Containers[0].Resources = req("300m", "", "", "")
	}))
	h.sync(p)
	if got := shares(burstableCgroup); got != "307" {
		t.Errorf("burstable cpu.shares with a 300m pod: %q; want 307", got)
	}
	// Deleted gracefully: the sync that kills it (upstream's killPod)
	// updates the shares with the pod still counted, as it is still
	// terminating; once killed it is terminated and the next update gives
	// its shares back, before the pod is cleaned up.
	deletePod(t, h, p, 30)
	h.k.HandlePod(h.get(p))
	if _, err := h.k.syncPod(h.ctx, p.UID); err != nil {
		t.Fatal(err)
	}
	if got := shares(burstableCgroup); got != "307" {
		t.Errorf("burstable cpu.shares as the pod is killed: %q; want 307 (still terminating)", got)
	}
	if err := h.k.updateQOSCgroups(); err != nil {
		t.Fatal(err)
	}
	if got := shares(burstableCgroup); got != "2" {
		t.Errorf("burstable cpu.shares once the pod is killed: %q; want 2", got)
	}
	// Its cgroup went with that sync, the pod terminated and its volumes
	// torn down, before its final delete (upstream's SyncTerminatedPod).
	if fake.exists("/kubepods/burstable/poduid-b1") || len(fake.destroyed) != 1 {
		t.Errorf("pod cgroup not removed once the pod terminated (removed %v)", fake.destroyed)
	}
	h.sync(p)
	if got := shares(burstableCgroup); got != "2" || len(fake.destroyed) != 1 {
		t.Errorf("burstable cpu.shares once the pod is gone: %q (cgroups removed %v); want 2", got, fake.destroyed)
	}
}

// An evicted pod's shares count in the Burstable QoS cgroup's while its
// eviction kills it, as upstream's killPod within SyncTerminatingPod (the
// pod Failed in the status manager but its termination requested: still
// active), and not once it is killed; another pod's are unaffected. A
// pod whose eviction's kill failed (a container that will not stop)
// still counts, its termination not done.
func TestQOSCgroupSharesOfEvictedPod(t *testing.T) {
	dir := t.TempDir()
	for _, hier := range []string{"cpu", "memory"} {
		os.Mkdir(filepath.Join(dir, hier), 0o755)
	}
	h, _ := resizeHarness(t, func(c *Config) { c.CgroupDir = dir })
	var during []string // the Burstable shares written while a kill is under way
	killing := false
	fake := &recordingCgroups{cgroupfs: h.k.cgroups.(cgroupfs), rt: h.rt, onSet: func(name string, c cgroupConfig) {
		if killing && name == burstableCgroup {
			during = append(during, strconv.FormatInt(c.cpuShares, 10))
		}
	}}
	h.k.cgroups = fake
	shares := func() string { return readCgroupFile(t, dir, "cpu", burstableCgroup, "cpu.shares") }
	update := func() {
		t.Helper()
		if err := h.k.updateQOSCgroups(); err != nil {
			t.Fatal(err)
		}
	}
	burstable := func(name, cpu string, mutate func(*v1.Pod)) *v1.Pod {
		p := h.create(h.pod(name, func(p *v1.Pod) {
			p.Status.QOSClass = v1.PodQOSBurstable
			p.Spec.Containers[0].Resources = req(cpu, "", "", "")
			if mutate != nil {
				mutate(p)
			}
		}))
		h.sync(p)
		return p
	}
	burstable("keep", "200m", nil)
	hog := burstable("hog", "300m", nil)
	stuck := burstable("stuck", "100m", func(p *v1.Pod) { p.Annotations[sim.AnnotationStopFailure] = "ttrpc: closed" })
	if got := shares(); got != "614" {
		t.Fatalf("burstable cpu.shares with 200m, 300m and 100m pods: %q; want 614", got)
	}
	killing = true
	if err := evictNow(h, h.get(hog)); err != nil {
		t.Fatal(err)
	}
	killing = false
	if !slices.Equal(during, []string{"614"}) {
		t.Errorf("burstable cpu.shares written by the eviction's kill: %v; want [614] (the pod still terminating)", during)
	}
	update()
	if got := shares(); got != "307" {
		t.Errorf("burstable cpu.shares once the evicted pod is killed: %q; want 307 (300m)", got)
	}
	if err := evictNow(h, h.get(stuck)); err == nil {
		t.Fatal("the eviction of a pod whose container would not stop succeeded")
	}
	update()
	if got := shares(); got != "307" {
		t.Errorf("burstable cpu.shares while an evicted pod's kill fails: %q; want 307 (still terminating)", got)
	}
}

// madeCgroups is cgroupfs that closes made once the BestEffort QoS
// cgroup is written (made or set).
type madeCgroups struct {
	cgroupfs
	made chan struct{}
	once sync.Once
}

func (m *madeCgroups) create(name string, c cgroupConfig) error {
	err := m.cgroupfs.create(name, c)
	m.written(name)
	return err
}

func (m *madeCgroups) set(name string, c cgroupConfig) error {
	err := m.cgroupfs.set(name, c)
	m.written(name)
	return err
}

func (m *madeCgroups) written(name string) {
	if name == bestEffortCgroup {
		m.once.Do(func() { close(m.made) })
	}
}

// failingCgroups is a podCgroups that cannot make cgroups; a failed create
// also stops the kubelet running (cancel), so that a Run going on without
// them returns.
type failingCgroups struct{ cancel context.CancelFunc }

func (f failingCgroups) exists(string) bool { return false }
func (f failingCgroups) create(name string, _ cgroupConfig) error {
	f.cancel()
	return fmt.Errorf("creating cgroup %s: mkdir: not a directory", name)
}
func (f failingCgroups) set(string, cgroupConfig) error { return nil }
func (f failingCgroups) read(string, v1.ResourceName) (cgroupConfig, error) {
	return cgroupConfig{}, nil
}
func (f failingCgroups) destroy(string) error { return nil }
func (f failingCgroups) podCgroups(qosCgroups) (map[types.UID]string, error) {
	return nil, nil
}
func (f failingCgroups) pids(string) []int { return nil }

// A kubelet that cannot make the QoS classes' cgroups does not run, as
// upstream's container manager fails the kubelet's start.
func TestRunFailsWithoutQOSCgroups(t *testing.T) {
	h, _ := resizeHarness(t, nil)
	run := h.newKubelet(func(c *Config) { c.CgroupDir = t.TempDir() })
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	run.cgroups = failingCgroups{cancel: cancel}
	err := run.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "failed to create top level QOS cgroups: updating the QoS cgroups: creating cgroup /kubepods: ") {
		t.Fatalf("Run: %v; want the QoS cgroups' failure", err)
	}
}

// A pod cgroup whose removal fails (a process still in it) is removed
// when tried again, by the orphaned pod cgroup clean-up of housekeeping.
func TestPodCgroupRemovalRetried(t *testing.T) {
	dir := t.TempDir()
	for _, hier := range []string{"cpu", "memory"} {
		os.Mkdir(filepath.Join(dir, hier), 0o755)
	}
	h, _ := resizeHarness(t, func(c *Config) { c.CgroupDir = dir })
	fake := &recordingCgroups{cgroupfs: h.k.cgroups.(cgroupfs), rt: h.rt}
	h.k.cgroups = fake
	p := h.create(h.pod("left", nil))
	h.sync(p)
	const name = "/kubepods/besteffort/poduid-left"
	if err := h.client.CoreV1().Pods(p.Namespace).Delete(h.ctx, p.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	fake.busy = 1
	h.sync(p)
	if !fake.exists(name) || len(fake.destroyed) != 0 {
		t.Fatalf("pod cgroup removed though busy: %v", fake.destroyed)
	}
	h.k.cleanupOrphanedPodCgroups(h.ctx)
	if fake.exists(name) || !slices.Equal(fake.destroyed, []string{name}) {
		t.Fatalf("pod cgroup not removed when tried again: %v", fake.destroyed)
	}
	h.k.cleanupOrphanedPodCgroups(h.ctx)
	if len(fake.destroyed) != 1 {
		t.Errorf("removed again: %v", fake.destroyed)
	}
}

// overlapCgroups is a podCgroups that records whether two callers were
// ever in it at once (each call yields while inside, so that an
// unserialized caller comes in).
type overlapCgroups struct {
	inside  atomic.Int32
	overlap atomic.Bool
}

func (o *overlapCgroups) enter() {
	if o.inside.Add(1) > 1 {
		o.overlap.Store(true)
	}
	runtime.Gosched()
	o.inside.Add(-1)
}
func (o *overlapCgroups) exists(string) bool                { o.enter(); return true }
func (o *overlapCgroups) create(string, cgroupConfig) error { o.enter(); return nil }
func (o *overlapCgroups) set(string, cgroupConfig) error    { o.enter(); return nil }
func (o *overlapCgroups) read(string, v1.ResourceName) (cgroupConfig, error) {
	o.enter()
	return cgroupConfig{}, nil
}
func (o *overlapCgroups) destroy(string) error { o.enter(); return nil }
func (o *overlapCgroups) podCgroups(qosCgroups) (map[types.UID]string, error) {
	o.enter()
	return nil, nil
}
func (o *overlapCgroups) pids(string) []int { o.enter(); return nil }

// The QoS cgroups are updated by one caller at a time, as upstream's QoS
// container manager holds its lock from reading the active pods to the
// last write (UpdateCgroups): pod workers, killPod and housekeeping update
// them concurrently, and one that read the pods before another's update
// but wrote after it would leave the Burstable shares stale until the
// next minute's update.
func TestQOSCgroupUpdatesSerialized(t *testing.T) {
	h, _ := resizeHarness(t, func(c *Config) { c.CgroupDir = t.TempDir() })
	fake := &overlapCgroups{}
	h.k.cgroups = fake
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				if err := h.k.updateQOSCgroups(); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if fake.overlap.Load() {
		t.Error("two QoS cgroup updates wrote at once")
	}
}

// With a cgroup root (upstream's --cgroup-root), the kubelet's cgroups
// are made under it: the QoS classes' under <root>/kubepods, a pod's
// under its class's there, and its sandbox's parent is that cgroup;
// "a//b/" is /a/b, "" and "/" the root cgroup.
func TestPodCgroupUnderCgroupRoot(t *testing.T) {
	for in, want := range map[string]string{"": "", "/": "", "a//b/": "/a/b", "/kp-node-2": "/kp-node-2"} {
		if got := cgroupRoot(in); got != want {
			t.Errorf("cgroupRoot(%q) = %q; want %q", in, got, want)
		}
	}
	dir := t.TempDir()
	for _, hier := range []string{"cpu", "memory"} {
		os.Mkdir(filepath.Join(dir, hier), 0o755)
	}
	// A root that does not exist is refused, as upstream's.
	rt, err := sim.New(sim.Config{PodCIDR: "10.244.7.0/24"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(context.Background(), fake.NewClientset(), Config{NodeName: "n", RootDir: t.TempDir(), CgroupDir: dir, CgroupRoot: "node-b/c"}, rt)
	if want := fmt.Sprintf(`invalid configuration: cgroup ["node-b" "c"] has some missing paths: %s, %s`,
		filepath.Join(dir, "cpu", "node-b", "c"), filepath.Join(dir, "memory", "node-b", "c")); err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Errorf("New with a cgroup root missing: %v; want ...%s", err, want)
	}
	v2 := t.TempDir()
	os.WriteFile(filepath.Join(v2, "cgroup.controllers"), []byte("cpu memory\n"), 0o644)
	_, err = New(context.Background(), fake.NewClientset(), Config{NodeName: "n", RootDir: t.TempDir(), CgroupDir: v2, CgroupRoot: "/x"}, rt)
	if want := `invalid configuration: could not read controllers for cgroup ["x"]: `; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("New with a cgroup v2 root missing: %v; want %s...", err, want)
	}
	os.MkdirAll(filepath.Join(dir, "cpu", "node-b"), 0o755)
	os.MkdirAll(filepath.Join(dir, "memory", "node-b"), 0o755)
	h, _ := resizeHarness(t, func(c *Config) { c.CgroupDir = dir; c.CgroupRoot = "node-b/" })
	fake := &recordingCgroups{cgroupfs: h.k.cgroups.(cgroupfs), rt: h.rt}
	h.k.cgroups = fake
	p := h.create(h.pod("rooted", func(p *v1.Pod) {
		p.Status.QOSClass = v1.PodQOSBurstable
		p.Spec.Containers[0].Resources = req("100m", "", "", "")
	}))
	h.sync(p)
	const name = "/node-b/kubepods/burstable/poduid-rooted"
	if !slices.Equal(fake.created, []string{name}) {
		t.Fatalf("pod cgroups made %v; want [%s]", fake.created, name)
	}
	if got := readCgroupFile(t, dir, "cpu", "/node-b/kubepods/burstable", "cpu.shares"); got != "102" {
		t.Errorf("/node-b/kubepods/burstable cpu.shares = %q; want 102", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "cpu", "kubepods")); err == nil {
		t.Error("/kubepods made outside the cgroup root")
	}
	sbs, _ := h.rt.ListPodSandbox(h.ctx, nil)
	if len(sbs) != 1 {
		t.Fatalf("sandboxes: %d", len(sbs))
	}
	if l, err := h.rt.SandboxLinux(sbs[0].Id); err != nil || l.GetCgroupParent() != name {
		t.Errorf("sandbox cgroup parent %q (%v); want %s", l.GetCgroupParent(), err, name)
	}
	if err := h.client.CoreV1().Pods(p.Namespace).Delete(h.ctx, p.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.sync(p)
	if !slices.Equal(fake.destroyed, []string{name}) {
		t.Errorf("cgroups removed %v; want [%s]", fake.destroyed, name)
	}
}
