package replicaset

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeproof/kubeproof/impl/controller/expectations"
)

var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func newRS(name string, replicas int32) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), Generation: 2},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name, "tier": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
			},
		},
	}
}

type podOpt func(*corev1.Pod)

func newPod(name string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("pod-" + name),
		Labels: map[string]string{"app": "web"}}}
	p.Status.Phase = corev1.PodRunning
	for _, o := range opts {
		o(p)
	}
	return p
}

func ownedBy(rs *appsv1.ReplicaSet) podOpt {
	return func(p *corev1.Pod) { p.OwnerReferences = []metav1.OwnerReference{ControllerRef(rs)} }
}
func labelled(k, v string) podOpt     { return func(p *corev1.Pod) { p.Labels = map[string]string{k: v} } }
func onNode(n string) podOpt          { return func(p *corev1.Pod) { p.Spec.NodeName = n } }
func phase(ph corev1.PodPhase) podOpt { return func(p *corev1.Pod) { p.Status.Phase = ph } }
func deleting() podOpt {
	return func(p *corev1.Pod) { t := metav1.NewTime(now); p.DeletionTimestamp = &t }
}
func readySince(t time.Time) podOpt {
	return func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t)}}
	}
}
func created(t time.Time) podOpt {
	return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(t) }
}
func restarts(n int32) podOpt {
	return func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", RestartCount: n}}
	}
}
func cost(c string) podOpt {
	return func(p *corev1.Pod) { p.Annotations = map[string]string{PodDeletionCostAnnotation: c} }
}

func names(pods []*corev1.Pod) []string {
	out := []string{}
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func TestDecide(t *testing.T) {
	rs := newRS("web", 3)
	other := newRS("other", 1)
	deletingRS := newRS("web", 3)
	ts := metav1.NewTime(now)
	deletingRS.DeletionTimestamp = &ts
	many := newRS("web", 2000)

	tests := []struct {
		name                  string
		rs                    *appsv1.ReplicaSet
		pods                  []*corev1.Pod
		unsatisfied           bool
		create                int
		deleteN               int
		adopt, release, owned []string
	}{
		{name: "creates missing pods", rs: rs, create: 3, adopt: []string{}, release: []string{}, owned: []string{}},
		{name: "burst caps creations at 500", rs: many, create: BurstReplicas, adopt: []string{}, release: []string{}, owned: []string{}},
		{name: "stale cache: expectations unsatisfied, nothing created", rs: rs, unsatisfied: true,
			adopt: []string{}, release: []string{}, owned: []string{}},
		{name: "steady state", rs: rs, pods: []*corev1.Pod{newPod("a", ownedBy(rs)), newPod("b", ownedBy(rs)), newPod("c", ownedBy(rs))},
			adopt: []string{}, release: []string{}, owned: []string{"a", "b", "c"}},
		{name: "finished and deleting pods do not count", rs: rs,
			pods:   []*corev1.Pod{newPod("a", ownedBy(rs)), newPod("f", ownedBy(rs), phase(corev1.PodFailed)), newPod("s", ownedBy(rs), phase(corev1.PodSucceeded)), newPod("d", ownedBy(rs), deleting())},
			create: 2, adopt: []string{}, release: []string{}, owned: []string{"a"}},
		{name: "adopts matching orphans, ignores deleting orphans and pods of others", rs: rs,
			pods:   []*corev1.Pod{newPod("orphan"), newPod("gone", deleting()), newPod("theirs", ownedBy(other)), newPod("nomatch", labelled("app", "x"))},
			create: 2, adopt: []string{"orphan"}, release: []string{}, owned: []string{"orphan"}},
		{name: "releases owned pods that stop matching", rs: rs,
			pods:   []*corev1.Pod{newPod("a", ownedBy(rs)), newPod("relabelled", ownedBy(rs), labelled("app", "debug"))},
			create: 2, adopt: []string{}, release: []string{"relabelled"}, owned: []string{"a"}},
		{name: "a ReplicaSet being deleted adopts, releases and creates nothing", rs: deletingRS,
			pods:  []*corev1.Pod{newPod("orphan"), newPod("relabelled", ownedBy(rs), labelled("app", "debug"))},
			adopt: []string{}, release: []string{}, owned: []string{}},
		{name: "scales down surplus", rs: rs,
			pods:    []*corev1.Pod{newPod("a", ownedBy(rs)), newPod("b", ownedBy(rs)), newPod("c", ownedBy(rs)), newPod("d", ownedBy(rs)), newPod("e", ownedBy(rs))},
			deleteN: 2, adopt: []string{}, release: []string{}, owned: []string{"a", "b", "c", "d", "e"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan, err := Decide(Observed{RS: tt.rs, Pods: tt.pods, ExpectationsSatisfied: !tt.unsatisfied, Now: now})
			if err != nil {
				t.Fatal(err)
			}
			if plan.Create != tt.create || len(plan.Delete) != tt.deleteN {
				t.Errorf("create=%d delete=%d, want %d, %d", plan.Create, len(plan.Delete), tt.create, tt.deleteN)
			}
			for _, c := range []struct {
				what      string
				got, want []string
			}{{"adopt", names(plan.Adopt), tt.adopt}, {"release", names(plan.Release), tt.release}, {"owned", names(plan.Owned), tt.owned}} {
				if fmt.Sprint(c.got) != fmt.Sprint(c.want) {
					t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
				}
			}
		})
	}
}

func TestDeletionRanking(t *testing.T) {
	old := now.Add(-10 * time.Hour)
	recent := now.Add(-10 * time.Second)
	tests := []struct {
		name           string
		first, second  *corev1.Pod
		firstColocated int
	}{
		{"unassigned before assigned", newPod("a"), newPod("b", onNode("n1")), 0},
		{"pending before unknown", newPod("a", onNode("n"), phase(corev1.PodPending)), newPod("b", onNode("n"), phase(corev1.PodUnknown)), 0},
		{"unknown before running", newPod("a", onNode("n"), phase(corev1.PodUnknown)), newPod("b", onNode("n")), 0},
		{"not ready before ready", newPod("a", onNode("n")), newPod("b", onNode("n"), readySince(old)), 0},
		{"lower deletion cost first", newPod("a", onNode("n"), readySince(old), cost("-5")), newPod("b", onNode("n"), readySince(old), cost("10")), 0},
		{"doubled-up node first", newPod("a", onNode("n"), readySince(old)), newPod("b", onNode("m"), readySince(old)), 3},
		{"more recently ready first", newPod("a", onNode("n"), readySince(recent)), newPod("b", onNode("n"), readySince(old)), 0},
		{"more restarts first", newPod("a", onNode("n"), restarts(7)), newPod("b", onNode("n"), restarts(1)), 0},
		{"newer first", newPod("a", onNode("n"), created(recent)), newPod("b", onNode("n"), created(old)), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := rankedPod{pod: tt.first, colocated: tt.firstColocated}
			b := rankedPod{pod: tt.second}
			if !Less(a, b, now) {
				t.Errorf("%s should be deleted before %s", tt.first.Name, tt.second.Name)
			}
			if Less(b, a, now) {
				t.Errorf("order must be antisymmetric")
			}
		})
	}
}

