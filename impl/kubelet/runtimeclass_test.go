package kubelet

import (
	"context"
	"errors"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

func TestRuntimeHandlerOf(t *testing.T) {
	gvisor := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "gvisor"}, Handler: "runsc"}
	for _, tc := range []struct {
		name     string
		rc       *nodev1.RuntimeClass
		err      error
		handler  string
		wantErr  string
		notFound bool
	}{
		{name: "found", rc: gvisor, handler: "runsc"},
		// The watch's store and a GET say NotFound in their own words;
		// the kubelet's is a RuntimeClass lister's, as upstream's.
		{name: "store lacks it", err: apierrors.NewNotFound(nodev1.Resource("runtimeclasses"), "gvisor"),
			wantErr: `runtimeclass.node.k8s.io "gvisor" not found`, notFound: true},
		{name: "resource not served", err: apierrors.NewNotFound(nodev1.Resource(""), ""),
			wantErr: `runtimeclass.node.k8s.io "gvisor" not found`, notFound: true},
		{name: "nothing read", wantErr: `runtimeclass.node.k8s.io "gvisor" not found`, notFound: true},
		{name: "lookup failed", err: apierrors.NewInternalError(errors.New("etcd down")),
			wantErr: "failed to lookup RuntimeClass gvisor: Internal error occurred: etcd down"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := runtimeHandlerOf("gvisor", tc.rc, tc.err)
			if h != tc.handler {
				t.Errorf("handler %q, want %q", h, tc.handler)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("err = %v", err)
			case tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr):
				t.Errorf("err = %v, want %s", err, tc.wantErr)
			case apierrors.IsNotFound(err) != tc.notFound:
				t.Errorf("IsNotFound(%v) = %v", err, !tc.notFound)
			}
			if tc.err != nil && !tc.notFound && !errors.Is(err, tc.err) {
				t.Errorf("%v does not wrap %v", err, tc.err)
			}
		})
	}
}

func TestPodObjectRefsRuntimeClass(t *testing.T) {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}, Spec: v1.PodSpec{
		RuntimeClassName: ptr.To("gvisor"), ImagePullSecrets: []v1.LocalObjectReference{{Name: "pull"}}}}
	want := []objectRef{{resourceRuntimeClasses, "", "gvisor"}, {resourceSecrets, "ns", "pull"}}
	if got := podObjectRefs(p); !slices.Equal(got, want) {
		t.Errorf("refs %v, want %v", got, want)
	}
	p.Spec.RuntimeClassName = ptr.To("")
	if got := podObjectRefs(p); !slices.Equal(got, want[1:]) {
		t.Errorf("refs with an empty runtimeClassName %v, want %v", got, want[1:])
	}
}

// newRuntimeClassHarness is a harness whose kubelet talks CRI to a fake
// CRI server backed by a simulation with one runtime handler besides the
// default, runsc (a containerd configured for gVisor), records events and
// has its object manager running (as in Run).
func newRuntimeClassHarness(t *testing.T) (*harness, *record.FakeRecorder) {
	h := newHarness(t, nil)
	rt, err := sim.New(sim.Config{Clock: h.clock, PodCIDR: "10.244.7.0/24", RuntimeHandlers: []string{"runsc"}})
	if err != nil {
		t.Fatal(err)
	}
	h.rt = rt
	client, dir := dialFakeCRI(t, h.rt)
	h.krt = client
	rec := record.NewFakeRecorder(1000)
	h.k = h.newKubelet(func(c *Config) { c.PodLogsDir = filepath.Join(dir, "pods"); c.Recorder = rec })
	ctx, cancel := context.WithCancel(h.ctx)
	h.k.objects.start(ctx)
	t.Cleanup(func() { cancel(); h.k.objects.stop() })
	return h, rec
}

// podSandboxes lists the runtime's sandboxes of pod.
func podSandboxes(t *testing.T, h *harness, pod *v1.Pod) []*runtimeapi.PodSandbox {
	t.Helper()
	list, err := h.krt.ListPodSandbox(h.ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{runtime.LabelPodUID: string(pod.UID)}})
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// syncFails syncs pod once and returns the sync's error (nil if it
// succeeded).
func syncFails(h *harness, pod *v1.Pod) error {
	h.k.HandlePod(h.get(pod))
	_, err := h.k.syncPod(h.ctx, pod.UID)
	return err
}

func runtimeClassRequests(actions []clienttesting.Action) int {
	n := 0
	for _, a := range actions {
		if a.GetResource().Resource == resourceRuntimeClasses {
			n++
		}
	}
	return n
}

