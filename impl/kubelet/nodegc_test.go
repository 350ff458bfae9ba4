package kubelet

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/eviction"
	"github.com/kubeproof/kubeproof/impl/kubelet/gc"
	"github.com/kubeproof/kubeproof/impl/kubelet/podsync"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

const mib = 1 << 20

// simDiskProvider is a simulated node whose one filesystem holds the
// runtime's images and containers' writable layers (ImageFsInfo), so
// removing images or dead containers frees it; pods' disk use is their
// containers' writable layers.
type simDiskProvider struct {
	rt       *sim.Runtime
	capacity int64
}

func (p simDiskProvider) Observe(ctx context.Context, pods []*v1.Pod) (eviction.Observations, []eviction.PodStats, error) {
	fs, _, err := p.rt.ImageFsInfo(ctx)
	if err != nil {
		return nil, nil, err
	}
	o := eviction.Observation{Available: p.capacity - int64(fs[0].UsedBytes.Value), Capacity: p.capacity}
	cs, err := p.rt.ListContainerStats(ctx, nil)
	if err != nil {
		return nil, nil, err
	}
	disk := map[string]int64{}
	for _, s := range cs {
		disk[s.Attributes.Labels[runtime.LabelPodUID]] += int64(s.WritableLayer.UsedBytes.Value)
	}
	stats := make([]eviction.PodStats, 0, len(pods))
	for _, pod := range pods {
		stats = append(stats, eviction.PodStats{Pod: pod, Memory: map[string]int64{}, Disk: disk[string(pod.UID)]})
	}
	return eviction.Observations{eviction.SignalNodeFsAvailable: o, eviction.SignalImageFsAvailable: o}, stats, nil
}

func (h *harness) pullSized(image string, size uint64) {
	h.t.Helper()
	h.rt.SetImageSize(image, size)
	if _, err := h.rt.PullImage(h.ctx, &runtimeapi.ImageSpec{Image: image}); err != nil {
		h.t.Fatal(err)
	}
}

// imageNames are the present images' repo tags as the tests name them
// (the runtime reports them normalized, as containerd's: "big:1" is
// docker.io/library/big:1).
func (h *harness) imageNames() []string {
	h.t.Helper()
	list, err := h.rt.ListImages(h.ctx, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	var out []string
	for _, img := range list {
		out = append(out, strings.TrimPrefix(img.RepoTags[0], "docker.io/library/"))
	}
	return out
}

// diskHarness is a simulated 1 GiB node evicting below 200 MiB free.
func diskHarness(t *testing.T, mutate func(*Config)) *harness {
	ecfg, err := eviction.ParseConfig(eviction.Flags{Hard: "nodefs.available<200Mi", HardSet: true})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, nil)
	h.k = h.newKubelet(func(c *Config) {
		c.Eviction = &ecfg
		c.EvictionProvider = simDiskProvider{rt: h.rt, capacity: 1024 * mib}
		if mutate != nil {
			mutate(c)
		}
	})
	return h
}

// Under disk pressure an unused image is removed first; that frees
// enough, so no pod is evicted (DiskPressure is still reported for the
// interval, as upstream).
func TestDiskPressureReclaimsImagesBeforeEvicting(t *testing.T) {
	h := diskHarness(t, nil)
	h.pullSized("big:1", 900*mib)
	p := h.sync(h.create(h.pod("web", nil)))
	if p.Status.Phase != v1.PodRunning {
		t.Fatalf("web: %s", p.Status.Phase)
	}
	h.k.evictionTick(h.ctx)
	if got := h.imageNames(); !slices.Equal(got, []string{"nginx:1.27"}) {
		t.Errorf("images after reclaim: %v, want the used one only", got)
	}
	if rec := h.k.pods[p.UID]; rec.eviction != nil || rec.evicted {
		t.Error("a pod was evicted although removing the unused image freed enough")
	}
	if !h.k.Pressure().Disk {
		t.Error("DiskPressure not reported for the interval the threshold was met")
	}
}

