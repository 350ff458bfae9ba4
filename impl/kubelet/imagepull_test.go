package kubelet

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/kubeproof/kubeproof/impl/kubelet/podsync"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// flakyPulls is a runtime whose image pulls fail while failures lasts
// (each failed pull uses one up), then go through; it counts the pulls.
type flakyPulls struct {
	runtime.Runtime
	mu       sync.Mutex
	failures int
	pulls    int
	// errMsg, when set, is the failed pulls' error instead of "registry
	// unavailable (attempt n)".
	errMsg string
	// inspectErr, when set, fails ImageStatus of images not present.
	inspectErr error
}

func (f *flakyPulls) ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec) (string, error) {
	f.mu.Lock()
	inspectErr := f.inspectErr
	f.mu.Unlock()
	ref, err := f.Runtime.ImageStatus(ctx, image)
	if err == nil && ref == "" && inspectErr != nil {
		return "", inspectErr
	}
	return ref, err
}

func (f *flakyPulls) PullImageWithAuth(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig) (string, error) {
	f.mu.Lock()
	f.pulls++
	n, fail := f.pulls, f.failures > 0
	if fail {
		f.failures--
	}
	f.mu.Unlock()
	if fail {
		if f.errMsg != "" {
			return "", errors.New(f.errMsg)
		}
		return "", fmt.Errorf("pull image %s: registry unavailable (attempt %d)", image.GetImage(), n)
	}
	return f.Runtime.PullImageWithAuth(ctx, image, auth)
}

func (f *flakyPulls) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pulls
}

func (f *flakyPulls) failNext(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failures = n
}

// newFlakyPullHarness is a harness whose kubelet talks CRI (the fake CRI
// server over gRPC) to the simulation behind flakyPulls, records events,
// and backs image pulls off 2 s doubling to 5 s.
func newFlakyPullHarness(t *testing.T) (*harness, *flakyPulls, *record.FakeRecorder) {
	h := newHarness(t, nil)
	flaky := &flakyPulls{Runtime: h.rt}
	client, dir := dialFakeCRI(t, flaky)
	h.krt = client
	rec := record.NewFakeRecorder(1000)
	h.k = h.newKubelet(func(c *Config) {
		c.PodLogsDir = filepath.Join(dir, "pods")
		c.Recorder = rec
		c.ImagePullBackoff.Base, c.ImagePullBackoff.Max = 2*time.Second, 5*time.Second
	})
	return h, flaky, rec
}

// syncHint is sync returning also when the kubelet asks to sync the pod
// again of its own accord.
func (h *harness) syncHint(p *v1.Pod) (*v1.Pod, time.Duration) {
	h.t.Helper()
	h.k.HandlePod(h.get(p))
	hint, err := h.k.syncPod(h.ctx, p.UID)
	if err != nil {
		h.t.Fatalf("sync %s: %v", p.Name, err)
	}
	return h.get(p), hint
}

