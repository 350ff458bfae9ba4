package sim

import (
	"context"
	"fmt"
	"slices"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"
	"pgregory.net/rapid"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

// Whatever sandboxes and containers are created and removed, the pod
// index holds exactly the records of the sandboxes and containers maps,
// each under its own pod UID label, and PodState reports what walking
// every record of the node would find (the way it was read before the
// index).
func TestPodIndexMatchesTheRecords(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ctx := context.Background()
		r, err := New(Config{Clock: testingclock.NewFakeClock(t0), PodCIDR: "10.244.0.0/24"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.PullImage(ctx, &runtimeapi.ImageSpec{Image: "img"}); err != nil {
			t.Fatal(err)
		}
		pods := []string{"pod-a", "pod-b", "pod-c", ""}
		var sandboxes, containers []string
		pick := func(ids []string, label string) string {
			if len(ids) == 0 {
				return "absent"
			}
			return rapid.SampledFrom(ids).Draw(t, label)
		}
		for range rapid.IntRange(1, 40).Draw(t, "steps") {
			switch rapid.IntRange(0, 5).Draw(t, "op") {
			case 0:
				id, err := r.RunPodSandbox(ctx, sandboxConfig(rapid.SampledFrom(pods).Draw(t, "sandboxPod"), nil), "")
				if err != nil {
					t.Fatal(err)
				}
				sandboxes = append(sandboxes, id)
			case 1: // labelled with any pod, as a container may be
				cfg := &runtimeapi.ContainerConfig{
					Metadata: &runtimeapi.ContainerMetadata{Name: "c"}, Image: &runtimeapi.ImageSpec{Image: "img"},
					Labels: map[string]string{runtime.LabelPodUID: rapid.SampledFrom(pods).Draw(t, "containerPod")},
				}
				if id, err := r.CreateContainer(ctx, pick(sandboxes, "sandbox"), cfg, nil); err == nil {
					containers = append(containers, id)
				}
			case 2:
				_ = r.StartContainer(ctx, pick(containers, "container"))
			case 3:
				id := pick(containers, "container")
				_ = r.StopContainer(ctx, id, 0)
				_ = r.RemoveContainer(ctx, id)
			case 4:
				_ = r.StopPodSandbox(ctx, pick(sandboxes, "sandbox"))
			case 5:
				_ = r.RemovePodSandbox(ctx, pick(sandboxes, "sandbox"))
			}
			checkPodIndex(t, r)
			for _, pod := range pods {
				ps, err := r.PodState(ctx, pod)
				if err != nil {
					t.Fatal(err)
				}
				wantSandboxes, wantContainers := recordsOf(r, pod)
				var gotSandboxes, gotContainers []string
				for _, s := range ps.Sandboxes {
					gotSandboxes = append(gotSandboxes, s.ID)
				}
				for _, c := range ps.Containers {
					gotContainers = append(gotContainers, c.ID)
				}
				if !slices.Equal(gotSandboxes, wantSandboxes) || !slices.Equal(gotContainers, wantContainers) {
					t.Fatalf("pod %q: PodState has sandboxes %v, containers %v; the records %v, %v", pod, gotSandboxes, gotContainers, wantSandboxes, wantContainers)
				}
			}
		}
	})
}

// checkPodIndex fails unless r.byPod holds exactly the records of
// r.sandboxes and r.containers, each under its pod UID label.
func checkPodIndex(t interface{ Fatalf(string, ...any) }, r *Runtime) {
	want := map[string]bool{}
	for _, s := range r.sandboxes {
		want[fmt.Sprintf("%s/%p", s.labels.podUID, s)] = true
	}
	for _, c := range r.containers {
		want[fmt.Sprintf("%s/%p", c.labels.podUID, c)] = true
	}
	got := map[string]bool{}
	for pod, objs := range r.byPod {
		if objs == (podEntry{}) {
			t.Fatalf("pod %q: an empty index entry", pod)
		}
		if objs.more != nil && len(*objs.more) == 0 {
			t.Fatalf("pod %q: an empty slice of further records", pod)
		}
		for o := range objs.all() {
			// The entry's own places are taken while there is a record
			// for them.
			if (o.s != nil && objs.s == nil) || (o.c != nil && objs.c == nil) {
				t.Fatalf("pod %q: %+v is among the further records while the entry's place for it is empty", pod, o)
			}
		}
		for o := range objs.all() {
			var key string
			switch {
			case o.s != nil && o.c == nil:
				key = fmt.Sprintf("%s/%p", pod, o.s)
			case o.c != nil && o.s == nil:
				key = fmt.Sprintf("%s/%p", pod, o.c)
			default:
				t.Fatalf("pod %q: index element %+v is not one sandbox or one container", pod, o)
			}
			if got[key] {
				t.Fatalf("%s indexed twice", key)
			}
			got[key] = true
		}
	}
	for k := range want {
		if !got[k] {
			t.Fatalf("%s not indexed", k)
		}
	}
	for k := range got {
		if !want[k] {
			t.Fatalf("%s indexed but not a record", k)
		}
	}
}

// recordsOf walks every record for pod's sandboxes and containers, newest
// first.
func recordsOf(r *Runtime, pod string) (sandboxes, containers []string) {
	var sbs []*sandbox
	for _, s := range r.sandboxes {
		if s.labels.podUID == pod {
			sbs = append(sbs, s)
		}
	}
	slices.SortFunc(sbs, func(a, b *sandbox) int { return int(b.seq) - int(a.seq) })
	for _, s := range sbs {
		sandboxes = append(sandboxes, r.ids.id(s.seq))
	}
	var cs []*container
	for _, c := range r.containers {
		if c.labels.podUID == pod {
			cs = append(cs, c)
		}
	}
	slices.SortFunc(cs, func(a, b *container) int { return int(b.seq) - int(a.seq) })
	for _, c := range cs {
		containers = append(containers, r.ids.id(c.seq))
	}
	return sandboxes, containers
}
