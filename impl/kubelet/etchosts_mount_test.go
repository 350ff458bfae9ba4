package kubelet

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestMountsEtcHosts: which containers get the managed hosts file, as
// upstream's shouldMountHostsFile and makeMounts decide: a pod on the pod
// network only once its sandbox has an IP, a host-network pod always (its
// IPs are the node's), and never a container that mounts a volume on
// /etc/hosts itself (a volume on /etc, or on another path, does not count).
func TestMountsEtcHosts(t *testing.T) {
	mounting := func(paths ...string) *v1.Container {
		c := &v1.Container{Name: "app"}
		for i, p := range paths {
			c.VolumeMounts = append(c.VolumeMounts, v1.VolumeMount{Name: fmt.Sprint("v", i), MountPath: p})
		}
		return c
	}
	for _, tc := range []struct {
		name        string
		hostNetwork bool
		c           *v1.Container
		ips         []string
		want        bool
	}{
		{"pod network with an IP", false, mounting(), []string{"10.244.0.5"}, true},
		{"pod network, no IP yet", false, mounting(), nil, false},
		{"host network without a sandbox IP", true, mounting(), nil, true},
		{"a volume on /etc/hosts", false, mounting("/data", "/etc/hosts"), []string{"10.244.0.5"}, false},
		{"a host-network pod's volume on /etc/hosts", true, mounting("/etc/hosts"), []string{"192.168.0.7"}, false},
		{"a volume on /etc", false, mounting("/etc"), []string{"10.244.0.5"}, true},
		{"a volume on /etc/hosts.d", false, mounting("/etc/hosts.d"), []string{"10.244.0.5"}, true},
	} {
		p := &v1.Pod{Spec: v1.PodSpec{HostNetwork: tc.hostNetwork}}
		if got := mountsEtcHosts(p, tc.c, tc.ips); got != tc.want {
			t.Errorf("%s: mounts the hosts file %v, want %v", tc.name, got, tc.want)
		}
	}
}
