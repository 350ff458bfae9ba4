package props

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// These tests show that each check can fail: hand-made observations that
// break one property each must be reported with that property's ID, both
// by the implementation-level checks and through the model.

func testPod(name, uid, node string, phase v1.PodPhase, owners ...string) v1.Pod {
	p := v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(uid), Labels: map[string]string{AppLabel: "d1"}},
		Spec:   v1.PodSpec{NodeName: node, Containers: []v1.Container{{Name: "app", Image: "app:v1"}}},
		Status: v1.PodStatus{Phase: phase}}
	if phase == v1.PodRunning {
		p.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}
	}
	for _, o := range owners {
		p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{Kind: "ReplicaSet", Name: o, Controller: ptr(true)})
	}
	return p
}

func testObservation() *Observation {
	one := intstr.FromInt32(1)
	ob := &Observation{DeploymentStable: map[string]bool{"d1": true}}
	ob.Deployments = []appsv1.Deployment{{
		ObjectMeta: metav1.ObjectMeta{Name: "d1", Generation: 2},
		Spec: appsv1.DeploymentSpec{Replicas: ptr(int32(2)),
			Strategy: appsv1.DeploymentStrategy{RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &one, MaxUnavailable: &one}},
			Template: v1.PodTemplateSpec{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "app:v1"}}}}},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 2},
	}}
	ob.ReplicaSets = []appsv1.ReplicaSet{{
		ObjectMeta: metav1.ObjectMeta{Name: "d1-a"},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr(int32(2)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{AppLabel: "d1"}},
			Template: v1.PodTemplateSpec{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "app:v1"}}}}},
	}}
	ob.Pods = []v1.Pod{testPod("d1-a-1", "u1", "node-1", v1.PodRunning, "d1-a"), testPod("d1-a-2", "u2", "node-1", v1.PodRunning, "d1-a")}
	for _, n := range []string{"node-1", "node-2", "node-3"} {
		ob.Nodes = append(ob.Nodes, v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n},
			Status: v1.NodeStatus{Allocatable: v1.ResourceList{v1.ResourcePods: resource.MustParse("2")}}})
	}
	ob.Sandboxes = []Sandbox{
		{ID: "s1", Node: "node-1", PodUID: "u1", PodName: "d1-a-1", Ready: true, IP: "10.244.0.2"},
		{ID: "s2", Node: "node-1", PodUID: "u2", PodName: "d1-a-2", Ready: true, IP: "10.244.0.3"},
	}
	return ob
}

func ids(vs []Violation) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.ID)
	}
	return out
}

func TestChecksCatchBrokenObservations(t *testing.T) {
	m, err := NewModel(2)
	if err != nil {
		t.Fatal(err)
	}
	if vs := CheckObservation(testObservation()); len(vs) != 0 {
		t.Fatalf("valid observation reported: %v", vs)
	}
	if vs, ok := CheckModel(NewAbstraction(m), testObservation(), nil); !ok || len(vs) != 0 {
		t.Fatalf("valid observation: representable %v, model reports %v", ok, vs)
	}
	for _, tc := range []struct {
		id     string
		model  bool // the model's invariant catches it too
		break_ func(ob *Observation)
	}{
		{"KUBELET-3", true, func(ob *Observation) { ob.Sandboxes[1].IP = ob.Sandboxes[0].IP }},
		{"KUBELET-2", false, func(ob *Observation) {
			ob.Sandboxes = append(ob.Sandboxes, Sandbox{ID: "s3", Node: "node-1", PodUID: "u1", Ready: true, IP: "10.244.0.9"})
		}},
		{"KUBELET-1", true, func(ob *Observation) { ob.Sandboxes[1].Node = "node-2" }},
		{"RS-2", false, func(ob *Observation) {
			ob.Pods[0].OwnerReferences = append(ob.Pods[0].OwnerReferences, metav1.OwnerReference{Kind: "ReplicaSet", Name: "x", Controller: ptr(true)})
		}},
		{"SCHED-2", true, func(ob *Observation) {
			p := testPod("d1-a-3", "u3", "node-1", v1.PodPending, "d1-a")
			ob.Pods = append(ob.Pods, p)
		}},
		{"DEP-1", true, func(ob *Observation) { ob.ReplicaSets[0].Spec.Replicas = ptr(int32(4)) }},
	} {
		ob := testObservation()
		tc.break_(ob)
		if got := ids(CheckObservation(ob)); !slices.Contains(got, tc.id) {
			t.Errorf("%s: implementation checks report %v", tc.id, got)
		}
		if !tc.model {
			continue
		}
		vs, ok := CheckModel(NewAbstraction(m), ob, nil)
		if !ok || !slices.Contains(ids(vs), tc.id) {
			t.Errorf("%s: model check representable %v, reports %v", tc.id, ok, ids(vs))
		}
	}
}