// TestImagePullBackOff: a failed pull leaves the container waiting with
// ErrImagePull; until the back-off (2 s, then 4 s, at most 5 s here) has
// passed the pod's syncs do not pull again but wait with ImagePullBackOff,
// upstream's message (with the last pull's error) and a BackOff event, and
// ask to be synced when it ends; the pull that succeeds starts the
// container.
func TestImagePullBackOff(t *testing.T) {
	h, flaky, rec := newFlakyPullHarness(t)
	const image = "registry.example/app:1"
	flaky.failNext(3)
	p := h.create(h.pod("flaky", func(p *v1.Pod) { p.Spec.Containers[0].Image = image }))

	waiting := func(got *v1.Pod) *v1.ContainerStateWaiting {
		t.Helper()
		cs := cstatus(got, "app")
		if cs.State.Waiting == nil || got.Status.Phase != v1.PodPending {
			t.Fatalf("container not waiting: phase %s, %+v", got.Status.Phase, cs.State)
		}
		return cs.State.Waiting
	}
	// pullFails syncs the pod after its back-off: a pull that fails,
	// ErrImagePull with the pull's error, back-off of backoff.
	pullFails := func(attempt int, backoff time.Duration) string {
		t.Helper()
		got, hint := h.syncHint(p)
		w := waiting(got)
		if w.Reason != "ErrImagePull" || !strings.Contains(w.Message, fmt.Sprintf("registry unavailable (attempt %d)", attempt)) {
			t.Fatalf("pull %d: waiting %+v", attempt, w)
		}
		if n := flaky.count(); n != attempt {
			t.Fatalf("%d pulls, want %d", n, attempt)
		}
		if hint != backoff {
			t.Fatalf("pull %d: sync again in %v, want at the end of the %v back-off", attempt, hint, backoff)
		}
		wantEvents(t, drain(rec),
			`Normal Pulling Pulling image "`+image+`"`,
			`Warning Failed Failed to pull image "`+image+`": `+w.Message,
			"Warning Failed Error: ErrImagePull")
		return w.Message
	}
	// backsOff syncs the pod within the back-off: no pull, ImagePullBackOff.
	backsOff := func(lastErr string, left time.Duration) {
		t.Helper()
		before := flaky.count()
		got, hint := h.syncHint(p)
		w := waiting(got)
		if want := `Back-off pulling image "` + image + `": ErrImagePull: ` + lastErr; w.Reason != "ImagePullBackOff" || w.Message != want {
			t.Fatalf("in the back-off: waiting %+v, want ImagePullBackOff %q", w, want)
		}
		if n := flaky.count(); n != before {
			t.Fatalf("pulled in the back-off (%d pulls, %d before)", n, before)
		}
		if hint != left {
			t.Fatalf("in the back-off: sync again in %v, want %v (its end)", hint, left)
		}
		wantEvents(t, drain(rec),
			`Normal BackOff Back-off pulling image "`+image+`"`,
			"Warning Failed Error: ImagePullBackOff")
	}

	msg := pullFails(1, 2*time.Second)
	backsOff(msg, 2*time.Second)
	h.step(1500 * time.Millisecond)
	backsOff(msg, 500*time.Millisecond)
	h.step(500 * time.Millisecond)
	msg = pullFails(2, 4*time.Second)
	h.step(4*time.Second - time.Millisecond)
	backsOff(msg, time.Millisecond)
	h.step(time.Millisecond)
	msg = pullFails(3, 5*time.Second) // at most Max
	h.step(time.Second)
	backsOff(msg, 4*time.Second)

	// Another pod pulling the same image has a back-off of its own.
	other := h.create(h.pod("other", func(p *v1.Pod) { p.Spec.Containers[0].Image = image }))
	if cs := cstatus(h.sync(other), "app"); cs.State.Running == nil || flaky.count() != 4 {
		t.Fatalf("other pod: %+v after %d pulls", cs.State, flaky.count())
	}
	drain(rec)
	// The image is present now: this pod's IfNotPresent container starts
	// without a pull, back-off or not.
	got, _ := h.syncHint(p)
	if cs := cstatus(got, "app"); cs.State.Running == nil || got.Status.Phase != v1.PodRunning || flaky.count() != 4 {
		t.Fatalf("after the image arrived: phase %s %+v, %d pulls", got.Status.Phase, cs.State, flaky.count())
	}
	wantEvents(t, drain(rec), `Normal Pulled Container image "`+image+`" already present on machine and can be accessed by the pod`, "Normal Started Started container app")
}

// TestImagePullBackOffAlways: a container with imagePullPolicy Always is
// held back by the back-off as any other, and pulls at every start once
// its pulls go through again.
func TestImagePullBackOffAlways(t *testing.T) {
	h, flaky, rec := newFlakyPullHarness(t)
	const image = "registry.example/app:latest" // Always, by default
	flaky.failNext(1)
	p := h.create(h.pod("always", func(p *v1.Pod) {
		p.Spec.Containers[0].Image = image
		p.Annotations[sim.AnnotationCrashAfter] = "30s"
	}))
	got, hint := h.syncHint(p)
	if w := cstatus(got, "app").State.Waiting; w == nil || w.Reason != "ErrImagePull" || hint != 2*time.Second {
		t.Fatalf("first pull: %+v, sync again in %v", w, hint)
	}
	got, _ = h.syncHint(p)
	if w := cstatus(got, "app").State.Waiting; w == nil || w.Reason != "ImagePullBackOff" || flaky.count() != 1 {
		t.Fatalf("in the back-off: %+v after %d pulls", w, flaky.count())
	}
	h.step(2 * time.Second)
	got, _ = h.syncHint(p)
	if cs := cstatus(got, "app"); cs.State.Running == nil || flaky.count() != 2 {
		t.Fatalf("after the back-off: %+v after %d pulls", cs.State, flaky.count())
	}
	drain(rec)
	// It crashes and is restarted at once (its first restart): pulled again,
	// with no back-off left over from the failure before.
	h.step(30 * time.Second)
	got, _ = h.syncHint(p)
	if cs := cstatus(got, "app"); cs.State.Running == nil || cs.RestartCount != 1 || flaky.count() != 3 {
		t.Fatalf("after the restart: %+v after %d pulls", cs, flaky.count())
	}
	wantEvents(t, drain(rec), `Normal Pulling Pulling image "`+image+`"`, `Normal Pulled Successfully pulled image "`+image+`" in 0s (0s including waiting). Image size: 10485760 bytes.`)
}

