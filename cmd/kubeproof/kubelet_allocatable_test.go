package main

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
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
		// Both wrong: --kube-reserved is read first, as upstream's.
		{[]string{"--system-reserved", "pods=1", "--kube-reserved", "pods=2"}, `--kube-reserved value failed to parse: cannot reserve "pods" resource`},
		// pflag's error, upstream's flag type's Set failing, as
		// upstream's kubelet command reports a flag's.
		{[]string{"--kube-reserved", "cpu"}, `failed to parse kubelet flag: invalid argument "cpu" for "--kube-reserved" flag: malformed pair, expect string=string`},
		{[]string{"--no-such-flag"}, `failed to parse kubelet flag: unknown flag: --no-such-flag`},
		// Each use adds its pairs: memory=1Gi with the 100Mi of
		// memory.available is more than --memory 1Gi (the later
		// --system-reserved does not drop it).
		{[]string{"--memory", "1Gi", "--system-reserved", "memory=1Gi", "--system-reserved", "cpu=1"},
			`invalid Node Allocatable configuration. Resource "memory" has a reservation of `},
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
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--system-reserved", "hugepages-2Mi=2Mi"}, `--system-reserved value failed to parse: cannot reserve "hugepages-2Mi" resource`},
		{[]string{"--kube-reserved", "hugepages-2Mi=2Mi"}, `--kube-reserved value failed to parse: cannot reserve "hugepages-2Mi" resource`},
		// Both wrong: --kube-reserved is read first, as upstream's.
		{[]string{"--system-reserved", "pods=1", "--kube-reserved", "cpu=1,hugepages-1Gi=1Gi"}, `--kube-reserved value failed to parse: cannot reserve "hugepages-1Gi" resource`},
		{[]string{"--kube-reserved", "cpu"}, `invalid argument "cpu" for "--kube-reserved" flag: malformed pair, expect string=string`},
	} {
		root := newRootCommand()
		root.SetArgs(append([]string{"up", "--data-dir", t.TempDir(), "--port", "0", "--nodes", "1"}, tc.args...))
		root.SetOut(new(discard))
		root.SetErr(new(discard))
		if err := root.Execute(); err == nil || err.Error() != tc.want {
			t.Errorf("up %q: %v; want %s", tc.args, err, tc.want)
		}
	}
}

// TestReservedFlagAccumulates: --system-reserved and --kube-reserved are
// of upstream's flag type (MapStringString): every use adds its pairs, a
// later pair of a resource replaces an earlier one, and the value prints
// as the sorted pairs.
func TestReservedFlagAccumulates(t *testing.T) {
	f := reservedFlag{}
	fs := pflag.NewFlagSet("kubelet", pflag.ContinueOnError)
	fs.Var(f, "system-reserved", "")
	if err := fs.Parse([]string{"--system-reserved", "cpu=1,memory=1Gi", "--system-reserved=cpu=500m", "--system-reserved", "pid=100,"}); err != nil {
		t.Fatal(err)
	}
	if got := f.String(); got != "cpu=500m,memory=1Gi,pid=100" {
		t.Errorf("--system-reserved %s; want cpu=500m,memory=1Gi,pid=100", got)
	}
	rl, err := f.list("--system-reserved")
	if cpu, mem := rl[corev1.ResourceCPU], rl[corev1.ResourceMemory]; err != nil || len(rl) != 3 || cpu.MilliValue() != 500 || mem.Value() != 1<<30 {
		t.Errorf("reservation %v, %v", rl, err)
	}
	if rl, err := (reservedFlag{}).list("--kube-reserved"); rl != nil || err != nil {
		t.Errorf("no --kube-reserved: %v, %v; want none", rl, err)
	}
}
