package gc

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// hookCall is one call of a post GC hook.
type hookCall struct {
	remaining []string
	began     time.Time
}

// imageID is the id of the image the simulated node pulled as image.
func (n *simNode) imageID(image string) string {
	n.t.Helper()
	list, err := n.rt.ListImages(n.t.Context(), nil)
	if err != nil {
		n.t.Fatal(err)
	}
	for _, img := range list {
		if img.RepoTags[0] == "docker.io/library/"+image+":latest" {
			return img.Id
		}
	}
	n.t.Fatalf("no image %s", image)
	return ""
}

// TestPostGCHook: as upstream 1.37's post image GC hooks (GarbageCollect
// and DeleteUnusedImages call runPostGCHooks with what freeSpace
// returns), the hook is told, with when the collection began, only the
// removal candidates freeSpace went over and left (too young here), not
// the images in use: after a collection over the high threshold (also one
// that could not free enough) and after DeleteUnusedImages; not when
// below the threshold.
func TestPostGCHook(t *testing.T) {
	n := newSimNode(t)
	ctx := t.Context()
	n.pull("old", 30*mi)
	n.pull("used", 100*mi)
	n.run("app", "used", 0, false)
	var calls []hookCall
	c := NewCollector(n.rt, DefaultPolicy, nil, nil)
	c.SetPostGCHook(func(_ context.Context, remaining []string, began time.Time) {
		calls = append(calls, hookCall{remaining, began})
	})
	if err := c.Detect(ctx, n.clock.Now()); err != nil {
		t.Fatal(err)
	}
	n.clock.Step(time.Hour)

	if err := c.GarbageCollect(ctx, 1000*mi, 500*mi, n.clock.Now()); err != nil || len(calls) != 0 {
		t.Fatalf("below the high threshold: %v, %d hook calls", err, len(calls))
	}
	// 90% used: "old" goes, not enough (upstream's error), hook run with
	// nothing: "used" is in use, no candidate of the collection.
	if err := c.GarbageCollect(ctx, 1000*mi, 100*mi, n.clock.Now()); err == nil {
		t.Fatal("GarbageCollect freed enough")
	}
	if len(calls) != 1 || len(calls[0].remaining) != 0 || !calls[0].began.Equal(n.clock.Now()) {
		t.Fatalf("hook calls %+v, want one with no image at %v", calls, n.clock.Now())
	}

	// "young" is younger than the minimum age: it stays, and is told.
	n.pull("unused", 10*mi)
	if err := c.Detect(ctx, n.clock.Now()); err != nil {
		t.Fatal(err)
	}
	n.clock.Step(time.Hour)
	n.pull("young", 10*mi)
	if _, err := c.DeleteUnusedImages(ctx, n.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if want := []string{n.imageID("young")}; len(calls) != 2 || !slices.Equal(calls[1].remaining, want) || !calls[1].began.Equal(n.clock.Now()) {
		t.Fatalf("hook calls %+v, want a second with %v", calls, want)
	}
	if got := n.images(); !slices.Equal(got, []string{"used", "young"}) {
		t.Errorf("images left %v", got)
	}
}

// TestPostGCHookStopsWhereFreeSpaceStops: as upstream's freeSpace, the
// candidates it left before freeing enough are told; those after the
// image that freed enough are not (still present, their pull records go
// too), nor the images in use.
func TestPostGCHookStopsWhereFreeSpaceStops(t *testing.T) {
	n := newSimNode(t)
	ctx := t.Context()
	n.pull("first", 60*mi)
	n.pull("later", 30*mi)
	n.pull("last", 30*mi)
	n.pull("used", 100*mi)
	later := n.run("later", "later", 0, true)
	last := n.run("last", "last", 0, true)
	n.run("app", "used", 0, false)
	var calls []hookCall
	c := NewCollector(n.rt, DefaultPolicy, nil, nil)
	c.SetPostGCHook(func(_ context.Context, remaining []string, began time.Time) {
		calls = append(calls, hookCall{remaining, began})
	})
	// All four there from the start; "later" last used before "last".
	if err := c.Detect(ctx, n.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if err := n.rt.RemoveContainer(ctx, later); err != nil {
		t.Fatal(err)
	}
	n.clock.Step(time.Minute)
	if err := c.Detect(ctx, n.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if err := n.rt.RemoveContainer(ctx, last); err != nil {
		t.Fatal(err)
	}
	n.clock.Step(time.Hour)
	n.pull("young", 10*mi)
	if err := c.Detect(ctx, n.clock.Now()); err != nil {
		t.Fatal(err)
	}
	n.clock.Step(time.Minute)
	// 87% used: 70 Mi to free. In eviction order "first" goes (60 Mi),
	// "young" is left, "later" goes (90 Mi freed): enough, "last" is not
	// looked at.
	if err := c.GarbageCollect(ctx, 1000*mi, 130*mi, n.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if got := n.images(); !slices.Equal(got, []string{"last", "used", "young"}) {
		t.Fatalf("images left %v", got)
	}
	if want := []string{n.imageID("young")}; len(calls) != 1 || !slices.Equal(calls[0].remaining, want) || !calls[0].began.Equal(n.clock.Now()) {
		t.Fatalf("hook calls %+v, want one with %v at %v", calls, want, n.clock.Now())
	}
}

// failOnce fails the first RemoveImage.
type failOnce struct {
	Runtime
	failed bool
}

func (f *failOnce) RemoveImage(ctx context.Context, image *runtimeapi.ImageSpec) error {
	if !f.failed {
		f.failed = true
		return errors.New("device busy")
	}
	return f.Runtime.RemoveImage(ctx, image)
}

// TestMaxAgeFailureEndsTheCollection: as upstream's GarbageCollect, whose
// freeOldImages error returns before the disk usage is read, an image
// unused beyond the maximum age that cannot be removed ends the periodic
// collection: no collection over the high threshold, no post GC hook.
func TestMaxAgeFailureEndsTheCollection(t *testing.T) {
	n := newSimNode(t)
	n.pull("old", 30*mi)
	rt := &failOnce{Runtime: n.rt}
	p := DefaultPolicy
	p.MaxAge = 10 * time.Minute
	var events []recorded
	c := NewCollector(rt, p, recorder(&events), nil)
	hooks := 0
	c.SetPostGCHook(func(context.Context, []string, time.Time) { hooks++ })
	if err := c.Detect(t.Context(), n.clock.Now()); err != nil {
		t.Fatal(err)
	}
	n.clock.Step(time.Hour)
	stats := 0
	fs := func(context.Context) (int64, int64, error) { stats++; return 1000 * mi, 10 * mi, nil } // 99% used
	c.MaybeCollect(t.Context(), fs, n.clock.Now())
	if stats != 0 || hooks != 0 {
		t.Fatalf("after a failed removal of an aged-out image: disk usage read %d times, hook run %d times; want neither", stats, hooks)
	}
	if got := n.images(); !slices.Equal(got, []string{"old"}) {
		t.Errorf("images %v", got)
	}
}
