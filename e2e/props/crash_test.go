package props

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	"github.com/kubeproof/kubeproof/impl/faults"
)

// crashScenarios drive a component through each named crash point (the
// intermediate-state fault class): the point is armed, the workload makes
// the component reach it, the component crashes between the writes of one
// reconcile, loses its memory and is restarted; every safety property must
// hold throughout and the cluster must converge.
var crashScenarios = map[string]func(h *harness, t *rapid.T){
	faults.CrashReplicaSetMidBatch: func(h *harness, t *rapid.T) {
		h.arm(faults.CrashReplicaSetMidBatch, 1) // after the first pod of the batch
		h.createDeployment(t, 4)
	},
	faults.CrashDeploymentAfterNewRS: func(h *harness, t *rapid.T) {
		h.createDeployment(t, 3)
		h.waitReady(t, 3)
		h.arm(faults.CrashDeploymentAfterNewRS, 0)
		h.updateImage(t)
	},
	faults.CrashGCAfterOrphaning: func(h *harness, t *rapid.T) {
		h.createDeployment(t, 2)
		h.waitBound(t)
		h.arm(faults.CrashGCAfterOrphaning, 0)
		policy := metav1.DeletePropagationOrphan
		h.step("delete d1 propagationPolicy=Orphan")
		h.abs.Orphaned["d1"] = true
		h.trace.Reset()
		if err := h.client.AppsV1().Deployments(h.ns).Delete(context.Background(), "d1", metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil {
			t.Fatalf("deleting d1: %v", err)
		}
		h.live["d1"] = false
		h.check()
	},
	faults.CrashSchedulerAfterAssume: func(h *harness, t *rapid.T) {
		h.arm(faults.CrashSchedulerAfterAssume, 1)
		h.createDeployment(t, 3)
	},
	faults.CrashKubeletAfterSandbox: func(h *harness, t *rapid.T) {
		h.arm(faults.CrashKubeletAfterSandbox, 0)
		h.createDeployment(t, 3)
	},
}

// arm arms point for this run (disarmed when faults stop).
func (h *harness) arm(point string, skip int) {
	h.step("arm crash point %s (crash on its hit %d)", point, skip+1)
	h.disarm = append(h.disarm, faults.ArmCrash(point, skip, h.crashed))
}

// TestCrashPoints arms each crash point of impl/faults in a directed
// scenario and requires that it fired, that no property broke, and that
// the cluster converged after the crashed component's restart.
func TestCrashPoints(t *testing.T) {
	if testing.Short() {
		return
	}
	setFlag(t, "rapid.checks", "1")
	setFlag(t, "rapid.nofailfile", "true")
	c := startCluster(t)
	defer func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stopping cluster: %v", err)
		}
	}()
	client, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewModel(nodeMaxPods)
	if err != nil {
		t.Fatal(err)
	}
	var table []string
	for i, point := range crashPointNames() {
		scenario := crashScenarios[point]
		if scenario == nil {
			t.Errorf("crash point %s has no scenario", point)
			continue
		}
		before := faults.CrashHits()[point]
		run := 0
		rapid.Check(t, func(rt *rapid.T) {
			run++
			h := newHarness(rt, c, client, m, c.Runtimes(), fmt.Sprintf("crash-%d-%d", i, run))
			defer h.close()
			scenario(h, rt)
			h.converge()
		})
		if t.Failed() {
			return
		}
		hits := faults.CrashHits()[point] - before
		if hits == 0 {
			t.Errorf("crash point %s was armed, but the scenario never reached it", point)
		}
		table = append(table, fmt.Sprintf("%-50s hit %d, properties held, converged", point, hits))
	}
	t.Logf("crash points:\n  %s", strings.Join(table, "\n  "))
}
