package kubelet

import (
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"github.com/kubeproof/kubeproof/impl/kubelet/eviction"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// withEmptyDir gives the pod an emptyDir "cache" of the given sizeLimit
// holding usage bytes (the simulated node's annotation).
func withEmptyDir(limit, usage string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: "cache", VolumeSource: v1.VolumeSource{
			EmptyDir: &v1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse(limit))}}})
		p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, v1.VolumeMount{Name: "cache", MountPath: "/cache"})
		p.Annotations[eviction.AnnotationEmptyDirUsage+".cache"] = usage
	}
}

// A pod whose emptyDir holds more than its sizeLimit is evicted at the
// next eviction interval, without any node pressure: Failed, reason
// Evicted, upstream's message, an Evicted event, its containers stopped
// and no DisruptionTarget (upstream adds that for node-pressure evictions
// only). A pod within its limit, and one whose container stays within
// its ephemeral-storage limit, keep running; one over it is evicted in
// the same interval.
func TestLocalStorageLimitEviction(t *testing.T) {
	rec := record.NewFakeRecorder(1000)
	h := newHarness(t, func(c *Config) { c.Recorder = rec })
	if err := h.k.registerNode(h.ctx); err != nil {
		t.Fatal(err)
	}
	over := h.sync(h.create(h.pod("over", withEmptyDir("100Mi", "150Mi"))))
	under := h.sync(h.create(h.pod("under", withEmptyDir("100Mi", "100Mi"))))
	writer := h.sync(h.create(h.pod("writer", func(p *v1.Pod) {
		p.Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("1Gi")}
		p.Annotations[eviction.AnnotationEphemeralStorageUsage] = "2Gi"
	})))
	tidy := h.sync(h.create(h.pod("tidy", func(p *v1.Pod) {
		p.Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("1Gi")}
		p.Annotations[eviction.AnnotationEphemeralStorageUsage] = "512Mi"
	})))
	for _, p := range []*v1.Pod{over, under, writer, tidy} {
		if p.Status.Phase != v1.PodRunning {
			t.Fatalf("%s: %s", p.Name, p.Status.Phase)
		}
	}
	drain(rec)

	h.k.evictionTick(h.ctx)
	if p := h.k.Pressure(); p != (Pressure{}) {
		t.Fatalf("node pressure %+v", p)
	}
	for _, p := range []*v1.Pod{under, tidy} {
		if r := h.k.pods[p.UID]; r.eviction != nil {
			t.Fatalf("%s chosen for eviction: %+v", p.Name, r.eviction)
		}
	}
	// Both are evicted this interval, one after the other as upstream's
	// (each once the previous one's kill ended); the pod workers carry
	// the evictions out.
	for range 2 {
		var next *v1.Pod
		for _, p := range []*v1.Pod{over, writer} {
			if h.k.pods[p.UID].eviction != nil {
				if next != nil {
					t.Fatalf("%s and %s requested together", next.Name, p.Name)
				}
				next = p
			}
		}
		if next == nil {
			t.Fatal("no pending eviction")
		}
		if ev := h.k.pods[next.UID].eviction; ev.GracePeriodSeconds != 1 {
			t.Fatalf("%s: eviction %+v", next.Name, ev)
		}
		if err := h.k.evictPod(h.ctx, next.UID); err != nil {
			t.Fatal(err)
		}
		h.k.evictionTick(h.ctx) // the kill ended: the next one's eviction
	}
	wantMsg := map[string]string{
		"over": `Usage of EmptyDir volume "cache" exceeds the limit "100Mi". `,
		// One container: its use is the pod's, over the pod's limit first.
		"writer": "Pod ephemeral local storage usage exceeds the total limit of containers 1Gi. ",
	}
	for _, p := range []*v1.Pod{over, writer} {
		got := h.sync(p)
		if got.Status.Phase != v1.PodFailed || got.Status.Reason != "Evicted" || got.Status.Message != wantMsg[p.Name] {
			t.Fatalf("%s: %s %q %q", p.Name, got.Status.Phase, got.Status.Reason, got.Status.Message)
		}
		if c := cond(got, v1.DisruptionTarget); c.Type != "" {
			t.Fatalf("%s: DisruptionTarget %+v", p.Name, c)
		}
		if s := cstatus(got, "app"); s.State.Terminated == nil {
			t.Fatalf("%s: app not terminated: %+v", p.Name, s.State)
		}
		if rs, err := h.k.podRuntimeState(h.ctx, p.UID); err != nil || !rs.Stopped() {
			t.Fatalf("%s still runs after eviction: %v", p.Name, err)
		}
	}
	events := drain(rec)
	slices.Sort(events)
	wantEvents(t, events,
		"Warning Evicted "+wantMsg["writer"],
		"Warning Evicted "+wantMsg["over"])
	// Later intervals leave the others alone and do not evict again.
	h.step(10 * time.Second)
	h.k.evictionTick(h.ctx)
	for _, p := range []*v1.Pod{over, under, writer, tidy} {
		if r := h.k.pods[p.UID]; r.eviction != nil {
			t.Fatalf("%s chosen again: %+v", p.Name, r.eviction)
		}
	}
	for _, p := range []*v1.Pod{under, tidy} {
		if got := h.sync(p); got.Status.Phase != v1.PodRunning {
			t.Fatalf("%s: %s", p.Name, got.Status.Phase)
		}
	}
}