func TestPodsToDeletePrefersCrowdedNodes(t *testing.T) {
	rs := newRS("web", 1)
	p1 := newPod("p1", ownedBy(rs), onNode("n1"), readySince(now.Add(-time.Hour)))
	p2 := newPod("p2", ownedBy(rs), onNode("n2"), readySince(now.Add(-time.Hour)))
	sibling := newPod("s", onNode("n2"))
	got := PodsToDelete([]*corev1.Pod{p1, p2}, []*corev1.Pod{p1, p2, sibling}, 1, now)
	if names(got)[0] != "p2" {
		t.Fatalf("want p2 (shares n2 with a sibling), got %v", names(got))
	}
}

// TestStaleCacheNeverOvercreates replays the classic stale-cache race: the
// controller creates pods, then syncs again before its cache has seen them.
func TestStaleCacheNeverOvercreates(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(now)
	exp := expectations.New(clk)
	rs := newRS("web", 3)
	key := "ns/web"
	var cache []*corev1.Pod
	totalCreated := 0
	syncOnce := func() {
		plan, err := Decide(Observed{RS: rs, Pods: cache, ExpectationsSatisfied: exp.Satisfied(key), Now: clk.Now()})
		if err != nil {
			t.Fatal(err)
		}
		if plan.Create > 0 {
			exp.ExpectCreations(key, plan.Create)
			totalCreated += plan.Create
		}
	}
	syncOnce() // creates 3; the cache has not seen them
	syncOnce() // stale: must not create again
	syncOnce()
	if totalCreated != 3 {
		t.Fatalf("created %d pods, want 3", totalCreated)
	}
	for i := 0; i < 2; i++ { // two of three adds arrive
		cache = append(cache, newPod(fmt.Sprint("p", i), ownedBy(rs)))
		exp.CreationObserved(key)
	}
	syncOnce()
	if totalCreated != 3 {
		t.Fatalf("created %d pods with one add still in flight, want 3", totalCreated)
	}
	cache = append(cache, newPod("p2", ownedBy(rs)))
	exp.CreationObserved(key)
	syncOnce()
	if totalCreated != 3 {
		t.Fatalf("created %d pods at steady state, want 3", totalCreated)
	}
	// A lost event: after the expectations expire, the controller trusts its
	// cache again and heals the difference.
	rs.Spec.Replicas = ptr(int32(5))
	syncOnce()
	if totalCreated != 5 {
		t.Fatalf("created %d, want 5", totalCreated)
	}
	clk.SetTime(clk.Now().Add(expectations.Timeout + time.Second))
	syncOnce()
	if totalCreated != 7 {
		t.Fatalf("after expiry: created %d, want 7 (cache shows 3 of 5)", totalCreated)
	}
}

