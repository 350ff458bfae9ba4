package kubelet

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// sandboxRefusal is the simulated runtime with every RunPodSandbox
// failing; meanwhile (as a CNI set-up in progress while the pod is
// deleted) it runs during, if set.
type sandboxRefusal struct {
	*sim.Runtime
	during func()
}

func (r *sandboxRefusal) RunPodSandbox(context.Context, *runtimeapi.PodSandboxConfig, string) (string, error) {
	if r.during != nil {
		r.during()
	}
	return "", errors.New("failed to setup network for sandbox: plugin type=\"bridge\" failed (add): interrupted")
}

// TestSandboxFailureOfTerminatingPodIsQuiet: as upstream's SyncPod, a
// sandbox that fails to be created for a pod whose termination was
// requested meanwhile (deleted with a grace period, gone from the API,
// evicted) records no FailedCreatePodSandBox event and fails no sync:
// the termination the request queued follows. The check is fresh: the
// pod the sync started from was alive. A live pod's failure still gives
// the event and a failed sync.
func TestSandboxFailureOfTerminatingPodIsQuiet(t *testing.T) {
	for _, tc := range []struct {
		name      string
		terminate func(h *harness, pod *v1.Pod)
		quiet     bool
	}{
		{name: "alive", quiet: false},
		{name: "deleted with grace", quiet: true, terminate: func(h *harness, pod *v1.Pod) {
			cur := h.get(pod)
			cur.DeletionTimestamp, cur.DeletionGracePeriodSeconds = ptr.To(metav1.NewTime(h.clock.Now())), ptr.To[int64](30)
			updated, err := h.client.CoreV1().Pods(cur.Namespace).Update(h.ctx, cur, metav1.UpdateOptions{})
			if err != nil {
				h.t.Fatal(err)
			}
			h.k.HandlePod(updated)
		}},
		{name: "gone from the API", quiet: true, terminate: func(h *harness, pod *v1.Pod) {
			h.k.HandlePodDeleted(pod)
		}},
		{name: "evicted", quiet: true, terminate: func(h *harness, pod *v1.Pod) {
			h.k.mu.Lock()
			defer h.k.mu.Unlock()
			h.k.pods[pod.UID].evicted = true
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			refusal := &sandboxRefusal{Runtime: h.rt}
			h.krt = refusal
			events := record.NewFakeRecorder(100)
			h.k = h.newKubelet(func(c *Config) { c.Recorder = events })
			pod := h.create(h.pod("web", nil))
			if tc.terminate != nil {
				refusal.during = func() { tc.terminate(h, pod) }
			}
			_, err := h.k.syncPod(h.ctx, pod.UID)
			evs := drain(events)
			failed := slices.ContainsFunc(evs, func(e string) bool { return strings.HasPrefix(e, "Warning FailedCreatePodSandBox ") })
			if tc.quiet {
				if err != nil || failed {
					t.Fatalf("sync error %v, events %q; want neither", err, evs)
				}
				return
			}
			if err == nil || !failed {
				t.Fatalf("sync error %v, events %q; want both", err, evs)
			}
			want := `Warning FailedCreatePodSandBox Failed to create pod sandbox: failed to setup network for sandbox: plugin type="bridge" failed (add): interrupted`
			wantEvents(t, evs, want)
		})
	}
}
