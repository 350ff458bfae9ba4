package main

import (
	"strings"
	"testing"
)

// TestKubeletCFSQuotaFlags: `kubeproof kubelet --cpu-cfs-quota-period`
// and `--feature-gates CustomCPUCFSQuotaPeriod` reach the kubelet's
// config, which refuses what upstream's validation refuses, with its
// messages, before contacting the API server: another period than 100ms
// without the gate (0 too, when given), one outside [1ms, 1s] with it;
// a gate the kubelet does not know, and a gate's value as upstream's
// feature gate flag parses it. --pod-max-pids takes a number.
func TestKubeletCFSQuotaFlags(t *testing.T) {
	kubeconfig := unreachableKubeconfig(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{args: []string{"--cpu-cfs-quota-period", "200ms"},
			want: "invalid configuration: cpuCFSQuotaPeriod (--cpu-cfs-quota-period) {200ms} requires feature gate CustomCPUCFSQuotaPeriod"},
		{args: []string{"--cpu-cfs-quota-period", "0"},
			want: "invalid configuration: cpuCFSQuotaPeriod (--cpu-cfs-quota-period) {0s} requires feature gate CustomCPUCFSQuotaPeriod"},
		{args: []string{"--feature-gates", "CustomCPUCFSQuotaPeriod=true", "--cpu-cfs-quota-period", "2s"},
			want: "invalid configuration: cpuCFSQuotaPeriod (--cpu-cfs-quota-period) {2s} must be between 1ms and 1sec, inclusive"},
		{args: []string{"--feature-gates", "CustomCPUCFSQuotaPeriod=true", "--cpu-cfs-quota-period", "0"},
			want: "invalid configuration: cpuCFSQuotaPeriod (--cpu-cfs-quota-period) {0s} must be between 1ms and 1sec, inclusive"},
		{args: []string{"--feature-gates", "NoSuchGate=true"}, want: "unrecognized feature gate: NoSuchGate"},
		// As upstream's featureGate.Set: names and values trimmed, every
		// pair parsed before a gate is looked up.
		{args: []string{"--feature-gates", "CustomCPUCFSQuotaPeriod = yes"},
			want: `invalid value of CustomCPUCFSQuotaPeriod=yes, err: strconv.ParseBool: parsing "yes": invalid syntax`},
		{args: []string{"--feature-gates", "NoSuchGate=true,CustomCPUCFSQuotaPeriod=maybe"}, want: "invalid value of CustomCPUCFSQuotaPeriod=maybe"},
		{args: []string{"--feature-gates", " CustomCPUCFSQuotaPeriod "}, want: "missing bool value for CustomCPUCFSQuotaPeriod"},
		{args: []string{"--pod-max-pids", "lots"}, want: `invalid argument "lots" for "--pod-max-pids" flag`},
	} {
		err := runKubelet(kubeconfig, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("kubelet %q: %v; want %q", tc.args, err, tc.want)
		}
	}
}
