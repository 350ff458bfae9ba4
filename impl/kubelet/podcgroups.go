package kubelet

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeproof/kubeproof/impl/kubelet/podstate"
	"github.com/kubeproof/kubeproof/impl/kubelet/podsync"
)

// Pod cgroups, as upstream's kubelet (pkg/kubelet/cm) makes them with its
// defaults (--cgroups-per-qos, --cgroup-driver=cgroupfs; kubeproof has
// neither flag) and --cgroup-root (Config.CgroupRoot, / by default; one
// that does not exist refused at start, as upstream's): every pod runs in
// a cgroup of its own, pod<UID>, under its QoS class's — <root>/kubepods
// itself for Guaranteed pods, <root>/kubepods/burstable and
// <root>/kubepods/besteffort for the others — and its sandbox is created
// with that cgroup as its parent (CRI CgroupParent).
//
// On a node whose cgroups the kubelet manages (a CRI node: Config.CgroupDir
// set) it makes them itself, as upstream's pod container manager: a pod's
// cgroup, with upstream's values (podCgroupValues), before its volumes
// and first sandbox (ensurePodCgroup); its values changed by an in-place resize
// (actuateResize, podCgroupStep); removed by the pod's sync once it has
// terminated and its volumes are torn down (removeTerminatedPodCgroup, as
// upstream's SyncTerminatedPod), and once the pod is cleaned up
// (removePodCgroup); the pod cgroups of pods not possibly running (never
// had, terminated, a removal that failed) found and removed every
// housekeeping period, their processes killed first, as upstream's
// HandlePodCleanups (cleanupOrphanedPodCgroups); and, as upstream's QoS
// container manager, the QoS classes' cgroups with their CPU shares
// (updateQOSCgroups).
// The decisions are pure (qosCgroups.podCgroup, podCgroupValues); the I/O is a
// podCgroups, which a simulated node has none of (Kubelet.cgroups nil:
// nothing is computed or written for its pods, no state kept per pod).

// cgroupRoot is Config.CgroupRoot as qosCgroupsOf takes it: "" for the root cgroup ("" or "/"), else "/a/b" (empty
// elements dropped, as upstream's ParseCgroupfsToCgroupName).
func cgroupRoot(s string) string {
	var b strings.Builder
	for _, e := range strings.Split(s, "/") {
		if e != "" {
			b.WriteString("/" + e)
		}
	}
	return b.String()
}

// qosCgroups are the names of the QoS classes' cgroups under a cgroup
// root, upstream's QOSContainersInfo: Guaranteed pods' is kubepods itself.
type qosCgroups struct {
	root                              string // cgroupRoot's form
	guaranteed, burstable, bestEffort string
}

// qosCgroupsOf are the QoS classes' cgroups under root (cgroupRoot's form).
func qosCgroupsOf(root string) qosCgroups {
	kubepods := root + "/kubepods"
	return qosCgroups{root: root, guaranteed: kubepods, burstable: kubepods + "/burstable", bestEffort: kubepods + "/besteffort"}
}

// podCgroup is pod's cgroup as upstream's cgroupfs driver names it
// (GetPodContainerName): pod<UID> under its QoS class's cgroup, by podQOS
// (status.qosClass when the API server set it) — under the root cgroup
// "/kubepods/pod<UID>" for a Guaranteed pod, "/kubepods/burstable/pod<UID>"
// and "/kubepods/besteffort/pod<UID>" for the others. One string
// allocated, as the sandbox's parent always was.
func (q qosCgroups) podCgroup(pod *v1.Pod) string {
	switch podQOS(pod) {
	case v1.PodQOSBurstable:
		return q.burstable + "/pod" + string(pod.UID)
	case v1.PodQOSBestEffort:
		return q.bestEffort + "/pod" + string(pod.UID)
	}
	return q.guaranteed + "/pod" + string(pod.UID)
}

// podCgroupName is pod's cgroup under the kubelet's cgroup root.
func (k *Kubelet) podCgroupName(pod *v1.Pod) string {
	return k.qos.podCgroup(pod)
}

// cgroupConfig is what the kubelet writes to one of its cgroups, the
// values of upstream's ResourceConfig kubeproof sets (cgroup v1 units;
// cgroupfs converts them for v2): 0 leaves a value as it is, -1 is
// unlimited.
type cgroupConfig struct {
	cpuShares int64
	cpuQuota  int64 // µs per cpuPeriod
	cpuPeriod int64 // µs
	memory    int64 // bytes
	pids      int64 // processes (pids.max), where the pids controller is (cgroupfs.pidsController)
	// hugetlb: where the hugetlb controller is (hugetlbController), a
	// limit of each node page size (hugetlb.go; none: left as it is).
	hugetlb hugetlbLimits
}

// String is c's values by name, its hugetlb limits only when it has any
// ("hugetlb:[2MB:0 1GB:0]").
func (c cgroupConfig) String() string {
	s := fmt.Sprintf("{cpuShares:%d cpuQuota:%d cpuPeriod:%d memory:%d pids:%d", c.cpuShares, c.cpuQuota, c.cpuPeriod, c.memory, c.pids)
	if c.hugetlb.n > 0 {
		s += " hugetlb:" + c.hugetlb.String()
	}
	return s + "}"
}

// podCgroupValues is pod's cgroup's configuration (pod as allocated) on a
// node enforcing CPU limits as cfs says (--cpu-cfs-quota,
// --cpu-cfs-quota-period) and limiting a pod's processes to podPids
// (--pod-max-pids; 0 or less: no limit of its own), as upstream's
// ResourceConfigForPod and its pod container manager's EnsureExists,
// which adds the pids limit (pids.max) when above 0: the pod's
// requests and limits as upstream's
// PodRequests and PodLimits add them up (podAmount: app containers and
// sidecars summed, raised to the peak of the init containers, replaced
// by pod-level values; with the overhead, added to every request and to
// the limits that are set); a Guaranteed pod gets shares from its CPU
// request, a CFS quota of its CPU limit over cfs's period (unlimited, -1,
// where quotas are not enforced) and its memory limit; a Burstable one
// shares, a quota only when every container (init containers too) limits
// CPU or the pod does, a memory limit only when every container limits
// memory or the pod does; a BestEffort one 2 shares and nothing else
// (but the pids limit, which every pod's gets). Its hugetlb limits are
// podHugetlb's, which ensurePodCgroup adds (an in-place resize leaves
// them: hugetlb.go).
func podCgroupValues(pod *v1.Pod, cfs cpuCFS, podPids int64) cgroupConfig {
	c := podCPUMemory(pod, cfs)
	if podPids > 0 {
		c.pids = podPids
	}
	return c
}

