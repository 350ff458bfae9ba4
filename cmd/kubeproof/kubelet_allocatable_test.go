package main

import (
	"strings"
	"testing"
)

// TestKubeletReservationFlags: `kubeproof kubelet --system-reserved`,
// `--kube-reserved`, `--enforce-node-allocatable`,
// `--system-reserved-cgroup` and `--kube-reserved-cgroup` reach the
// kubelet's config, which refuses what upstream's kubelet refuses, with
// its messages, before contacting the API server.
func TestKubeletReservationFlags(t *testing.T) {
	kubeconfig := unreachableKubeconfig(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--system-reserved", "pods=1"}, `--system-reserved value failed to parse: cannot reserve "pods" resource`},
		{[]string{"--kube-reserved", "memory=lots"}, `--kube-reserved value failed to parse: failed to parse quantity "lots" for "memory" resource: `},
		{[]string{"--kube-reserved", "cpu"}, `--kube-reserved value failed to parse: malformed pair, expect string=string`},
		{[]string{"--enforce-node-allocatable", "pods,system-reserved"},
			`invalid configuration: systemReservedCgroup (--system-reserved-cgroup) must be specified when "system-reserved" or "system-reserved-compressible" included in enforceNodeAllocatable (--enforce-node-allocatable)`},
		{[]string{"--enforce-node-allocatable", "none,pods"},
			`invalid configuration: enforceNodeAllocatable (--enforce-node-allocatable) may not contain additional enforcements when "none" is specified`},
		// The cgroups given, the reservations (4 CPUs of --cpu 4 and
		// 1m more) are refused against the capacity.
		{[]string{"--cpu", "4", "--enforce-node-allocatable", "pods,system-reserved,kube-reserved",
			"--system-reserved-cgroup", "/system.slice", "--kube-reserved-cgroup", "/kube.slice",
			"--system-reserved", "cpu=3", "--kube-reserved", "cpu=1001m"},
			`invalid Node Allocatable configuration. Resource "cpu" has a reservation of `},
	} {
		err := runKubelet(kubeconfig, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("kubelet %q: %v; want %s", tc.args, err, tc.want)
		}
	}
}

// TestUpReservationFlags: `kubeproof up` takes --system-reserved and
// --kube-reserved for every simulated node (their effect: impl/cluster
// TestNodeReservations), read as `kubeproof kubelet`'s, a value it
// refuses refused before anything starts.
func TestUpReservationFlags(t *testing.T) {
	for flag, want := range map[string]string{
		"--system-reserved": `--system-reserved value failed to parse: cannot reserve "hugepages-2Mi" resource`,
		"--kube-reserved":   `--kube-reserved value failed to parse: cannot reserve "hugepages-2Mi" resource`,
	} {
		root := newRootCommand()
		root.SetArgs([]string{"up", "--data-dir", t.TempDir(), "--port", "0", "--nodes", "1", flag, "hugepages-2Mi=2Mi"})
		root.SetOut(new(discard))
		root.SetErr(new(discard))
		if err := root.Execute(); err == nil || err.Error() != want {
			t.Errorf("up %s hugepages-2Mi=2Mi: %v; want %s", flag, err, want)
		}
	}
}
