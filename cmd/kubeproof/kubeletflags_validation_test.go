package main

import (
	"strings"
	"testing"
)

// TestKubeletValidatesFlagsConfiguration: without --config or
// --config-dir, `kubeproof kubelet` validates the configuration its flags
// make as upstream's kubelet validates it (NewKubeletCommand validates the
// flags' KubeletConfiguration in every case): the error names the field
// and its flag inside upstream's wrapper, --port 0 included (upstream has
// no port 0: --enable-server=false turns the API off), before the API
// server is contacted.
func TestKubeletValidatesFlagsConfiguration(t *testing.T) {
	const prefix = "failed to validate kubelet configuration, error: "
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{name: "port 0", args: []string{"--port", "0"},
			want: prefix + "invalid configuration: port (--port) 0 must be between 1 and 65535, inclusive, path: "},
		{name: "port 0 without the API", args: []string{"--enable-server=false", "--port", "0"},
			want: prefix + "invalid configuration: port (--port) 0 must be between 1 and 65535, inclusive, path: "},
		{name: "negative max pods", args: []string{"--max-pods", "-1"},
			want: prefix + "invalid configuration: maxPods (--max-pods) -1 must not be a negative number, path: "},
		{name: "image GC thresholds", args: []string{"--image-gc-low-threshold", "90"},
			want: prefix + "invalid configuration: imageGCLowThresholdPercent (--image-gc-low-threshold) 90 must be less than imageGCHighThresholdPercent (--image-gc-high-threshold) 85, path: "},
		{name: "lease duration", args: []string{"--node-lease-duration", "0s"},
			want: prefix + "invalid configuration: nodeLeaseDurationSeconds must be greater than 0, path: "},
		{name: "several", args: []string{"--kube-api-qps", "-2", "--enforce-node-allocatable", "pods,bogus", "--pod-logs-dir", "logs"},
			want: prefix + `[invalid configuration: kubeAPIQPS (--kube-api-qps) -2 must not be a negative number, ` +
				`invalid configuration: option "bogus" specified for enforceNodeAllocatable (--enforce-node-allocatable). Valid options are "pods", "system-reserved", "system-reserved-compressible", "kube-reserved", "kube-reserved-compressible" or "none", ` +
				`invalid configuration: pod logs path "logs" must be absolute path], path: `},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := runKubelet(unreachableKubeconfig(t), tc.args...)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("got %v\nwant %s", err, tc.want)
			}
		})
	}
}

// TestKubeletFlagsDefaultsAreValid: the configuration of `kubeproof
// kubelet`'s flags left at their defaults passes upstream's validation, as
// upstream's kubelet's does.
func TestKubeletFlagsDefaultsAreValid(t *testing.T) {
	cmd := newKubeletCommand()
	if err := cmd.Flags().Parse(nil); err != nil {
		t.Fatal(err)
	}
	if err := validateFlagsKubeletConfig(cmd.Flags()); err != nil {
		t.Fatal(err)
	}
}

// TestKubeletEvictionFlagsParseAsUpstream: --eviction-hard and
// --eviction-soft are upstream's "<"-separated map flags,
// --eviction-soft-grace-period and --eviction-minimum-reclaim its
// "="-separated ones: an item without its separator is a flag that does
// not parse, with upstream's words, before anything is validated.
func TestKubeletEvictionFlagsParseAsUpstream(t *testing.T) {
	for _, tc := range []struct {
		flag, value, sep string
	}{
		{"--eviction-hard", "memory.available=1Gi", "<"},
		{"--eviction-soft", "memory.available<1Gi,nodefs.available", "<"},
		{"--eviction-soft-grace-period", "memory.available<1m", "="},
		{"--eviction-minimum-reclaim", "memory.available", "="},
	} {
		// --max-pods -1 would fail the validation, which comes after.
		err := runKubelet(unreachableKubeconfig(t), "--max-pods", "-1", tc.flag, tc.value)
		want := `failed to parse kubelet flag: invalid argument "` + tc.value + `" for "` + tc.flag + `" flag: malformed pair, expect string` + tc.sep + "string"
		if err == nil || err.Error() != want {
			t.Errorf("%s %s: got %v\nwant %s", tc.flag, tc.value, err, want)
		}
	}
	// A well-formed pair parses; its signal and quantity are the
	// kubelet's to check.
	cmd := newKubeletCommand()
	if err := cmd.Flags().Parse([]string{"--eviction-hard", "memory.available<1Gi,,nodefs.available<10%", "--eviction-soft-grace-period", "memory.available=1m"}); err != nil {
		t.Fatal(err)
	}
	if got := cmd.Flags().Lookup("eviction-hard").Value.String(); got != "memory.available<1Gi,,nodefs.available<10%" {
		t.Errorf("--eviction-hard is %q", got)
	}
}

// TestKubeletEvictionThresholdErrorsAsUpstream: a threshold of
// --eviction-hard or --eviction-soft whose signal or value upstream's
// kubelet does not take stops the kubelet with its error, which it gives
// when it parses its thresholds to run ("failed to run Kubelet: ..."),
// naming neither the flag nor, for a bad quantity, the signal.
func TestKubeletEvictionThresholdErrorsAsUpstream(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--eviction-hard", "memory.available<lots"},
			"failed to run Kubelet: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"},
		{[]string{"--eviction-hard", "cpu.available<1"}, "failed to run Kubelet: unsupported eviction signal cpu.available"},
		{[]string{"--eviction-hard", "memory.available<-1Mi"}, "failed to run Kubelet: eviction threshold memory.available must be positive: -1Mi"},
		{[]string{"--eviction-hard", "nodefs.available<x%"}, `failed to run Kubelet: strconv.ParseFloat: parsing "x": invalid syntax`},
		{[]string{"--eviction-hard", "nodefs.available<101%"}, "failed to run Kubelet: eviction percentage threshold nodefs.available must be <= 100%: 101%"},
		{[]string{"--eviction-soft", "memory.available<1e", "--eviction-soft-grace-period", "memory.available=1m"},
			"failed to run Kubelet: unable to parse quantity's suffix"},
	} {
		err := runKubelet(unreachableKubeconfig(t), tc.args...)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%q: got %v\nwant %s", tc.args, err, tc.want)
		}
	}
}

// TestKubeletMaxPodsIsInt32: --max-pods is upstream's int32 flag: a
// number beyond int32 does not parse, a flag error before any validation.
func TestKubeletMaxPodsIsInt32(t *testing.T) {
	err := runKubelet(unreachableKubeconfig(t), "--max-pods", "3000000000")
	want := `failed to parse kubelet flag: invalid argument "3000000000" for "--max-pods" flag: strconv.ParseInt: parsing "3000000000": value out of range`
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}