// podCPUMemory is podCgroupValues's CPU and memory values.
func podCPUMemory(pod *v1.Pod, cfs cpuCFS) cgroupConfig {
	qos := podQOS(pod)
	if qos == v1.PodQOSBestEffort {
		return cgroupConfig{cpuShares: minCPUShares}
	}
	cpuReq, _ := podAmount(pod, v1.ResourceCPU, false)
	cpuLim, _ := podAmount(pod, v1.ResourceCPU, true)
	memLim, _ := podAmount(pod, v1.ResourceMemory, true)
	if o := pod.Spec.Overhead; o != nil {
		cpu, mem := o[v1.ResourceCPU], o[v1.ResourceMemory]
		cpuReq += cpu.MilliValue()
		if cpuLim != 0 {
			cpuLim += cpu.MilliValue()
		}
		if memLim != 0 {
			memLim += mem.Value()
		}
	}
	c := cgroupConfig{cpuShares: milliCPUToShares(cpuReq)}
	cpuDeclared, memDeclared := qos == v1.PodQOSGuaranteed, qos == v1.PodQOSGuaranteed
	if !cpuDeclared {
		cpuDeclared, memDeclared = limitsDeclared(pod)
	}
	if cpuDeclared {
		c.cpuQuota, c.cpuPeriod = milliCPUToQuota(cpuLim, cfs.periodUS()), cfs.periodUS()
		if cfs.off {
			c.cpuQuota = -1
		}
	}
	if memDeclared {
		c.memory = memLim
	}
	return c
}

// podCgroupConfig is podCgroupValues with upstream's default CFS settings
// (the node's do not change the pod's memory limit, which tmpfsSize
// reads).
func podCgroupConfig(pod *v1.Pod) cgroupConfig { return podCPUMemory(pod, cpuCFS{}) }

// limitsDeclared reports whether every app and init container of pod
// limits CPU (and memory) to more than zero, or the pod does with
// pod-level resources, as upstream's ResourceConfigForPod decides whether
// a Burstable pod's cgroup gets a CFS quota (and a memory limit).
func limitsDeclared(pod *v1.Pod) (cpu, memory bool) {
	cpu, memory = true, true
	check := func(cs []v1.Container) {
		for i := range cs {
			l := cs[i].Resources.Limits
			if q, ok := l[v1.ResourceCPU]; !ok || q.IsZero() {
				cpu = false
			}
			if q, ok := l[v1.ResourceMemory]; !ok || q.IsZero() {
				memory = false
			}
		}
	}
	check(pod.Spec.Containers)
	check(pod.Spec.InitContainers)
	if r := pod.Spec.Resources; r != nil {
		if q, ok := r.Limits[v1.ResourceCPU]; ok && !q.IsZero() {
			cpu = true
		}
		if q, ok := r.Limits[v1.ResourceMemory]; ok && !q.IsZero() {
			memory = true
		}
	}
	return cpu, memory
}

// milliCPUToShares is upstream's MilliCPUToShares: 2 for none, else
// 1024 per CPU, between 2 and maxCPUShares.
func milliCPUToShares(milli int64) int64 {
	if milli == 0 {
		return minCPUShares
	}
	return min(max(milli*sharesPerCPU/milliCPUPerCPU, minCPUShares), maxCPUShares)
}

// milliCPUToQuota is upstream's MilliCPUToQuota over a period (µs): 0 for
// none, else at least 1 ms.
func milliCPUToQuota(milli, period int64) int64 {
	if milli == 0 {
		return 0
	}
	return max(milli*period/milliCPUPerCPU, minCPUQuota)
}

// podCgroups is the I/O of a node's cgroups (cgroupfs on a CRI node; nil
// on a simulated one). Names are cgroupfs paths ("/kubepods/pod<UID>").
type podCgroups interface {
	// exists reports whether cgroup name exists.
	exists(name string) bool
	// create makes cgroup name (and its parents) and writes c to it; a
	// failure to write c, the cgroup made, is a *cgroupValuesError.
	create(name string, c cgroupConfig) error
	// set writes c's values (those not 0) to cgroup name.
	set(name string, c cgroupConfig) error
	// read is what cgroup name has of res, as upstream's cgroup manager
	// GetCgroupConfig reads it: of cpu its shares, CFS quota (-1: none)
	// and period; of memory its limit as the files give it (cgroup v1's
	// memory.limit_in_bytes a number even when unlimited, the kernel's
	// page-rounded maximum; v2's "max" -1). Anything else is an error.
	read(name string, res v1.ResourceName) (cgroupConfig, error)
	// destroy removes cgroup name and the cgroups under it (none is no
	// error).
	destroy(name string) error
	// podCgroups are the pod cgroups under the QoS classes' cgroups q, in
	// any hierarchy, by pod UID.
	podCgroups(q qosCgroups) (map[types.UID]string, error)
	// pids are the processes in cgroup name or in a cgroup under it, in
	// any hierarchy.
	pids(name string) []int
}

// cgroupfs is podCgroups on the cgroup filesystem mounted at root, cgroup
// v2 (unified) or v1 (one hierarchy per controller, as runc's cgroupfs
// manager, which upstream's kubelet uses, writes them).
type cgroupfs struct {
	root    string
	unified bool
}

// newPodCgroups is the podCgroups of a node of cfg: the cgroup filesystem
// at cfg.CgroupDir, none without one (a simulated node).
func newPodCgroups(cfg *Config) (podCgroups, error) {
	if cfg.CgroupDir == "" {
		return nil, nil
	}
	unified, err := CgroupUnified(cfg.CgroupDir)
	if err != nil {
		return nil, err
	}
	m := cgroupfs{root: cfg.CgroupDir, unified: unified}
	if err := m.validateRoot(cgroupRoot(cfg.CgroupRoot)); err != nil {
		return nil, err
	}
	return m, nil
}

// validateRoot refuses a cgroup root (cgroupRoot's form) that does not
// exist, as upstream's container manager does at start (NewContainerManager:
// the cgroup manager's Validate of --cgroup-root, "invalid configuration:
// ..."): on cgroup v1 it must be in every hierarchy the kubelet writes to
// and every allow-listed one mounted (v1Required, as upstream's), with
// upstream's message listing the paths missing; on v2 its
// cgroup.controllers must be readable (upstream also wants its controllers enabled there; the
// kubelet enables them itself, create). The root cgroup always exists.
func (m cgroupfs) validateRoot(root string) error {
	if err := m.validate(root); err != nil {
		return fmt.Errorf("invalid configuration: %w", err)
	}
	return nil
}

