package gc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// With SetUnknownKill, a container in the unknown state is killed by the
// function set (handed the container as listed, its labels and
// annotations with it), not stopped by the collector, then removed; a
// kill that fails keeps it, the failure reported, as upstream's
// removeOldestN skips the removal when killContainer fails.
func TestCollectKillsUnknownContainerWithSetKill(t *testing.T) {
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprintf("fail=%v", fail), func(t *testing.T) {
			n := newSimNode(t)
			ctx := t.Context()
			n.pull("app", mi)
			lost := n.run("app", "app", 0, false)
			n.clock.Step(time.Second)
			n.run("app", "app", 1, true)
			rt := &unknownStates{Runtime: n.rt, unknown: map[string]bool{lost: true}}
			c := NewCollector(rt, DefaultPolicy, nil, nil)
			c.SetContainerGC(DefaultContainerPolicy, states(map[string]PodGCState{"u1": PodActive}), "")
			c.SetUnknownKill(func(ctx context.Context, ctr *runtimeapi.Container) error {
				rt.calls = append(rt.calls, fmt.Sprintf("kill %s %s %v", ctr.Id, ctr.Labels["io.kubernetes.container.name"], ctr.State))
				if fail {
					return errors.New("kill refused")
				}
				return n.rt.StopContainer(ctx, ctr.Id, 0)
			})
			removed, err := c.CollectContainers(ctx, false, n.clock.Now())
			want := []string{fmt.Sprintf("kill %s app CONTAINER_UNKNOWN", lost), "remove " + lost}
			if fail {
				want = want[:1]
				if err == nil || removed != 0 {
					t.Errorf("CollectContainers = %d, %v; want 0 removed and the kill's error", removed, err)
				}
			} else if err != nil || removed != 1 {
				t.Errorf("CollectContainers = %d, %v; want 1 removed", removed, err)
			}
			if !slices.Equal(rt.calls, want) {
				t.Errorf("calls %v, want %v", rt.calls, want)
			}
		})
	}
}
