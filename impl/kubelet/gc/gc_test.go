package gc

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

const mi = 1 << 20

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestAmountToFree(t *testing.T) {
	p := DefaultPolicy
	for _, tc := range []struct {
		name                string
		capacity, available int64
		want                int64
		usage               int
	}{
		{"below high", 1000, 200, 0, 80},
		{"at high", 1000, 150, 50, 85},
		{"far over", 1000, 50, 150, 95},
		{"available above capacity", 1000, 2000, 0, 0},
		{"no capacity", 0, 0, 0, 0},
	} {
		got, usage := AmountToFree(p, tc.capacity, tc.available)
		if got != tc.want || usage != tc.usage {
			t.Errorf("%s: AmountToFree = %d (usage %d%%), want %d (%d%%)", tc.name, got, usage, tc.want, tc.usage)
		}
	}
}

func TestPolicyValidate(t *testing.T) {
	for _, tc := range []struct {
		p    Policy
		want string
	}{
		{DefaultPolicy, ""},
		{Policy{}, ""},
		{Policy{HighThresholdPercent: 100, LowThresholdPercent: 80}, ""},
		{Policy{HighThresholdPercent: 80, LowThresholdPercent: 80}, "must be less than"},
		{Policy{HighThresholdPercent: 101, LowThresholdPercent: 80}, "between 0 and 100"},
		{Policy{HighThresholdPercent: 85, LowThresholdPercent: -1}, "between 0 and 100"},
		{Policy{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: -time.Second}, "negative"},
		{Policy{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: 2 * time.Minute, MaxAge: time.Hour}, ""},
		{Policy{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: 2 * time.Minute, MaxAge: -time.Hour}, "negative"},
		{Policy{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: 2 * time.Minute, MaxAge: 2 * time.Minute}, "must be greater than imageMinimumGCAge"},
	} {
		err := tc.p.Validate()
		if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: Validate() = %v, want %q", tc.p, err, tc.want)
		}
	}
	if (Policy{}).Enabled() || (Policy{HighThresholdPercent: 100}).Enabled() || !DefaultPolicy.Enabled() {
		t.Error("Enabled: the zero policy and a high threshold of 100 are off, the default is on")
	}
}

// Detection keeps first-detected times, stamps images in use (by id, tag
// or digest) with now, and forgets images that are gone.
func TestDetect(t *testing.T) {
	images := []*runtimeapi.Image{
		{Id: "sha256:a", RepoTags: []string{"nginx:1"}, Size: 10},
		{Id: "sha256:b", RepoDigests: []string{"busybox@sha256:d"}, Size: 20},
		{Id: "sha256:c", Size: 30, Pinned: true},
	}
	prev := map[string]ImageRecord{"sha256:a": {ID: "sha256:a", FirstDetected: t0}, "sha256:gone": {ID: "sha256:gone"}}
	now := t0.Add(time.Hour)
	got, used := Detect(prev, images, map[string]bool{"nginx:1": true, "busybox@sha256:d": true}, now, now)
	if len(got) != 3 || got["sha256:a"].FirstDetected != t0 || got["sha256:b"].FirstDetected != now ||
		got["sha256:a"].LastUsed != now || got["sha256:b"].LastUsed != now || !got["sha256:c"].LastUsed.IsZero() ||
		!got["sha256:c"].Pinned || got["sha256:b"].Size != 20 {
		t.Fatalf("records: %+v", got)
	}
	if !used["sha256:a"] || !used["sha256:b"] || used["sha256:c"] {
		t.Errorf("in use: %v", used)
	}
}