// validate is upstream's cgroup manager Validate of cgroup name
// (cgroupRoot's form), validateRoot's check without its prefix, which
// the reservations' cgroups get too (enforceExistingCgroup).
func (m cgroupfs) validate(root string) error {
	if root == "" {
		return nil
	}
	name := strings.Split(root[1:], "/") // upstream's CgroupName
	if m.unified {
		if _, err := os.ReadFile(filepath.Join(m.dir("", root), "cgroup.controllers")); err != nil {
			return fmt.Errorf("could not read controllers for cgroup %q: %w", name, err)
		}
		return nil
	}
	var missing []string
	for _, ctl := range m.v1Required() {
		if _, err := os.Stat(m.dir(ctl, root)); err != nil {
			missing = append(missing, m.dir(ctl, root))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("cgroup %q has some missing paths: %v", name, strings.Join(missing, ", "))
	}
	return nil
}

// v1Controllers are the cgroup v1 hierarchies the kubelet writes to.
var v1Controllers = [...]string{"cpu", "memory"}

// v1Allowlist are the other cgroup v1 hierarchies upstream's cgroup
// manager wants a cgroup in, where mounted, for it to exist
// (cgroupV1impl.Validate, which Exists is: its allow-list of cpu,
// cpuacct, cpuset, memory, systemd and pids, with hugetlb added when that
// is mounted; devices, freezer and the rest do not count).
var v1Allowlist = [...]string{"cpuacct", "cpuset", "systemd", "pids", "hugetlb"}

// v1Required are the cgroup v1 hierarchies a cgroup must be in to exist:
// v1Controllers, and each of v1Allowlist mounted at m.root.
func (m cgroupfs) v1Required() []string {
	out := append(make([]string, 0, len(v1Controllers)+len(v1Allowlist)), v1Controllers[:]...)
	for _, ctl := range v1Allowlist {
		if fi, err := os.Stat(filepath.Join(m.root, ctl)); err == nil && fi.IsDir() {
			out = append(out, ctl)
		}
	}
	return out
}

// dir is cgroup name's directory in controller's v1 hierarchy, or on v2
// the unified one.
func (m cgroupfs) dir(controller, name string) string {
	if m.unified {
		return filepath.Join(m.root, name)
	}
	return filepath.Join(m.root, controller, name)
}

// exists: on cgroup v1 in each hierarchy upstream's Exists wants it in
// (v1Required: the kubelet's, and each allow-listed one mounted, hugetlb
// among them), so that a cgroup whose create failed half-way, or one
// missing from a hierarchy, is made again, not taken for made. A
// hierarchy is looked for only when the cgroup is not in it.
func (m cgroupfs) exists(name string) bool {
	if m.unified {
		_, err := os.Stat(m.dir("", name))
		return err == nil
	}
	for _, ctl := range v1Controllers {
		if _, err := os.Stat(m.dir(ctl, name)); err != nil {
			return false
		}
	}
	for _, ctl := range v1Allowlist {
		if _, err := os.Stat(m.dir(ctl, name)); err == nil {
			continue
		}
		if fi, err := os.Stat(filepath.Join(m.root, ctl)); err == nil && fi.IsDir() {
			return false
		}
	}
	return true
}

func (m cgroupfs) create(name string, c cgroupConfig) error {
	if m.unified {
		if err := os.MkdirAll(m.dir("", name), 0o755); err != nil {
			return fmt.Errorf("creating cgroup %s: %w", name, err)
		}
		if err := m.enableAncestors(name); err != nil {
			return fmt.Errorf("creating cgroup %s: %w", name, err)
		}
	} else {
		// In every hierarchy exists wants it in, then in every other
		// one mounted, as upstream's cgroupfs Create (the runc manager
		// given only the cgroup's path makes it in each of its
		// subsystems mounted, devices and freezer too); destroy removes
		// it from each.
		hs, err := m.hierarchies()
		if err != nil {
			return fmt.Errorf("creating cgroup %s: %w", name, err)
		}
		dirs := make([]string, 0, len(hs)+len(v1Controllers)+len(v1Allowlist))
		for _, ctl := range m.v1Required() {
			dirs = append(dirs, m.dir(ctl, name))
		}
		for _, h := range hs {
			dirs = append(dirs, filepath.Join(h, name))
		}
		for _, d := range dirs {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return fmt.Errorf("creating cgroup %s: %w", name, err)
			}
		}
	}
	if err := m.set(name, c); err != nil {
		return &cgroupValuesError{err: err}
	}
	return nil
}

// enableAncestors has each ancestor of cgroup v2 cgroup name hand the
// cpu, memory, pids and hugetlb controllers down to its children (runc's fs2
// manager does this for its cgroups).
func (m cgroupfs) enableAncestors(name string) error {
	for dir := m.root; ; {
		if err := enableControllers(dir); err != nil {
			return err
		}
		rest, _ := filepath.Rel(dir, m.dir("", name))
		first, _, more := strings.Cut(rest, string(filepath.Separator))
		if !more {
			return nil
		}
		dir = filepath.Join(dir, first)
	}
}

// pidsController reports whether the node's cgroups have the pids
// controller: on cgroup v1 its hierarchy mounted, on v2 the root cgroup
// listing it. Where they do not, no pids limit is written, as upstream's
// cgroup manager leaves the controllers that are not mounted alone.
func (m cgroupfs) pidsController() bool {
	if !m.unified {
		fi, err := os.Stat(filepath.Join(m.root, "pids"))
		return err == nil && fi.IsDir()
	}
	b, err := os.ReadFile(filepath.Join(m.root, "cgroup.controllers"))
	return err == nil && slices.Contains(strings.Fields(string(b)), "pids")
}

// cgroupValuesError is create's failure to write a cgroup's values once
// it made the cgroup: upstream's cgroup manager Create only logs it
// ("cgroup manager.Set failed") and succeeds, the cgroup left with the
// values it has.
type cgroupValuesError struct{ err error }

func (e *cgroupValuesError) Error() string { return e.err.Error() }
func (e *cgroupValuesError) Unwrap() error { return e.err }

// createCgroup is k.cgroups.create with upstream's Create's outcome: a
// failure to write the values of the cgroup made is logged, no error.
func (k *Kubelet) createCgroup(name string, c cgroupConfig) error {
	err := k.cgroups.create(name, c)
	if ve := (*cgroupValuesError)(nil); errors.As(err, &ve) {
		k.log.Info("cgroup manager.Set failed", "cgroup", name, "err", ve.err)
		return nil
	}
	return err
}

// enableControllers enables the cpu, memory, pids and hugetlb controllers of
// cgroup v2 cgroup dir for its children, those of them dir has (its
// cgroup.controllers; none when it lists none).
func enableControllers(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var enable []string
	for _, ctl := range strings.Fields(string(b)) {
		if ctl == "cpu" || ctl == "memory" || ctl == "pids" || ctl == "hugetlb" {
			enable = append(enable, "+"+ctl)
		}
	}
	if len(enable) == 0 {
		return nil
	}
	return os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(strings.Join(enable, " ")), 0o644)
}

