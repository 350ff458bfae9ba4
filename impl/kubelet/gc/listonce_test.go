package gc

import (
	"context"
	"slices"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// listCounter counts ListImages calls.
type listCounter struct {
	Runtime
	lists int
}

func (l *listCounter) ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	l.lists++
	return l.Runtime.ListImages(ctx, filter)
}

// TestCollectionListsImagesOnce: as upstream's GarbageCollect
// (imagesInEvictionOrder, then freeOldImages and freeSpace on that one
// list), a periodic collection with a maximum age that also has to free
// space down to the low threshold lists the images once; so does one
// below the high threshold without a maximum age.
func TestCollectionListsImagesOnce(t *testing.T) {
	n := newSimNode(t)
	n.pull("old", 30*mi)
	p := DefaultPolicy
	p.MaxAge = 10 * time.Minute
	rt := &listCounter{Runtime: n.rt}
	c := NewCollector(rt, p, nil, nil)
	if err := c.Detect(t.Context(), n.clock.Now()); err != nil { // the kubelet's start
		t.Fatal(err)
	}
	n.clock.Step(5 * time.Minute)
	n.pull("young", 30*mi)
	n.pull("recent", 30*mi)
	if err := c.Detect(t.Context(), n.clock.Now()); err != nil {
		t.Fatal(err)
	}
	n.clock.Step(5*time.Minute + time.Second)
	rt.lists = 0
	// 94% used: "old" goes for its age, then 140 Mi are wanted, of which
	// "young" and "recent" give 60 Mi.
	fs := func(context.Context) (int64, int64, error) { return 1000 * mi, 60 * mi, nil }
	c.MaybeCollect(t.Context(), fs, n.clock.Now())
	if rt.lists != 1 {
		t.Errorf("a collection removing aged-out images and freeing space listed images %d times, want once", rt.lists)
	}
	if got := n.images(); len(got) != 0 {
		t.Errorf("images left %v, want none", got)
	}

	n = newSimNode(t)
	n.pull("a", 30*mi)
	rt = &listCounter{Runtime: n.rt}
	c = NewCollector(rt, DefaultPolicy, nil, nil)
	rt.lists = 0
	c.MaybeCollect(t.Context(), func(context.Context) (int64, int64, error) { return 1000 * mi, 900 * mi, nil }, n.clock.Now())
	if rt.lists != 1 {
		t.Errorf("a collection below the high threshold listed images %d times, want once", rt.lists)
	}
	if got := n.images(); !slices.Equal(got, []string{"a"}) {
		t.Errorf("images left %v, want a", got)
	}
}
