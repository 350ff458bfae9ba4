package kubelet

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
)

func TestSyncRetryDelay(t *testing.T) {
	const backOff, syncFrequency = 10 * time.Second, 20 * time.Second
	failed := errors.New("writing status of pod default/web: the server is busy")
	for _, tc := range []struct {
		name    string
		hint    time.Duration
		err     error
		backOff time.Duration
		r       float64
		want    time.Duration
	}{
		{name: "success without a wake-up of its own", want: 0},
		{name: "success keeps its hint (probe, CrashLoopBackOff, grace period)", hint: 3 * time.Second, want: 3 * time.Second},
		{name: "failure backs off", err: failed, want: backOff},
		{name: "failure, jitter at its largest", err: failed, r: 0.999999, want: backOff + backOff/2 - 5*time.Microsecond},
		{name: "failure, jitter in between", err: failed, r: 0.5, want: 12500 * time.Millisecond},
		{name: "failure with an earlier hint wakes at the hint", hint: 2 * time.Second, err: failed, want: 2 * time.Second},
		{name: "failure with a later hint backs off", hint: 40 * time.Second, err: failed, want: backOff},
		{name: "a back-off longer than the full resync is cut to it", err: failed, backOff: time.Minute, want: syncFrequency},
		{name: "volume set-up failure waits the volume back-off", err: mountFailed(500 * time.Millisecond), r: 0.9, want: 500 * time.Millisecond},
		{name: "volume set-up failure, back-off beyond the sync back-off and the full resync", err: mountFailed(mountRetryMax), want: mountRetryMax},
		{name: "volume set-up failure with an earlier hint wakes at the hint", hint: 100 * time.Millisecond, err: mountFailed(time.Second), want: 100 * time.Millisecond},
		{name: "volume set-up failure, wrapped", err: fmt.Errorf("sync: %w", mountFailed(2*time.Second)), want: 2 * time.Second},
		{name: "volume set-up failure joined with a failed status write", err: errors.Join(mountFailed(time.Second), failed), r: 0.9, want: time.Second},
		{name: "refused status write waits its own back-off", err: statusRefused(500 * time.Millisecond), r: 0.9, want: 500 * time.Millisecond},
		{name: "refused status write, wrapped", err: fmt.Errorf("sync: %w", statusRefused(4*time.Second)), want: 4 * time.Second},
		{name: "refused status write with an earlier hint wakes at the hint", hint: 100 * time.Millisecond, err: statusRefused(time.Second), want: 100 * time.Millisecond},
		{name: "volume set-up failure and refused status write: the sooner", err: errors.Join(mountFailed(8*time.Second), statusRefused(time.Second)), want: time.Second},
		{name: "refused status write and volume set-up failure: the sooner", err: errors.Join(mountFailed(500*time.Millisecond), statusRefused(2*time.Second)), want: 500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.backOff
			if b == 0 {
				b = backOff
			}
			if got := syncRetryDelay(tc.hint, tc.err, b, syncFrequency, tc.r); got != tc.want {
				t.Errorf("syncRetryDelay(%v, %v, %v, r=%v) = %v, want %v", tc.hint, tc.err, b, tc.r, got, tc.want)
			}
		})
	}
}

func mountFailed(retry time.Duration) error {
	return &volumeSetUpError{err: errors.New(`MountVolume.SetUp failed for volume "cfg" : configmap "site" not found`), retryAfter: retry}
}

func statusRefused(retry time.Duration) error {
	return &statusRefusedError{err: apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "web",
		errors.New(`no relationship found between node 'node-7' and this object`)), retryAfter: retry}
}

// The volume back-off is upstream's: 0.5 s, doubling, at most 2 min 2 s.
func TestMountRetryDelay(t *testing.T) {
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second,
		16 * time.Second, 32 * time.Second, 64 * time.Second, mountRetryMax, mountRetryMax}
	for i, w := range want {
		if got := mountRetryDelay(uint8(i + 1)); got != w {
			t.Errorf("after %d failures: %v, want %v", i+1, got, w)
		}
	}
	if got := mountRetryDelay(255); got != mountRetryMax {
		t.Errorf("after 255 failures: %v, want %v", got, mountRetryMax)
	}
}