// cpuWeight is cgroup v2's cpu.weight of cgroup v1 CPU shares, as
// upstream's getCPUWeight ([2, 262144] to [1, 10000]).
func cpuWeight(shares int64) int64 {
	if shares >= maxCPUShares {
		return 10000
	}
	return 1 + (shares-minCPUShares)*9999/(maxCPUShares-minCPUShares)
}

// cpuShares is cgroup v1 CPU shares of a cgroup v2 cpu.weight, the
// inverse of cpuWeight (as upstream's CpuWeightToCpuShares).
func cpuShares(weight int64) int64 {
	return minCPUShares + (weight-1)*(maxCPUShares-minCPUShares)/9999
}

func (m cgroupfs) set(name string, c cgroupConfig) error {
	write := func(ctl, file, value string) error {
		if err := os.WriteFile(filepath.Join(m.dir(ctl, name), file), []byte(value), 0o644); err != nil {
			return fmt.Errorf("setting %s of cgroup %s: %w", file, name, err)
		}
		return nil
	}
	limit := func(v int64, unlimited string) string {
		if v < 0 {
			return unlimited
		}
		return strconv.FormatInt(v, 10)
	}
	if c.pids != 0 && m.pidsController() {
		// pids.max: on cgroup v1 in the pids hierarchy, where a cgroup
		// made before the kubelet limited pids may be missing; on v2
		// the controller handed down to it.
		if m.unified {
			if err := m.enableAncestors(name); err != nil {
				return fmt.Errorf("setting pids.max of cgroup %s: %w", name, err)
			}
		} else if err := os.MkdirAll(m.dir("pids", name), 0o755); err != nil {
			return fmt.Errorf("setting pids.max of cgroup %s: %w", name, err)
		}
		if err := write("pids", "pids.max", limit(c.pids, "max")); err != nil {
			return err
		}
	}
	if c.hugetlb.n > 0 && m.hugetlbController() {
		if err := m.setHugetlb(name, &c.hugetlb); err != nil {
			return err
		}
	}
	if m.unified {
		if c.cpuShares != 0 {
			if err := write("", "cpu.weight", strconv.FormatInt(cpuWeight(c.cpuShares), 10)); err != nil {
				return err
			}
		}
		if c.cpuQuota != 0 && c.cpuPeriod != 0 {
			if err := write("", "cpu.max", limit(c.cpuQuota, "max")+" "+strconv.FormatInt(c.cpuPeriod, 10)); err != nil {
				return err
			}
		}
		if c.memory != 0 {
			return write("", "memory.max", limit(c.memory, "max"))
		}
		return nil
	}
	if c.cpuShares != 0 {
		if err := write("cpu", "cpu.shares", strconv.FormatInt(c.cpuShares, 10)); err != nil {
			return err
		}
	}
	if c.cpuPeriod != 0 {
		if err := write("cpu", "cpu.cfs_period_us", strconv.FormatInt(c.cpuPeriod, 10)); err != nil {
			return err
		}
	}
	if c.cpuQuota != 0 {
		if err := write("cpu", "cpu.cfs_quota_us", limit(c.cpuQuota, "-1")); err != nil {
			return err
		}
	}
	if c.memory != 0 {
		return write("memory", "memory.limit_in_bytes", limit(c.memory, "-1"))
	}
	return nil
}

func (m cgroupfs) read(name string, res v1.ResourceName) (cgroupConfig, error) {
	var c cgroupConfig
	get := func(ctl, file string) (string, error) {
		b, err := os.ReadFile(filepath.Join(m.dir(ctl, name), file))
		if err != nil {
			return "", fmt.Errorf("reading %s of cgroup %s: %w", file, name, err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	num := func(ctl, file, unlimited string) (int64, error) {
		s, err := get(ctl, file)
		if err != nil || s == unlimited {
			return -1, err
		}
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("reading %s of cgroup %s: %w", file, name, err)
		}
		return v, nil
	}
	var err error
	switch {
	case res == v1.ResourceMemory && m.unified:
		c.memory, err = num("", "memory.max", "max")
		return c, err
	case res == v1.ResourceMemory:
		c.memory, err = num("memory", "memory.limit_in_bytes", "")
		return c, err
	case res != v1.ResourceCPU:
		return c, fmt.Errorf("unsupported resource %s for cgroup %s", res, name)
	case m.unified:
		var w int64
		if w, err = num("", "cpu.weight", ""); err != nil {
			return c, err
		}
		c.cpuShares = cpuShares(w)
		s, err := get("", "cpu.max")
		if err != nil {
			return c, err
		}
		quota, period, _ := strings.Cut(s, " ")
		c.cpuQuota = -1
		if quota != "max" {
			if c.cpuQuota, err = strconv.ParseInt(quota, 10, 64); err != nil {
				return c, fmt.Errorf("reading cpu.max of cgroup %s: %w", name, err)
			}
		}
		if c.cpuPeriod, err = strconv.ParseInt(period, 10, 64); err != nil {
			return c, fmt.Errorf("reading cpu.max of cgroup %s: %w", name, err)
		}
		return c, nil
	}
	if c.cpuShares, err = num("cpu", "cpu.shares", ""); err != nil {
		return c, err
	}
	if c.cpuQuota, err = num("cpu", "cpu.cfs_quota_us", "-1"); err != nil {
		return c, err
	}
	c.cpuPeriod, err = num("cpu", "cpu.cfs_period_us", "")
	return c, err
}

// hierarchies are the directories a cgroup may be in: on cgroup v2 the
// one hierarchy, on v1 every hierarchy mounted (not the links to
// combined ones, cpu -> cpu,cpuacct), the runtime making its cgroups in
// all of them, not only the kubelet's.
func (m cgroupfs) hierarchies() ([]string, error) {
	if m.unified {
		return []string{m.root}, nil
	}
	entries, err := os.ReadDir(m.root)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, filepath.Join(m.root, e.Name()))
		}
	}
	return out, nil
}

// destroy removes cgroup name from every hierarchy, the cgroups under it
// first, as upstream's cgroup manager Destroy (runc's RemovePaths: each
// path tried up to 5 times, 10 ms apart doubling, so that processes just
// killed have left); it fails while a process is still in it.
func (m cgroupfs) destroy(name string) error {
	hs, err := m.hierarchies()
	if err != nil {
		return fmt.Errorf("removing cgroup %s: %w", name, err)
	}
	dirs := make([]string, len(hs))
	for i, h := range hs {
		dirs[i] = filepath.Join(h, name)
	}
	delay := 10 * time.Millisecond
	for attempt := 1; ; attempt++ {
		var errs []error
		left := dirs[:0]
		for _, d := range dirs {
			if err := removeCgroupDir(d); err != nil {
				errs = append(errs, err)
				left = append(left, d)
			}
		}
		dirs = left
		if len(dirs) == 0 {
			return nil
		}
		if attempt == 5 {
			return fmt.Errorf("removing cgroup %s: %w", name, errors.Join(errs...))
		}
		time.Sleep(delay)
		delay *= 2
	}
}

