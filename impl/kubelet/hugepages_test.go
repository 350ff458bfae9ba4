package kubelet

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestReadHugePages: the node's huge page sizes and pre-allocated pages
// come from a directory laid out as /sys/kernel/mm/hugepages, as
// upstream's (cadvisor's GetHugePagesInfo): hugepages-<size>kB/nr_hugepages
// per size, ordered by page size; no directory is no huge pages; an
// entry or count that does not parse is an error.
func TestReadHugePages(t *testing.T) {
	sysfs := func(t *testing.T, files map[string]string) string {
		dir := t.TempDir()
		for name, content := range files {
			if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	got, err := ReadHugePages(os.DirFS(sysfs(t, map[string]string{
		"hugepages-1048576kB/nr_hugepages": "0\n",
		"hugepages-2048kB/nr_hugepages":    "512\n",
		"hugepages-2048kB/free_hugepages":  "500\n",
	})))
	want := []HugePages{{PageSize: 2 << 20, Pages: 512}, {PageSize: 1 << 30, Pages: 0}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("ReadHugePages = %v, %v; want %v", got, err, want)
	}
	if got, err := ReadHugePages(os.DirFS(filepath.Join(t.TempDir(), "missing"))); err != nil || got != nil {
		t.Errorf("no directory: %v, %v; want none and no error", got, err)
	}
	for name, files := range map[string]map[string]string{
		"an entry not named hugepages-<size>kB": {"hugepages-2MB/nr_hugepages": "1"},
		"a count that does not parse":           {"hugepages-2048kB/nr_hugepages": "many"},
		"no count":                              {"hugepages-2048kB/free_hugepages": "1"},
	} {
		if got, err := ReadHugePages(os.DirFS(sysfs(t, files))); err == nil {
			t.Errorf("%s: %v and no error", name, got)
		}
	}
}

// TestParseHugePages: --hugepages size=pages,... by page size; sizes
// must be positive whole KiB with a name in runc's units, each once, and
// counts not negative.
func TestParseHugePages(t *testing.T) {
	got, err := ParseHugePages("1Gi=2, 2Mi=512")
	want := []HugePages{{PageSize: 2 << 20, Pages: 512}, {PageSize: 1 << 30, Pages: 2}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("ParseHugePages = %v, %v; want %v", got, err, want)
	}
	if got, err := ParseHugePages(""); err != nil || got != nil {
		t.Errorf("empty: %v, %v", got, err)
	}
	for _, bad := range []string{"2Mi", "2Mi=x", "x=1", "3000=1", "0=1", "2Mi=-1", "2Mi=1,2048Ki=2", "1025Ki=1"} {
		if got, err := ParseHugePages(bad); err == nil {
			t.Errorf("%q: %v and no error", bad, got)
		}
	}
}

// TestNodeStatusHugePages: each huge page size is capacity and
// allocatable hugepages-<size> of pages × size, and allocatable memory is
// less their total (upstream's MachineInfo setter), beside the hard
// eviction threshold's 100Mi; a node without huge pages reports none.
func TestNodeStatusHugePages(t *testing.T) {
	cfg := Config{NodeName: "n", Memory: resource.MustParse("8Gi"),
		HugePages: []HugePages{{PageSize: 1 << 30, Pages: 2}, {PageSize: 2 << 20, Pages: 512}}}
	if err := cfg.setDefaults(); err != nil {
		t.Fatal(err)
	}
	st := NodeStatus(&cfg, nil, Pressure{}, "sim://1", nil, time.Now())
	for _, tc := range []struct {
		list v1.ResourceList
		name v1.ResourceName
		want string
	}{
		{st.Capacity, "hugepages-2Mi", "1Gi"},
		{st.Capacity, "hugepages-1Gi", "2Gi"},
		{st.Capacity, v1.ResourceMemory, "8Gi"},
		{st.Allocatable, "hugepages-2Mi", "1Gi"},
		{st.Allocatable, "hugepages-1Gi", "2Gi"},
		{st.Allocatable, v1.ResourceMemory, "5020Mi"}, // 8Gi - 100Mi - 1Gi - 2Gi
	} {
		if q := tc.list[tc.name]; q.Cmp(resource.MustParse(tc.want)) != 0 {
			t.Errorf("%s = %s, want %s", tc.name, q.String(), tc.want)
		}
	}
	if q := st.Capacity["hugepages-2Mi"]; q.String() != "1Gi" {
		t.Errorf("capacity hugepages-2Mi written %q, want 1Gi (binary)", q.String())
	}

	// Huge pages beyond the memory: allocatable memory 0, not negative.
	cfg = Config{NodeName: "n", Memory: resource.MustParse("1Gi"), HugePages: []HugePages{{PageSize: 1 << 30, Pages: 2}}}
	if err := cfg.setDefaults(); err != nil {
		t.Fatal(err)
	}
	if q := cfg.allocatable()[v1.ResourceMemory]; q.Sign() != 0 {
		t.Errorf("allocatable memory = %s, want 0", q.String())
	}

	plain := Config{NodeName: "n"}
	if err := plain.setDefaults(); err != nil {
		t.Fatal(err)
	}
	st = NodeStatus(&plain, nil, Pressure{}, "sim://1", nil, time.Now())
	if len(st.Capacity) != 4 || len(st.Allocatable) != 4 {
		t.Errorf("a node without huge pages: capacity %v, allocatable %v; want cpu, memory, ephemeral-storage, pods", st.Capacity, st.Allocatable)
	}

	bad := Config{NodeName: "n", HugePages: []HugePages{{PageSize: 2 << 20, Pages: 1}, {PageSize: 2 << 20, Pages: 2}}}
	if err := bad.setDefaults(); err == nil {
		t.Error("a page size given twice was accepted")
	}
}

// TestAdmissionChecksHugePages: a pod that bypasses the scheduler
// (spec.nodeName set) asking for more huge pages than the node's
// allocatable fails admission as upstream's kubelet refuses it, reason
// OutOfhugepages-<size>; on a node without huge pages, any request fails.
func TestAdmissionChecksHugePages(t *testing.T) {
	hugepages := func(amount string) func(*v1.Pod) {
		return func(p *v1.Pod) {
			p.Spec.Containers[0].Resources = v1.ResourceRequirements{
				Requests: resList("hugepages-2Mi", amount, "memory", "10Mi"),
				Limits:   resList("hugepages-2Mi", amount, "memory", "10Mi"),
			}
		}
	}
	h := newHarness(t, func(c *Config) { c.HugePages = []HugePages{{PageSize: 2 << 20, Pages: 3}} })
	a := h.create(h.pod("a", hugepages("4Mi")))
	if got := h.sync(a); got.Status.Phase != v1.PodRunning {
		t.Fatalf("a: %s %q %q", got.Status.Phase, got.Status.Reason, got.Status.Message)
	}
	b := h.create(h.pod("b", hugepages("4Mi")))
	got := h.sync(b)
	if got.Status.Phase != v1.PodFailed || got.Status.Reason != "OutOfhugepages-2Mi" ||
		got.Status.Message != "Pod was rejected: Node didn't have enough resource: hugepages-2Mi, requested: 4194304, used: 4194304, capacity: 6291456" {
		t.Fatalf("b: %s %q %q", got.Status.Phase, got.Status.Reason, got.Status.Message)
	}
	c := h.create(h.pod("c", hugepages("2Mi")))
	if got := h.sync(c); got.Status.Phase != v1.PodRunning {
		t.Fatalf("c (fits the last page): %s %q %q", got.Status.Phase, got.Status.Reason, got.Status.Message)
	}

	none := newHarness(t, nil)
	d := none.create(none.pod("d", hugepages("2Mi")))
	got = none.sync(d)
	if got.Status.Phase != v1.PodFailed || got.Status.Reason != "OutOfhugepages-2Mi" ||
		got.Status.Message != "Pod was rejected: Node didn't have enough resource: hugepages-2Mi, requested: 2097152, used: 0, capacity: 0" {
		t.Fatalf("d on a node without huge pages: %s %q %q", got.Status.Phase, got.Status.Reason, got.Status.Message)
	}
	if sb, _ := none.rt.Counts(); sb != 0 {
		t.Fatalf("sandboxes = %d, want 0 (a rejected pod gets none)", sb)
	}
}