// TestImagePullBackOffRetriedAtItsEnd: under Run, a pod whose image pull
// backs off is synced again when the back-off ends, not only at the next
// full resync (an hour here, as are the relist and the back-off base other
// waiting containers are retried on).
func TestImagePullBackOffRetriedAtItsEnd(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	client := newFakeClient()
	rt, err := sim.New(sim.Config{Clock: clk, PodCIDR: "10.244.1.0/24"})
	if err != nil {
		t.Fatal(err)
	}
	flaky := &flakyPulls{Runtime: rt}
	flaky.failNext(1)
	k, err := New(context.Background(), client, Config{
		NodeName: "n1", Clock: clk, SyncFrequency: time.Hour, RelistPeriod: time.Hour,
		Backoff:          podsync.BackoffConfig{Base: time.Hour, Max: time.Hour},
		ImagePullBackoff: podsync.BackoffConfig{Base: 2 * time.Second, Max: 5 * time.Second},
	}, flaky)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- k.Run(ctx) }()
	defer func() {
		k.Stop()
		if err := <-runErr; err != nil {
			t.Error(err)
		}
	}()

	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "uid-p"},
		Spec: v1.PodSpec{NodeName: "n1", RestartPolicy: v1.RestartPolicyAlways, Containers: []v1.Container{{Name: "c", Image: "registry.example/app:1"}}}}
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	state := func() (v1.PodPhase, *v1.ContainerStateWaiting) {
		p, err := client.CoreV1().Pods("default").Get(ctx, "p", metav1.GetOptions{})
		if err != nil || len(p.Status.ContainerStatuses) == 0 {
			return "", nil
		}
		return p.Status.Phase, p.Status.ContainerStatuses[0].State.Waiting
	}
	eventually(t, "ImagePullBackOff after the failed pull", func() bool {
		_, w := state()
		return w != nil && w.Reason == "ImagePullBackOff"
	})
	if n := flaky.count(); n != 1 {
		t.Fatalf("%d pulls before the back-off ended", n)
	}
	// Time passes (in small steps, whenever the worker's timer is set).
	eventually(t, "the pod running after the back-off", func() bool {
		clk.Step(100 * time.Millisecond)
		phase, _ := state()
		return phase == v1.PodRunning
	})
	if n := flaky.count(); n != 2 {
		t.Fatalf("%d pulls, want 2", n)
	}
}

// TestImageInspectError: when asking the runtime for the image's status
// fails, the container waits with ImageInspectError, after upstream's
// InspectFailed event (whose quoted reference is upstream's, empty) and
// "Error: ImageInspectError"; nothing is pulled. A container whose
// policy is Always does not ask before pulling, and starts.
func TestImageInspectError(t *testing.T) {
	h, flaky, rec := newFlakyPullHarness(t)
	flaky.inspectErr = errors.New("image store unavailable")
	p := h.create(h.pod("inspect", nil)) // nginx:1.27, IfNotPresent
	got := h.sync(p)
	w := cstatus(got, "app").State.Waiting
	const msg = `Failed to inspect image "": rpc error: code = Unknown desc = image store unavailable`
	if w == nil || w.Reason != "ImageInspectError" || w.Message != msg || flaky.count() != 0 {
		t.Fatalf("waiting %+v after %d pulls", w, flaky.count())
	}
	wantEvents(t, drain(rec), "Warning InspectFailed "+msg, "Warning Failed Error: ImageInspectError")

	always := h.create(h.pod("always", func(p *v1.Pod) { p.Spec.Containers[0].Image = "nginx:latest" }))
	if cs := cstatus(h.sync(always), "app"); cs.State.Running == nil || flaky.count() != 1 {
		t.Fatalf("Always: %+v after %d pulls", cs.State, flaky.count())
	}
}

