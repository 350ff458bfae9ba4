package kubelet

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

// hookServer is an HTTP server on the node's loopback that counts the
// requests it answers, for hooks to reach; port is its port.
func hookServer(t *testing.T) (hits *atomic.Int32, port int) {
	t.Helper()
	hits = new(atomic.Int32)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	t.Cleanup(srv.Close)
	return hits, srv.Listener.Addr().(*net.TCPAddr).Port
}

// sandboxIPRuntime is a CRI runtime (none of the simulation's shortcuts:
// hooks go over the network) whose sandboxes report ip, or no network
// status at all when ip is "" (containerd's host-network sandboxes).
type sandboxIPRuntime struct {
	runtime.Runtime
	ip string
}

func (r sandboxIPRuntime) PodSandboxStatus(ctx context.Context, id string) (*runtimeapi.PodSandboxStatus, error) {
	st, err := r.Runtime.PodSandboxStatus(ctx, id)
	if st != nil && st.Network != nil {
		st.Network = nil
		if r.ip != "" {
			st.Network = &runtimeapi.PodSandboxNetworkStatus{Ip: r.ip}
		}
	}
	return st, err
}

// TestPostStartHookHostIsSandboxIP: an HTTP postStart hook without a
// host goes to the IP the runtime reports for the pod's sandbox, as
// upstream's handler runner takes it from the runtime's pod status; with
// none it fails with upstream's "failed to find networking container",
// for a host-network pod too (containerd reports no IP for its sandbox,
// and upstream's hook does not fall back to the node's IP: kubernetes
// issue 134285). Before, a pod-network pod's hook went to the node's
// localhost and a host-network pod's to the node IP, and both reached
// the server listening there.
func TestPostStartHookHostIsSandboxIP(t *testing.T) {
	hits, port := hookServer(t)
	for _, tc := range []struct {
		name        string
		hostNetwork bool
		sandboxIP   string
		wantHits    int32
	}{
		{"pod-network-no-ip", false, "", 0},
		{"host-network-no-ip", true, "", 0},
		{"pod-network-ip", false, "127.0.0.1", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hits.Store(0)
			h := newHarness(t, nil)
			h.krt = sandboxIPRuntime{Runtime: h.rt, ip: tc.sandboxIP}
			h.k = h.newKubelet(func(c *Config) { c.NodeIP = "127.0.0.1" })
			p := h.create(h.pod("hooked", func(p *v1.Pod) {
				p.Spec.HostNetwork = tc.hostNetwork
				p.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PostStart: &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Path: "/started", Port: intstr.FromInt32(int32(port))}}}
			}))
			cs := cstatus(h.sync(p), "app")
			if n := hits.Load(); n != tc.wantHits {
				t.Errorf("hook requests %d, want %d", n, tc.wantHits)
			}
			if tc.wantHits > 0 {
				if cs.State.Running == nil {
					t.Errorf("container after the hook: %+v", cs.State)
				}
				return
			}
			if w := cs.State.Waiting; w == nil || w.Reason != "PostStartHookError" || !strings.Contains(w.Message, "failed to find networking container: ") {
				t.Errorf("container after a hook without a pod IP: %+v, want PostStartHookError failed to find networking container", cs.State)
			}
		})
	}
}

// readyIPRuntime reports ip for every ready sandbox and hides the
// simulation's network shortcut (hooks go over the network); its images
// can be collected.
type readyIPRuntime struct {
	collectable
	ip string
}

type collectable interface {
	runtime.Runtime
	runtime.ImageManager
}

func (r readyIPRuntime) PodSandboxStatus(ctx context.Context, id string) (*runtimeapi.PodSandboxStatus, error) {
	st, err := r.collectable.PodSandboxStatus(ctx, id)
	if st != nil && st.State == runtimeapi.PodSandboxState_SANDBOX_READY {
		st.Network = &runtimeapi.PodSandboxNetworkStatus{Ip: r.ip}
	}
	return st, err
}

// TestUnknownKillHookGoesToPodsNewestSandbox: the container GC's kill of
// a container in the unknown state runs its HTTP preStop hook against
// the IP of its pod's newest sandbox while that one is ready, as
// upstream's handler runner takes it from the runtime's pod status (the
// newest sandbox's IPs, only when it is ready), not the container's own
// sandbox. Before, the stopped sandbox the container was made in was
// asked: no IP, and the hook did not reach the pod.
func TestUnknownKillHookGoesToPodsNewestSandbox(t *testing.T) {
	hits, port := hookServer(t)
	h := newHarness(t, nil)
	p := h.create(h.pod("hooked", func(p *v1.Pod) {
		p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](5)
		p.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Path: "/stop", Port: intstr.FromInt32(int32(port))}}}
	}))
	if got := h.sync(p); got.Status.Phase != v1.PodRunning {
		t.Fatalf("hooked: %s", got.Status.Phase)
	}
	list, err := h.rt.ListContainers(h.ctx, nil)
	if err != nil || len(list) != 1 {
		t.Fatalf("containers %v, %v", list, err)
	}
	old := list[0].PodSandboxId
	// The pod's sandbox is stopped and a newer one made for it.
	h.step(time.Second)
	if _, err := h.rt.RunPodSandbox(h.ctx, &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "hooked", Namespace: "default", Uid: string(p.UID), Attempt: 1},
		Labels:   map[string]string{runtime.LabelPodUID: string(p.UID), runtime.LabelPodName: "hooked", runtime.LabelPodNamespace: "default"},
	}, ""); err != nil {
		t.Fatal(err)
	}
	if err := h.rt.StopPodSandbox(h.ctx, old); err != nil {
		t.Fatal(err)
	}

	unknown := &unknownRuntime{Runtime: h.rt, unknown: map[string]bool{list[0].Id: true}}
	h.krt = readyIPRuntime{collectable: unknown, ip: "127.0.0.1"}
	h.k = h.newKubelet(nil)
	collector := h.k.nodeGC(h.ctx, h.clock.Now())
	if collector == nil {
		t.Fatal("no collector")
	}
	if _, err := collector.CollectContainers(h.ctx, false, h.clock.Now()); err != nil {
		t.Fatalf("CollectContainers: %v", err)
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("preStop hook requests %d, want 1 (to the newest sandbox's IP)", n)
	}
}
