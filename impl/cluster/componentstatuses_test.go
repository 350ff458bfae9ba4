package cluster

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestComponentStatusesProbeInProcessComponents: in a cluster running the
// controller manager and the scheduler in-process, componentstatuses
// probe their secure /healthz (here on ephemeral ports) and the embedded
// etcd, and find all three healthy.
func TestComponentStatusesProbeInProcessComponents(t *testing.T) {
	ctx := context.Background()
	c, err := Start(ctx, Config{DataDir: t.TempDir(), BindAddress: "127.0.0.1:0", UnsafeNoFsync: true, CompactionInterval: -1,
		ControllerManager: true, Scheduler: true,
		ControllerManagerHealthzAddress: "127.0.0.1:0", SchedulerHealthzAddress: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stopping: %v", err)
		}
	})
	if !strings.HasPrefix(c.cmHealthz.URL(), "https://127.0.0.1:") || !strings.HasPrefix(c.schedulerHealthz.URL(), "https://127.0.0.1:") {
		t.Fatalf("health endpoints %q %q", c.cmHealthz.URL(), c.schedulerHealthz.URL())
	}
	cs, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	list, err := cs.CoreV1().ComponentStatuses().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]corev1.ComponentCondition{}
	for _, item := range list.Items {
		got[item.Name] = item.Conditions[0]
	}
	for _, name := range []string{"controller-manager", "scheduler", "etcd-0"} {
		if cond := got[name]; cond.Status != corev1.ConditionTrue || cond.Message != "ok" || cond.Error != "" {
			t.Errorf("%s: %+v, want Healthy ok", name, cond)
		}
	}
	if len(got) != 3 {
		t.Errorf("components %v, want controller-manager, scheduler and etcd-0", got)
	}
	// Stop once the scheduler is past its start-up discovery (it holds
	// its Lease after it), which a stop would interrupt with an error.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := cs.CoordinationV1().Leases("kube-system").Get(ctx, "kube-scheduler", metav1.GetOptions{}); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the scheduler never took its Lease")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestComponentHealthz: an in-process component's /healthz is "ok" only
// while the component runs, a 500 before it starts and after it stops.
func TestComponentHealthz(t *testing.T) {
	h, err := listenHealthz("scheduler", "127.0.0.1:0", slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	h.ln.Close()
	get := func() (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
		body, _ := io.ReadAll(rec.Body)
		return rec.Code, string(body)
	}
	if code, body := get(); code != http.StatusInternalServerError || !strings.Contains(body, "healthz check failed") {
		t.Errorf("before the component runs: %d %q, want 500", code, body)
	}
	var during int
	run := h.track(func() error {
		during, _ = get()
		return nil
	})
	if err := run(); err != nil {
		t.Fatal(err)
	}
	if during != http.StatusOK {
		t.Errorf("while the component runs: %d, want 200", during)
	}
	if code, _ := get(); code != http.StatusInternalServerError {
		t.Errorf("after the component stopped: %d, want 500", code)
	}
}