// TestMissingConfigMapRetriedOnVolumeBackOff drives the pod worker over a
// pod whose ConfigMap does not exist yet (as kube-root-ca.crt before the
// root CA publisher has written it into a new namespace, or an object the
// Node authorizer refuses until its graph has the pod): each failed sync
// reports FailedMount and leaves the pod ContainerCreating, as before, but
// is retried on the volume back-off (0.5 s, 1 s, ...), not after the
// pod workers' 10-15 s; once the ConfigMap exists the next retry starts
// the pod, and the back-off starts over.
func TestMissingConfigMapRetriedOnVolumeBackOff(t *testing.T) {
	events := record.NewFakeRecorder(100)
	root := t.TempDir()
	h := newHarness(t, func(c *Config) {
		c.RootDir, c.Recorder, c.SyncErrorBackOff = root, events, 10*time.Second
	})
	q := &recordingQueue{TypedInterface: workqueue.NewTyped[types.UID]()}
	defer q.ShutDown()
	h.k.queue = q
	work := func() {
		t.Helper()
		if q.Len() != 1 {
			t.Fatalf("%d pods queued, want 1", q.Len())
		}
		h.k.processNext(h.ctx)
	}
	failedMounts := func() int {
		n := 0
		for _, e := range drain(events) {
			if strings.HasPrefix(e, "Warning FailedMount MountVolume.SetUp failed for volume \"cfg\" : configmap \"site\" not found") {
				n++
			}
		}
		return n
	}

	p := h.create(h.pod("web", func(p *v1.Pod) {
		p.Spec.Volumes = []v1.Volume{{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
			LocalObjectReference: v1.LocalObjectReference{Name: "site"}}}}}
		p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "cfg", MountPath: "/etc/site"}}
	}))
	for i, want := range []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second} {
		work()
		if n := failedMounts(); n != 1 {
			t.Fatalf("failure %d: %d FailedMount events, want 1", i+1, n)
		}
		got := h.get(p)
		if cs := cstatus(got, "app"); cs.State.Waiting == nil || cs.State.Waiting.Reason != "ContainerCreating" || got.Status.Phase != v1.PodPending {
			t.Fatalf("failure %d: without its ConfigMap the pod should wait in ContainerCreating: %s %+v", i+1, got.Status.Phase, cs.State)
		}
		d := q.lastDelay()
		if d != want {
			t.Fatalf("failure %d: retried after %v, want the volume back-off's %v", i+1, d, want)
		}
		// The full resync before the retry does not sync it.
		h.step(d / 2)
		h.k.resyncAll()
		work()
		if n := failedMounts(); n != 0 {
			t.Fatalf("failure %d: the full resync synced a pod backing off", i+1)
		}
		if rest := q.lastDelay(); rest != d-d/2 {
			t.Fatalf("failure %d: after the resync the pod waits %v more, want %v", i+1, rest, d-d/2)
		}
		h.step(d - d/2)
		q.Add(p.UID)
	}

	if _, err := h.client.CoreV1().ConfigMaps("default").Create(h.ctx, &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "site", Namespace: "default"}, Data: map[string]string{"index": "hi"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	work()
	if got := h.get(p); got.Status.Phase != v1.PodRunning {
		t.Fatalf("phase %s once the ConfigMap exists, want Running", got.Status.Phase)
	}
	if n := failedMounts(); n != 0 {
		t.Errorf("%d FailedMount events after the ConfigMap appeared", n)
	}
	h.k.mu.Lock()
	rec := h.k.pods[p.UID]
	failures, retryAt := rec.mountFailures, rec.retryAt
	h.k.mu.Unlock()
	if failures != 0 || retryAt != 0 {
		t.Errorf("after the volumes were set up: %d volume failures, retryAt %d; want the back-off to start over", failures, retryAt)
	}
}

// recordingQueue is a pod work queue whose delayed adds are recorded
// instead of scheduled: the test fires them itself.
type recordingQueue struct {
	workqueue.TypedInterface[types.UID]
	delayed []time.Duration
}

