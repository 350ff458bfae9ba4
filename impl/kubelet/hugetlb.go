package kubelet

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Hugetlb limits of the kubelet's cgroups, as upstream's kubelet writes
// them on a node whose cgroups have the hugetlb controller (its cgroup
// manager's maybeSetHugetlb; on cgroup v1 the hugetlb hierarchy mounted,
// on v2 the root cgroup listing the controller; elsewhere none written,
// as upstream skips it): every huge page size of the node gets a limit,
// 0 for one the cgroup is not given (pages of that size can then not be
// used in it):
//
//   - a pod's cgroup, when made, the pod's hugepages-<size> requests
//     (podHugetlb, upstream's ResourceConfigForPod HugePageLimits of the
//     pod's requests); an in-place resize leaves them as they are (unlike
//     upstream 1.37, whose resize writes the pod cgroup's CPU or memory
//     alone through a conversion that takes the hugetlb limits left out
//     for none and sets them to 0: the open kubernetes/kubernetes#141991
//     keeps them, as here; huge pages are not resizable), and so does
//     the CPU shares' reduction of an orphaned pod cgroup kept for its
//     volumes (upstream's ReduceCPULimits, through the same conversion,
//     sets them to 0 too);
//   - kubepods the node's allocatable huge pages when it is made and at
//     start (nodeAllocatableCgroupConfig, listHugetlb: upstream's
//     getCgroupConfig of the allocatable);
//   - the system and kube reservations' cgroups, where a whole
//     reservation is enforced, 0 of every size (reservedCgroupConfig:
//     upstream's getCgroupConfig gives them the reservation's huge pages,
//     none); where only its compressible part is, left as they are
//     (upstream 1.37 sets them to 0 there too, as in a resize);
//   - the QoS classes' cgroups, kubepods among them, no limit to speak of
//     (1<<62 bytes of every size, unboundedHugetlb) whenever they are
//     brought up to date (updateQOSCgroups), as upstream's
//     setHugePagesUnbounded in its QoS container manager's Start and
//     UpdateCgroups — which, running at start, before each pod's cgroup is
//     made and every minute, leaves kubepods unbounded too.
//
// The limits are written as runc writes them: on v1
// hugetlb.<size>.limit_in_bytes, on v2 hugetlb.<size>.max, the size in
// runc's units (2MB, 1GB: hugePageUnitSize), each also to the
// reservation limit (hugetlb.<size>.rsvd.limit_in_bytes,
// hugetlb.<size>.rsvd.max) until a kernel without reservation accounting
// shows it has none. Containers get theirs through CRI (hugepageLimits).

// maxHugePageSizes is the most huge page sizes a node may have
// (checkHugePages): Linux has a handful at most (x86-64 two, arm64 four).
const maxHugePageSizes = 8

// unboundedHugePages is upstream's "effectively unbounded" hugetlb limit
// of the QoS classes' cgroups.
const unboundedHugePages = 1 << 62

// hugetlbLimits are the hugetlb limits the kubelet writes to one of its
// cgroups (cgroupConfig.hugetlb), upstream's ResourceConfig.HugePageLimit
// with every node page size named: limit[i] bytes of pages of size[i]
// bytes, for the first n; n 0 leaves the cgroup's hugetlb as it is. A
// value, so that cgroupConfig stays comparable and allocation-free.
type hugetlbLimits struct {
	n     int
	size  [maxHugePageSizes]int64
	limit [maxHugePageSizes]int64
}

// add appends the limit of page size bytes (beyond maxHugePageSizes:
// dropped, which checkHugePages rules out).
func (h *hugetlbLimits) add(size, limit int64) {
	if h.n < maxHugePageSizes {
		h.size[h.n], h.limit[h.n] = size, limit
		h.n++
	}
}

// String is h's limits by page size in runc's units ("[2MB:0 1GB:0]").
func (h hugetlbLimits) String() string {
	var b strings.Builder
	b.WriteByte('[')
	for i := range h.n {
		if i > 0 {
			b.WriteByte(' ')
		}
		unit, err := hugePageUnitSize(h.size[i])
		if err != nil {
			unit = strconv.FormatInt(h.size[i], 10) + "B"
		}
		b.WriteString(unit + ":" + strconv.FormatInt(h.limit[i], 10))
	}
	b.WriteByte(']')
	return b.String()
}

// unboundedHugetlb is the QoS classes' cgroups' hugetlb limits on a node
// of the huge page sizes node: unboundedHugePages of each.
func unboundedHugetlb(node []HugePages) hugetlbLimits {
	return eachHugetlb(node, unboundedHugePages)
}

// eachHugetlb is hugetlb limits of limit bytes of every page size of node.
func eachHugetlb(node []HugePages, limit int64) hugetlbLimits {
	var h hugetlbLimits
	for _, p := range node {
		h.add(p.PageSize, limit)
	}
	return h
}

// podHugetlb is the hugetlb limits of pod's cgroup (pod as allocated) on
// a node of the huge page sizes node, as upstream's ResourceConfigForPod
// (HugePageLimits of PodRequests): of each size the pod's
// hugepages-<size> requests added up as podAmount adds them (app
// containers and sidecars summed, raised to an init container's peak,
// replaced by a pod-level request) with its overhead's, 0 for a size it
// does not request. Nothing is allocated for a pod that requests no huge
// pages.
func podHugetlb(pod *v1.Pod, node []HugePages) hugetlbLimits {
	var h hugetlbLimits
	named := requestsHugePages(pod)
	for _, p := range node {
		var limit int64
		if named {
			name := p.ResourceName()
			limit, _ = podAmount(pod, name, false)
			if q, ok := pod.Spec.Overhead[name]; ok {
				limit += q.Value()
			}
		}
		h.add(p.PageSize, limit)
	}
	return h
}

