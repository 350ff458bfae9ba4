package sim

import (
	"fmt"
	"slices"
	"testing"
	"unsafe"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestSharedPartsShareEqualAndKeepDistinct(t *testing.T) {
	s := newSharedParts()
	kv := func(k, v string) *runtimeapi.KeyValue { return &runtimeapi.KeyValue{Key: k, Value: []byte(v)} }
	a := s.env([]*runtimeapi.KeyValue{kv("A", "1"), kv("B", "2")})
	b := s.env([]*runtimeapi.KeyValue{kv("A", "1"), kv("B", "2")})
	c := s.env([]*runtimeapi.KeyValue{kv("A", "1"), kv("B", "3")})
	d := s.env([]*runtimeapi.KeyValue{kv("B", "2"), kv("A", "1")})
	if &a[0] != &b[0] {
		t.Error("equal environments not shared")
	}
	if string(c[1].Value) != "3" || &c[0] == &a[0] || d[0].Key != "B" {
		t.Errorf("different environments mixed up: %v %v", c, d)
	}
	m1 := s.stringMap(map[string]string{"io.kubernetes.container.restartCount": "0"})
	m2 := s.stringMap(map[string]string{"io.kubernetes.container.restartCount": "0"})
	m3 := s.stringMap(map[string]string{"io.kubernetes.container.restartCount": "1"})
	m2["probe"] = "x" // shows m1 and m2 are one map
	if m1["probe"] != "x" || m3["io.kubernetes.container.restartCount"] != "1" {
		t.Errorf("annotations: %v %v %v", m1, m2, m3)
	}
	sc1 := s.securityContext(&runtimeapi.LinuxContainerSecurityContext{MaskedPaths: []string{"/proc/kcore"}})
	sc2 := s.securityContext(&runtimeapi.LinuxContainerSecurityContext{MaskedPaths: []string{"/proc/kcore"}})
	sc3 := s.securityContext(&runtimeapi.LinuxContainerSecurityContext{Privileged: true})
	if sc1 != sc2 || sc3 == sc1 || !sc3.Privileged || s.securityContext(nil) != nil {
		t.Errorf("security contexts: %v %v %v", sc1, sc2, sc3)
	}
}

func TestSandboxLinuxKeepsItsOwnCgroupAndSharesSecurity(t *testing.T) {
	s := newSharedParts()
	mk := func(cg string) *runtimeapi.LinuxPodSandboxConfig {
		return &runtimeapi.LinuxPodSandboxConfig{CgroupParent: cg, Sysctls: map[string]string{"net.ipv4.ip_forward": "1"},
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{Seccomp: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}}}
	}
	// Cgroup parents other than the kubelet's /kubepods/pod<UID> are kept.
	a, fromA := s.sandboxLinux(mk("/custom/a"), "a")
	b, fromB := s.sandboxLinux(mk("/custom/b"), "b")
	if a.CgroupParent != "/custom/a" || b.CgroupParent != "/custom/b" || fromA != 0 || fromB != 0 {
		t.Errorf("cgroup parents: %q %q", a.CgroupParent, b.CgroupParent)
	}
	if a.SecurityContext != b.SecurityContext || a.Sysctls["net.ipv4.ip_forward"] != "1" {
		t.Errorf("security context not shared or sysctls lost: %v %v", a, b)
	}
	// The kubelet's are left out and the rest shared; a different
	// security context is not.
	c, fromC := s.sandboxLinux(mk("/kubepods/podc"), "c")
	d, fromD := s.sandboxLinux(mk("/kubepods/podd"), "d")
	other := mk("/kubepods/pode")
	other.SecurityContext = &runtimeapi.LinuxSandboxSecurityContext{Privileged: true}
	e, fromE := s.sandboxLinux(other, "e")
	if fromC == 0 || fromD == 0 || fromE == 0 || c != d || c.CgroupParent != "" || c.Sysctls["net.ipv4.ip_forward"] != "1" {
		t.Errorf("kubelet cgroup parents: %v %v (%v %v)", c, d, fromC, fromD)
	}
	if e == c || !e.SecurityContext.Privileged {
		t.Errorf("different security contexts shared: %v %v", e, c)
	}
	if f, from := s.sandboxLinux(mk("/kubepods/podf"), "g"); from != 0 || f.CgroupParent != "/kubepods/podf" {
		t.Errorf("another pod's cgroup parent taken for the kubelet's: %v", f)
	}
	// The QoS classes' parents, as the kubelet names them
	// (/kubepods/burstable/pod<UID>, /kubepods/besteffort/pod<UID>), are
	// left out too and shared with the Guaranteed pods' configs; each is
	// put back as it was.
	g, fromG := s.sandboxLinux(mk("/kubepods/burstable/podg"), "g")
	h, fromH := s.sandboxLinux(mk("/kubepods/besteffort/podh"), "h")
	if fromG == 0 || fromH == 0 || fromG == fromH || fromG == fromC || g != c || h != c {
		t.Errorf("QoS cgroup parents not left out and shared: %v (%d) %v (%d)", g, fromG, h, fromH)
	}
	for _, tc := range []struct {
		kind uint8
		uid  string
		want string
	}{{fromC, "c", "/kubepods/podc"}, {fromG, "g", "/kubepods/burstable/podg"}, {fromH, "h", "/kubepods/besteffort/podh"}} {
		if got := cgroupParent(tc.kind, tc.uid); got != tc.want {
			t.Errorf("cgroup parent of kind %d, pod %s: %q; want %q", tc.kind, tc.uid, got, tc.want)
		}
	}
	if i, from := s.sandboxLinux(mk("/kubepods/burstable/podi"), "g"); from != 0 || i.CgroupParent != "/kubepods/burstable/podi" {
		t.Errorf("another pod's Burstable cgroup parent taken for the kubelet's: %v", i)
	}
	if l, _ := s.sandboxLinux(nil, "a"); l != nil {
		t.Error("nil config")
	}
}

