package kubelet

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// HugePages is one huge page size the node supports and how many pages of
// it the kernel holds pre-allocated. The node reports hugepages-<size> of
// Pages × PageSize bytes in capacity and allocatable (less than that of
// allocatable memory), admits pods against it, and gives each container a
// CRI hugepage limit for every size (hugepageLimits).
type HugePages struct {
	// PageSize is the page size in bytes (2097152 for 2Mi pages).
	PageSize int64
	// Pages is the number of pre-allocated pages (nr_hugepages).
	Pages int64
}

// ResourceName is the node resource of the page size, hugepages-<size>
// with the size as a binary quantity (hugepages-2Mi, hugepages-1Gi), as
// upstream's HugePageResourceName.
func (h HugePages) ResourceName() v1.ResourceName {
	return v1.ResourceName(v1.ResourceHugePagesPrefix + resource.NewQuantity(h.PageSize, resource.BinarySI).String())
}

// SysHugePagesDir is where Linux lists the huge page sizes it supports.
const SysHugePagesDir = "/sys/kernel/mm/hugepages"

// ReadHugePages reads the huge page sizes and their pre-allocated pages
// from a directory laid out as Linux's /sys/kernel/mm/hugepages (fsys is
// os.DirFS(SysHugePagesDir) on a real node): a directory
// hugepages-<size>kB per size, holding nr_hugepages. Upstream's kubelet
// reads the same through cadvisor's machine info (GetHugePagesInfo): no
// such directory (a kernel without huge pages) is no sizes, not an
// error; an entry or count that does not parse is an error. Ordered by
// page size.
func ReadHugePages(fsys fs.FS) ([]HugePages, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing huge page sizes: %w", err)
	}
	var out []HugePages
	for _, e := range entries {
		kb, ok := strings.CutPrefix(e.Name(), "hugepages-")
		if ok {
			kb, ok = strings.CutSuffix(kb, "kB")
		}
		size, err := strconv.ParseInt(kb, 10, 64)
		if !ok || err != nil || size <= 0 {
			return nil, fmt.Errorf("reading huge page sizes: %q is not hugepages-<size>kB", e.Name())
		}
		raw, err := fs.ReadFile(fsys, e.Name()+"/nr_hugepages")
		if err != nil {
			return nil, fmt.Errorf("reading the pre-allocated pages of %s: %w", e.Name(), err)
		}
		pages, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
		if err != nil || pages < 0 {
			return nil, fmt.Errorf("reading the pre-allocated pages of %s: %q is not a count", e.Name(), strings.TrimSpace(string(raw)))
		}
		out = append(out, HugePages{PageSize: size << 10, Pages: pages})
	}
	slices.SortFunc(out, func(a, b HugePages) int { return cmp.Compare(a.PageSize, b.PageSize) })
	return out, nil
}

// ParseHugePages parses huge page sizes given as size=pages,... (e.g.
// 2Mi=512,1Gi=0), sizes as quantities, ordered by page size; checked as
// Config.HugePages is.
func ParseHugePages(s string) ([]HugePages, error) {
	var out []HugePages
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		sizeText, pagesText, ok := strings.Cut(item, "=")
		if !ok {
			return nil, fmt.Errorf("huge pages %q: want size=pages", item)
		}
		size, err := resource.ParseQuantity(sizeText)
		if err != nil {
			return nil, fmt.Errorf("huge pages %q: page size: %w", item, err)
		}
		pages, err := strconv.ParseInt(pagesText, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("huge pages %q: pages: %w", item, err)
		}
		out = append(out, HugePages{PageSize: size.Value(), Pages: pages})
	}
	return checkHugePages(out)
}

// checkHugePages returns hps ordered by page size (a copy), or an error
// for a page size that is not positive, not a whole number of KiB
// (sysfs counts in kB), has no name in runc's units
// (hugePageUnitSize) or is given twice, a negative page count, or more
// than maxHugePageSizes sizes (the hugetlb limits of a cgroup hold that
// many: hugetlb.go).
func checkHugePages(hps []HugePages) ([]HugePages, error) {
	if len(hps) == 0 {
		return nil, nil
	}
	if len(hps) > maxHugePageSizes {
		return nil, fmt.Errorf("%d huge page sizes: at most %d are supported", len(hps), maxHugePageSizes)
	}
	out := slices.Clone(hps)
	slices.SortFunc(out, func(a, b HugePages) int { return cmp.Compare(a.PageSize, b.PageSize) })
	for i, h := range out {
		if h.PageSize <= 0 || h.PageSize%1024 != 0 {
			return nil, fmt.Errorf("huge page size %d: want a positive whole number of KiB", h.PageSize)
		}
		if _, err := hugePageUnitSize(h.PageSize); err != nil {
			return nil, fmt.Errorf("huge page size %d: %w", h.PageSize, err)
		}
		if h.Pages < 0 {
			return nil, fmt.Errorf("huge page size %s: %d pages", h.ResourceName(), h.Pages)
		}
		if i > 0 && out[i-1].PageSize == h.PageSize {
			return nil, fmt.Errorf("huge page size %s given twice", h.ResourceName())
		}
	}
	return out, nil
}
