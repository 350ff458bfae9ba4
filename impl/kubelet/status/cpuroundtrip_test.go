package status

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestSharesAfterV2RoundTrip: the shares a pod cgroup given shares reads
// back on cgroup v2 (its cpu.weight converted back), as upstream's
// CPUSharesEqualAfterV2RoundTrip compares them (its test's cases: 50m is
// 51 shares, weight 2, read back as 28; 100m is 102, weight 4, read back
// as 80; a read-back of the shares themselves is no round trip of a
// lossy conversion).
func TestSharesAfterV2RoundTrip(t *testing.T) {
	for _, tc := range []struct {
		allocated, readBack int64
		want                bool
	}{
		{milliCPUToShares(50), 28, true},
		{milliCPUToShares(50), 27, false},
		{milliCPUToShares(100), 80, true},
		{milliCPUToShares(100), milliCPUToShares(100), false},
		{milliCPUToShares(50), milliCPUToShares(100), false},
		{milliCPUToShares(0), 2, true},              // no request: 2 shares, weight 1
		{milliCPUToShares(1000), 1024, false},       // weight 39 reads 998
		{milliCPUToShares(1000), 998, true},         //
		{milliCPUToShares(300000), 262144, true},    // capped: weight 10000 reads the cap
		{milliCPUToShares(256000), maxShares, true}, //
	} {
		if got := sharesAfterV2RoundTrip(tc.allocated) == tc.readBack; got != tc.want {
			t.Errorf("shares %d read back as %d: a v2 round trip = %v (round trip gives %d), want %v",
				tc.allocated, tc.readBack, got, sharesAfterV2RoundTrip(tc.allocated), tc.want)
		}
	}
}

// TestPodStatusResourcesCPUV2RoundTrip: a Running pod's pod-level CPU
// request in status.resources stays the allocated one when its pod
// cgroup's shares are what cgroup v2's cpu.weight gives back of the
// allocated request's shares (50m reads 28 shares, 28m; 300m reads 290,
// 284m), as upstream 1.37's convertToAPIPodLevelResourcesStatus since
// kubernetes/kubernetes#137660 (its TestConvertToAPIPodLevelResourcesStatus:
// 50m with 28 shares read reports 50m, with 102 shares 100m); other
// shares are reported as read (cgroup v1's exact ones, or a cgroup
// actuated with another request). Before, 50m was reported as 28m and 1
// as 975m.
func TestPodStatusResourcesCPUV2RoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name      string
		podCPU    string // the pod-level CPU request allocated
		shares    int64  // what the pod cgroup read
		wantMilli int64
	}{
		{"50m read back from cpu.weight 2", "50m", 28, 50},
		{"50m, cgroup actuated with 100m", "50m", 102, 100},
		{"50m on cgroup v1", "50m", 51, 50},
		{"100m read back from cpu.weight 4", "100m", 80, 100},
		{"300m read back from cpu.weight 12", "300m", 290, 300},
		{"300m, shares off by one", "300m", 291, 285},
		{"1 read back from cpu.weight 39", "1", 998, 1000},
		{"1 on cgroup v1", "1", 1024, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{
				Spec: v1.PodSpec{
					Containers: []v1.Container{{Name: "pause"}},
					Resources: &v1.ResourceRequirements{
						Requests: rl("cpu", tc.podCPU, "memory", "50Mi"),
						Limits:   rl("cpu", "2", "memory", "100Mi"),
					},
				},
				Status: v1.PodStatus{Phase: v1.PodRunning},
			}
			_, res := PodStatusResources(pod, PodCgroup{CPUShares: tc.shares, CPUQuota: 200000, CPUPeriod: 100000, Memory: 100 << 20})
			got := res.Requests[v1.ResourceCPU]
			if got.MilliValue() != tc.wantMilli {
				t.Errorf("status.resources cpu request = %s, want %dm", got.String(), tc.wantMilli)
			}
		})
	}
}
