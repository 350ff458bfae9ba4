package sim

import (
	"testing"

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
	a, b := s.sandboxLinux(mk("/kubepods/poda")), s.sandboxLinux(mk("/kubepods/podb"))
	if a.CgroupParent != "/kubepods/poda" || b.CgroupParent != "/kubepods/podb" {
		t.Errorf("cgroup parents: %q %q", a.CgroupParent, b.CgroupParent)
	}
	if a.SecurityContext != b.SecurityContext || a.Sysctls["net.ipv4.ip_forward"] != "1" {
		t.Errorf("security context not shared or sysctls lost: %v %v", a, b)
	}
	if s.sandboxLinux(nil) != nil {
		t.Error("nil config")
	}
}