// Candidates: unused, unpinned images old enough, least recently used
// first, ties by first detection.
func TestCandidates(t *testing.T) {
	now := t0.Add(time.Hour)
	records := map[string]ImageRecord{
		"used":    {ID: "used", LastUsed: t0},
		"pinned":  {ID: "pinned", Pinned: true},
		"young":   {ID: "young", FirstDetected: now.Add(-time.Minute)},
		"old":     {ID: "old", FirstDetected: t0, LastUsed: t0.Add(10 * time.Minute)},
		"older":   {ID: "older", FirstDetected: t0, LastUsed: t0.Add(5 * time.Minute)},
		"never":   {ID: "never", FirstDetected: t0.Add(time.Minute)},
		"never-2": {ID: "never-2", FirstDetected: t0},
		"now":     {ID: "now", LastUsed: now},
	}
	var got []string
	for _, r := range Candidates(records, map[string]bool{"used": true}, now, 2*time.Minute) {
		got = append(got, r.ID)
	}
	if want := []string{"never-2", "never", "older", "old"}; !slices.Equal(got, want) {
		t.Errorf("Candidates = %v, want %v", got, want)
	}
}

// AgedOut: unused, unpinned images whose last use (or, never used, first
// detection; before the kubelet started: its start) is more than the
// maximum age ago; nothing until the kubelet has run that long.
func TestAgedOut(t *testing.T) {
	started := t0.Add(time.Hour)
	records := map[string]ImageRecord{
		"used":         {ID: "used", LastUsed: t0},
		"pinned":       {ID: "pinned", Pinned: true},
		"before-start": {ID: "before-start"}, // unused since started
		"stale":        {ID: "stale", FirstDetected: started, LastUsed: started.Add(10 * time.Minute)},
		"recent":       {ID: "recent", FirstDetected: started, LastUsed: started.Add(50 * time.Minute)},
		"never-old":    {ID: "never-old", FirstDetected: started.Add(5 * time.Minute)},
		"never-young":  {ID: "never-young", FirstDetected: started.Add(40 * time.Minute)},
	}
	inUse := map[string]bool{"used": true}
	ids := func(rs []ImageRecord) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.ID)
		}
		return out
	}
	if got := AgedOut(records, inUse, started.Add(30*time.Minute), started, 30*time.Minute); got != nil {
		t.Errorf("after running exactly the maximum age: %v, want none", ids(got))
	}
	now := started.Add(time.Hour)
	if got, want := ids(AgedOut(records, inUse, now, started, 30*time.Minute)), []string{"before-start", "never-old", "stale"}; !slices.Equal(got, want) {
		t.Errorf("AgedOut = %v, want %v", got, want)
	}
	if got := AgedOut(records, inUse, now, started, 0); got != nil {
		t.Errorf("without a maximum age: %v, want none", ids(got))
	}
}

func ctr(id, uid, name string, attempt uint32, state runtimeapi.ContainerState) *runtimeapi.Container {
	labels := map[string]string{runtime.LabelContainerName: name}
	if uid != "" {
		labels[runtime.LabelPodUID] = uid
	}
	return &runtimeapi.Container{Id: id, State: state, Labels: labels, Metadata: &runtimeapi.ContainerMetadata{Name: name, Attempt: attempt}}
}

// simNode is a simulated runtime with images and containers made through
// its API on a fake clock.
type simNode struct {
	t     *testing.T
	clock *clocktesting.FakeClock
	rt    *sim.Runtime
	sb    string
}

func newSimNode(t *testing.T) *simNode {
	clock := clocktesting.NewFakeClock(t0)
	rt, err := sim.New(sim.Config{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	sb, err := rt.RunPodSandbox(t.Context(), &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "default", Uid: "u1"}}, "")
	if err != nil {
		t.Fatal(err)
	}
	return &simNode{t: t, clock: clock, rt: rt, sb: sb}
}

func (n *simNode) pull(image string, size uint64) {
	n.rt.SetImageSize(image, size)
	if _, err := n.rt.PullImage(n.t.Context(), &runtimeapi.ImageSpec{Image: image}); err != nil {
		n.t.Fatal(err)
	}
}

// run creates and starts a container of image; exited stops it.
func (n *simNode) run(name, image string, attempt uint32, exited bool) string {
	ctx := n.t.Context()
	id, err := n.rt.CreateContainer(ctx, n.sb, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: name, Attempt: attempt}, Image: &runtimeapi.ImageSpec{Image: image},
		Labels: map[string]string{runtime.LabelPodUID: "u1", runtime.LabelContainerName: name},
	}, nil)
	if err != nil {
		n.t.Fatal(err)
	}
	if err := n.rt.StartContainer(ctx, id); err != nil {
		n.t.Fatal(err)
	}
	if exited {
		if err := n.rt.StopContainer(ctx, id, 0); err != nil {
			n.t.Fatal(err)
		}
	}
	return id
}

