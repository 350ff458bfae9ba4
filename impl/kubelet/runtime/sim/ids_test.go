package sim

import (
	"context"
	"errors"
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

// An ID is 64 lower-case hex digits, read back to the number it was made
// from; no other string reads as an ID of the runtime, and IDs differ
// between the runtimes of one process and in their first digits.
func TestIDsRoundTrip(t *testing.T) {
	a, b := newIDKey(), newIDKey()
	prefixes := map[string]bool{}
	for seq := uint64(1); seq <= 2000; seq++ {
		id := a.id(seq)
		if len(id) != idLen || strings.Trim(id, "0123456789abcdef") != "" {
			t.Fatalf("id %q is not 64 lower-case hex digits", id)
		}
		if got, ok := a.seq(id); !ok || got != seq {
			t.Fatalf("id %q reads as %d %v, want %d", id, got, ok, seq)
		}
		if _, ok := b.seq(id); ok || b.id(seq) == id {
			t.Fatalf("id %q of one runtime is an id of another", id)
		}
		if prefixes[id[:12]] {
			t.Fatalf("ids share the prefix %s", id[:12])
		}
		prefixes[id[:12]] = true
		for _, bad := range []string{strings.ToUpper(id), id[:63], id + "0", flip(id, 0), flip(id, 40), flip(id, 63)} {
			if _, ok := a.seq(bad); ok {
				t.Fatalf("%q reads as an id", bad)
			}
		}
	}
}

// flip changes the hex digit at i.
func flip(id string, i int) string {
	d := byte('0')
	if id[i] == '0' {
		d = '1'
	}
	return id[:i] + string(d) + id[i+1:]
}

// The CRI calls find a sandbox and a container by the IDs they returned,
// and by no other.
func TestRecordsAreFoundByTheirIDs(t *testing.T) {
	ctx := context.Background()
	r, _ := newSim(t, "10.244.0.0/24")
	other, _ := newSim(t, "10.244.1.0/24")
	id, _ := startContainer(t, r, nil, "app")
	otherID, _ := startContainer(t, other, nil, "app")
	st := state(t, r, id)
	if st.Id != id {
		t.Fatalf("status of %s has id %s", id, st.Id)
	}
	list, err := r.ListContainers(ctx, &runtimeapi.ContainerFilter{Id: id})
	if err != nil || len(list) != 1 || list[0].Id != id {
		t.Fatalf("listing %s: %+v %v", id, list, err)
	}
	sandboxes, err := r.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{Id: list[0].PodSandboxId})
	if err != nil || len(sandboxes) != 1 || sandboxes[0].Id != list[0].PodSandboxId {
		t.Fatalf("listing sandbox %s: %+v %v", list[0].PodSandboxId, sandboxes, err)
	}
	for _, bad := range []string{otherID, strings.ToUpper(id), list[0].PodSandboxId} {
		if _, err := r.ContainerStatus(ctx, bad); !errors.Is(err, runtime.ErrNotFound) {
			t.Errorf("status of container %s: %v, want not found", bad, err)
		}
		if l, err := r.ListContainers(ctx, &runtimeapi.ContainerFilter{Id: bad}); err != nil || len(l) != 0 {
			t.Errorf("listing container %s: %+v %v", bad, l, err)
		}
	}
	if _, err := r.PodSandboxStatus(ctx, id); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("a container's id as a sandbox's: %v, want not found", err)
	}
}