// Dead containers go first too: of a crash-looping container only the
// newest exited instance stays. When reclaim cannot free enough, the pod
// using most disk is evicted.
func TestDiskPressureReclaimsDeadContainersThenEvicts(t *testing.T) {
	h := diskHarness(t, func(c *Config) { c.Backoff = podsync.BackoffConfig{Base: time.Second, Max: time.Second} })
	looper := h.create(h.pod("looper", func(p *v1.Pod) {
		p.Annotations[sim.AnnotationCrashAfter] = "1s"
		p.Annotations[sim.AnnotationDiskUsage] = "100Mi"
	}))
	for range 6 { // three instances: two exited, the third running
		h.sync(looper)
		h.step(time.Second)
	}
	h.sync(looper)
	list, _ := h.rt.ListContainers(h.ctx, &runtimeapi.ContainerFilter{LabelSelector: map[string]string{runtime.LabelPodUID: string(looper.UID)}})
	if len(list) < 3 {
		t.Fatalf("looper has %d container instances, want at least 3", len(list))
	}
	hog := h.sync(h.create(h.pod("hog", func(p *v1.Pod) { p.Annotations[sim.AnnotationDiskUsage] = "800Mi" })))
	if hog.Status.Phase != v1.PodRunning {
		t.Fatalf("hog: %s", hog.Status.Phase)
	}
	h.k.evictionTick(h.ctx)
	after, _ := h.rt.ListContainers(h.ctx, &runtimeapi.ContainerFilter{LabelSelector: map[string]string{runtime.LabelPodUID: string(looper.UID)}})
	exited := 0
	for _, c := range after {
		if c.State == runtimeapi.ContainerState_CONTAINER_EXITED {
			exited++
		}
	}
	if exited != 1 || len(after) > 2 {
		t.Errorf("looper after reclaim: %d instances, %d exited; want the newest exited one kept", len(after), exited)
	}
	if rec := h.k.pods[hog.UID]; rec.eviction == nil || !strings.Contains(rec.eviction.Message, "low on resource: ephemeral-storage") {
		t.Fatalf("hog not chosen for eviction: %+v", rec.eviction)
	}
	if got := cstatus(h.sync(looper), "app"); got.RestartCount < 2 {
		t.Errorf("looper's restart count after its old instances were removed: %d", got.RestartCount)
	}
}

