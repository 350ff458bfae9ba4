package sim

import (
	"context"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestStopStoppedSandboxIsDone: stopping a sandbox that is stopped
// already, or absent, succeeds and changes nothing, as containerd's
// StopPodSandbox (the kubelet stops every sandbox of a pod it kills,
// stopped ones too): the state version a relist compares stays.
func TestStopStoppedSandboxIsDone(t *testing.T) {
	ctx := context.Background()
	r, _ := newSim(t, "10.244.0.0/24")
	sb, err := r.RunPodSandbox(ctx, sandboxConfig("p", nil), "")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.StopPodSandbox(ctx, sb); err != nil {
		t.Fatal(err)
	}
	v := r.ContainerStatesVersion(ctx)
	for range 2 {
		if err := r.StopPodSandbox(ctx, sb); err != nil {
			t.Fatalf("stopping a stopped sandbox: %v", err)
		}
	}
	if err := r.StopPodSandbox(ctx, "no-such-sandbox"); err != nil {
		t.Fatalf("stopping an absent sandbox: %v", err)
	}
	if got := r.ContainerStatesVersion(ctx); got != v {
		t.Errorf("state version %d after stopping a stopped sandbox, was %d", got, v)
	}
	st, err := r.PodSandboxStatus(ctx, sb)
	if err != nil || st.State != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
		t.Fatalf("sandbox status %+v, %v", st, err)
	}
}