// removeCgroupDir removes cgroup directory dir, and first the cgroups
// under it, as runc's RemovePath; none is no error.
func removeCgroupDir(dir string) error {
	err := os.Remove(dir)
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	entries, rerr := os.ReadDir(dir)
	if rerr != nil {
		if errors.Is(rerr, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			if err := removeCgroupDir(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// podCgroups: every directory of a QoS class's cgroup, in any hierarchy,
// whose name holds "pod" once, the UID being what follows it (pod<UID>),
// as upstream's GetAllPodsFromCgroups, which removes a pod cgroup left in
// any one hierarchy. A QoS cgroup missing is none; any other failure to
// read one is an error.
func (m cgroupfs) podCgroups(q qosCgroups) (map[types.UID]string, error) {
	hs, err := m.hierarchies()
	if err != nil {
		return nil, fmt.Errorf("listing the pod cgroups: %w", err)
	}
	found := map[types.UID]string{}
	for _, h := range hs {
		for _, qos := range [...]string{q.bestEffort, q.burstable, q.guaranteed} {
			entries, err := os.ReadDir(filepath.Join(h, qos))
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("failed to read the cgroup directory %s: %w", filepath.Join(h, qos), err)
			}
			for _, e := range entries {
				if !e.IsDir() {
					continue
				}
				if uid, ok := podCgroupUID(e.Name()); ok {
					found[uid] = qos + "/" + e.Name()
				}
			}
		}
	}
	return found, nil
}

// podCgroupUID is the pod UID of a pod cgroup's directory name, as
// upstream's GetAllPodsFromCgroups reads it: the name holds "pod" exactly
// once and the UID is what follows ("pod<UID>"); not a pod's otherwise.
func podCgroupUID(name string) (types.UID, bool) {
	_, after, ok := strings.Cut(name, "pod")
	if !ok || strings.Contains(after, "pod") {
		return "", false
	}
	return types.UID(after), true
}

// pids: each cgroup.procs of cgroup name and of every cgroup under it,
// in every hierarchy, as upstream's cgroup manager Pids (a cgroup that
// cannot be read skipped); each process once.
func (m cgroupfs) pids(name string) []int {
	hs, err := m.hierarchies()
	if err != nil {
		return nil
	}
	var pids []int
	for _, h := range hs {
		filepath.WalkDir(filepath.Join(h, name), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return filepath.SkipDir
			}
			if !d.IsDir() {
				return nil
			}
			b, err := os.ReadFile(filepath.Join(p, "cgroup.procs"))
			if err != nil {
				return filepath.SkipDir
			}
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil {
					pids = append(pids, pid)
				}
			}
			return nil
		})
	}
	slices.Sort(pids)
	return slices.Compact(pids)
}

// EventFailedToCreatePodContainer is upstream's event when a pod's cgroup
// cannot be made.
const EventFailedToCreatePodContainer = "FailedToCreatePodContainer"

// burstableCPUShares is the Burstable QoS cgroup's CPU shares given the
// node's active pods (as allocated), as upstream's QoS container manager
// (setCPUCgroupConfig): the shares of the CPU requests of its Burstable
// pods summed (each pod's as upstream's PodRequests, with its overhead),
// 2 for none.
func burstableCPUShares(pods []*v1.Pod) int64 {
	var milli int64
	for _, pod := range pods {
		if podQOS(pod) != v1.PodQOSBurstable {
			continue
		}
		req, _ := podAmount(pod, v1.ResourceCPU, false)
		if o, ok := pod.Spec.Overhead[v1.ResourceCPU]; ok {
			req += o.MilliValue()
		}
		milli += req
	}
	return milliCPUToShares(milli)
}

// qosActive reports whether the pod of r counts in the QoS cgroups'
// reckoning (k.mu held), as upstream's GetActivePods, the pods its QoS
// container manager sums: admitted (not rejected) and still in the API,
// until its phase is terminal. A pod being deleted or evicted counts
// while it terminates: upstream drops a pod once its pod worker has it
// terminated (IsPodKnownTerminated, after SyncTerminatingPod's kill) or it
// is terminal without its termination requested, so the update of the
// kill that ends it (killPod's) still counts it. Here the phase that
// follows that kill does, which the kubelet reports (writeStatus puts it
// in r.pod) once nothing of the pod runs; until that write succeeds the
// pod still counts (upstream: until the kill succeeds). Unlike the
// eviction manager's activePods, which leaves out the pods already being
// deleted or evicted.
func (r *podRecord) qosActive() bool {
	return r.pod != nil && r.admitted && !r.rejected && !podsync.IsTerminalPhase(r.pod.Status.Phase)
}

// qosPods are the pods the QoS cgroups' shares are reckoned from
// (qosActive), each as allocated.
func (k *Kubelet) qosPods() []*v1.Pod {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.appendAllocatedLocked(make([]*v1.Pod, 0, len(k.pods)), (*podRecord).qosActive)
}

// updateQOSCgroups makes the QoS classes' cgroups, or updates them, with
// upstream's values (UpdateCgroups): BestEffort 2 CPU shares, Burstable
// those of its active pods' CPU requests (qosPods, burstableCPUShares),
// /kubepods made as their parent with the node's allocatable
// (nodeAllocatableCgroupConfig), and all three's hugetlb limits
// unbounded (unboundedHugetlb: upstream's setHugePagesUnbounded, which its
// UpdateCgroups gives kubepods too, leaving it no longer limited to the
// allocatable huge pages). At start, before a pod's
// cgroup is made, after a pod is killed and every minute, as upstream's,
// and after a pod's cgroup is removed (upstream's Destroy does not: its
// next is the periodic one). One at a time, from reading
// the pods to the last write, as upstream's UpdateCgroups holds its lock:
// pod workers and housekeeping call it concurrently, and one that read the
// pods before another's update and wrote after it would leave stale
// shares. Nothing on a node whose cgroups the kubelet does not manage.
func (k *Kubelet) updateQOSCgroups() error {
	if k.cgroups == nil {
		return nil
	}
	k.qosMu.Lock()
	defer k.qosMu.Unlock()
	pods := k.qosPods()
	hugetlb := unboundedHugetlb(k.cfg.HugePages)
	for _, q := range [...]struct {
		name string
		c    cgroupConfig
	}{
		// kubepods is made with the node's allocatable, as upstream's
		// createNodeAllocatableCgroups; once made only its hugetlb
		// limits are changed here (enforceNodeAllocatable writes the
		// rest at start).
		{k.qos.guaranteed, cgroupConfig{hugetlb: hugetlb}},
		{k.qos.burstable, cgroupConfig{cpuShares: burstableCPUShares(pods), hugetlb: hugetlb}},
		{k.qos.bestEffort, cgroupConfig{cpuShares: minCPUShares, hugetlb: hugetlb}},
	} {
		var err error
		switch {
		case k.cgroups.exists(q.name):
			err = k.cgroups.set(q.name, q.c)
		case q.name == k.qos.guaranteed:
			err = k.createCgroup(q.name, k.allocatableCgroup)
		default:
			err = k.createCgroup(q.name, q.c)
		}
		if err != nil {
			return fmt.Errorf("updating the QoS cgroups: %w", err)
		}
	}
	return nil
}

