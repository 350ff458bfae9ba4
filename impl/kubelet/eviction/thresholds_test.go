package eviction

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestParseConfigDefaults(t *testing.T) {
	cfg, err := ParseConfig(Flags{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[Signal]string{}
	for _, th := range cfg.Thresholds {
		if !th.Hard() {
			t.Errorf("default threshold %s is soft", th.Signal)
		}
		got[th.Signal] = th.Value.String()
	}
	want := map[Signal]string{SignalMemoryAvailable: "100Mi", SignalNodeFsAvailable: "10%", SignalImageFsAvailable: "15%", SignalNodeFsInodesFree: "5%", SignalImageFsInodesFree: "5%"}
	if len(got) != len(want) {
		t.Fatalf("defaults %v, want %v", got, want)
	}
	for s, v := range want {
		if got[s] != v {
			t.Errorf("%s = %q, want %q", s, got[s], v)
		}
	}
	if cfg.PressureTransitionPeriod != 5*time.Minute || cfg.MonitoringInterval != 10*time.Second {
		t.Errorf("periods %v %v", cfg.PressureTransitionPeriod, cfg.MonitoringInterval)
	}
}

func TestParseConfig(t *testing.T) {
	cfg, err := ParseConfig(Flags{
		Hard: "memory.available<1Gi", HardSet: true,
		Soft: "memory.available<2Gi,nodefs.available<20%", SoftGracePeriod: "memory.available=1m30s,nodefs.available=10s",
		MinimumReclaim: "memory.available=500Mi,nodefs.available=5%", MaxPodGracePeriod: 20, PressureTransitionPeriod: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Thresholds) != 3 {
		t.Fatalf("thresholds %+v (giving --eviction-hard replaces the defaults)", cfg.Thresholds)
	}
	for _, th := range cfg.Thresholds {
		switch {
		case th.Signal == SignalMemoryAvailable && th.Hard():
			if th.Value.String() != "1Gi" || th.MinReclaim == nil || th.MinReclaim.String() != "500Mi" {
				t.Errorf("hard memory %+v", th)
			}
		case th.Signal == SignalMemoryAvailable:
			if th.GracePeriod != 90*time.Second || th.Value.String() != "2Gi" {
				t.Errorf("soft memory %+v", th)
			}
		case th.Signal == SignalNodeFsAvailable:
			if th.GracePeriod != 10*time.Second || th.Value.Percentage != 0.2 || th.MinReclaim.Percentage != 0.05 {
				t.Errorf("soft nodefs %+v", th)
			}
		default:
			t.Errorf("unexpected %+v", th)
		}
	}
	if cfg.MaxPodGracePeriodSeconds != 20 || cfg.PressureTransitionPeriod != time.Second {
		t.Errorf("cfg %+v", cfg)
	}
}

func TestParseConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		f    Flags
		want string
	}{
		{Flags{Hard: "memory.available>100Mi", HardSet: true}, "want <signal><<value>"},
		{Flags{Hard: "cpu.available<1", HardSet: true}, "unsupported eviction signal cpu.available"},
		{Flags{Hard: "memory.available<0", HardSet: true}, "eviction threshold must be positive: 0"},
		{Flags{Hard: "nodefs.available<120%", HardSet: true}, "must be between 0% and 100%"},
		{Flags{Hard: "memory.available<lots", HardSet: true}, `invalid quantity "lots"`},
		{Flags{Hard: "memory.available<-1Mi", HardSet: true}, "must be positive"},
		{Flags{Soft: "memory.available<1Gi"}, "no grace period"},
		{Flags{Soft: "memory.available<1Gi", SoftGracePeriod: "memory.available=soon"}, "--eviction-soft-grace-period: signal memory.available"},
		{Flags{Soft: "memory.available<1Gi", SoftGracePeriod: "memory.available=-1m"}, "negative grace period -1m"},
		{Flags{MinimumReclaim: "memory.available"}, "want <signal>=<value>"},
		{Flags{MinimumReclaim: "memory.available=-5Mi"}, "negative eviction minimum reclaim specified for memory.available"},
		{Flags{MinimumReclaim: "nodefs.available=0%"}, "eviction percentage minimum reclaim nodefs.available must be positive: 0%"},
		{Flags{PressureTransitionPeriod: -time.Second}, "negative"},
	} {
		_, err := ParseConfig(tc.f)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want it to contain %q", tc.f, err, tc.want)
		}
	}
}

// TestParseConfigAsUpstreamMaps: thresholds "0%" and "100%" are none, a
// signal named twice keeps its last value (the earlier one unchecked), a
// grace period without a soft threshold is unused, and a zero one makes
// the soft threshold hard, as upstream's ParseThresholdConfig.
func TestParseConfigAsUpstreamMaps(t *testing.T) {
	cfg, err := ParseConfig(Flags{Hard: "memory.available<0%,nodefs.available<100%", HardSet: true})
	if err != nil || len(cfg.Thresholds) != 0 {
		t.Fatalf("%+v %v", cfg.Thresholds, err)
	}
	cfg, err = ParseConfig(Flags{Hard: "", HardSet: true})
	if err != nil || len(cfg.Thresholds) != 0 {
		t.Fatalf("empty --eviction-hard: %+v %v", cfg.Thresholds, err)
	}
	cfg, err = ParseConfig(Flags{Hard: "memory.available<lots,memory.available<1Gi", HardSet: true,
		Soft: "nodefs.available<20%", SoftGracePeriod: "nodefs.available=0s,pid.available=1m"})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Thresholds) != 2 || cfg.Thresholds[0].Value.String() != "1Gi" || !cfg.Thresholds[1].Hard() {
		t.Errorf("thresholds %+v, want memory.available<1Gi and a hard nodefs.available<20%%", cfg.Thresholds)
	}
}

func TestHardEvictionReservation(t *testing.T) {
	capacity := v1.ResourceList{v1.ResourceMemory: resource.MustParse("4Gi"), v1.ResourceEphemeralStorage: resource.MustParse("100Gi"), v1.ResourceCPU: resource.MustParse("4")}
	cfg, err := ParseConfig(Flags{})
	if err != nil {
		t.Fatal(err)
	}
	got := cfg.HardEvictionReservation(capacity)
	if m := got[v1.ResourceMemory]; m.Cmp(resource.MustParse("100Mi")) != 0 {
		t.Errorf("memory reservation %s, want 100Mi (memory.available<100Mi)", m.String())
	}
	want := resource.MustParse("10Gi")
	if d := got[v1.ResourceEphemeralStorage]; d.Value() != want.Value() {
		t.Errorf("ephemeral-storage reservation %s, want 10Gi (nodefs.available<10%% of 100Gi)", d.String())
	}
	if _, ok := got[v1.ResourceCPU]; ok {
		t.Errorf("cpu reserved: %v", got)
	}
	soft, err := ParseConfig(Flags{Hard: "", HardSet: true, Soft: "memory.available<1Gi", SoftGracePeriod: "memory.available=1m"})
	if err != nil {
		t.Fatal(err)
	}
	if got := soft.HardEvictionReservation(capacity); len(got) != 0 {
		t.Errorf("soft thresholds reserve nothing, got %v", got)
	}
}