func (q *recordingQueue) AddAfter(_ types.UID, d time.Duration) { q.delayed = append(q.delayed, d) }

// lastDelay is the delay of the last delayed add since the previous call
// (0: none).
func (q *recordingQueue) lastDelay() time.Duration {
	if len(q.delayed) == 0 {
		return 0
	}
	d := q.delayed[len(q.delayed)-1]
	q.delayed = nil
	return d
}

// TestFailedSyncBacksOff drives the pod worker over a pod whose status
// write the API server turns away: the failed sync is retried after the
// back-off, the full resync meanwhile does not sync it, a pod update does
// at once, and once the write goes through the pod no longer backs off.
func TestFailedSyncBacksOff(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.SyncErrorBackOff = 10 * time.Second })
	q := &recordingQueue{TypedInterface: workqueue.NewTyped[types.UID]()}
	defer q.ShutDown()
	h.k.queue = q
	busy := true
	h.client.PrependReactor("update", "pods", func(a clienttesting.Action) (bool, k8sruntime.Object, error) {
		if a.GetSubresource() == "status" && busy {
			return true, nil, apierrors.NewTooManyRequests("busy", 1)
		}
		return false, nil, nil
	})
	work := func() {
		t.Helper()
		if q.Len() != 1 {
			t.Fatalf("%d pods queued, want 1", q.Len())
		}
		h.k.processNext(h.ctx)
	}

	p := h.create(h.pod("web", nil)) // handed over: synced at once
	work()
	if w := h.k.StatusWrites(); w != 1 {
		t.Fatalf("%d status writes, want 1", w)
	}
	retry := q.lastDelay()
	if retry < 10*time.Second || retry > 15*time.Second {
		t.Fatalf("failed sync requeued after %v, want 10-15 s", retry)
	}

	// The full resync comes before the retry: the pod waits for it.
	h.step(retry / 2)
	h.k.resyncAll()
	work()
	if w := h.k.StatusWrites(); w != 1 {
		t.Errorf("the full resync synced a pod backing off (%d status writes, want 1)", w)
	}
	if d := q.lastDelay(); d != retry-retry/2 {
		t.Errorf("after the resync the pod waits %v more, want %v", d, retry-retry/2)
	}

	// Its retry comes: synced again, and backing off again.
	h.step(retry - retry/2)
	q.Add(p.UID)
	work()
	if w := h.k.StatusWrites(); w != 2 {
		t.Errorf("the retry did not sync (%d status writes, want 2)", w)
	}
	if d := q.lastDelay(); d < 10*time.Second {
		t.Errorf("second failure requeued after %v, want the back-off", d)
	}

	// A pod update syncs at once, back-off or not; the write now succeeds.
	busy = false
	h.step(time.Second)
	cur := h.get(p)
	cur.Labels = map[string]string{"updated": "yes"}
	h.k.HandlePod(cur)
	work()
	if w := h.k.StatusWrites(); w != 3 {
		t.Errorf("the update did not sync at once (%d status writes, want 3)", w)
	}
	if got := h.get(p); got.Status.Phase != v1.PodRunning {
		t.Errorf("phase %s after the write went through, want Running", got.Status.Phase)
	}
	if d := q.lastDelay(); d != 0 {
		t.Errorf("a successful sync of a Running pod requeued after %v", d)
	}

	// No longer backing off: the full resync syncs it (nothing to write).
	h.k.mu.Lock()
	retryAt := h.k.pods[p.UID].retryAt
	h.k.mu.Unlock()
	h.k.resyncAll()
	work()
	if retryAt != 0 || q.lastDelay() != 0 || q.Len() != 0 {
		t.Errorf("after a successful sync the pod still backs off (retryAt %d)", retryAt)
	}
}

