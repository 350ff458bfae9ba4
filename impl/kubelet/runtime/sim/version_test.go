package sim

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"
	"pgregory.net/rapid"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

// states is what ContainerStates reports: pod UID and state by container id.
func states(t interface{ Fatal(...any) }, r *Runtime) map[string]string {
	out := map[string]string{}
	if err := r.ContainerStates(context.Background(), func(podUID, id string, st runtimeapi.ContainerState) {
		out[id] = podUID + "/" + st.String()
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// Whatever happens to a node's sandboxes and containers (created,
// started, stopped, removed, exiting on schedule as the clock moves), a
// ContainerStatesVersion equal to the one read before a listing means the
// listing has not changed: the relist may skip it.
func TestContainerStatesVersionCoversEveryChange(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ctx := context.Background()
		clk := testingclock.NewFakeClock(t0)
		r, err := New(Config{Clock: clk, PodCIDR: "10.244.0.0/24"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.PullImage(ctx, &runtimeapi.ImageSpec{Image: "img"}); err != nil {
			t.Fatal(err)
		}
		var sandboxes, containers []string
		pick := func(ids []string, label string) string {
			if len(ids) == 0 {
				return "absent"
			}
			return rapid.SampledFrom(ids).Draw(t, label)
		}
		lastVersion, last := r.ContainerStatesVersion(ctx), states(t, r)
		for i := range rapid.IntRange(1, 40).Draw(t, "steps") {
			switch op := rapid.IntRange(0, 7).Draw(t, "op"); op {
			case 0: // a pod's sandbox, with or without a scheduled exit
				ann := map[string]string{}
				switch rapid.IntRange(0, 4).Draw(t, "fault") {
				case 1:
					ann[AnnotationExitAfter] = fmt.Sprintf("%ds", rapid.IntRange(0, 5).Draw(t, "exitAfter"))
				case 2, 4:
					ann[AnnotationCrashAfter] = fmt.Sprintf("%ds", rapid.IntRange(1, 5).Draw(t, "crashAfter"))
				case 3:
					ann[AnnotationExitCode] = "3"
				}
				id, err := r.RunPodSandbox(ctx, sandboxConfig(fmt.Sprintf("pod-%d", i), ann), "")
				if err != nil {
					t.Fatal(err)
				}
				sandboxes = append(sandboxes, id)
			case 1:
				sb := pick(sandboxes, "sandbox")
				cfg := &runtimeapi.ContainerConfig{
					Metadata: &runtimeapi.ContainerMetadata{Name: "c"}, Image: &runtimeapi.ImageSpec{Image: "img"},
					Labels: map[string]string{runtime.LabelPodUID: "pod-of-" + sb},
				}
				if id, err := r.CreateContainer(ctx, sb, cfg, nil); err == nil {
					containers = append(containers, id)
					if rapid.Bool().Draw(t, "start") {
						_ = r.StartContainer(ctx, id)
					}
				}
			case 2:
				_ = r.StartContainer(ctx, pick(containers, "container"))
			case 3:
				_ = r.StopContainer(ctx, pick(containers, "container"), 0)
			case 4:
				_ = r.RemoveContainer(ctx, pick(containers, "container"))
			case 5:
				_ = r.StopPodSandbox(ctx, pick(sandboxes, "sandbox"))
			case 6:
				_ = r.RemovePodSandbox(ctx, pick(sandboxes, "sandbox"))
			case 7:
				clk.Step(time.Duration(rapid.IntRange(0, 3000).Draw(t, "ms")) * time.Millisecond)
			}
			// Other readers apply due exits too (and change no version).
			if rapid.Bool().Draw(t, "readStatus") && len(containers) > 0 {
				_, _ = r.ContainerStatus(ctx, pick(containers, "container"))
			}
			v := r.ContainerStatesVersion(ctx)
			if v == 0 {
				t.Fatal("version 0")
			}
			now := states(t, r)
			if v == lastVersion && !maps.Equal(now, last) {
				t.Fatalf("step %d: version %d unchanged, but the listing went from %v to %v", i, v, last, now)
			}
			lastVersion, last = v, now
		}
	})
}

// A scheduled exit changes the version once it is due, and not before.
func TestContainerStatesVersionScheduledExit(t *testing.T) {
	ctx := context.Background()
	r, clk := newSim(t, "10.244.0.0/24")
	if _, err := r.PullImage(ctx, &runtimeapi.ImageSpec{Image: "img"}); err != nil {
		t.Fatal(err)
	}
	sb, err := r.RunPodSandbox(ctx, sandboxConfig("p", map[string]string{AnnotationCrashAfter: "2s"}), "")
	if err != nil {
		t.Fatal(err)
	}
	cfg := &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "c"}, Image: &runtimeapi.ImageSpec{Image: "img"},
		Labels: map[string]string{runtime.LabelPodUID: "p"}}
	id, err := r.CreateContainer(ctx, sb, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	v := r.ContainerStatesVersion(ctx)
	clk.Step(1999 * time.Millisecond)
	if got := r.ContainerStatesVersion(ctx); got != v {
		t.Fatalf("version %d -> %d before the exit is due", v, got)
	}
	clk.Step(time.Millisecond)
	if got := r.ContainerStatesVersion(ctx); got == v {
		t.Fatalf("version %d unchanged once the exit is due", v)
	}
	if got := states(t, r)[id]; got != "p/CONTAINER_EXITED" {
		t.Fatalf("container %s, want exited", got)
	}
	v = r.ContainerStatesVersion(ctx)
	clk.Step(time.Hour)
	if got := r.ContainerStatesVersion(ctx); got != v {
		t.Fatalf("version %d -> %d with no exit left to come", v, got)
	}
}
