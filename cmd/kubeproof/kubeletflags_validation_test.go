package main

import (
	"maps"
	"strings"
	"testing"

	"github.com/kubeproof/kubeproof/impl/kubelet/eviction"
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

// TestKubeletEvictionFlagsAddAndKeepLast: --eviction-hard and its
// neighbours are upstream's map flags: given again, a flag adds its pairs
// to the earlier ones' (the first replaces the default), and a signal
// named twice keeps its last value, a value named before and replaced not
// checked at all.
func TestKubeletEvictionFlagsAddAndKeepLast(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want map[eviction.Signal]string // hard thresholds
	}{
		{name: "repeated flag adds",
			args: []string{"--eviction-hard", "memory.available<1Gi", "--eviction-hard", "nodefs.available<5%"},
			want: map[eviction.Signal]string{eviction.SignalMemoryAvailable: "1Gi", eviction.SignalNodeFsAvailable: "5%"}},
		{name: "duplicate keeps the last",
			args: []string{"--eviction-hard", "memory.available<1Gi,memory.available<2Gi"},
			want: map[eviction.Signal]string{eviction.SignalMemoryAvailable: "2Gi"}},
		{name: "duplicate across flags keeps the last, the replaced value unchecked",
			args: []string{"--eviction-hard", "memory.available<lots", "--eviction-hard", "memory.available<3Gi"},
			want: map[eviction.Signal]string{eviction.SignalMemoryAvailable: "3Gi"}},
		{name: "0% and 100% are ignored",
			args: []string{"--eviction-hard", "memory.available<1Gi,nodefs.available<0%,imagefs.available<100%"},
			want: map[eviction.Signal]string{eviction.SignalMemoryAvailable: "1Gi"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := newKubeletCommand()
			if err := cmd.Flags().Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			cfg, err := eviction.ParseConfig(eviction.Flags{Hard: cmd.Flags().Lookup("eviction-hard").Value.String(), HardSet: true})
			if err != nil {
				t.Fatal(err)
			}
			got := map[eviction.Signal]string{}
			for _, th := range cfg.Thresholds {
				got[th.Signal] = th.Value.String()
			}
			if !maps.Equal(got, tc.want) {
				t.Errorf("thresholds %v, want %v", got, tc.want)
			}
		})
	}
	// The soft thresholds' grace periods and minimum reclaims add up too.
	cmd := newKubeletCommand()
	if err := cmd.Flags().Parse([]string{"--eviction-soft", "memory.available<2Gi", "--eviction-soft", "nodefs.available<20%",
		"--eviction-soft-grace-period", "memory.available=1m", "--eviction-soft-grace-period", "nodefs.available=2m",
		"--eviction-minimum-reclaim", "memory.available=1Mi", "--eviction-minimum-reclaim", "nodefs.available=1%"}); err != nil {
		t.Fatal(err)
	}
	get := func(name string) string { return cmd.Flags().Lookup(name).Value.String() }
	cfg, err := eviction.ParseConfig(eviction.Flags{HardSet: true, Soft: get("eviction-soft"), SoftGracePeriod: get("eviction-soft-grace-period"), MinimumReclaim: get("eviction-minimum-reclaim")})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Thresholds) != 2 {
		t.Fatalf("soft thresholds %+v, want memory.available's and nodefs.available's", cfg.Thresholds)
	}
	for _, th := range cfg.Thresholds {
		if th.GracePeriod == 0 || th.MinReclaim == nil {
			t.Errorf("threshold %+v without its grace period or minimum reclaim", th)
		}
	}
}

// TestKubeletEvictionFlagErrorsAsUpstream: a zero threshold quantity, and
// a grace period or minimum reclaim upstream's kubelet does not take,
// stop the kubelet with upstream's error as ParseThresholdConfig gives it
// (hard thresholds, soft ones, grace periods, minimum reclaims, then the
// soft thresholds' grace periods).
func TestKubeletEvictionFlagErrorsAsUpstream(t *testing.T) {
	const prefix = "failed to run Kubelet: "
	soft := []string{"--eviction-soft", "memory.available<1Gi"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--eviction-hard", "memory.available<0"}, "eviction threshold memory.available must be positive: 0"},
		{[]string{"--eviction-soft", "nodefs.available<0Mi", "--eviction-soft-grace-period", "nodefs.available=1m"}, "eviction threshold nodefs.available must be positive: 0"},
		{append(soft, "--eviction-soft-grace-period", "memory.available=soon"), `time: invalid duration "soon"`},
		{append(soft, "--eviction-soft-grace-period", "memory.available=-1m"), "invalid eviction grace period specified: -1m, must be a positive value"},
		{append(soft, "--eviction-soft-grace-period", "cpu.available=1m"), "unsupported eviction signal cpu.available"},
		{soft, "grace period must be specified for the soft eviction threshold memory.available"},
		{append(soft, "--eviction-minimum-reclaim", "memory.available=-5Mi"), "negative eviction minimum reclaim specified for memory.available"},
		{append(soft, "--eviction-minimum-reclaim", "memory.available=lots"), "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"},
		{[]string{"--eviction-minimum-reclaim", "nodefs.available=0%"}, "eviction percentage minimum reclaim nodefs.available must be positive: 0%"},
		{[]string{"--eviction-minimum-reclaim", "nodefs.available=x%"}, `strconv.ParseFloat: parsing "x": invalid syntax`},
		{[]string{"--eviction-minimum-reclaim", "pid.unknown=1"}, "unsupported eviction signal pid.unknown"},
	} {
		err := runKubelet(unreachableKubeconfig(t), tc.args...)
		if err == nil || err.Error() != prefix+tc.want {
			t.Errorf("%q: got %v\nwant %s", tc.args, err, prefix+tc.want)
		}
	}
}