// A simulated pod's init containers' writable layers and logs count
// towards its local ephemeral storage while they run, as upstream's pod
// stats hold the running containers of every kind: a running sidecar
// whose use (AnnotationEphemeralStorageUsage.<sidecar>) puts the pod over
// its containers' summed ephemeral-storage limit gets the pod evicted; a
// regular init container's use stops counting once it has completed.
func TestLocalStorageInitContainers(t *testing.T) {
	h := newHarness(t, nil)
	if err := h.k.registerNode(h.ctx); err != nil {
		t.Fatal(err)
	}
	limited := func(p *v1.Pod) {
		p.Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("1Gi")}
		p.Annotations[eviction.AnnotationEphemeralStorageUsage+".app"] = "100Mi"
	}
	withSidecar := h.sync(h.create(h.pod("sidecar-writer", func(p *v1.Pod) {
		limited(p)
		p.Spec.InitContainers = []v1.Container{sidecar("proxy")}
		p.Annotations[eviction.AnnotationEphemeralStorageUsage+".proxy"] = "2Gi"
	})))
	withInit := h.create(h.pod("init-writer", func(p *v1.Pod) {
		limited(p)
		p.Spec.InitContainers = []v1.Container{{Name: "setup", Image: "busybox:1"}}
		p.Annotations[sim.AnnotationExitAfter+".setup"] = "2s"
		p.Annotations[eviction.AnnotationEphemeralStorageUsage+".setup"] = "2Gi"
	}))
	if got := h.sync(withInit); cstatus(got, "setup").State.Running == nil {
		t.Fatalf("init container not running: %+v", cstatus(got, "setup").State)
	}
	// While the regular init container runs, its use counts too. Both
	// are evicted, one after the other (each once the previous one's kill
	// ended).
	h.k.evictionTick(h.ctx)
	evicted := map[types.UID]bool{}
	for range 2 {
		for _, p := range []*v1.Pod{withInit, withSidecar} {
			if ev := h.k.pods[p.UID].eviction; ev != nil && !evicted[p.UID] {
				if ev.Message != "Pod ephemeral local storage usage exceeds the total limit of containers 1Gi. " {
					t.Fatalf("%s: %q", p.Name, ev.Message)
				}
				evicted[p.UID] = true
				if got := h.sync(p); got.Status.Phase != v1.PodFailed {
					t.Fatalf("%s: %s", p.Name, got.Status.Phase)
				}
				break
			}
		}
		h.k.evictionTick(h.ctx)
	}
	if !evicted[withInit.UID] {
		t.Fatalf("%s with its init container running not evicted", withInit.Name)
	}
	if !evicted[withSidecar.UID] {
		t.Fatalf("%s with its sidecar running not evicted", withSidecar.Name)
	}

	// A second pod whose init container completes: not counted after.
	done := h.create(h.pod("init-done", func(p *v1.Pod) {
		limited(p)
		p.Spec.InitContainers = []v1.Container{{Name: "setup", Image: "busybox:1"}}
		p.Annotations[sim.AnnotationExitAfter+".setup"] = "2s"
		p.Annotations[eviction.AnnotationEphemeralStorageUsage+".setup"] = "2Gi"
	}))
	h.sync(done)
	h.step(2 * time.Second)
	if got := h.sync(done); got.Status.Phase != v1.PodRunning || cstatus(got, "setup").State.Terminated == nil {
		t.Fatalf("%s: %s, setup %+v", done.Name, got.Status.Phase, cstatus(got, "setup").State)
	}
	h.k.evictionTick(h.ctx)
	if ev := h.k.pods[done.UID].eviction; ev != nil {
		t.Fatalf("%s evicted for its completed init container: %q", done.Name, ev.Message)
	}
}
