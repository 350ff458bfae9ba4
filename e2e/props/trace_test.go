package props

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/model"
)

// The trace validator accepts an observed step the model can take, however
// many actions it spans, with the user operations the harness did, and
// rejects one it cannot: a bound pod moving to another node (SCHED-1's
// step form) is no sequence of model actions, and a change only a user
// operation explains is rejected unless the harness did it.
func TestTraceValidation(t *testing.T) {
	m, err := NewModel(2)
	if err != nil {
		t.Fatal(err)
	}
	a := NewAbstraction(m)
	first := testObservation()
	s0, ok := ModelState(a, first, nil)
	if !ok {
		t.Fatal("test observation outside the model's bounds")
	}

	t.Run("scaling down one replica is a model behaviour", func(t *testing.T) {
		ob := testObservation()
		ob.Deployments[0].Spec.Replicas = ptr(int32(1))
		ob.Deployments[0].Generation = 3
		s1, ok := ModelState(a, ob, nil)
		if !ok {
			t.Fatal("outside the model's bounds")
		}
		v := &TraceValidator{Model: m, MaxDepth: 40, MaxStates: 100000, FailDistance: 1000}
		v.Step(s0)
		if msg := v.Step(s1); msg == "" {
			t.Fatal("a scale the harness did not do was explained")
		}
		v.Reset()
		v.Step(s0)
		v.UserDid(model.ScaleDeployment, 1, 1)
		if msg := v.Step(s1); msg != "" || v.Validated != 1 {
			t.Fatalf("validated %d, failure: %s", v.Validated, msg)
		}
	})
	t.Run("a whole rolling update between two observations is a model behaviour", func(t *testing.T) {
		ob := rolledOut()
		s1, ok := ModelState(a, ob, nil)
		if !ok {
			t.Fatal("outside the model's bounds")
		}
		v := &TraceValidator{Model: m, MaxDepth: 40, MaxStates: 300000, FailDistance: 1000}
		v.Step(s0)
		v.UserDid(model.UpdateDeployment, 1)
		if msg := v.Step(s1); msg != "" || v.Validated != 1 {
			t.Fatalf("validated %d (searched %d states), failure: %s", v.Validated, v.Explored, msg)
		}
		if v.Longest < 10 {
			t.Fatalf("the rolling update took %d model actions, want at least 10", v.Longest)
		}
		t.Logf("path of %d actions, %d states searched", v.Longest, v.Explored)
	})
	t.Run("a bound pod moving to another node is not", func(t *testing.T) {
		ob := testObservation()
		ob.Pods[1].Spec.NodeName = "node-2"
		ob.Sandboxes[1].Node = "node-2"
		s1, ok := ModelState(a, ob, nil)
		if !ok {
			t.Fatal("outside the model's bounds")
		}
		v := &TraceValidator{Model: m, MaxDepth: 6, MaxStates: 20000, FailDistance: 1000}
		v.Step(s0)
		msg := v.Step(s1)
		if msg == "" || !strings.Contains(msg, "podNode") {
			t.Fatalf("moving a bound pod validated (validated %d), message %q", v.Validated, msg)
		}
	})
	t.Run("a pod the user deleted is one step of the path", func(t *testing.T) {
		ob := testObservation()
		ob.Pods[1].DeletionTimestamp = &metav1.Time{}
		ob.Pods = append(ob.Pods, testPod("d1-a-3", "u3", "", v1.PodPending, "d1-a"))
		s1, ok := ModelState(a, ob, nil)
		if !ok {
			t.Fatal("outside the model's bounds")
		}
		d, ver, ok := a.PodGroup(&ob.Pods[1])
		if !ok || d != 1 || ver != 1 {
			t.Fatalf("pod group %d, %d, %v", d, ver, ok)
		}
		without := &TraceValidator{Model: m, MaxDepth: 40, MaxStates: 100000, FailDistance: 1000}
		without.Step(s0)
		if msg := without.Step(s1); msg == "" {
			t.Fatalf("explained without the user's deletion")
		}
		v := &TraceValidator{Model: m, MaxDepth: 40, MaxStates: 100000, FailDistance: 1000}
		v.Step(s0)
		v.UserDeletedPod(d, ver)
		if msg := v.Step(s1); msg != "" || v.Validated != 1 {
			t.Fatalf("validated %d, failure: %s", v.Validated, msg)
		}
	})
	t.Run("a step across a reset is counted as skipped", func(t *testing.T) {
		v := &TraceValidator{Model: m, MaxDepth: 6, MaxStates: 20000, FailDistance: 1000}
		v.Step(s0)
		v.Reset()
		v.Reset()
		if msg := v.Step(s0); msg != "" || v.Skipped != 1 || v.Validated != 0 {
			t.Fatalf("skipped %d, validated %d, failure %q", v.Skipped, v.Validated, msg)
		}
	})
}