// TestRuntimeClassHandlerReachesRunPodSandbox: a pod's RuntimeClass
// handler reaches RunPodSandbox over CRI (and the sandbox's status reports
// it); a pod whose RuntimeClass does not exist gets upstream's
// FailedCreatePodSandBox event and no sandbox, and starts once the class
// is created; a handler the runtime lacks gets containerd's refusal in
// the same event; a failed lookup upstream's message. A pod without a
// runtimeClassName costs no request and no watch.
func TestRuntimeClassHandlerReachesRunPodSandbox(t *testing.T) {
	h, rec := newRuntimeClassHarness(t)
	ctx := h.ctx

	plain := h.create(h.pod("plain", nil))
	if got := h.sync(plain); got.Status.Phase != v1.PodRunning {
		t.Fatalf("plain pod: %+v", got.Status)
	}
	if sb := podSandboxes(t, h, plain); len(sb) != 1 || sb[0].RuntimeHandler != "" {
		t.Fatalf("plain pod's sandboxes: %v", sb)
	}
	if n := runtimeClassRequests(h.client.Actions()); n != 0 {
		t.Fatalf("%d RuntimeClass requests for a pod without runtimeClassName", n)
	}
	if n := h.k.objects.watching(); n != 0 {
		t.Fatalf("%d watches for a pod without runtimeClassName", n)
	}
	drain(rec)

	// The class does not exist yet: no sandbox, upstream's event, the
	// container waits in ContainerCreating, the sync fails (and so is
	// retried).
	p := h.create(h.pod("sandboxed", func(p *v1.Pod) { p.Spec.RuntimeClassName = ptr.To("gvisor") }))
	if err := syncFails(h, p); err == nil {
		t.Fatal("sync of a pod whose RuntimeClass is missing succeeded")
	}
	wantEvents(t, drain(rec), `Warning FailedCreatePodSandBox Failed to create pod sandbox: runtimeclass.node.k8s.io "gvisor" not found`)
	if sb := podSandboxes(t, h, p); len(sb) != 0 {
		t.Fatalf("sandboxes of a pod whose RuntimeClass is missing: %v", sb)
	}
	got := h.get(p)
	if w := cstatus(got, "app").State.Waiting; got.Status.Phase != v1.PodPending || w == nil || w.Reason != "ContainerCreating" {
		t.Fatalf("status with the RuntimeClass missing: %+v", got.Status)
	}
	if n := h.k.objects.watching(); n != 1 {
		t.Fatalf("%d watches, want 1 (RuntimeClass gvisor)", n)
	}

	// Created, the class reaches the watch's store; the retried sync
	// runs the sandbox with its handler.
	if _, err := h.client.NodeV1().RuntimeClasses().Create(ctx, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "gvisor"}, Handler: "runsc"},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "RuntimeClass gvisor in the watch's store", func() bool {
		rc, err := h.k.objects.runtimeClass(ctx, "gvisor")
		return err == nil && rc.Handler == "runsc"
	})
	if got := h.sync(p); got.Status.Phase != v1.PodRunning {
		t.Fatalf("pod after its RuntimeClass was created: %+v", got.Status)
	}
	sb := podSandboxes(t, h, p)
	if len(sb) != 1 || sb[0].RuntimeHandler != "runsc" {
		t.Fatalf("sandboxes of the gvisor pod: %v", sb)
	}
	if st, err := h.krt.PodSandboxStatus(ctx, sb[0].Id); err != nil || st.RuntimeHandler != "runsc" {
		t.Fatalf("sandbox status over CRI: %v %v", st, err)
	}

	// A class whose handler the runtime has no runtime for: containerd's
	// refusal, over CRI, in the event.
	if _, err := h.client.NodeV1().RuntimeClasses().Create(ctx, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "kata"}, Handler: "kata-qemu"},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	drain(rec)
	q := h.create(h.pod("kata", func(p *v1.Pod) { p.Spec.RuntimeClassName = ptr.To("kata") }))
	if err := syncFails(h, q); err == nil {
		t.Fatal("sync of a pod whose handler the runtime lacks succeeded")
	}
	refused := regexp.MustCompile(`^Warning FailedCreatePodSandBox Failed to create pod sandbox: rpc error: code = Unknown desc = ` +
		`unable to get OCI runtime for sandbox "[0-9a-f]{64}": no runtime for "kata-qemu" is configured$`)
	if evs := drain(rec); !slices.ContainsFunc(evs, refused.MatchString) {
		t.Fatalf("events %q, want one matching %s", evs, refused)
	}
	if sb := podSandboxes(t, h, q); len(sb) != 0 {
		t.Fatalf("sandboxes of the kata pod: %v", sb)
	}

	// The lookup fails (the API server errs): upstream's message.
	h.client.PrependReactor("*", "runtimeclasses", func(clienttesting.Action) (bool, k8sruntime.Object, error) {
		return true, nil, apierrors.NewInternalError(errors.New("etcd down"))
	})
	r := h.create(h.pod("unlucky", func(p *v1.Pod) { p.Spec.RuntimeClassName = ptr.To("fast") }))
	if err := syncFails(h, r); err == nil {
		t.Fatal("sync with a failing RuntimeClass lookup succeeded")
	}
	wantEvents(t, drain(rec), `Warning FailedCreatePodSandBox Failed to create pod sandbox: failed to lookup RuntimeClass fast: Internal error occurred: etcd down`)
	if sb := podSandboxes(t, h, r); len(sb) != 0 {
		t.Fatalf("sandboxes of the unlucky pod: %v", sb)
	}

	// The watches go with the pods naming the classes.
	for _, pod := range []*v1.Pod{p, q, r} {
		h.k.HandlePodDeleted(pod)
	}
	if n := h.k.objects.watching(); n != 0 {
		t.Fatalf("%d watches after the pods naming RuntimeClasses went", n)
	}
}
