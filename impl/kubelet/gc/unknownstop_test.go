package gc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

// failingStop is unknownStates whose stops fail.
type failingStop struct{ *unknownStates }

func (f failingStop) StopContainer(ctx context.Context, id string, timeout int64) error {
	f.calls = append(f.calls, fmt.Sprintf("stop %s %d", id, timeout))
	return errors.New("stop refused")
}

// A container in the unknown state whose stop fails is not removed (it
// may still run), the failure is reported and the collection goes on, as
// upstream's removeOldestN logs the failed kill and skips the removal.
func TestCollectKeepsUnknownContainerWhenStopFails(t *testing.T) {
	n := newSimNode(t)
	ctx := t.Context()
	n.pull("app", mi)
	lost := n.run("app", "app", 0, false)
	n.clock.Step(time.Second)
	n.run("app", "app", 1, true)
	u := &unknownStates{Runtime: n.rt, unknown: map[string]bool{lost: true}}
	rt := failingStop{u}
	c := NewCollector(rt, DefaultPolicy, nil, nil)
	c.SetContainerGC(DefaultContainerPolicy, states(map[string]PodGCState{"u1": PodActive}), "")
	removed, err := c.CollectContainers(ctx, false, n.clock.Now())
	if err == nil || removed != 0 {
		t.Fatalf("CollectContainers = %d, %v; want 0 removed and the stop's error", removed, err)
	}
	if want := []string{fmt.Sprintf("stop %s %d", lost, UnknownStopTimeout)}; !slices.Equal(u.calls, want) {
		t.Errorf("calls %v, want %v", u.calls, want)
	}
	if list, _ := n.rt.ListContainers(ctx, nil); len(list) != 2 {
		t.Errorf("containers left %v, want both", list)
	}
}

// A container in the unknown state is stopped with its pod's grace
// period from its annotations (the deletion grace period, else the
// termination grace period), at least upstream's minimum of 2 s, as
// upstream's killContainer of a container it has no pod for restores the
// pod's grace periods from the container's annotations
// (restoreSpecsFromContainerLabels, setTerminationGracePeriod).
func TestCollectStopsUnknownContainerWithPodGrace(t *testing.T) {
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		want        int64
	}{
		{name: "termination grace", annotations: map[string]string{runtime.AnnotationPodTerminationGracePeriod: "30"}, want: 30},
		{name: "deletion grace first", annotations: map[string]string{runtime.AnnotationPodDeletionGracePeriod: "5", runtime.AnnotationPodTerminationGracePeriod: "30"}, want: 5},
		{name: "below the minimum", annotations: map[string]string{runtime.AnnotationPodDeletionGracePeriod: "0", runtime.AnnotationPodTerminationGracePeriod: "30"}, want: 2},
		{name: "unparsable deletion grace", annotations: map[string]string{runtime.AnnotationPodDeletionGracePeriod: "soon", runtime.AnnotationPodTerminationGracePeriod: "7"}, want: 7},
		{name: "none", want: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newSimNode(t)
			ctx := t.Context()
			n.pull("app", mi)
			lost, err := n.rt.CreateContainer(ctx, n.sb, &runtimeapi.ContainerConfig{
				Metadata: &runtimeapi.ContainerMetadata{Name: "app"}, Image: &runtimeapi.ImageSpec{Image: "app"},
				Labels: map[string]string{runtime.LabelPodUID: "u1", runtime.LabelContainerName: "app"}, Annotations: tc.annotations,
			}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := n.rt.StartContainer(ctx, lost); err != nil {
				t.Fatal(err)
			}
			n.clock.Step(time.Second)
			n.run("app", "app", 1, true)
			rt := &unknownStates{Runtime: n.rt, unknown: map[string]bool{lost: true}}
			c := NewCollector(rt, DefaultPolicy, nil, nil)
			c.SetContainerGC(DefaultContainerPolicy, states(map[string]PodGCState{"u1": PodActive}), "")
			if removed, err := c.CollectContainers(ctx, false, n.clock.Now()); err != nil || removed != 1 {
				t.Fatalf("CollectContainers = %d, %v; want 1 removed", removed, err)
			}
			if want := []string{fmt.Sprintf("stop %s %d", lost, tc.want), "remove " + lost}; !slices.Equal(rt.calls, want) {
				t.Errorf("calls %v, want %v", rt.calls, want)
			}
		})
	}
}
