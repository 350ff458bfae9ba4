package gc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
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