// ensurePodCgroup makes pod's cgroup (pod as allocated) unless it exists,
// as upstream's syncPod before the pod's volumes and sandbox: with
// podCgroupValues's values and podHugetlb's hugetlb limits, upstream's
// event and error when the cgroup cannot be made (its values not written
// is only logged, createCgroup).
// Nothing on a node whose cgroups the kubelet does not manage.
func (k *Kubelet) ensurePodCgroup(pod *v1.Pod) error {
	if k.cgroups == nil {
		return nil
	}
	name := k.podCgroupName(pod)
	if k.cgroups.exists(name) {
		return nil
	}
	if err := k.updateQOSCgroups(); err != nil {
		k.log.Debug("Failed to update QoS cgroups while syncing pod", "pod", pod.Namespace+"/"+pod.Name, "err", err)
	}
	c := podCgroupValues(pod, k.cfg.cfs, k.cfg.PodPidsLimit)
	c.hugetlb = podHugetlb(pod, k.cfg.HugePages)
	if err := k.createCgroup(name, c); err != nil {
		k.podEvent(pod, v1.EventTypeWarning, EventFailedToCreatePodContainer, "unable to ensure pod container exists: %v", err)
		return fmt.Errorf("failed to ensure that the pod: %v cgroups exist and are correctly applied: %w", pod.UID, err)
	}
	return nil
}

// removePodCgroup removes the cgroup of the pod uid, gone from the API
// and cleaned up (its containers and sandboxes removed), whichever QoS
// class's it is, killing any process left in it first (destroyPodCgroup).
// Upstream leaves this to the orphaned pod cgroup clean-up of its next
// housekeeping (cleanupOrphanedPodCgroups here too, which also tries
// again a removal that failed). A failure is logged.
func (k *Kubelet) removePodCgroup(uid string) {
	if k.cgroups == nil {
		return
	}
	for _, qos := range [...]string{k.qos.guaranteed, k.qos.burstable, k.qos.bestEffort} {
		if err := k.destroyPodCgroup(qos + "/pod" + uid); err != nil {
			k.log.Info("Failed to destroy orphaned pod cgroup", "podUID", uid, "err", err)
		}
	}
	if err := k.updateQOSCgroups(); err != nil {
		k.log.Info("Failed to update QoS cgroups", "err", err)
	}
}

// destroyPodCgroup kills the processes left in pod cgroup name, then
// removes it, as upstream's pod container manager Destroy, with its
// errors.
func (k *Kubelet) destroyPodCgroup(name string) error {
	if err := k.killCgroupProcesses(name); err != nil {
		k.log.Info("Failed to kill all the processes attached to cgroup", "cgroupName", name, "err", err)
		return fmt.Errorf("failed to kill all the processes attached to the %s cgroups : %w", name, err)
	}
	if err := k.cgroups.destroy(name); err != nil {
		k.log.Info("Failed to delete cgroup paths", "cgroupName", name, "err", err)
		return fmt.Errorf("failed to delete cgroup paths for %s : %w", name, err)
	}
	return nil
}

// killCgroupProcesses sends SIGKILL to every process in cgroup name and
// the cgroups under it, as upstream's tryKillingCgroupProcesses: up to 5
// rounds over those a kill failed for, a process already gone being
// killed; the last round's errors. Not pid 1 or below (a cgroup.procs
// of another PID namespace's reads 0).
func (k *Kubelet) killCgroupProcesses(name string) error {
	pids := k.cgroups.pids(name)
	var errs []error
	for round := 0; round < 5 && len(pids) > 0; round++ {
		errs = errs[:0]
		left := pids[:0]
		for _, pid := range pids {
			if pid <= 1 {
				continue
			}
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
				errs = append(errs, fmt.Errorf("killing process %d: %w", pid, err))
				left = append(left, pid)
			}
		}
		pids = left
	}
	return errors.Join(errs...)
}

// possiblyRunning reports whether the pod of record r (k.mu held) may
// still have something running, so that its cgroup stays, as upstream's
// possiblyRunningPods (the pods its pod workers sync or are terminating):
// not rejected by admission (upstream's pod workers never have those),
// and either gone from the API and not yet cleaned up (cleanupPod
// removes its cgroup itself) or not terminated: its phase not terminal.
// A terminal phase is not enough (one written by another component
// while the pod runs, with its kill and grace period still to come; the
// kubelet writes one only once the kill succeeded): cleanupOrphanedPodCgroups keeps the cgroup of such a
// pod while something of it runs (podStopped). A pod not yet admitted
// counts: its worker admits it or not.
func (r *podRecord) possiblyRunning() bool {
	return !r.rejected && (r.pod == nil || !podsync.IsTerminalPhase(r.pod.Status.Phase))
}

// orphanedPodCgroups are the pod cgroups of found (podCgroups') whose
// pods are not possibly running: not among pods (the kubelet never had
// them, or has cleaned them up) or possiblyRunning false, as upstream's
// cleanupOrphanedPodCgroups picks them.
func orphanedPodCgroups(found map[types.UID]string, pods map[types.UID]*podRecord) map[types.UID]string {
	var out map[types.UID]string
	for uid, name := range found {
		if r := pods[uid]; r != nil && r.possiblyRunning() {
			continue
		}
		if out == nil {
			out = map[types.UID]string{}
		}
		out[uid] = name
	}
	return out
}

// housekeepingPeriod is how often the orphaned pod cgroups are looked for
// (upstream's housekeeping period, of its HandlePodCleanups).
const housekeepingPeriod = 2 * time.Second