// TestInvalidImageName: an image reference the kubelet cannot parse is
// not pulled; the container waits with InvalidImageName and upstream's
// message, after an InspectFailed event and "Error: InvalidImageName".
func TestInvalidImageName(t *testing.T) {
	h, rec := eventHarness(t)
	const image = "Nginx:1"
	got := h.sync(h.create(h.pod("bad", func(p *v1.Pod) { p.Spec.Containers[0].Image = image })))
	w := cstatus(got, "app").State.Waiting
	const msg = `Failed to apply default image tag "Nginx:1": couldn't parse image name "Nginx:1": invalid reference format: repository name (library/Nginx) must be lowercase`
	if w == nil || w.Reason != "InvalidImageName" || w.Message != msg {
		t.Fatalf("waiting %+v", w)
	}
	if auths := h.rt.PullAuths(image); len(auths) != 0 {
		t.Fatalf("%d pulls of an invalid image", len(auths))
	}
	wantEvents(t, drain(rec), "Warning InspectFailed "+msg, "Warning Failed Error: InvalidImageName")
}

// TestPulledEventImageSize: the Pulled event carries the image's size as
// the runtime reports it, over the simulation and over CRI's ImageStatus.
func TestPulledEventImageSize(t *testing.T) {
	h, _, rec := newFlakyPullHarness(t)
	const image = "registry.example/big:2"
	h.rt.SetImageSize(image, 123456789)
	h.sync(h.create(h.pod("big", func(p *v1.Pod) { p.Spec.Containers[0].Image = image })))
	wantEvents(t, drain(rec), `Normal Pulling Pulling image "`+image+`"`,
		`Normal Pulled Successfully pulled image "`+image+`" in 0s (0s including waiting). Image size: 123456789 bytes.`)

	h2, rec2 := eventHarness(t)
	h2.sync(h2.create(h2.pod("default-size", nil)))
	wantEvents(t, drain(rec2), `Normal Pulled Successfully pulled image "nginx:1.27" in 0s (0s including waiting). Image size: 10485760 bytes.`)
}

// TestRegistryUnavailable: a runtime's RegistryUnavailable pull error
// (a gRPC Unknown status, as CRI-O returns it) is classified as upstream's
// image manager does: the container waits with RegistryUnavailable and
// upstream's sentence, the back-off keeps that reason for its message.
func TestRegistryUnavailable(t *testing.T) {
	h, flaky, rec := newFlakyPullHarness(t)
	const image = "registry.example/app:1"
	flaky.errMsg = "RegistryUnavailable: dial tcp 10.0.0.1:443: connect: connection refused"
	flaky.failNext(1)
	p := h.create(h.pod("unavailable", func(p *v1.Pod) { p.Spec.Containers[0].Image = image }))
	got, hint := h.syncHint(p)
	w := cstatus(got, "app").State.Waiting
	const msg = "image pull failed for " + image + " because the registry is unavailable: dial tcp 10.0.0.1:443: connect: connection refused"
	if w == nil || w.Reason != "RegistryUnavailable" || w.Message != msg || hint != 2*time.Second {
		t.Fatalf("waiting %+v, sync again in %v", w, hint)
	}
	wantEvents(t, drain(rec),
		`Warning Failed Failed to pull image "`+image+`": `+flaky.errMsg,
		"Warning Failed Error: RegistryUnavailable")
	got, _ = h.syncHint(p)
	if w := cstatus(got, "app").State.Waiting; w == nil || w.Reason != "ImagePullBackOff" ||
		w.Message != `Back-off pulling image "`+image+`": RegistryUnavailable: `+msg {
		t.Fatalf("in the back-off: %+v", w)
	}
}