// requestsHugePages reports whether a container of pod, the pod level or
// its overhead names a hugepages-<size> request.
func requestsHugePages(pod *v1.Pod) bool {
	has := func(l v1.ResourceList) bool {
		for name := range l {
			if strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix) {
				return true
			}
		}
		return false
	}
	for i := range pod.Spec.Containers {
		if has(pod.Spec.Containers[i].Resources.Requests) {
			return true
		}
	}
	for i := range pod.Spec.InitContainers {
		if has(pod.Spec.InitContainers[i].Resources.Requests) {
			return true
		}
	}
	return (pod.Spec.Resources != nil && has(pod.Spec.Resources.Requests)) || has(pod.Spec.Overhead)
}

// listHugetlb is the hugetlb limits of list's hugepages-<size> entries
// (a node's allocatable, which names every page size of the node), as
// upstream's HugePageLimits keys them: by page size in bytes, entries of
// one size added up, ordered by page size; an entry whose size does not
// parse, or has no name in runc's units, left out (upstream logs it).
func listHugetlb(list v1.ResourceList) hugetlbLimits {
	var h hugetlbLimits
	for name, q := range list {
		size, ok := hugePageSizeOf(name)
		if !ok {
			continue
		}
		if i := slices.Index(h.size[:h.n], size); i >= 0 {
			h.limit[i] += q.Value()
			continue
		}
		h.add(size, q.Value())
	}
	// Ordered by page size, as the node's sizes are (checkHugePages).
	for i := 1; i < h.n; i++ {
		for j := i; j > 0 && h.size[j-1] > h.size[j]; j-- {
			h.size[j-1], h.size[j] = h.size[j], h.size[j-1]
			h.limit[j-1], h.limit[j] = h.limit[j], h.limit[j-1]
		}
	}
	return h
}

// hugePageSizeOf is the page size in bytes of resource name
// hugepages-<size>, ok false for another resource or a size that does not
// parse or has no name in runc's units (hugePageUnitSize).
func hugePageSizeOf(name v1.ResourceName) (int64, bool) {
	sizeName, ok := strings.CutPrefix(string(name), v1.ResourceHugePagesPrefix)
	if !ok {
		return 0, false
	}
	size, err := resource.ParseQuantity(sizeName)
	if err != nil {
		return 0, false
	}
	if _, err := hugePageUnitSize(size.Value()); err != nil {
		return 0, false
	}
	return size.Value(), true
}

// hugetlbController reports whether the node's cgroups have the hugetlb
// controller: on cgroup v1 its hierarchy mounted, on v2 the root cgroup
// listing it, as upstream's maybeSetHugetlb checks before it writes any
// hugetlb limit ("Optional subsystem not supported: hugetlb").
func (m cgroupfs) hugetlbController() bool {
	if !m.unified {
		fi, err := os.Stat(filepath.Join(m.root, "hugetlb"))
		return err == nil && fi.IsDir()
	}
	b, err := os.ReadFile(filepath.Join(m.root, "cgroup.controllers"))
	return err == nil && slices.Contains(strings.Fields(string(b)), "hugetlb")
}

// setHugetlb writes h to cgroup name as runc's hugetlb controller does
// (fs HugetlbGroup.Set, fs2 setHugeTlb): each size's limit, then its
// reservation limit, which a kernel without reservation accounting does
// not have (the first one missing ends those writes). On cgroup v1 the
// cgroup is made in the hugetlb hierarchy first (one made before the
// kubelet wrote hugetlb limits may be missing there), on v2 the
// controller handed down to it.
func (m cgroupfs) setHugetlb(name string, h *hugetlbLimits) error {
	if m.unified {
		if err := m.enableAncestors(name); err != nil {
			return fmt.Errorf("setting the hugetlb limits of cgroup %s: %w", name, err)
		}
	} else if err := os.MkdirAll(m.dir("hugetlb", name), 0o755); err != nil {
		return fmt.Errorf("setting the hugetlb limits of cgroup %s: %w", name, err)
	}
	suffix := ".limit_in_bytes"
	if m.unified {
		suffix = ".max"
	}
	dir := m.dir("hugetlb", name)
	skipRsvd := false
	for i := range h.n {
		unit, err := hugePageUnitSize(h.size[i])
		if err != nil {
			continue // none such: checkHugePages, hugePageSizeOf
		}
		prefix, value := "hugetlb."+unit, []byte(strconv.FormatInt(h.limit[i], 10))
		if err := os.WriteFile(filepath.Join(dir, prefix+suffix), value, 0o644); err != nil {
			return fmt.Errorf("setting %s of cgroup %s: %w", prefix+suffix, name, err)
		}
		if skipRsvd {
			continue
		}
		// The reservation limit only where the kernel has it: opened
		// without creating it.
		f, err := os.OpenFile(filepath.Join(dir, prefix+".rsvd"+suffix), os.O_WRONLY|os.O_TRUNC, 0)
		if errors.Is(err, fs.ErrNotExist) {
			skipRsvd = true
			continue
		}
		if err == nil {
			_, err = f.Write(value)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			return fmt.Errorf("setting %s of cgroup %s: %w", prefix+".rsvd"+suffix, name, err)
		}
	}
	return nil
}
