package props

import (
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func rsVersionOf(name, rv, img string, replicas, available int32) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: rv,
			OwnerReferences: []metav1.OwnerReference{{Kind: "Deployment", Name: "d1", Controller: ptr(true)}}},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr(replicas),
			Template: v1.PodTemplateSpec{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: img}}}}},
		Status: appsv1.ReplicaSetStatus{AvailableReplicas: available},
	}
}

func deploymentOf(img string, replicas int32) *appsv1.Deployment {
	one := intstr.FromInt32(1)
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d1"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr(replicas),
			Strategy: appsv1.DeploymentStrategy{RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &one, MaxUnavailable: &one}},
			Template: v1.PodTemplateSpec{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: img}}}}}}
}

func TestHistoryDEP2(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name         string
		newAvailable int32
		oldTo        int32
		suspect      bool
	}{
		{"old scaled to keep minAvailable with the new pods unready", 0, 3, false},
		{"old scaled below minAvailable counting unready new pods", 0, 2, true},
		{"old scaled down as new pods became available", 2, 1, false},
	} {
		h := newHistory()
		h.deps["d1"] = deploymentOf("app:v2", 4)
		h.replicaSet(rsVersionOf("old", "10", "app:v1", 4, 4), now)
		h.replicaSet(rsVersionOf("new", "11", "app:v2", 1, tc.newAvailable), now)
		h.replicaSet(rsVersionOf("old", "12", "app:v1", tc.oldTo, 4), now)
		if got := len(h.dep2) > 0; got != tc.suspect {
			t.Errorf("%s: DEP-2 suspect %v, want %v (%v)", tc.name, got, tc.suspect, h.dep2)
		}
	}
}

func podVersion(name, uid, rv, node string, phase v1.PodPhase, deleting bool) *v1.Pod {
	p := testPod(name, uid, node, phase, "rs1")
	p.ResourceVersion = rv
	if deleting {
		p.DeletionTimestamp = &metav1.Time{}
	}
	return &p
}

func TestHistoryRS1(t *testing.T) {
	now := time.Now()
	h := newHistory()
	h.replicaSet(&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "rs1", ResourceVersion: "1"}, Spec: appsv1.ReplicaSetSpec{Replicas: ptr(int32(2))}}, now)
	h.pod(podVersion("a", "ua", "2", "", v1.PodPending, false), false, now)
	h.pod(podVersion("b", "ub", "3", "", v1.PodPending, false), false, now)
	h.pod(podVersion("a", "ua", "4", "", v1.PodPending, true), false, now) // a is deleting: inactive
	h.pod(podVersion("c", "uc", "5", "", v1.PodPending, false), false, now)
	if vs := h.rs1(now); len(vs) != 0 {
		t.Fatalf("a replacement for a deleting pod reported: %v", vs)
	}
	h.pod(podVersion("d", "ud", "6", "", v1.PodPending, false), false, now)
	if vs := h.rs1(now); len(vs) != 1 || vs[0].ID != "RS-1" {
		t.Fatalf("a third active pod of a 2-replica ReplicaSet: got %v", vs)
	}
	// Scaled to 3 a moment earlier: the controller may have seen that.
	h = newHistory()
	h.replicaSet(&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "rs1", ResourceVersion: "1"}, Spec: appsv1.ReplicaSetSpec{Replicas: ptr(int32(3))}}, now.Add(-time.Second))
	h.replicaSet(&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "rs1", ResourceVersion: "2"}, Spec: appsv1.ReplicaSetSpec{Replicas: ptr(int32(2))}}, now.Add(-time.Second))
	for i, uid := range []string{"u1", "u2", "u3"} {
		h.pod(podVersion(uid, uid, fmt.Sprint(3+i), "", v1.PodPending, false), false, now)
	}
	if vs := h.rs1(now); len(vs) != 0 {
		t.Fatalf("creations within the lag window of a scale-down reported: %v", vs)
	}
	// A ReplicaSet deleted and created again under its name is another
	// ReplicaSet: the pods of the first do not count against the second.
	h = newHistory()
	first := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "rs1", UID: "A", ResourceVersion: "1"}, Spec: appsv1.ReplicaSetSpec{Replicas: ptr(int32(2))}}
	h.replicaSet(first, now)
	ownedBy := func(name, uid, rv, owner string) *v1.Pod {
		p := podVersion(name, uid, rv, "", v1.PodPending, false)
		p.OwnerReferences[0].UID = types.UID(owner)
		return p
	}
	h.pod(ownedBy("a", "ua", "2", "A"), false, now)
	h.pod(ownedBy("b", "ub", "3", "A"), false, now)
	second := first.DeepCopy()
	second.UID, second.ResourceVersion = "B", "5"
	h.replicaSet(second, now)
	h.pod(ownedBy("c", "uc", "6", "B"), false, now)
	if vs := h.rs1(now); len(vs) != 0 {
		t.Fatalf("a pod of a re-created ReplicaSet counted with the pods of the first: %v", vs)
	}
	h.pod(ownedBy("d", "ud", "7", "B"), false, now)
	h.pod(ownedBy("e", "ue", "8", "B"), false, now)
	if vs := h.rs1(now); len(vs) != 1 {
		t.Fatalf("a third active pod of the re-created 2-replica ReplicaSet: got %v", vs)
	}
}