// TestPullErrorsAggregated: pulls with several credentials that all fail
// the same way give upstream's aggregate, the message once (not once per
// line and credential).
func TestPullErrorsAggregated(t *testing.T) {
	h, rec := eventHarness(t)
	const image = "registry.example.com/team/app:1.0"
	h.rt.RequireCredentials("registry.example.com", "robot", "right")
	for _, s := range []*v1.Secret{
		pullSecret("team", "registry.example.com/team", "robot", "stale"),
		pullSecret("site", "https://registry.example.com", "robot", "old"),
	} {
		if _, err := h.client.CoreV1().Secrets("default").Create(h.ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	p := h.create(h.pod("refused", func(p *v1.Pod) {
		p.Spec.Containers[0].Image = image
		p.Spec.ImagePullSecrets = []v1.LocalObjectReference{{Name: "site"}, {Name: "team"}}
	}))
	w := cstatus(h.sync(p), "app").State.Waiting
	// containerd's words for the registry's 401 to the manifest request.
	const refused = `failed to pull and unpack image "` + image + `": failed to resolve reference "` + image + `": unexpected status from HEAD request to https://registry.example.com/v2/team/app/manifests/1.0: 401 Unauthorized`
	if w == nil || w.Reason != "ErrImagePull" || w.Message != refused || len(h.rt.PullAuths(image)) != 2 {
		t.Fatalf("waiting %+v after %d pulls", w, len(h.rt.PullAuths(image)))
	}
	wantEvents(t, drain(rec), `Warning Failed Failed to pull image "`+image+`": `+refused, "Warning Failed Error: ErrImagePull")

}

// TestImageDefaultTagAndStatusImage: as upstream's kubelet, the runtime is
// asked for "nginx:latest" when the pod says "nginx" (a tagged or digested
// reference is kept), the container is created from the image reference
// the pull or ImageStatus returned (the pod's image as the user's), and
// the container status shows the image and imageID as the runtime reports
// them (containerd's repo tag and repo digest), while events quote the
// image as the pod names it.
func TestImageDefaultTagAndStatusImage(t *testing.T) {
	h, rec := eventHarness(t)
	got := h.sync(h.create(h.pod("untagged", func(p *v1.Pod) { p.Spec.Containers[0].Image = "nginx" })))
	ref, err := h.rt.ImageStatus(h.ctx, &runtimeapi.ImageSpec{Image: "nginx:latest"})
	if err != nil || ref == "" {
		t.Fatalf("nginx:latest not pulled: %q, %v", ref, err)
	}
	if n := len(h.rt.PullAuths("nginx:latest")); n != 1 || len(h.rt.PullAuths("nginx")) != 0 {
		t.Fatalf("%d pulls of nginx:latest, %d of nginx", n, len(h.rt.PullAuths("nginx")))
	}
	cs := cstatus(got, "app")
	if cs.State.Running == nil || cs.Image != "docker.io/library/nginx:latest" || cs.ImageID != "docker.io/library/nginx@"+ref {
		t.Fatalf("status %+v, want image docker.io/library/nginx:latest and imageID docker.io/library/nginx@%s", cs, ref)
	}
	containers, err := h.rt.ListContainers(h.ctx, nil)
	if err != nil || len(containers) != 1 || containers[0].GetImage().GetImage() != ref || containers[0].ImageRef != ref {
		t.Fatalf("containers %v, %v; want one created from %s", containers, err, ref)
	}
	wantEvents(t, drain(rec), `Normal Pulling Pulling image "nginx"`,
		`Normal Pulled Successfully pulled image "nginx" in 0s (0s including waiting). Image size: 10485760 bytes.`)

	// Present under its defaulted name: not pulled again, and the Pulled
	// event names the image as the pod does (upstream's requestedImage).
	got = h.sync(h.create(h.pod("present", func(p *v1.Pod) {
		p.Spec.Containers[0].Image, p.Spec.Containers[0].ImagePullPolicy = "nginx", v1.PullIfNotPresent
	})))
	if n := len(h.rt.PullAuths("nginx:latest")); n != 1 {
		t.Fatalf("%d pulls of a present image", n)
	}
	if cs := cstatus(got, "app"); cs.State.Running == nil || cs.Image != "docker.io/library/nginx:latest" {
		t.Fatalf("status %+v", cs)
	}
	wantEvents(t, drain(rec), `Normal Pulled Container image "nginx" already present on machine and can be accessed by the pod`)

	// A digest-only reference is pulled as it is; containerd reports no
	// repo tag for it, so the status shows what the container was created
	// from (the image's id) and the repo digest.
	digested := "registry.example/app@sha256:" + strings.Repeat("ab", 32)
	got = h.sync(h.create(h.pod("digested", func(p *v1.Pod) { p.Spec.Containers[0].Image = digested })))
	dref, err := h.rt.ImageStatus(h.ctx, &runtimeapi.ImageSpec{Image: digested})
	if err != nil || dref == "" {
		t.Fatalf("%s not pulled: %q, %v", digested, dref, err)
	}
	if cs := cstatus(got, "app"); cs.State.Running == nil || cs.Image != dref || cs.ImageID != digested {
		t.Fatalf("status %+v, want image %s and imageID %s", cs, dref, digested)
	}
}