// TestRefusedTokenRetriedOnVolumeBackOff: a kube-api-access volume whose
// token request the API server refuses for a moment (the Node authorizer
// allows a node a pod's service account only once its graph holds the pod
// bound there) is retried after 0.5 s, not after the pod workers' 10-15 s.
func TestRefusedTokenRetriedOnVolumeBackOff(t *testing.T) {
	root := t.TempDir()
	h := newHarness(t, func(c *Config) { c.RootDir, c.SyncErrorBackOff = root, 10*time.Second })
	q := &recordingQueue{TypedInterface: workqueue.NewTyped[types.UID]()}
	defer q.ShutDown()
	h.k.queue = q
	refuse, requests := true, 0
	h.client.PrependReactor("create", "serviceaccounts", func(a clienttesting.Action) (bool, k8sruntime.Object, error) {
		ca := a.(clienttesting.CreateAction)
		if ca.GetSubresource() != "token" {
			return false, nil, nil
		}
		requests++
		if refuse {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "serviceaccounts"}, "default",
				errors.New(`no relationship found between node 'node-7' and this object`))
		}
		tr := ca.GetObject().(*authenticationv1.TokenRequest).DeepCopy()
		tr.Status.Token = "token"
		return true, tr, nil
	})
	p := createAPIAccessPod(t, h)
	h.k.processNext(h.ctx)
	if d := q.lastDelay(); requests != 1 || d != mountRetryInitial {
		t.Fatalf("after a refused token request (%d requests) the pod is retried after %v, want %v", requests, d, mountRetryInitial)
	}
	if got := h.get(p); got.Status.Phase != v1.PodPending {
		t.Fatalf("phase %s with its token refused, want Pending", got.Status.Phase)
	}
	refuse = false
	h.step(mountRetryInitial)
	q.Add(p.UID)
	h.k.processNext(h.ctx)
	if got := h.get(p); requests != 2 || got.Status.Phase != v1.PodRunning {
		t.Fatalf("phase %s after %d token requests, want Running after 2", got.Status.Phase, requests)
	}
}

// TestVolumeBackOffOutlastsAFailedStatusWrite drives the pod worker over a
// new pod whose first sync fails twice: its kube-api-access volume cannot
// be set up, and the status write reporting that (ContainerCreating) is
// refused as well — as the Node authorizer refuses a node's token request
// and its pods/status write alike until its graph holds the pod on the
// node. The pod is retried on the volume back-off, not the pod workers'
// 10 s, and then runs.
func TestVolumeBackOffOutlastsAFailedStatusWrite(t *testing.T) {
	notYours := func(resource, name string) error {
		return apierrors.NewForbidden(schema.GroupResource{Resource: resource}, name,
			errors.New(`no relationship found between node 'node-7' and this object`))
	}
	for _, tc := range []struct {
		name string
		// failing is the set-up request refused once: "token" (the token
		// request) or "configmap" (the read of kube-root-ca.crt).
		failing string
		// statusErr is the first status write's answer.
		statusErr error
		// wantTokens: the failed set-up and its retry both request the
		// token (its file is written only once the whole volume is set up).
		wantTokens int
	}{
		{name: "token request and status write refused", failing: "token", statusErr: notYours("pods", "web"), wantTokens: 2},
		{name: "ConfigMap read fails, status write refused", failing: "configmap",
			statusErr: apierrors.NewInternalError(errors.New("etcdserver: request timed out")), wantTokens: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.RootDir, c.SyncErrorBackOff = t.TempDir(), 10*time.Second })
			q := &recordingQueue{TypedInterface: workqueue.NewTyped[types.UID]()}
			defer q.ShutDown()
			h.k.queue = q
			refuse, tokens, statusWrites := true, 0, 0
			h.client.PrependReactor("create", "serviceaccounts", func(a clienttesting.Action) (bool, k8sruntime.Object, error) {
				ca := a.(clienttesting.CreateAction)
				if ca.GetSubresource() != "token" {
					return false, nil, nil
				}
				tokens++
				if refuse && tc.failing == "token" {
					return true, nil, notYours("serviceaccounts", "default")
				}
				tr := ca.GetObject().(*authenticationv1.TokenRequest).DeepCopy()
				tr.Status.Token = "token"
				return true, tr, nil
			})
			h.client.PrependReactor("get", "configmaps", func(clienttesting.Action) (bool, k8sruntime.Object, error) {
				if refuse && tc.failing == "configmap" {
					return true, nil, notYours("configmaps", "kube-root-ca.crt")
				}
				return false, nil, nil
			})
			h.client.PrependReactor("update", "pods", func(a clienttesting.Action) (bool, k8sruntime.Object, error) {
				if a.GetSubresource() != "status" {
					return false, nil, nil
				}
				statusWrites++
				if refuse {
					return true, nil, tc.statusErr
				}
				return false, nil, nil
			})
			p := createAPIAccessPod(t, h)
			h.k.processNext(h.ctx)
			if d := q.lastDelay(); statusWrites == 0 || d != mountRetryInitial {
				t.Fatalf("after a failed volume set-up and %d refused status writes the pod is retried after %v, want %v", statusWrites, d, mountRetryInitial)
			}
			refuse = false
			h.step(mountRetryInitial)
			q.Add(p.UID)
			h.k.processNext(h.ctx)
			if got := h.get(p); tokens != tc.wantTokens || got.Status.Phase != v1.PodRunning {
				t.Fatalf("phase %s after %d token requests, want Running after %d", got.Status.Phase, tokens, tc.wantTokens)
			}
		})
	}
}

