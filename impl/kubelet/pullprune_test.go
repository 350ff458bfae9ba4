package kubelet

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestImageGCPrunesPullRecords: as upstream's post image GC hook, the pull
// records of the images the image garbage collector removed are
// forgotten (on disk too); the record of an image still present (here in
// use) stays.
func TestImageGCPrunesPullRecords(t *testing.T) {
	h, _ := imageCredentialsHarness(t, t.TempDir())
	const (
		kept = "registry.example.com/team/app:1.0"
		gone = "registry.example.com/team/gone:1.0"
	)
	ref := map[string]string{}
	for i, image := range []string{kept, gone} {
		p := h.create(h.pod("p"+string(rune('0'+i)), func(p *v1.Pod) {
			p.Spec.Containers[0].Image = image
			p.Spec.ImagePullSecrets = []v1.LocalObjectReference{{Name: "a"}}
		}))
		if cs := cstatus(h.sync(p), "app"); cs.State.Running == nil {
			t.Fatalf("%s: %+v", image, cs.State)
		}
		r, err := h.rt.ImageStatus(h.ctx, &runtimeapi.ImageSpec{Image: image})
		if err != nil || r == "" || h.k.pulls.Record(r) == nil {
			t.Fatalf("%s: ref %q, %v, record %v", image, r, err, h.k.pulls.Record(r))
		}
		ref[image] = r
	}
	// The second image's container goes: the image is unused.
	list, err := h.rt.ListContainers(h.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range list {
		if c.ImageRef == ref[gone] || c.Image.GetImage() == gone {
			if err := h.rt.StopContainer(h.ctx, c.Id, 0); err != nil {
				t.Fatal(err)
			}
			if err := h.rt.RemoveContainer(h.ctx, c.Id); err != nil {
				t.Fatal(err)
			}
		}
	}
	c := h.k.nodeGC(h.ctx, h.clock.Now())
	if c == nil {
		t.Fatal("no image garbage collector")
	}
	h.clock.Step(time.Hour)
	if _, err := c.DeleteUnusedImages(h.ctx, h.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if r, _ := h.rt.ImageStatus(h.ctx, &runtimeapi.ImageSpec{Image: gone}); r != "" {
		t.Fatalf("%s was not removed", gone)
	}
	if h.k.pulls.Record(ref[gone]) != nil {
		t.Errorf("the removed image's pull record is left")
	}
	if h.k.pulls.Record(ref[kept]) == nil {
		t.Errorf("the present image's pull record was pruned")
	}
}