// rolledOut is testObservation after a finished rolling update of d1 to
// app:v2: the new ReplicaSet runs both pods on node-2, the old one is at
// zero replicas and its pods and sandboxes are gone.
func rolledOut() *Observation {
	ob := testObservation()
	ob.Deployments[0].Spec.Template.Spec.Containers[0].Image = "app:v2"
	ob.Deployments[0].Generation, ob.Deployments[0].Status.ObservedGeneration = 3, 3
	ob.ReplicaSets[0].Spec.Replicas = ptr(int32(0))
	rs := ob.ReplicaSets[0]
	rs.ObjectMeta = metav1.ObjectMeta{Name: "d1-b"}
	rs.Spec.Replicas = ptr(int32(2))
	rs.Spec.Template.Spec.Containers = []v1.Container{{Name: "app", Image: "app:v2"}}
	ob.ReplicaSets = append(ob.ReplicaSets, rs)
	p1, p2 := testPod("d1-b-1", "u3", "node-2", v1.PodRunning, "d1-b"), testPod("d1-b-2", "u4", "node-2", v1.PodRunning, "d1-b")
	for _, p := range []*v1.Pod{&p1, &p2} {
		p.Spec.Containers[0].Image = "app:v2"
	}
	ob.Pods = []v1.Pod{p1, p2}
	ob.Sandboxes = []Sandbox{
		{ID: "s3", Node: "node-2", PodUID: "u3", PodName: "d1-b-1", Ready: true, IP: "10.244.1.2"},
		{ID: "s4", Node: "node-2", PodUID: "u4", PodName: "d1-b-2", Ready: true, IP: "10.244.1.3"},
	}
	return ob
}