// A sandbox's resources and overhead (the kubelet makes them anew for
// every pod) are kept once per value, also where the rest of the Linux
// config is the sandbox's own.
func TestSandboxLinuxSharesResources(t *testing.T) {
	s := newSharedParts()
	mk := func(cg string, shares int64) *runtimeapi.LinuxPodSandboxConfig {
		return &runtimeapi.LinuxPodSandboxConfig{CgroupParent: cg,
			Resources: &runtimeapi.LinuxContainerResources{CpuShares: shares, CpuPeriod: 100000},
			Overhead:  &runtimeapi.LinuxContainerResources{}}
	}
	a, _ := s.sandboxLinux(mk("/custom/a", 102), "a")
	b, _ := s.sandboxLinux(mk("/custom/b", 102), "b")
	c, _ := s.sandboxLinux(mk("/custom/c", 204), "c")
	if a.Resources != b.Resources || a.Overhead != b.Overhead || a.Resources.CpuShares != 102 {
		t.Errorf("equal resources not shared: %v %v", a, b)
	}
	if c.Resources == a.Resources || c.Resources.CpuShares != 204 || c.Overhead != a.Overhead {
		t.Errorf("resources: %v %v", c, a)
	}
	d, fromD := s.sandboxLinux(mk("/kubepods/podd", 102), "d")
	e, fromE := s.sandboxLinux(mk("/kubepods/pode", 102), "e")
	if fromD == 0 || fromE == 0 || d != e || d.Resources != a.Resources {
		t.Errorf("kubelet cgroup parents: %v %v", d, e)
	}
}

func TestContainerMetaShared(t *testing.T) {
	s := newSharedParts()
	a := s.containerMeta(&runtimeapi.ContainerMetadata{Name: "app"})
	b := s.containerMeta(&runtimeapi.ContainerMetadata{Name: "app"})
	c := s.containerMeta(&runtimeapi.ContainerMetadata{Name: "app", Attempt: 1})
	d := s.containerMeta(&runtimeapi.ContainerMetadata{Name: "app1"})
	if a != b || c == a || c.Attempt != 1 || d == a || d.Name != "app1" {
		t.Errorf("container metadata: %v %v %v %v", a, b, c, d)
	}
}

// A kubelet volume's host path is kept around the pod's UID (the part
// before it shared); other host paths whole; both read back unchanged.
func TestMountsKeepHostPathsAroundThePodUID(t *testing.T) {
	ms := mountSlice(mountsOf([]*runtimeapi.Mount{
		{ContainerPath: "/var/run/secrets", HostPath: "/var/lib/kubelet/pods/u-1/volumes/kubernetes.io~projected/kube-api-access-abcde"},
		{ContainerPath: "/data", HostPath: "/srv/data"},
	}, "u-1"))
	other := mountSlice(mountsOf([]*runtimeapi.Mount{{ContainerPath: "/x", HostPath: "/var/lib/kubelet/pods/u-2/volumes/kubernetes.io~empty-dir/x"}}, "u-2"))
	if got := ms[0].hostPath("u-1"); got != "/var/lib/kubelet/pods/u-1/volumes/kubernetes.io~projected/kube-api-access-abcde" || !ms[0].splitAtUID {
		t.Errorf("kubelet volume host path %q (split %v)", got, ms[0].splitAtUID)
	}
	if got := ms[1].hostPath("u-1"); got != "/srv/data" || ms[1].splitAtUID {
		t.Errorf("host path %q (split %v)", got, ms[1].splitAtUID)
	}
	if other[0].hostPath("u-2") != "/var/lib/kubelet/pods/u-2/volumes/kubernetes.io~empty-dir/x" || unsafe.StringData(other[0].hostPrefix) != unsafe.StringData(ms[0].hostPrefix) {
		t.Errorf("the pods directory is not shared: %q %q", other[0].hostPrefix, ms[0].hostPrefix)
	}
	if m := mountSlice(mountsOf([]*runtimeapi.Mount{{ContainerPath: "/y", HostPath: "/pods/u-10/y"}}, "u-1")); m[0].splitAtUID || m[0].hostPath("u-1") != "/pods/u-10/y" {
		t.Errorf("split at another pod's UID: %+v", m[0])
	}
}

// mountSlice is every mount of ms, in order.
func mountSlice(ms mountList) []*mount { return slices.Collect(ms.all()) }

// A container's mounts, the first kept inline and the rest in a slice,
// come back all, in the order given, for none, one and several; a loop
// that stops early stops.
func TestMountListKeepsEveryMountInOrder(t *testing.T) {
	for n := range 5 {
		var in []*runtimeapi.Mount
		for i := range n {
			in = append(in, &runtimeapi.Mount{ContainerPath: fmt.Sprintf("/m%d", i), HostPath: fmt.Sprintf("/h%d", i)})
		}
		ms := mountsOf(in, "u-1")
		got := mountSlice(ms)
		if len(got) != n || ms.n != n {
			t.Fatalf("%d mounts: got %d (n %d)", n, len(got), ms.n)
		}
		for i, m := range got {
			if m.containerPath != in[i].ContainerPath || m.hostPath("u-1") != in[i].HostPath {
				t.Errorf("%d mounts: mount %d is %+v, want %v", n, i, *m, in[i])
			}
		}
		seen := 0
		for range ms.all() {
			seen++
			break
		}
		if seen != min(n, 1) {
			t.Errorf("%d mounts: a loop that breaks at once saw %d", n, seen)
		}
	}
}
