package sim

import (
	"context"
	"math"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// stateVersion tells whether a container listing could differ from an
// earlier one, so that the kubelet's relist of a node where nothing
// happened (every node, every second) touches none of its containers.
// Guarded by Runtime.mu.
type stateVersion struct {
	// version changes with every call that may change a sandbox or a
	// container (creation, start, stop, exit, removal); never 0.
	version uint64
	// nextExit is the earliest scheduled exit (the exit-code and
	// exit-after faults, Unix nanoseconds) of a container that was
	// running when it was last computed; 0: none.
	nextExit int64
}

// changed records a change a listing may show.
func (v *stateVersion) changed() { v.version++ }

// exitAt records a running container's scheduled exit at Unix
// nanoseconds at.
func (v *stateVersion) exitAt(at int64) {
	if v.nextExit == 0 || at < v.nextExit {
		v.nextExit = at
	}
}

// ContainerStatesVersion implements runtime.ContainerStateLister. A
// container whose scheduled exit has come is exited here (as every other
// call that reads it would) and changes the version.
func (r *Runtime) ContainerStatesVersion(ctx context.Context) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.states.nextExit == 0 {
		return r.states.version
	}
	now := r.clock.Now()
	if now.UnixNano() < r.states.nextExit {
		return r.states.version
	}
	// Some container's exit is due: it may already have been applied by
	// another call (refresh changes no version), so the version changes
	// whatever this pass finds.
	r.states.changed()
	next := int64(math.MaxInt64)
	for _, c := range r.containers {
		c.refresh(now)
		if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING && c.faults.exits {
			next = min(next, c.startedAt+int64(c.faults.exitAfter))
		}
	}
	r.states.nextExit = 0
	if next != math.MaxInt64 {
		r.states.nextExit = next
	}
	return r.states.version
}