func ptr[T any](v T) *T { return &v }

func TestCreateInBatchesSlowStart(t *testing.T) {
	var calls atomic.Int32
	created, err := CreateInBatches(20, func() error {
		if calls.Add(1) == 4 { // the fourth call fails: batch 3 (size 4) is the last
			return errors.New("quota exceeded")
		}
		return nil
	})
	if err == nil {
		t.Fatal("want the failing batch's error")
	}
	if calls.Load() != 7 || created != 6 {
		t.Fatalf("calls=%d created=%d, want 7 calls (1+2+4) and 6 created", calls.Load(), created)
	}
	calls.Store(0)
	created, err = CreateInBatches(10, func() error { calls.Add(1); return nil })
	if err != nil || created != 10 || calls.Load() != 10 {
		t.Fatalf("created=%d calls=%d err=%v", created, calls.Load(), err)
	}
}

func TestCalculateStatus(t *testing.T) {
	rs := newRS("web", 3)
	rs.Spec.MinReadySeconds = 30
	owned := []*corev1.Pod{
		newPod("a", labelled("app", "web"), readySince(now.Add(-time.Minute))),
		newPod("b", readySince(now.Add(-10*time.Second))),
		newPod("c"),
	}
	owned[1].Labels = map[string]string{"app": "web", "tier": "web"}
	st := CalculateStatus(rs, owned, nil, nil, false, now)
	if st.Replicas != 3 || st.FullyLabeledReplicas != 1 || st.ReadyReplicas != 2 || st.AvailableReplicas != 1 || st.ObservedGeneration != 2 {
		t.Fatalf("status = %+v", st)
	}
	if d := RequeueAfterForAvailability(rs, owned, now); d != 20*time.Second {
		t.Fatalf("requeue after %v, want 20s", d)
	}
	rs.Status = CalculateStatus(rs, owned, nil, errors.New("forbidden: exceeded quota"), true, now)
	if len(rs.Status.Conditions) != 1 || rs.Status.Conditions[0].Reason != ReasonFailedCreate ||
		rs.Status.Conditions[0].Type != appsv1.ReplicaSetReplicaFailure {
		t.Fatalf("conditions = %+v", rs.Status.Conditions)
	}
	if st := CalculateStatus(rs, owned, nil, nil, false, now); len(st.Conditions) != 0 {
		t.Fatalf("condition must clear after a successful sync: %+v", st.Conditions)
	}
}

// TestTerminatingReplicas: status.terminatingReplicas counts the pods the
// ReplicaSet controls, matching its selector, that are being deleted and not
// yet Succeeded or Failed (upstream DeploymentReplicaSetTerminatingReplicas,
// beta and on by default since 1.35), also while expectations are pending.
func TestTerminatingReplicas(t *testing.T) {
	rs := newRS("web", 2)
	other := newRS("other", 1)
	pods := []*corev1.Pod{
		newPod("a", ownedBy(rs)),
		newPod("b", ownedBy(rs), deleting()),
		newPod("c", ownedBy(rs), deleting()),
		newPod("failed", ownedBy(rs), deleting(), phase(corev1.PodFailed)),
		newPod("done", ownedBy(rs), deleting(), phase(corev1.PodSucceeded)),
		newPod("orphan", deleting()),
		newPod("theirs", ownedBy(other), deleting()),
		newPod("relabelled", ownedBy(rs), deleting(), labelled("app", "debug")),
	}
	for _, satisfied := range []bool{true, false} {
		plan, err := Decide(Observed{RS: rs, Pods: pods, ExpectationsSatisfied: satisfied, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(names(plan.Terminating)); got != "[b c]" {
			t.Fatalf("satisfied=%v: terminating = %s, want [b c]", satisfied, got)
		}
		st := CalculateStatus(rs, plan.Owned, plan.Terminating, nil, false, now)
		if st.TerminatingReplicas == nil || *st.TerminatingReplicas != 2 || st.Replicas != 1 {
			t.Fatalf("status replicas=%d terminatingReplicas=%v, want 1 and 2", st.Replicas, st.TerminatingReplicas)
		}
	}
	if st := CalculateStatus(rs, nil, nil, nil, false, now); st.TerminatingReplicas == nil || *st.TerminatingReplicas != 0 {
		t.Fatalf("no terminating pods: terminatingReplicas = %v, want 0 (set, not omitted)", st.TerminatingReplicas)
	}
}
