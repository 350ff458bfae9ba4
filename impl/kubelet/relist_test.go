package kubelet

import (
	"context"
	"hash/fnv"
	"maps"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// fingerprints are the relist's fingerprints kept in k's pod records.
func fingerprints(k *Kubelet) map[types.UID]uint64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := map[types.UID]uint64{}
	for uid, rec := range k.pods {
		if rec.relistFP != 0 {
			out[uid] = rec.relistFP
		}
	}
	return out
}

// listOnly hides the simulated runtime's ContainerStateLister, so relist
// takes the CRI road (ListContainers), as on containerd.
type listOnly struct{ runtime.Runtime }

func TestContainerFingerprintIsFNV1a(t *testing.T) {
	for _, tc := range []struct {
		id    string
		state runtimeapi.ContainerState
	}{{"", 0}, {"abc", runtimeapi.ContainerState_CONTAINER_RUNNING}, {"0123456789abcdef", runtimeapi.ContainerState_CONTAINER_EXITED}} {
		h := fnv.New64a()
		h.Write([]byte(tc.id))
		h.Write([]byte{byte(tc.state)})
		if got, want := containerFingerprint(tc.id, tc.state), h.Sum64(); got != want {
			t.Errorf("fingerprint(%q, %v) = %x, want %x", tc.id, tc.state, got, want)
		}
	}
}

// Relisting through ContainerStates (the simulated runtime) and through
// ListContainers (CRI) sees the same per-pod fingerprints; a started
// container changes its pod's fingerprint (relist enqueues the pods whose
// fingerprint changed), and a pod whose containers are gone is forgotten.
func TestRelistStatesMatchListContainers(t *testing.T) {
	ctx := context.Background()
	clk := testingclock.NewFakeClock(t0)
	k, rt := newSimKubelet(t, fake.NewClientset(), Config{NodeName: "n1", Clock: clk})
	cri, err := New(ctx, fake.NewClientset(), Config{NodeName: "n1", Clock: clk}, listOnly{rt})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, uid := range []string{"u1", "u2"} {
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p-" + uid, Namespace: "ns", UID: types.UID(uid)}}
		sb, err := rt.RunPodSandbox(ctx, sandboxConfig(pod, 0, t.TempDir(), cgroupParams{}, rootQOS), "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rt.PullImage(ctx, &runtimeapi.ImageSpec{Image: "img"}); err != nil {
			t.Fatal(err)
		}
		id, err := rt.CreateContainer(ctx, sb, containerConfig(pod, &v1.Container{Name: "app", Image: "img"}, false, 0, &runtimeapi.ImageSpec{Image: "img"}, nil, cgroupParams{nodeMemory: 32 << 30}), nil)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	// u1 has a second container: its pod's fingerprint folds both.
	u1 := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p-u1", Namespace: "ns", UID: "u1"}}
	sbs, err := rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{runtime.LabelPodUID: "u1"}})
	if err != nil || len(sbs) != 1 {
		t.Fatalf("sandboxes of u1: %v %v", sbs, err)
	}
	side, err := rt.CreateContainer(ctx, sbs[0].Id, containerConfig(u1, &v1.Container{Name: "side", Image: "img"}, false, 0, &runtimeapi.ImageSpec{Image: "img"}, nil, cgroupParams{nodeMemory: 32 << 30}), nil)
	if err != nil {
		t.Fatal(err)
	}
	relistBoth := func() {
		t.Helper()
		k.relist(ctx)
		cri.relist(ctx)
		if len(fingerprints(k)) == 0 || !maps.Equal(fingerprints(k), fingerprints(cri)) {
			t.Fatalf("relist fingerprints differ: sim %v, CRI %v", fingerprints(k), fingerprints(cri))
		}
	}
	relistBoth()
	created := runtimeapi.ContainerState_CONTAINER_CREATED
	if got, want := fingerprints(k)["u1"], (containerFingerprint(ids[0], created)|1)^(containerFingerprint(side, created)|1); got != want {
		t.Errorf("u1's fingerprint %x, want both containers' %x", got, want)
	}
	before := fingerprints(k)
	if err := rt.StartContainer(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	relistBoth()
	if fingerprints(k)["u1"] == before["u1"] || fingerprints(k)["u2"] != before["u2"] {
		t.Errorf("a started container changed %v to %v", before, fingerprints(k))
	}
	if err := rt.RemoveContainer(ctx, ids[1]); err != nil {
		t.Fatal(err)
	}
	relistBoth()
	if _, ok := fingerprints(k)["u2"]; ok {
		t.Errorf("a pod without containers is still fingerprinted: %v", fingerprints(k))
	}
}

// A relist of a node where nothing happened lists nothing, yet a
// container that exits on its own (no call to the runtime, only time
// passing) still changes its pod's fingerprint at the next relist.
func TestRelistSeesExitsWithoutRuntimeCalls(t *testing.T) {
	h := newHarness(t, nil)
	p := h.create(h.pod("crash", func(p *v1.Pod) { p.Annotations[sim.AnnotationCrashAfter] = "2s" }))
	h.sync(p)
	h.k.relist(h.ctx)
	before := fingerprints(h.k)["uid-crash"]
	if before == 0 {
		t.Fatal("no fingerprint for the running pod")
	}
	h.k.relist(h.ctx)
	if got := fingerprints(h.k)["uid-crash"]; got != before {
		t.Fatalf("nothing happened, yet the fingerprint went %x -> %x", before, got)
	}
	h.step(3 * time.Second)
	h.k.relist(h.ctx)
	if got := fingerprints(h.k)["uid-crash"]; got == before {
		t.Fatalf("the container exited, yet the fingerprint stayed %x", got)
	}
}