// createAPIAccessPod creates the default namespace's kube-root-ca.crt and a
// pod "web" with the kube-api-access projected volume the ServiceAccount
// admission plugin adds (a service account token and that ConfigMap's
// ca.crt), whose set-up makes a token request and reads the ConfigMap.
func createAPIAccessPod(t *testing.T, h *harness) *v1.Pod {
	t.Helper()
	if _, err := h.client.CoreV1().ConfigMaps("default").Create(h.ctx, &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt", Namespace: "default"}, Data: map[string]string{"ca.crt": "CERT"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return h.create(h.pod("web", func(p *v1.Pod) {
		p.Spec.Volumes = []v1.Volume{{Name: "kube-api-access", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
			{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}},
			{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items: []v1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
		}}}}}
	}))
}

// TestRefusedStatusWriteRetriedSoon drives the pod worker over a pod whose
// status writes the API server refuses (403, as the Node authorizer does
// while its graph lacks the pod on the node) twice and then allows: the
// writes are retried 0.5 s and then 1 s later (the volume back-off's
// schedule), not after the pod workers' 10 s, and once one goes through
// the count starts again. (A write that fails otherwise still waits the
// sync back-off: TestFailedSyncBacksOff.)
func TestRefusedStatusWriteRetriedSoon(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.SyncErrorBackOff = 10 * time.Second })
	q := &recordingQueue{TypedInterface: workqueue.NewTyped[types.UID]()}
	defer q.ShutDown()
	h.k.queue = q
	var answers []error // the next status writes' answers; nil: let it through
	writes := 0
	h.client.PrependReactor("update", "pods", func(a clienttesting.Action) (bool, k8sruntime.Object, error) {
		if a.GetSubresource() != "status" {
			return false, nil, nil
		}
		writes++
		if len(answers) == 0 {
			return false, nil, nil
		}
		err := answers[0]
		answers = answers[1:]
		if err == nil {
			return false, nil, nil
		}
		return true, nil, err
	})
	refused := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "web",
		errors.New(`no relationship found between node 'node-7' and this object`))
	answers = []error{refused, refused}
	p := h.create(h.pod("web", nil))
	sync := func(want time.Duration) {
		t.Helper()
		before := writes
		q.Add(p.UID)
		h.k.processNext(h.ctx)
		if d := q.lastDelay(); writes != before+1 || d != want {
			t.Fatalf("after %d status writes the pod is retried after %v, want one more write and %v", writes, d, want)
		}
	}
	sync(mountRetryInitial)
	h.step(mountRetryInitial)
	sync(2 * mountRetryInitial)
	h.step(2 * mountRetryInitial)
	q.Add(p.UID)
	h.k.processNext(h.ctx)
	if got := h.get(p); got.Status.Phase != v1.PodRunning {
		t.Fatalf("phase %s once the write goes through, want Running", got.Status.Phase)
	}
	// A later refusal starts from 0.5 s again.
	h.k.mu.Lock()
	refusals := h.k.pods[p.UID].statusRefusals
	h.k.mu.Unlock()
	if refusals != 0 {
		t.Fatalf("%d refusals counted after a write went through, want 0", refusals)
	}
}
