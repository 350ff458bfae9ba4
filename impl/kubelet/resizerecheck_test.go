package kubelet

import (
	"context"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
	v1 "k8s.io/api/core/v1"
)

// ignoringRuntime accepts container resource updates without applying
// them: the runtime keeps reporting the old values.
type ignoringRuntime struct{ runtime.Runtime }

func (ignoringRuntime) UpdateContainerResources(context.Context, string, *runtimeapi.LinuxContainerResources) error {
	return nil
}

// TestResizeRecheckedOnce: after applying a resize the kubelet syncs the
// pod again at once to see the runtime report the new values; if the
// runtime still reports the old ones, it tries again at the pod's usual
// resync, not in a 1 ms loop (upstream retries at its sync interval).
func TestResizeRecheckedOnce(t *testing.T) {
	h, _ := resizeHarness(t, nil)
	p := h.create(h.pod("web", func(p *v1.Pod) {
		p.Spec.Containers[0].Resources = resources("100m", "200m", "64Mi", "128Mi")
	}))
	if got := h.sync(p); got.Status.Phase != v1.PodRunning {
		t.Fatalf("phase %s", got.Status.Phase)
	}
	h.k.rt = ignoringRuntime{h.k.rt}
	h.resize(p, "app", resources("300m", "400m", "64Mi", "256Mi"))
	requeues := make([]time.Duration, 3)
	for i := range requeues {
		d, err := h.k.syncPod(h.ctx, p.UID)
		if err != nil {
			t.Fatalf("sync %d: %v", i, err)
		}
		requeues[i] = d
	}
	if requeues[0] != time.Millisecond {
		t.Errorf("after applying the resize: requeue %v, want 1ms (recheck at once)", requeues[0])
	}
	for i, d := range requeues[1:] {
		if d == time.Millisecond { // 0: the usual resync
			t.Errorf("sync %d with the runtime still reporting the old values: requeue %v, want the usual resync", i+2, d)
		}
	}
}