func TestRecorderStepChecks(t *testing.T) {
	r := &Recorder{pods: map[string]*v1.Pod{}, hist: newHistory()}
	a := testPod("p", "u1", "", v1.PodPending)
	a.ResourceVersion = "1"
	b := a
	b.Spec.NodeName, b.ResourceVersion = "node-1", "2"
	c := b
	c.Status.Phase, c.ResourceVersion = v1.PodFailed, "3"
	r.pod("ADDED", nil, &a)
	r.pod("MODIFIED", &a, &b)
	r.pod("MODIFIED", &b, &c)
	if vs := r.Violations(); len(vs) != 0 {
		t.Fatalf("legal history reported: %v", vs)
	}
	d := c
	d.Spec.NodeName, d.Status.Phase, d.ResourceVersion = "node-2", v1.PodRunning, "4"
	r.pod("MODIFIED", &c, &d)
	got := ids(r.Violations())
	if !slices.Contains(got, "SCHED-1") || !slices.Contains(got, "KUBELET-5") {
		t.Fatalf("re-binding and leaving Failed: got %v", got)
	}
	if s := FormatViolations(r.Violations()); !strings.Contains(s, "bound at most once") {
		t.Errorf("report does not carry the property text: %s", s)
	}
}

func TestLivenessCheckReportsUnstableStates(t *testing.T) {
	m, err := NewModel(2)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{abs: NewAbstraction(m)}
	stable := testObservation()
	st := &stable.Deployments[0].Status
	st.Replicas, st.UpdatedReplicas, st.ReadyReplicas, st.AvailableReplicas = 2, 2, 2, 2
	if r := h.unconverged(stable); len(r) != 0 {
		t.Fatalf("stable observation reported: %v", r)
	}
	for _, tc := range []struct {
		id     string
		break_ func(ob *Observation)
	}{
		{"LIVE-1", func(ob *Observation) { ob.Pods[1].Status.Conditions = nil }},
		{"LIVE-2", func(ob *Observation) { ob.Pods[1].OwnerReferences = nil }},
		{"LIVE-3", func(ob *Observation) {
			ob.Sandboxes = append(ob.Sandboxes, Sandbox{ID: "s9", Node: "node-2", PodUID: "gone", PodName: "x", Ready: true, IP: "10.244.1.2"})
		}},
	} {
		ob := testObservation()
		st := &ob.Deployments[0].Status
		st.Replicas, st.UpdatedReplicas, st.ReadyReplicas, st.AvailableReplicas = 2, 2, 2, 2
		tc.break_(ob)
		h.abs.Remember(&v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "gone", Labels: map[string]string{AppLabel: "d1"}},
			Spec: v1.PodSpec{Containers: []v1.Container{{Image: "app:v1"}}}})
		found := false
		for _, r := range h.unconverged(ob) {
			found = found || strings.HasPrefix(r, tc.id)
		}
		if !found {
			t.Errorf("%s: not reported: %v", tc.id, h.unconverged(ob))
		}
	}
}
