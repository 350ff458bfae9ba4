package kubelet

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/eviction"
	"github.com/kubeproof/kubeproof/impl/kubelet/gc"
)

// TestImageGCPrunesPullRecords: as upstream 1.37's post image GC hook
// (PullManager.PruneUnknownRecords, told the images freeSpace left), the
// pull records of the images the image garbage collector removed are
// forgotten (on disk too), and so are those of images in use, which are
// no candidates of the collection; the record of an unused image too
// young to be removed stays.
func TestImageGCPrunesPullRecords(t *testing.T) {
	h, _ := imageCredentialsHarness(t, t.TempDir(), func(c *Config) {
		// Upstream's default image GC policy: a minimum age of 2 min.
		cfg, err := eviction.ParseConfig(eviction.Flags{ImageGCHighThresholdPercent: gc.DefaultHighThresholdPercent,
			ImageGCLowThresholdPercent: gc.DefaultLowThresholdPercent, MinimumImageTTLDuration: gc.DefaultMinAge})
		if err != nil {
			t.Fatal(err)
		}
		c.Eviction = &cfg
	})
	const (
		inUse = "registry.example.com/team/app:1.0"
		gone  = "registry.example.com/team/gone:1.0"
		young = "registry.example.com/team/young:1.0"
	)
	ref := map[string]string{}
	run := func(i int, image string) {
		t.Helper()
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
	// removeContainers removes image's containers: the image is unused.
	removeContainers := func(image string) {
		t.Helper()
		list, err := h.rt.ListContainers(h.ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range list {
			if c.ImageRef == ref[image] || c.Image.GetImage() == image {
				if err := h.rt.StopContainer(h.ctx, c.Id, 0); err != nil {
					t.Fatal(err)
				}
				if err := h.rt.RemoveContainer(h.ctx, c.Id); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	run(0, inUse)
	run(1, gone)
	removeContainers(gone)
	c := h.k.nodeGC(h.ctx, h.clock.Now())
	if c == nil {
		t.Fatal("no image garbage collector")
	}
	h.clock.Step(time.Hour)
	run(2, young)
	removeContainers(young)
	h.clock.Step(time.Minute) // younger than the minimum age (2 min)
	if _, err := c.DeleteUnusedImages(h.ctx, h.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if r, _ := h.rt.ImageStatus(h.ctx, &runtimeapi.ImageSpec{Image: gone}); r != "" {
		t.Fatalf("%s was not removed", gone)
	}
	if h.k.pulls.Record(ref[gone]) != nil {
		t.Errorf("the removed image's pull record is left")
	}
	if h.k.pulls.Record(ref[inUse]) != nil {
		t.Errorf("the pull record of the image in use is left (upstream's hook is not told of images in use)")
	}
	if h.k.pulls.Record(ref[young]) == nil {
		t.Errorf("the pull record of the young unused image was pruned")
	}
}