// With --image-gc-high-threshold set, images are collected every
// gc.Period (the image collection loop's step, collectImages); failing to free enough is a FreeDiskSpaceFailed event on the
// node, and failing twice in a row an ImageGCFailed one.
func TestPeriodicImageGC(t *testing.T) {
	ecfg, err := eviction.ParseConfig(eviction.Flags{Hard: "", HardSet: true, ImageGCHighThresholdPercent: 85, ImageGCLowThresholdPercent: 80, MinimumImageTTLDuration: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	rec := record.NewFakeRecorder(100)
	h := newHarness(t, nil)
	h.k = h.newKubelet(func(c *Config) {
		c.Eviction, c.Recorder = &ecfg, rec
		c.EvictionProvider = simDiskProvider{rt: h.rt, capacity: 1024 * mib}
	})
	h.pullSized("old:1", 500*mib)
	h.sync(h.create(h.pod("web", func(p *v1.Pod) { p.Spec.Containers[0].Image = "big:1" })))
	h.rt.SetImageSize("big:1", 450*mib)
	drain(rec) // the pod's own events
	// 960 MiB of 1 GiB used (93%): the unused old image goes.
	h.k.collectImages(h.ctx, h.clock.Now())
	if got := h.imageNames(); !slices.Equal(got, []string{"big:1"}) {
		t.Fatalf("images after collection: %v", got)
	}
	if ev := drain(rec); len(ev) != 0 {
		t.Errorf("events %v", ev)
	}
	// The used image alone now fills 91%: nothing may go.
	h.rt.SetImageSize("big:1", 930*mib)
	h.step(gc.Period - time.Second)
	h.k.collectImages(h.ctx, h.clock.Now())
	if ev := drain(rec); len(ev) != 0 {
		t.Fatalf("collection ran before its period: %v", ev)
	}
	h.step(time.Second)
	h.k.collectImages(h.ctx, h.clock.Now())
	ev := drain(rec)
	if len(ev) != 1 || !strings.HasPrefix(ev[0], "Warning FreeDiskSpaceFailed Insufficient free disk space on the node's image filesystem (") ||
		!strings.Contains(ev[0], "Failed to free sufficient space by deleting unused images (freed 0 bytes).") {
		t.Fatalf("events %v", ev)
	}
	h.step(gc.Period)
	h.k.collectImages(h.ctx, h.clock.Now())
	ev = drain(rec)
	if len(ev) != 2 || !strings.HasPrefix(ev[1], "Warning ImageGCFailed Insufficient free disk space") {
		t.Fatalf("events after the second failure %v", ev)
	}
	if got := h.imageNames(); !slices.Equal(got, []string{"big:1"}) {
		t.Errorf("an image in use was removed: %v", got)
	}
}

// Over CRI, the eviction manager ranks pods by what ListContainerStats
// measures (here the writable layers) and reclaims unused images through
// ListImages/RemoveImage before it evicts.
func TestEvictionRanksByCRIStats(t *testing.T) {
	h, _ := newCRIHarness(t)
	ecfg, err := eviction.ParseConfig(eviction.Flags{Hard: "imagefs.available<1000Ti", HardSet: true}) // always met
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	h.k = h.newKubelet(func(c *Config) {
		c.Eviction = &ecfg
		c.PodLogsDir = filepath.Join(dir, "pods")
		c.RootDir = filepath.Join(dir, "root")
		// No Stats: the kubelet gives the host provider its runtime's.
		c.EvictionProvider = eviction.HostProvider{RootDir: c.RootDir}
		c.EphemeralStorage = resource.MustParse("10Gi")
	})
	h.pullSized("unused:1", 50*mib)
	// Listed first and equal by requests: without measurement, light
	// would be picked.
	light := h.sync(h.create(h.pod("light", func(p *v1.Pod) { p.Annotations[sim.AnnotationDiskUsage] = "1Mi" })))
	heavy := h.sync(h.create(h.pod("heavy", func(p *v1.Pod) { p.Annotations[sim.AnnotationDiskUsage] = "300Mi" })))
	if light.Status.Phase != v1.PodRunning || heavy.Status.Phase != v1.PodRunning {
		t.Fatalf("phases %s %s", light.Status.Phase, heavy.Status.Phase)
	}
	h.k.evictionTick(h.ctx)
	if slices.Contains(h.imageNames(), "unused:1") {
		t.Error("the unused image was not removed before evicting")
	}
	rec := h.k.pods[heavy.UID]
	if rec.eviction == nil {
		t.Fatalf("heavy not chosen; light chosen: %v", h.k.pods[light.UID].eviction != nil)
	}
	if hp := h.k.evictions.Provider().(eviction.HostProvider); hp.Stats == nil || hp.LogsDir != h.k.cfg.PodLogsDir {
		t.Errorf("host provider not given the runtime's stats and the logs directory: %+v", hp)
	}
	if err := h.k.evictPod(h.ctx, heavy.UID); err != nil {
		t.Fatal(err)
	}
	if got := h.sync(heavy); got.Status.Phase != v1.PodFailed || got.Status.Reason != eviction.ReasonEvicted ||
		!strings.HasPrefix(got.Status.Message, "The node was low on resource: ephemeral-storage. Threshold quantity: 1000Ti") {
		t.Fatalf("heavy: %s %q %q", got.Status.Phase, got.Status.Reason, got.Status.Message)
	}
}