// A deleted pod's last status before its final delete — the kubelet's
// final status once its kill succeeded (Failed, or Succeeded when every
// container exited 0, restartPolicy Always included, as upstream's
// TerminatePod and getPhase of a terminal pod), or the pod garbage
// collector's Failed before its force delete — is a write the model folds
// into the removal: observed in between (a kubelet that crashed between
// the two writes keeps the pod there), the pod maps to the phase and
// readiness it had, and the step from the pod running (deleting, its
// sandbox live) to it is the model's KubeletStopPod. A pod seen terminal
// before its deletion keeps that phase, and so does one reported terminal
// while its sandbox is live (KUBELET-8): that step is rejected.
func TestDeletedPodFinalStatusIsAModelState(t *testing.T) {
	m, err := NewModel(2)
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	deleting := func(ob *Observation) *Observation {
		ob.Pods[1].DeletionTimestamp = &now
		return ob
	}
	final := func(phase v1.PodPhase, sandbox bool) *Observation {
		ob := deleting(testObservation())
		ob.Pods[1].Status = v1.PodStatus{Phase: phase, Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionFalse}}}
		if !sandbox {
			ob.Sandboxes = ob.Sandboxes[:1]
		}
		return ob
	}
	step := func(t *testing.T, a *Abstraction, from, to *Observation, userDeleted ...int) (model.State, string) {
		t.Helper()
		s0, ok := ModelState(a, from, nil)
		if !ok {
			t.Fatal("outside the model's bounds")
		}
		s1, ok := ModelState(a, to, nil)
		if !ok {
			t.Fatal("outside the model's bounds")
		}
		v := &TraceValidator{Model: m, MaxDepth: 6, MaxStates: 20000, FailDistance: 1000}
		v.Step(s0)
		if len(userDeleted) == 2 {
			v.UserDeletedPod(userDeleted[0], userDeleted[1])
		}
		return s1, v.Step(s1)
	}
	phaseOf := func(s model.State) (uint8, bool) {
		o := m.Observable(&s)
		for _, p := range m.Pods() {
			if o.PodState[p] == model.Deleting {
				return o.PodPhase[p], o.PodReady[p]
			}
		}
		t.Fatal("no deleting pod")
		return 0, false
	}
	for _, phase := range []v1.PodPhase{v1.PodFailed, v1.PodSucceeded} {
		t.Run("kubelet's final status "+string(phase), func(t *testing.T) {
			s, msg := step(t, NewAbstraction(m), deleting(testObservation()), final(phase, false))
			if msg != "" {
				t.Fatalf("not explained: %s", msg)
			}
			if ph, ready := phaseOf(s); ph != model.Running || !ready {
				t.Fatalf("mapped to phase %d ready %v, want Running and Ready as before", ph, ready)
			}
		})
	}
	t.Run("pod GC's Failed", func(t *testing.T) {
		a := NewAbstraction(m)
		if _, ok := ModelState(a, testObservation(), nil); !ok {
			t.Fatal("outside the model's bounds")
		}
		ob := testObservation()
		ob.Pods[1].Status.Phase = v1.PodFailed
		ob.Pods[1].Status.Conditions = append(ob.Pods[1].Status.Conditions,
			v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: "DeletionByPodGC"})
		sn, err := a.Snapshot(ob, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := sn.Pods[1].Phase; got != model.Running {
			t.Fatalf("mapped to phase %d, want Running", got)
		}
	})
	// The recorder's watch may lag the observer's list: a pod version it
	// hands Remember after a snapshot mapped the pod (here Pending, older
	// than the Running Ready one observed) is not what the map gave it, and
	// the final status folds to the phase the last snapshot had.
	t.Run("final status after a stale recorded version", func(t *testing.T) {
		a := NewAbstraction(m)
		if _, ok := ModelState(a, deleting(testObservation()), nil); !ok {
			t.Fatal("outside the model's bounds")
		}
		stale := testObservation().Pods[1]
		stale.Status = v1.PodStatus{Phase: v1.PodPending}
		a.Remember(&stale)
		sn, err := a.Snapshot(final(v1.PodFailed, false), nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := sn.Pods[1]; got.Phase != model.Running || got.NotReady {
			t.Fatalf("mapped to phase %d not ready %v, want Running and Ready as the last snapshot had it", got.Phase, got.NotReady)
		}
	})
	t.Run("never seen before its final status", func(t *testing.T) {
		sn, err := NewAbstraction(m).Snapshot(final(v1.PodFailed, false), nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := sn.Pods[1].Phase; got != model.Pending {
			t.Fatalf("mapped to phase %d, want Pending", got)
		}
	})
	t.Run("Failed before its deletion", func(t *testing.T) {
		a := NewAbstraction(m)
		failed := testObservation()
		failed.Pods[1].Status = v1.PodStatus{Phase: v1.PodFailed}
		failed.Sandboxes = failed.Sandboxes[:1]
		s, msg := step(t, a, failed, final(v1.PodFailed, false), 1, 1)
		if msg != "" {
			t.Fatalf("not explained: %s", msg)
		}
		if ph, _ := phaseOf(s); ph != model.Failed {
			t.Fatalf("mapped to phase %d, want Failed", ph)
		}
	})
	t.Run("terminal while its sandbox is live", func(t *testing.T) {
		if _, msg := step(t, NewAbstraction(m), deleting(testObservation()), final(v1.PodFailed, true)); msg == "" {
			t.Fatal("a terminal phase written while the sandbox is live was explained")
		}
	})
}

// kube-apiserver's delete of a pod with no grace period (an unscheduled
// pod's always) writes the pod marked (deletionTimestamp, grace period 0)
// and then removes it, in one request; the model's DeletePod removes an
// unscheduled pod in one step (a bound one in KubeletFinalizePod or
// PodGCDeletePod). Observed between the two writes, the marked pod is
// already gone for the model, so the step to an unscheduled one is the
// ReplicaSet's deletion of its extra pod.
func TestGraceZeroMarkedUnscheduledPodIsRemoved(t *testing.T) {
	m, err := NewModel(2)
	if err != nil {
		t.Fatal(err)
	}
	a := NewAbstraction(m)
	extra := func() *Observation {
		ob := testObservation()
		ob.Pods = append(ob.Pods, testPod("d1-a-3", "u3", "", v1.PodPending, "d1-a"))
		return ob
	}
	s0, ok := ModelState(a, extra(), nil)
	if !ok {
		t.Fatal("outside the model's bounds")
	}
	marked := extra()
	now, zero := metav1.Now(), int64(0)
	marked.Pods[2].DeletionTimestamp, marked.Pods[2].DeletionGracePeriodSeconds = &now, &zero
	sn, err := a.Snapshot(marked, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(sn.Pods) != 2 {
		t.Fatalf("mapped %d pods, want the 2 left once the marked one is removed", len(sn.Pods))
	}
	s1, err := m.FromSnapshot(sn)
	if err != nil {
		t.Fatal(err)
	}
	v := &TraceValidator{Model: m, MaxDepth: 8, MaxStates: 50000, FailDistance: 1000}
	v.Step(s0)
	if msg := v.Step(s1); msg != "" {
		t.Fatalf("not explained: %s", msg)
	}
	// Bound, it is gone as well (the kubelet's final delete, a force
	// delete); with a grace period left or a finalizer, it stays, the
	// model's Deleting.
	for _, tc := range []struct {
		name string
		edit func(p *v1.Pod)
		want int
	}{
		{"bound, grace 0", func(p *v1.Pod) { p.Spec.NodeName = "node-2" }, 2},
		{"grace 30", func(p *v1.Pod) { p.DeletionGracePeriodSeconds = ptr(int64(30)) }, 3},
		{"grace 0 and a finalizer", func(p *v1.Pod) { p.Finalizers = []string{"example.com/hold"} }, 3},
	} {
		ob := extra()
		ob.Pods[2].DeletionTimestamp, ob.Pods[2].DeletionGracePeriodSeconds = &now, &zero
		tc.edit(&ob.Pods[2])
		sn, err := NewAbstraction(m).Snapshot(ob, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(sn.Pods) != tc.want || tc.want == 3 && sn.Pods[2].State != model.Deleting {
			t.Fatalf("%s: mapped %d pods (%+v), want %d, a third one Deleting", tc.name, len(sn.Pods), sn.Pods, tc.want)
		}
	}
}