func nodeWith(name string, capacity int64, taints ...v1.Taint) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeSpec{Taints: taints},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{v1.ResourcePods: *resource.NewQuantity(capacity, resource.DecimalSI)}}}
}

func TestHistoryTaintsAndCapacity(t *testing.T) {
	now := time.Now()
	h := newHistory()
	h.node(nodeWith("n1", 2), now.Add(-time.Minute))
	h.node(nodeWith("n1", 2, ProbeTaint), now.Add(-time.Minute+time.Second))
	h.node(nodeWith("n2", 2), now.Add(-time.Minute))
	h.node(nodeWith("n2", 2, ProbeTaint), now.Add(-time.Second)) // tainted just now: a scheduler may not know
	h.pod(podVersion("a", "ua", "2", "n2", v1.PodPending, false), false, now)
	if vs := h.violations(false, true, now.Add(historySettle)); len(vs) != 0 {
		t.Fatalf("binding within the lag window of a taint reported: %v", vs)
	}
	h.pod(podVersion("b", "ub", "3", "n1", v1.PodPending, false), false, now)
	if got := ids(h.violations(false, true, now.Add(historySettle))); !slices.Equal(got, []string{"SCHED-3"}) {
		t.Fatalf("binding to a long-tainted node: got %v", got)
	}
	// Capacity 2 on n2: a, then c; d is one too many unless a is gone.
	h = newHistory()
	h.node(nodeWith("n2", 2), now.Add(-time.Minute))
	h.pod(podVersion("a", "ua", "2", "n2", v1.PodRunning, false), false, now)
	h.pod(podVersion("c", "uc", "3", "n2", v1.PodRunning, false), false, now)
	h.pod(podVersion("a", "ua", "4", "n2", v1.PodFailed, false), false, now)
	h.pod(podVersion("d", "ud", "5", "n2", v1.PodRunning, false), false, now)
	if vs := h.violations(false, true, now.Add(historySettle)); len(vs) != 0 {
		t.Fatalf("binding into the place of a failed pod reported: %v", vs)
	}
	h.pod(podVersion("e", "ue", "6", "n2", v1.PodRunning, false), false, now)
	if got := ids(h.violations(false, true, now.Add(historySettle))); !slices.Equal(got, []string{"SCHED-2"}) {
		t.Fatalf("third pod on a node of two: got %v", got)
	}
	// Evictions from a node tainted after the pods were bound.
	evict := func(tols []v1.Toleration) []string {
		h := newHistory()
		h.node(nodeWith("n1", 5), now.Add(-time.Minute))
		p := podVersion("f", "uf", "7", "n1", v1.PodRunning, false)
		p.Spec.Tolerations = tols
		h.pod(p, false, now.Add(-50*time.Second))
		h.node(nodeWith("n1", 5, ProbeTaint), now.Add(-40*time.Second))
		e := p.DeepCopy()
		e.ResourceVersion = "9"
		e.Status.Conditions = append(e.Status.Conditions, v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: "DeletionByTaintManager"})
		h.pod(e, false, now)
		return ids(h.violations(false, false, now.Add(historySettle)))
	}
	if got := evict(probeTolerations("d2")); !slices.Equal(got, []string{"GC-1"}) {
		t.Fatalf("eviction of a pod tolerating the taint forever: got %v", got)
	}
	if got := evict(nil); len(got) != 0 {
		t.Fatalf("eviction of a pod not tolerating the taint reported: %v", got)
	}
}

// Nodes and pods come through separate watches: the taint behind an
// eviction (written first) may reach the recorder after the eviction. The
// history waits historySettle before judging the eviction and places the
// taint by its revision, not by when it arrived.
func TestHistoryJudgesByRevisionAfterSettling(t *testing.T) {
	now := time.Now()
	h := newHistory()
	untainted := nodeWith("n1", 5)
	untainted.ResourceVersion = "5"
	h.node(untainted, now.Add(-time.Minute))
	p := podVersion("f", "uf", "6", "n1", v1.PodRunning, false)
	h.pod(p, false, now.Add(-50*time.Second))

	e := p.DeepCopy()
	e.ResourceVersion = "9"
	e.Status.Conditions = append(e.Status.Conditions, v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: "DeletionByTaintManager"})
	h.pod(e, false, now)
	// Checked at once, before the taint arrived: not judged yet.
	if vs := h.violations(false, false, now); len(vs) != 0 {
		t.Fatalf("an eviction judged before it settled: %v", vs)
	}
	tainted := nodeWith("n1", 5, ProbeTaint)
	tainted.ResourceVersion = "8"
	h.node(tainted, now.Add(100*time.Millisecond))
	if vs := h.violations(false, false, now.Add(historySettle)); len(vs) != 0 {
		t.Fatalf("an eviction caused by a taint that arrived after it reported: %v", vs)
	}

	// A node version written after the eviction is not what the taint
	// manager saw, however early it arrived.
	h = newHistory()
	h.node(untainted, now.Add(-time.Minute))
	h.pod(p, false, now.Add(-50*time.Second))
	later := nodeWith("n1", 5, ProbeTaint)
	later.ResourceVersion = "10"
	h.node(later, now.Add(-time.Second))
	h.pod(e, false, now)
	if got := ids(h.violations(false, false, now.Add(historySettle))); !slices.Equal(got, []string{"GC-1"}) {
		t.Fatalf("an eviction before any taint: got %v, want GC-1", got)
	}
}