// TestKubeletInt32FlagsAsUpstream: --kube-api-qps, --kube-api-burst,
// --image-gc-high-threshold, --image-gc-low-threshold and
// --eviction-max-pod-grace-period are upstream's int32 flags (pflag's
// Int32Var; kubeAPIQPS is an int32 field and its flag too): a number
// beyond int32, or a fraction, does not parse, a flag error before any
// validation, in pflag's words.
func TestKubeletInt32FlagsAsUpstream(t *testing.T) {
	for _, tc := range []struct{ flag, value, why string }{
		{"--kube-api-qps", "1.5", "invalid syntax"},
		{"--kube-api-qps", "3000000000", "value out of range"},
		{"--kube-api-burst", "3000000000", "value out of range"},
		{"--image-gc-high-threshold", "3000000000", "value out of range"},
		{"--image-gc-low-threshold", "-3000000000", "value out of range"},
		{"--eviction-max-pod-grace-period", "3000000000", "value out of range"},
	} {
		// --max-pods -1 would fail the validation, which comes after.
		err := runKubelet(unreachableKubeconfig(t), "--max-pods", "-1", tc.flag, tc.value)
		want := `failed to parse kubelet flag: invalid argument "` + tc.value + `" for "` + tc.flag + `" flag: strconv.ParseInt: parsing "` + tc.value + `": ` + tc.why
		if err == nil || err.Error() != want {
			t.Errorf("%s %s: got %v\nwant %s", tc.flag, tc.value, err, want)
		}
		if typ := newKubeletCommand().Flags().Lookup(tc.flag[2:]).Value.Type(); typ != "int32" {
			t.Errorf("%s is a %s flag, want int32", tc.flag, typ)
		}
	}
}

// TestKubeletLangleFlagBlankItem: a blank item of --eviction-hard or
// --eviction-soft is a malformed pair, as upstream's "<" map flag skips
// only empty items (it trims a pair's key and value, not the item).
func TestKubeletLangleFlagBlankItem(t *testing.T) {
	for _, flag := range []string{"--eviction-hard", "--eviction-soft"} {
		err := newKubeletCommand().Flags().Parse([]string{flag, "memory.available<1Gi, "})
		if err == nil || !strings.Contains(err.Error(), "malformed pair, expect string<string") {
			t.Errorf("blank %s item: got %v, want malformed pair", flag, err)
		}
	}
}

// TestKubeletMapFlagsSkipEmptyItems: as upstream's map flags, an empty
// item of --eviction-hard (a trailing comma) and a blank one of
// --eviction-soft-grace-period or --eviction-minimum-reclaim are skipped
// and the pairs' keys and values trimmed: the configuration of the flags
// validates and the thresholds parse.
func TestKubeletMapFlagsSkipEmptyItems(t *testing.T) {
	cmd := newKubeletCommand()
	if err := cmd.Flags().Parse([]string{"--eviction-hard", "memory.available<1Gi,", "--eviction-hard", " nodefs.available < 5% ",
		"--eviction-soft", "memory.available<2Gi", "--eviction-soft-grace-period", "memory.available=1m, ",
		"--eviction-minimum-reclaim", " , memory.available = 1Mi"}); err != nil {
		t.Fatal(err)
	}
	if err := validateFlagsKubeletConfig(cmd.Flags()); err != nil {
		t.Fatalf("validating the flags' configuration: %v", err)
	}
	get := func(name string) string { return cmd.Flags().Lookup(name).Value.String() }
	cfg, err := eviction.ParseConfig(eviction.Flags{Hard: get("eviction-hard"), HardSet: true, Soft: get("eviction-soft"),
		SoftGracePeriod: get("eviction-soft-grace-period"), MinimumReclaim: get("eviction-minimum-reclaim")})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Thresholds) != 3 {
		t.Errorf("thresholds %+v, want memory.available<1Gi, nodefs.available<5%% and soft memory.available<2Gi", cfg.Thresholds)
	}
}