// cleanupOrphanedPodCgroups removes the pod cgroups under the kubelet's
// QoS classes' cgroups of pods that are not possibly running, as
// upstream's HandlePodCleanups (cleanupOrphanedPodCgroups) every
// housekeeping period once the pod source has synced: a pod the kubelet
// never had (say one deleted while no kubelet ran, gone from the
// runtime), one whose removal failed, and a terminated pod still in the
// API. The cgroups are listed before the pods are read, as upstream's,
// so that a pod added meanwhile is not taken for an orphan. A pod whose
// volumes are still mounted (podVolumesMounted) keeps its cgroup, its CPU
// shares brought down to the least (upstream's ReduceCPULimits), so that
// a memory-backed volume's charge does not go to the parent; any other's
// processes are killed and the cgroup removed (destroyPodCgroup), a
// failure logged and tried again next time. A pod in a terminal phase
// keeps its cgroup while something of it runs (podStopped), as upstream's
// terminating pods do. Nothing on a node whose cgroups the kubelet does
// not manage.
func (k *Kubelet) cleanupOrphanedPodCgroups(ctx context.Context) {
	if k.cgroups == nil {
		return
	}
	k.mu.Lock()
	synced := k.sourceSynced
	k.mu.Unlock()
	if !synced {
		return
	}
	found, err := k.cgroups.podCgroups(k.qos)
	if err != nil {
		k.log.Info("failed to get list of pods that still exist on cgroup mounts", "err", err)
		return
	}
	if len(found) == 0 {
		return
	}
	k.mu.Lock()
	orphans := orphanedPodCgroups(found, k.pods)
	var finished []types.UID // in the API, terminal phase
	for uid := range orphans {
		if r := k.pods[uid]; r != nil && !r.rejected {
			finished = append(finished, uid)
		}
	}
	k.mu.Unlock()
	for uid, name := range orphans {
		if slices.Contains(finished, uid) && !k.podStopped(ctx, uid) {
			// Upstream's pod worker is still terminating it (its kill
			// not done): possibly running.
			k.log.Debug("Terminal pod still running, its cgroup kept", "podUID", uid)
			continue
		}
		if k.podVolumesMounted(uid) {
			k.log.Debug("Orphaned pod found, but volumes not yet removed.  Reducing cpu to minimum", "podUID", uid)
			if err := k.cgroups.set(name, cgroupConfig{cpuShares: minCPUShares}); err != nil {
				k.log.Info("Failed to reduce cpu time for pod pending volume cleanup", "podUID", uid, "err", err)
			}
			continue
		}
		k.log.Debug("Orphaned pod found, removing pod cgroups", "podUID", uid)
		if err := k.destroyPodCgroup(name); err != nil {
			k.log.Info("Failed to destroy orphaned pod cgroup", "podUID", uid, "err", err)
		}
	}
}

// podStopped reports whether nothing of the pod uid runs (no container
// running, no sandbox ready), as the kubelet judges a pod's kill done
// (podsync.FoundTerminated); a runtime that cannot tell is taken for
// running.
func (k *Kubelet) podStopped(ctx context.Context, uid types.UID) bool {
	rs, err := k.podRuntimeState(ctx, uid)
	if err != nil {
		k.log.Info("Failed to read the runtime state of an orphaned pod cgroup's pod", "podUID", uid, "err", err)
		return false
	}
	return rs.Stopped()
}

// podVolumesMounted reports whether a volume directory of the pod uid is
// a mount point (its device not its parent's), as upstream's
// podVolumesExist looks at the disk (getMountedVolumePathListFromDisk,
// IsLikelyNotMountPoint): a failure to look counts as mounted. Upstream
// also asks its volume manager, which has a pod's volumes until it tears
// them down once the pod is terminated; kubeproof keeps no such record:
// a real runtime's kubelet mounts its memory-backed volumes as tmpfs and
// unmounts them only when it tears them down (memoryvolumes.go), so the
// disk tells.
func (k *Kubelet) podVolumesMounted(uid types.UID) bool {
	base := filepath.Join(k.podDir(uid), "volumes")
	plugins, err := os.ReadDir(base)
	if errors.Is(err, fs.ErrNotExist) {
		return false
	}
	if err != nil {
		k.log.Info("Pod found, but error occurred during checking mounted volumes from disk", "podUID", uid, "err", err)
		return true
	}
	for _, p := range plugins {
		if !p.IsDir() {
			continue
		}
		dir := filepath.Join(base, p.Name())
		var parent syscall.Stat_t
		if err := syscall.Stat(dir, &parent); err != nil {
			k.log.Info("Pod found, but error occurred during checking mounted volumes from disk", "podUID", uid, "err", err)
			return true
		}
		volumes, err := os.ReadDir(dir)
		if err != nil {
			k.log.Info("Pod found, but error occurred during checking mounted volumes from disk", "podUID", uid, "err", err)
			return true
		}
		for _, v := range volumes {
			var st syscall.Stat_t
			if err := syscall.Stat(filepath.Join(dir, v.Name()), &st); err != nil {
				k.log.Info("Pod found, but error occurred during checking mounted volumes from disk", "podUID", uid, "err", err)
				return true
			}
			if st.Dev != parent.Dev {
				return true
			}
		}
	}
	return false
}

// Upstream's events of the node allocatable cgroup's enforcement, on the
// Node.
const (
	EventNodeAllocatableEnforced          = "NodeAllocatableEnforced"
	EventFailedNodeAllocatableEnforcement = "FailedNodeAllocatableEnforcement"
)

// nodeAllocatableCgroupConfig is the values of kubepods, the cgroup of
// all pods, on a node of capacity, as upstream's kubelet enforces node
// allocatable (getCgroupConfig of what Config.kubepodsResources gives:
// with --enforce-node-allocatable=pods, the default, the capacity less
// the kube and system reservations, not less the hard eviction
// thresholds, unlike the Node's allocatable): its CPU as shares, its
// memory as the memory limit (not less the huge pages' capacity, unlike
// the Node's allocatable: upstream's capacity is the machine's MemTotal,
// the huge pages' pool in it, and its kubepods keeps it,
// kubernetes#84426), and pids
// (the node's process capacity, its internal "pid" capacity, less the
// reservations' pid; 0: unknown, none) as its pids limit, and its huge
// pages as its hugetlb limits (listHugetlb). (Upstream also resets, on
// cgroup v2, memory.min and memory.low to 0; kubeproof does not.)
func nodeAllocatableCgroupConfig(capacity v1.ResourceList, pids int64) cgroupConfig {
	cpu, mem := capacity[v1.ResourceCPU], capacity[v1.ResourceMemory]
	c := cgroupConfig{cpuShares: milliCPUToShares(cpu.MilliValue()), pids: max(pids, 0), hugetlb: listHugetlb(capacity)}
	if mem.Sign() > 0 {
		c.memory = mem.Value()
	}
	return c
}

