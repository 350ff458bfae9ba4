package gc

import (
	"context"
	"slices"
	"testing"
	"time"
)

// TestPostGCHook: as upstream's post image GC hooks, the hook is told the
// images still present (in use ones too) and when the collection began,
// after a collection over the high threshold (also one that could not
// free enough) and after DeleteUnusedImages; not when below the
// threshold.
func TestPostGCHook(t *testing.T) {
	n := newSimNode(t)
	ctx := t.Context()
	n.pull("old", 30*mi)
	n.pull("used", 100*mi)
	n.run("app", "used", 0, false)
	id := func(image string) string {
		list, err := n.rt.ListImages(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, img := range list {
			if img.RepoTags[0] == "docker.io/library/"+image+":latest" {
				return img.Id
			}
		}
		t.Fatalf("no image %s", image)
		return ""
	}
	used := id("used")
	type call struct {
		remaining []string
		began     time.Time
	}
	var calls []call
	c := NewCollector(n.rt, DefaultPolicy, nil, nil)
	c.SetPostGCHook(func(_ context.Context, remaining []string, began time.Time) {
		calls = append(calls, call{remaining, began})
	})
	if err := c.Detect(ctx, n.clock.Now()); err != nil {
		t.Fatal(err)
	}
	n.clock.Step(time.Hour)

	if err := c.GarbageCollect(ctx, 1000*mi, 500*mi, n.clock.Now()); err != nil || len(calls) != 0 {
		t.Fatalf("below the high threshold: %v, %d hook calls", err, len(calls))
	}
	// 90% used: "old" goes, not enough (upstream's error), hook run.
	if err := c.GarbageCollect(ctx, 1000*mi, 100*mi, n.clock.Now()); err == nil {
		t.Fatal("GarbageCollect freed enough")
	}
	if len(calls) != 1 || !slices.Equal(calls[0].remaining, []string{used}) || !calls[0].began.Equal(n.clock.Now()) {
		t.Fatalf("hook calls %+v, want one with [%s] at %v", calls, used, n.clock.Now())
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
	want := []string{used, id("young")}
	slices.Sort(want)
	if len(calls) != 2 || !slices.Equal(calls[1].remaining, want) || !calls[1].began.Equal(n.clock.Now()) {
		t.Fatalf("hook calls %+v, want a second with %v", calls, want)
	}
	if got := n.images(); !slices.Equal(got, []string{"used", "young"}) {
		t.Errorf("images left %v", got)
	}
}