// images are the present images' repo tags, as the tests pulled them
// (the runtime reports them normalized, as containerd's: "used" is
// docker.io/library/used:latest).
func (n *simNode) images() []string {
	list, err := n.rt.ListImages(n.t.Context(), nil)
	if err != nil {
		n.t.Fatal(err)
	}
	var out []string
	for _, img := range list {
		out = append(out, strings.TrimSuffix(strings.TrimPrefix(img.RepoTags[0], "docker.io/library/"), ":latest"))
	}
	return out
}

type recorded struct{ kind, reason, message string }

func recorder(events *[]recorded) EventFunc {
	return func(kind, reason, message string) { *events = append(*events, recorded{kind, reason, message}) }
}

// Over the high threshold, unused images go least recently used first
// until usage would be below the low threshold; an image a container
// uses (even an exited one) and an image younger than the minimum age
// stay.
func TestGarbageCollectFreesToLowThreshold(t *testing.T) {
	n := newSimNode(t)
	ctx := t.Context()
	n.pull("old", 30*mi)
	n.pull("older", 30*mi)
	n.pull("used", 100*mi)
	n.run("app", "used", 0, true)
	var events []recorded
	c := NewCollector(n.rt, DefaultPolicy, recorder(&events), nil)
	if err := c.Detect(ctx, n.clock.Now()); err != nil { // all three known from the start
		t.Fatal(err)
	}
	n.clock.Step(time.Minute)
	n.pull("young", 30*mi)
	n.clock.Step(time.Minute)
	// 1000 Mi capacity, 100 Mi available: 90% used; the low threshold
	// (80%) needs 100 Mi freed: the two old unused images (60 Mi) are all
	// there is, so the collection fails with upstream's message.
	err := c.GarbageCollect(ctx, 1000*mi, 100*mi, n.clock.Now())
	if want := "Insufficient free disk space on the node's image filesystem (90% of 1000.0 MiB used). Failed to free sufficient space by deleting unused images (freed 62914560 bytes). Investigate disk usage, as it could be used by active images, logs, volumes, or other data."; err == nil || err.Error() != want {
		t.Fatalf("GarbageCollect: %v", err)
	}
	if got := n.images(); !slices.Equal(got, []string{"used", "young"}) {
		t.Errorf("images left %v, want the used and the young one", got)
	}
	if len(events) != 1 || events[0].reason != ReasonFreeDiskSpaceFailed || events[0].kind != "Warning" || events[0].message != err.Error() {
		t.Errorf("events %+v", events)
	}

	// Enough to free: only as much as needed, least recently used first.
	n.pull("a", 30*mi)
	n.pull("b", 30*mi)
	idB := n.run("b", "b", 0, true)
	n.clock.Step(time.Minute)
	if err := c.Detect(ctx, n.clock.Now()); err != nil { // "b" was last used now, "a" never
		t.Fatal(err)
	}
	if err := n.rt.RemoveContainer(ctx, idB); err != nil {
		t.Fatal(err)
	}
	n.clock.Step(3 * time.Minute)
	events = nil
	// 86% used: 60 Mi to free, "young" and "a" (never used) before "b".
	if err := c.GarbageCollect(ctx, 1000*mi, 140*mi, n.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if got := n.images(); !slices.Equal(got, []string{"b", "used"}) {
		t.Errorf("images left %v", got)
	}
	if len(events) != 0 {
		t.Errorf("events %+v", events)
	}
}

// Below the high threshold nothing is removed.
func TestGarbageCollectBelowHighThreshold(t *testing.T) {
	n := newSimNode(t)
	n.pull("a", 30*mi)
	c := NewCollector(n.rt, DefaultPolicy, nil, nil)
	if err := c.GarbageCollect(t.Context(), 1000*mi, 160*mi, n.clock.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got := n.images(); len(got) != 1 {
		t.Errorf("images %v", got)
	}
}

// flaky fails ListImages while fail is set.
type flaky struct {
	Runtime
	fail  bool
	lists int // ListImages calls
}

func (f *flaky) ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	f.lists++
	if f.fail {
		return nil, errors.New("runtime unavailable")
	}
	return f.Runtime.ListImages(ctx, filter)
}

// The periodic collection runs once per Period and only when enabled; a
// second failure in a row is an ImageGCFailed event. As upstream's, a
// collection whose image listing fails ends there, before the disk usage
// is read.
func TestMaybeCollect(t *testing.T) {
	n := newSimNode(t)
	n.pull("a", 30*mi)
	rt := &flaky{Runtime: n.rt, fail: true}
	var events []recorded
	calls := 0
	fs := func(context.Context) (int64, int64, error) { calls++; return 1000 * mi, 10 * mi, nil }
	NewCollector(rt, Policy{}, recorder(&events), nil).MaybeCollect(t.Context(), fs, n.clock.Now())
	NewCollector(rt, Policy{HighThresholdPercent: 100}, recorder(&events), nil).MaybeCollect(t.Context(), fs, n.clock.Now())
	if rt.lists != 0 {
		t.Fatalf("a disabled policy collected")
	}
	c := NewCollector(rt, DefaultPolicy, recorder(&events), nil)
	now := n.clock.Now()
	c.MaybeCollect(t.Context(), fs, now)
	c.MaybeCollect(t.Context(), fs, now.Add(Period-time.Second))
	if rt.lists != 1 || calls != 0 || len(events) != 0 {
		t.Fatalf("first period: %d collections, disk read %d times, events %+v", rt.lists, calls, events)
	}
	c.MaybeCollect(t.Context(), fs, now.Add(Period))
	if rt.lists != 2 || calls != 0 || len(events) != 1 || events[0].reason != ReasonImageGCFailed || !strings.Contains(events[0].message, "runtime unavailable") {
		t.Fatalf("second failure: %d collections, disk read %d times, events %+v", rt.lists, calls, events)
	}
	rt.fail = false
	c.MaybeCollect(t.Context(), fs, now.Add(2*Period))
	if got := n.images(); len(got) != 0 {
		t.Errorf("images after a successful collection: %v", got)
	}
}

// With a maximum age the periodic collection removes images unused for
// longer, with the disk below the high threshold, once the kubelet has run
// that long; an image a container uses stays.
func TestMaybeCollectRemovesImagesOlderThanMaxAge(t *testing.T) {
	n := newSimNode(t)
	n.pull("old", 30*mi)
	n.pull("used", 30*mi)
	n.run("app", "used", 0, true)
	calls := 0
	fs := func(context.Context) (int64, int64, error) { calls++; return 1000 * mi, 900 * mi, nil } // 10% used
	p := DefaultPolicy
	p.MaxAge = 10 * time.Minute
	c := NewCollector(n.rt, p, nil, nil)
	if err := c.Detect(t.Context(), n.clock.Now()); err != nil { // the kubelet's start
		t.Fatal(err)
	}
	n.clock.Step(5 * time.Minute)
	n.pull("new", 30*mi)
	c.MaybeCollect(t.Context(), fs, n.clock.Now())
	if got := n.images(); len(got) != 3 {
		t.Fatalf("images %v before the kubelet ran for the maximum age, want all three", got)
	}
	n.clock.Step(Period + time.Second) // 10 min 1 s after the start, 5 min 1 s after "new"
	c.MaybeCollect(t.Context(), fs, n.clock.Now())
	if got := n.images(); !slices.Equal(got, []string{"new", "used"}) {
		t.Fatalf("images %v, want the old one gone", got)
	}
	n.clock.Step(Period)
	c.MaybeCollect(t.Context(), fs, n.clock.Now())
	if got := n.images(); !slices.Equal(got, []string{"used"}) || calls != 3 {
		t.Fatalf("images %v after %d collections, want the new one gone too", got, calls)
	}
}

// DeleteUnusedImages removes every removable image; DeleteDeadContainers
// keeps the newest exited instance of each container.
func TestDeleteUnusedImagesAndDeadContainers(t *testing.T) {
	n := newSimNode(t)
	ctx := t.Context()
	n.pull("app", 50*mi)
	n.pull("unused", 20*mi)
	n.pull("unused2", 25*mi)
	first := n.run("app", "app", 0, true)
	second := n.run("app", "app", 1, true)
	third := n.run("app", "app", 2, false)
	c := NewCollector(n.rt, DefaultPolicy, nil, nil)
	freed, err := c.DeleteUnusedImages(ctx, n.clock.Now())
	if err != nil || freed != 45*mi {
		t.Fatalf("DeleteUnusedImages = %d, %v", freed, err)
	}
	if got := n.images(); !slices.Equal(got, []string{"app"}) {
		t.Errorf("images left %v", got)
	}
	removed, err := c.DeleteDeadContainers(ctx, n.clock.Now())
	if err != nil || removed != 1 {
		t.Fatalf("DeleteDeadContainers = %d, %v", removed, err)
	}
	list, _ := n.rt.ListContainers(ctx, nil)
	var ids []string
	for _, c := range list {
		ids = append(ids, c.Id)
	}
	if slices.Contains(ids, first) || !slices.Contains(ids, second) || !slices.Contains(ids, third) {
		t.Errorf("containers left %v (first %s second %s third %s)", ids, first, second, third)
	}
}

func TestNormalizeImage(t *testing.T) {
	for in, want := range map[string]string{
		"busybox":                        "docker.io/library/busybox:latest",
		"nginx:1.27":                     "docker.io/library/nginx:1.27",
		"kubeproof/app":                  "docker.io/kubeproof/app:latest",
		"registry.k8s.io/pause:3.6":      "registry.k8s.io/pause:3.6",
		"localhost/x":                    "localhost/x:latest",
		"host:5000/team/app":             "host:5000/team/app:latest",
		"busybox@sha256:abc":             "docker.io/library/busybox@sha256:abc",
		"sha256:0123":                    "sha256:0123",
		"kubeproof.local/busybox:1.35":   "kubeproof.local/busybox:1.35",
		"docker.io/library/redis:7-bull": "docker.io/library/redis:7-bull",
	} {
		if got := NormalizeImage(in); got != want {
			t.Errorf("NormalizeImage(%q) = %q, want %q", in, got, want)
		}
	}
}

// withSandboxImage names the sandbox image, as containerd's verbose
// Status does.
type withSandboxImage struct {
	Runtime
	image string
}

func (w withSandboxImage) SandboxImage(context.Context) (string, error) { return w.image, nil }

// The runtime's sandbox image is never removed though no container uses
// it (containerd before 1.7 does not pin it).
func TestSandboxImageIsKept(t *testing.T) {
	n := newSimNode(t)
	n.rt.SetImageSize("docker.io/library/pause:3.6", mi)
	if _, err := n.rt.PullImage(t.Context(), &runtimeapi.ImageSpec{Image: "docker.io/library/pause:3.6"}); err != nil {
		t.Fatal(err)
	}
	n.pull("unused", mi)
	c := NewCollector(withSandboxImage{n.rt, "pause:3.6"}, DefaultPolicy, nil, nil)
	if _, err := c.DeleteUnusedImages(t.Context(), n.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if got := n.images(); !slices.Equal(got, []string{"pause:3.6"}) {
		t.Errorf("images left %v, want the sandbox image", got)
	}
}

func TestFormatSize(t *testing.T) {
	for _, tt := range []struct {
		bytes int64
		want  string
	}{
		{0, "0 B"},
		{1023, "1023 B"},
		{1024, "1.0 KiB"},
		{1000 * mi, "1000.0 MiB"},
		{10 << 30, "10.0 GiB"},
		{26_400_000_000, "24.6 GiB"},
		{3 << 40, "3.0 TiB"},
	} {
		if got := formatSize(tt.bytes); got != tt.want {
			t.Errorf("formatSize(%d) = %q, want %q", tt.bytes, got, tt.want)
		}
	}
}