// enforceNodeAllocatable writes the node's allocatable to kubepods
// (nodeAllocatableCgroupConfig), as upstream's
// enforceNodeAllocatableCgroups at start: its NodeAllocatableEnforced
// event once written, its FailedNodeAllocatableEnforcement warning on a
// failure, which is tried again every minute (housekeeping's) until it
// succeeds. The node's capacity, and so its allocatable, is fixed at
// start: nothing else changes kubepods. It reports whether it was
// written. Nothing on a node whose cgroups the kubelet does not manage.
func (k *Kubelet) enforceNodeAllocatable() bool {
	if k.cgroups == nil {
		return true
	}
	if err := k.cgroups.set(k.qos.guaranteed, k.allocatableCgroup); err != nil {
		k.nodeEvent(v1.EventTypeWarning, EventFailedNodeAllocatableEnforcement,
			// upstream's cgroup root is a CgroupName (a []string):
			// ["kubepods"].
			fmt.Sprintf("Failed to update Node Allocatable Limits %q: %v", strings.Split(k.qos.guaranteed[1:], "/"), err))
		return false
	}
	k.nodeEvent(v1.EventTypeNormal, EventNodeAllocatableEnforced, "Updated Node Allocatable limit across pods")
	return true
}

// killPodWithoutCgroup kills a running pod whose cgroup is gone, as
// upstream's syncPod before it makes the cgroup of a pod whose
// termination is not requested (terminating false): when the cgroup
// does not exist and one of the pod's app containers runs (not the pod's
// first sync), the whole pod is killed with its grace period, so that it
// starts again, sandbox and all, in a cgroup made anew (the sandbox's,
// ensurePodCgroup); a pod that never restarts (restartPolicy Never) is
// not started again and gets no cgroup, as upstream's. A kill that fails
// is logged, as upstream's "KillPod failed", and the cgroup made at once
// (upstream's EnsureExists in the same sync). It reports whether it
// killed the pod. Nothing on a node whose cgroups the kubelet does not
// manage; elsewhere one exists check per sync (a stat per v1 hierarchy
// the kubelet writes to), as upstream's.
func (k *Kubelet) killPodWithoutCgroup(ctx context.Context, pod *v1.Pod, rs *podstate.Pod, terminating bool) (bool, error) {
	if k.cgroups == nil || terminating {
		return false, nil
	}
	running := false
	for i := range rs.Containers {
		if c := &rs.Containers[i]; !c.Init && !c.Ephemeral && c.State == podstate.ContainerRunning {
			running = true
			break
		}
	}
	if !running || k.cgroups.exists(k.podCgroupName(pod)) {
		return false, nil
	}
	if err := k.killPod(ctx, pod, rs, podsync.GracePeriod(pod)); err != nil {
		k.log.Info("KillPod failed", "pod", pod.Namespace+"/"+pod.Name, "err", err)
		return false, k.ensurePodCgroup(pod)
	}
	return true, nil
}

// podCgroupStep is what an in-place resize writes to a pod's cgroup for
// resource res (cpu or memory) before its containers' updates (up: the
// values that grow) or after them (the values that shrink), bringing it
// from cur (as read: -1 none, cgroup v1's unlimited memory its largest
// number) to want (podCgroupValues of the pod as allocated), as
// upstream's doPodResizeAction: a limit the pod does not declare (0 in
// want) is left alone; CPU shares and quota move each on its own; a limit
// from none is a decrease. (Upstream compares the values as read too:
// memory from none a decrease as here, but an unlimited CFS quota reads
// -1, so a quota a resize gives a pod that had none is written before its
// containers' there, after them here; the end state is the same.) Zero:
// nothing to write.
func podCgroupStep(cur, want cgroupConfig, res v1.ResourceName, up bool) cgroupConfig {
	// grows reports whether w is more than c, none (-1) being the most.
	grows := func(c, w int64) bool { return c != -1 && w > c }
	var out cgroupConfig
	switch res {
	case v1.ResourceMemory:
		if want.memory != 0 && want.memory != cur.memory && grows(cur.memory, want.memory) == up {
			out.memory = want.memory
		}
	case v1.ResourceCPU:
		if want.cpuQuota != 0 && want.cpuQuota != cur.cpuQuota && grows(cur.cpuQuota, want.cpuQuota) == up {
			out.cpuQuota, out.cpuPeriod = want.cpuQuota, want.cpuPeriod
		}
		if want.cpuShares != 0 && want.cpuShares != cur.cpuShares && (want.cpuShares > cur.cpuShares) == up {
			out.cpuShares = want.cpuShares
		}
	}
	return out
}

// podCgroupResize changes a pod's cgroup during an in-place resize
// (actuateResize): its values as read when the resize started and as the
// pod's allocation wants them.
type podCgroupResize struct {
	name      string
	cur, want cgroupConfig
}

// startPodCgroupResize is the pod cgroup change of an in-place resize of
// pod (as allocated); nil on a node whose cgroups the kubelet does not
// manage, or when the pod has no cgroup of the kubelet's (one made by a
// kubelet of before the kubelet made them).
func (k *Kubelet) startPodCgroupResize(pod *v1.Pod) (*podCgroupResize, error) {
	if k.cgroups == nil {
		return nil, nil
	}
	name := k.podCgroupName(pod)
	if !k.cgroups.exists(name) {
		return nil, nil
	}
	cur, err := k.cgroups.read(name, v1.ResourceCPU)
	if err != nil {
		return nil, fmt.Errorf("reading the cgroup of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	mem, err := k.cgroups.read(name, v1.ResourceMemory)
	if err != nil {
		return nil, fmt.Errorf("reading the cgroup of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	cur.memory = mem.memory
	return &podCgroupResize{name: name, cur: cur, want: podCgroupValues(pod, k.cfg.cfs, k.cfg.PodPidsLimit)}, nil
}

// step writes the pod cgroup's values of res that grow (up) or shrink.
func (k *Kubelet) podCgroupResizeStep(r *podCgroupResize, res v1.ResourceName, up bool) error {
	c := podCgroupStep(r.cur, r.want, res, up)
	if c == (cgroupConfig{}) {
		return nil
	}
	if err := k.cgroups.set(r.name, c); err != nil {
		return fmt.Errorf("resizing the pod cgroup: %w", err)
	}
	return nil
}

// boolIndex is 1 for true, 0 for false.
func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}

// periodicQOSCgroupUpdateInterval is how often the QoS cgroups are
// brought up to date besides pods coming and going (upstream's).
const periodicQOSCgroupUpdateInterval = time.Minute

// updateQOSCgroupsAfterKill brings the QoS cgroups up to date once a pod
// is killed, as upstream's killPod (a failure logged).
func (k *Kubelet) updateQOSCgroupsAfterKill() {
	if k.cgroups == nil {
		return
	}
	if err := k.updateQOSCgroups(); err != nil {
		k.log.Debug("Failed to update QoS cgroups while killing pod", "err", err)
	}
}
