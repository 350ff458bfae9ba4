package deployment

import (
	"fmt"
	"sort"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newDeployment(replicas int32, image string, surge, unavailable intstr.IntOrString) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "d-uid", Generation: 1},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: image}}},
			},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable}},
			RevisionHistoryLimit:    ptr(int32(10)),
			ProgressDeadlineSeconds: ptr(int32(600)),
		},
	}
}

// world is a tiny simulated cluster: the Deployment, its ReplicaSets, and per
// ReplicaSet a count of starting and available pods. The ReplicaSet
// controller and kubelets are modelled by podsTick.
type world struct {
	t        *testing.T
	now      time.Time
	d        *appsv1.Deployment
	rss      map[string]*appsv1.ReplicaSet
	starting map[string]int32
	ready    map[string]int32
	events   []string
	seq      int
}

func newWorld(t *testing.T, d *appsv1.Deployment) *world {
	return &world{t: t, now: t0, d: d, rss: map[string]*appsv1.ReplicaSet{}, starting: map[string]int32{}, ready: map[string]int32{}}
}

func (w *world) list() []*appsv1.ReplicaSet {
	var out []*appsv1.ReplicaSet
	for _, rs := range w.rss {
		out = append(out, rs)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// syncDeployment runs one Deployment sync and applies its plan.
func (w *world) syncDeployment() Plan {
	w.t.Helper()
	plan, err := Decide(Observed{Deployment: w.d, ReplicaSets: w.list(), Now: w.now})
	if err != nil {
		w.t.Fatal(err)
	}
	for _, a := range plan.Actions {
		rs := a.ReplicaSet.DeepCopy()
		switch a.Kind {
		case CreateReplicaSet:
			if _, ok := w.rss[rs.Name]; ok {
				w.t.Fatalf("create of existing replicaset %s", rs.Name)
			}
			w.seq++
			rs.UID = types.UID(fmt.Sprint("rs-", w.seq))
			rs.CreationTimestamp = metav1.NewTime(w.now.Add(time.Duration(w.seq) * time.Millisecond))
			w.rss[rs.Name] = rs
		case UpdateReplicaSet:
			old := w.rss[rs.Name]
			rs.Status = old.Status
			w.rss[rs.Name] = rs
		case DeleteReplicaSet:
			delete(w.rss, rs.Name)
		}
		if a.Event != nil {
			w.events = append(w.events, a.Event.Message)
		}
	}
	if rb := plan.Rollback; rb != nil {
		// An Update: annotations count as spec, so the generation moves;
		// status is the subresource's.
		next := rb.Deployment.DeepCopy()
		next.Generation, next.Status = w.d.Generation+1, w.d.Status
		w.d = next
	}
	if plan.Revision != "" {
		if w.d.Annotations == nil {
			w.d.Annotations = map[string]string{}
		}
		w.d.Annotations[RevisionAnnotation] = plan.Revision
	}
	if plan.Status != nil {
		w.d.Status = *plan.Status
	}
	return plan
}

// podsTick models the ReplicaSet controller and kubelets: surplus pods go
// (starting ones first, as the deletion ranking does), missing pods are
// created as starting, and pods that were starting become available.
func (w *world) podsTick() {
	for name, rs := range w.rss {
		want := replicas(rs)
		st, rd := w.starting[name], w.ready[name]
		// Pods started last tick become available now.
		rd += st
		st = 0
		for st+rd > want {
			if st > 0 {
				st--
			} else {
				rd--
			}
		}
		if st+rd < want {
			st += want - st - rd
		}
		w.starting[name], w.ready[name] = st, rd
		rs.Status.Replicas = st + rd
		rs.Status.ReadyReplicas = rd
		rs.Status.AvailableReplicas = rd
		rs.Status.ObservedGeneration = rs.Generation
	}
	w.now = w.now.Add(time.Second)
}

// checkBounds asserts DEP-rolling-bounds on the simulated cluster.
func (w *world) checkBounds(step int) {
	w.t.Helper()
	d := w.d
	want := *d.Spec.Replicas
	var specTotal, pods, available int32
	for name, rs := range w.rss {
		specTotal += replicas(rs)
		pods += w.starting[name] + w.ready[name]
		available += w.ready[name]
	}
	if specTotal > want+MaxSurge(d) || pods > want+MaxSurge(d) {
		w.t.Fatalf("step %d: %d replicas / %d pods exceed replicas+maxSurge = %d", step, specTotal, pods, want+MaxSurge(d))
	}
	if available < want-MaxUnavailable(d) {
		w.t.Fatalf("step %d: %d available < replicas-maxUnavailable = %d", step, available, want-MaxUnavailable(d))
	}
}

// converge alternates Deployment syncs and pod ticks, checking the bounds
// after every change, until the rollout is complete.
func (w *world) converge(checkBounds bool) int {
	w.t.Helper()
	for step := 0; step < 500; step++ {
		w.syncDeployment()
		if checkBounds {
			w.checkBounds(step)
		}
		w.podsTick()
		if checkBounds {
			w.checkBounds(step)
		}
		c := getCondition(w.d.Status, appsv1.DeploymentProgressing)
		if deploymentComplete(w.d, &w.d.Status) && c != nil && c.Reason == ReasonNewReplicaSetAvailable {
			old := int32(0)
			for _, rs := range w.rss {
				if !EqualIgnoreHash(&rs.Spec.Template, &w.d.Spec.Template) {
					old += replicas(rs) + rs.Status.Replicas
				}
			}
			if old == 0 {
				return step
			}
		}
	}
	w.t.Fatalf("rollout did not complete: status %+v", w.d.Status)
	return 0
}

func (w *world) setImage(image string) {
	w.d.Spec.Template.Spec.Containers[0].Image = image
	w.d.Generation++
}

func TestRollingUpdateBoundsHoldAtEveryStep(t *testing.T) {
	cases := []struct {
		replicas            int32
		surge, unavailable  intstr.IntOrString
		wantSurge, wantUnav int32
	}{
		{10, intstr.FromString("25%"), intstr.FromString("25%"), 3, 2},
		{10, intstr.FromInt32(0), intstr.FromInt32(1), 0, 1},
		{10, intstr.FromInt32(1), intstr.FromInt32(0), 1, 0},
		{5, intstr.FromString("50%"), intstr.FromString("50%"), 3, 2},
		{3, intstr.FromString("10%"), intstr.FromString("10%"), 1, 0},
		{20, intstr.FromInt32(0), intstr.FromInt32(0), 0, 1},
		{1, intstr.FromString("25%"), intstr.FromString("25%"), 1, 0},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%d/%s/%s", tc.replicas, tc.surge.String(), tc.unavailable.String()), func(t *testing.T) {
			d := newDeployment(tc.replicas, "nginx:1", tc.surge, tc.unavailable)
			if MaxSurge(d) != tc.wantSurge || MaxUnavailable(d) != tc.wantUnav {
				t.Fatalf("fenceposts surge=%d unavailable=%d, want %d %d", MaxSurge(d), MaxUnavailable(d), tc.wantSurge, tc.wantUnav)
			}
			w := newWorld(t, d)
			w.converge(false) // initial creation is not a rollout
			if len(w.rss) != 1 || w.d.Annotations[RevisionAnnotation] != "1" {
				t.Fatalf("after create: %d replicasets, revision %q", len(w.rss), w.d.Annotations[RevisionAnnotation])
			}
			w.setImage("nginx:2")
			w.converge(true)
			w.setImage("nginx:3")
			w.converge(true)
			if w.d.Annotations[RevisionAnnotation] != "3" {
				t.Fatalf("revision %q, want 3", w.d.Annotations[RevisionAnnotation])
			}
			if len(w.rss) != 3 {
				t.Fatalf("%d replicasets, want 3 (history kept)", len(w.rss))
			}
			st := w.d.Status
			if st.Replicas != tc.replicas || st.UpdatedReplicas != tc.replicas || st.AvailableReplicas != tc.replicas ||
				st.UnavailableReplicas != 0 || st.ObservedGeneration != w.d.Generation {
				t.Fatalf("final status %+v", st)
			}
			if c := getCondition(st, appsv1.DeploymentAvailable); c == nil || c.Reason != ReasonMinimumReplicasAvailable {
				t.Fatalf("available condition %+v", c)
			}
		})
	}
}

func TestRolloutUndoReusesOldReplicaSet(t *testing.T) {
	w := newWorld(t, newDeployment(4, "nginx:1", intstr.FromInt32(1), intstr.FromInt32(1)))
	w.converge(false)
	w.setImage("nginx:2")
	w.converge(true)
	// kubectl rollout undo copies the revision-1 template back client-side.
	w.setImage("nginx:1")
	w.converge(true)
	if len(w.rss) != 2 {
		t.Fatalf("%d replicasets, want 2 (undo reuses the old one)", len(w.rss))
	}
	for _, rs := range w.rss {
		if rs.Spec.Template.Spec.Containers[0].Image == "nginx:1" {
			if rs.Annotations[RevisionAnnotation] != "3" || rs.Annotations[RevisionHistoryAnnotation] != "1" {
				t.Fatalf("undone replicaset annotations %v", rs.Annotations)
			}
			if replicas(rs) != 4 {
				t.Fatalf("undone replicaset has %d replicas", replicas(rs))
			}
		} else if replicas(rs) != 0 {
			t.Fatalf("old replicaset %s still has %d replicas", rs.Name, replicas(rs))
		}
	}
	if w.d.Annotations[RevisionAnnotation] != "3" {
		t.Fatalf("deployment revision %q, want 3", w.d.Annotations[RevisionAnnotation])
	}
}

func TestRevisionHistoryLimitCleansUp(t *testing.T) {
	d := newDeployment(2, "v0", intstr.FromInt32(1), intstr.FromInt32(0))
	d.Spec.RevisionHistoryLimit = ptr(int32(1))
	w := newWorld(t, d)
	w.converge(false)
	for i := 1; i <= 4; i++ {
		w.setImage(fmt.Sprint("v", i))
		w.converge(true)
		w.syncDeployment() // the sync after completion cleans up
	}
	if len(w.rss) != 2 {
		t.Fatalf("%d replicasets, want new + 1 old", len(w.rss))
	}
	var revs []int64
	for _, rs := range w.rss {
		v, err := Revision(rs)
		if err != nil {
			t.Fatal(err)
		}
		revs = append(revs, v)
	}
	sort.Slice(revs, func(i, j int) bool { return revs[i] < revs[j] })
	if fmt.Sprint(revs) != "[4 5]" {
		t.Fatalf("revisions kept %v, want [4 5]", revs)
	}
}

func TestScaleIsAnEventAndScalesTheOnlyReplicaSet(t *testing.T) {
	w := newWorld(t, newDeployment(20, "nginx", intstr.FromString("25%"), intstr.FromString("25%")))
	w.converge(false)
	w.d.Spec.Replicas = ptr(int32(50))
	w.d.Generation++
	w.converge(false)
	w.d.Spec.Replicas = ptr(int32(5))
	w.d.Generation++
	w.converge(false)
	if len(w.rss) != 1 {
		t.Fatalf("%d replicasets after scaling", len(w.rss))
	}
	want := []string{"Scaled up replica set web-", "from 0 to 20", "from 20 to 50", "Scaled down replica set", "from 50 to 5"}
	all := fmt.Sprint(w.events)
	for _, s := range want {
		if !contains(all, s) {
			t.Errorf("events %v lack %q", w.events, s)
		}
	}
}

func contains(s, sub string) bool {
	return len(sub) == 0 || (len(s) >= len(sub) && (s[:len(sub)] == sub || contains(s[1:], sub)))
}

func TestProportionalScalingMidRollout(t *testing.T) {
	d := newDeployment(10, "v2", intstr.FromInt32(3), intstr.FromInt32(2))
	d.Status.Replicas = 13
	mk := func(name, image string, n int32, created time.Time) *appsv1.ReplicaSet {
		rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name),
			CreationTimestamp: metav1.NewTime(created), Labels: map[string]string{"app": "web"},
			OwnerReferences: []metav1.OwnerReference{ControllerRef(d)},
			Annotations:     map[string]string{DesiredReplicasAnnotation: "10", MaxReplicasAnnotation: "13", RevisionAnnotation: "1"}},
			Spec: appsv1.ReplicaSetSpec{Replicas: ptr(n), Template: *d.Spec.Template.DeepCopy()}}
		rs.Spec.Template.Spec.Containers[0].Image = image
		rs.Status.Replicas = n
		return rs
	}
	old := mk("web-old", "v1", 8, t0)
	newer := mk("web-new", "v2", 5, t0.Add(time.Minute))
	newer.Annotations[RevisionAnnotation] = "2"

	tests := []struct {
		to               int32
		wantOld, wantNew int32
	}{
		{20, 14, 9}, // allowed 20+3=23: 8*23/13≈14, 5*23/13≈9
		{5, 5, 3},   // allowed 5+3=8: 8*8/13≈5, 5*8/13≈3
		{0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint("to ", tt.to), func(t *testing.T) {
			dd := d.DeepCopy()
			dd.Spec.Replicas = ptr(tt.to)
			plan, err := Decide(Observed{Deployment: dd, ReplicaSets: []*appsv1.ReplicaSet{old, newer}, Now: t0})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int32{"web-old": 8, "web-new": 5}
			for _, a := range plan.Actions {
				if a.Kind != UpdateReplicaSet {
					t.Fatalf("unexpected %s of %s", a.Kind, a.ReplicaSet.Name)
				}
				got[a.ReplicaSet.Name] = replicas(a.ReplicaSet)
				if a.ReplicaSet.Annotations[DesiredReplicasAnnotation] != fmt.Sprint(tt.to) {
					t.Errorf("desired-replicas annotation %q", a.ReplicaSet.Annotations[DesiredReplicasAnnotation])
				}
			}
			if got["web-old"] != tt.wantOld || got["web-new"] != tt.wantNew {
				t.Fatalf("old=%d new=%d, want %d %d", got["web-old"], got["web-new"], tt.wantOld, tt.wantNew)
			}
			if sum := got["web-old"] + got["web-new"]; tt.to > 0 && sum > tt.to+MaxSurge(dd) {
				t.Fatalf("total %d exceeds %d", sum, tt.to+MaxSurge(dd))
			}
		})
	}
}

func TestRecreateWaitsForOldPods(t *testing.T) {
	d := newDeployment(3, "v1", intstr.FromInt32(1), intstr.FromInt32(1))
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	w := newWorld(t, d)
	w.converge(false)
	w.setImage("v2")
	plan := w.syncDeployment()
	if len(plan.Actions) != 1 || plan.Actions[0].Kind != UpdateReplicaSet || replicas(plan.Actions[0].ReplicaSet) != 0 {
		t.Fatalf("first step must only scale the old replicaset to 0: %+v", plan.Actions)
	}
	// Old pods still reported: no new replicaset yet.
	if plan := w.syncDeployment(); len(plan.Actions) != 0 {
		t.Fatalf("created while old pods run: %+v", plan.Actions)
	}
	w.podsTick()
	plan = w.syncDeployment()
	if len(plan.Actions) != 1 || plan.Actions[0].Kind != CreateReplicaSet || replicas(plan.Actions[0].ReplicaSet) != 3 {
		t.Fatalf("want the new replicaset created at full size: %+v", plan.Actions)
	}
	// Recreate's availability may drop to 0, but never do old and new run together.
	for i := 0; i < 10; i++ {
		w.podsTick()
		w.syncDeployment()
		running := 0
		for name := range w.rss {
			if w.starting[name]+w.ready[name] > 0 {
				running++
			}
		}
		if running > 1 {
			t.Fatal("old and new pods ran together under Recreate")
		}
	}
}

func TestPausedDeploymentDoesNotRollOut(t *testing.T) {
	w := newWorld(t, newDeployment(2, "v1", intstr.FromInt32(1), intstr.FromInt32(0)))
	w.converge(false)
	w.d.Spec.Paused = true
	w.setImage("v2")
	for i := 0; i < 3; i++ {
		w.syncDeployment()
		w.podsTick()
	}
	if len(w.rss) != 1 {
		t.Fatal("a paused deployment created a new replicaset")
	}
	if c := getCondition(w.d.Status, appsv1.DeploymentProgressing); c == nil || c.Reason != ReasonDeploymentPaused || c.Status != corev1.ConditionUnknown {
		t.Fatalf("progressing condition %+v", c)
	}
	w.d.Spec.Paused = false
	w.syncDeployment()
	if c := getCondition(w.d.Status, appsv1.DeploymentProgressing); c == nil || c.Reason != ReasonDeploymentResumed && c.Reason != ReasonReplicaSetUpdated && c.Reason != ReasonNewReplicaSetCreated {
		t.Fatalf("progressing condition after resume %+v", c)
	}
	w.converge(true)
}

func TestProgressDeadlineExceeded(t *testing.T) {
	w := newWorld(t, newDeployment(2, "v1", intstr.FromInt32(1), intstr.FromInt32(0)))
	w.converge(false)
	w.setImage("v2")
	plan := w.syncDeployment() // creates the new replicaset; its pods never become ready
	if c := getCondition(w.d.Status, appsv1.DeploymentProgressing); c == nil || c.Reason != ReasonNewReplicaSetCreated {
		t.Fatalf("after create: %+v", c)
	}
	if plan.RequeueAfter <= 0 {
		t.Fatal("a rollout in progress must requeue for its deadline")
	}
	w.now = w.now.Add(601 * time.Second)
	w.syncDeployment()
	c := getCondition(w.d.Status, appsv1.DeploymentProgressing)
	if c == nil || c.Reason != ReasonProgressDeadlineExceeded || c.Status != corev1.ConditionFalse {
		t.Fatalf("after deadline: %+v", c)
	}
}

func TestComputeHash(t *testing.T) {
	d := newDeployment(1, "a", intstr.FromInt32(1), intstr.FromInt32(0))
	h1 := ComputeHash(&d.Spec.Template, nil)
	if h1 != ComputeHash(d.Spec.Template.DeepCopy(), nil) {
		t.Fatal("hash not deterministic")
	}
	if h1 == ComputeHash(&d.Spec.Template, ptr(int32(1))) {
		t.Fatal("collision count must change the hash")
	}
	d2 := d.DeepCopy()
	d2.Spec.Template.Spec.Containers[0].Image = "b"
	if h1 == ComputeHash(&d2.Spec.Template, nil) {
		t.Fatal("different templates must hash differently")
	}
	withHash := d.Spec.Template.DeepCopy()
	withHash.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = h1
	if !EqualIgnoreHash(withHash, &d.Spec.Template) || EqualIgnoreHash(&d2.Spec.Template, &d.Spec.Template) {
		t.Fatal("EqualIgnoreHash")
	}
}

func TestClaimReplicaSets(t *testing.T) {
	d := newDeployment(1, "a", intstr.FromInt32(1), intstr.FromInt32(0))
	other := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "x", UID: "x", Controller: ptr(true)}
	rs := func(name string, lbl string, refs ...metav1.OwnerReference) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{"app": lbl}, OwnerReferences: refs}}
	}
	sel, _ := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	adopt, release, owned := ClaimReplicaSets(d, sel, []*appsv1.ReplicaSet{
		rs("orphan", "web"), rs("mine", "web", ControllerRef(d)), rs("relabelled", "x", ControllerRef(d)), rs("theirs", "web", other), rs("unrelated", "x"),
	})
	n := func(l []*appsv1.ReplicaSet) string {
		var s []string
		for _, r := range l {
			s = append(s, r.Name)
		}
		return fmt.Sprint(s)
	}
	if n(adopt) != "[orphan]" || n(release) != "[relabelled]" || n(owned) != "[orphan mine]" {
		t.Fatalf("adopt %s release %s owned %s", n(adopt), n(release), n(owned))
	}
}

// TestProportionalScaleDownLeavesLeftoverAsUpstream pins the one case where
// a sync observes the current generation with the ReplicaSets above
// replicas + maxSurge: upstream's scale gives every active ReplicaSet its
// rounded share of the change and the rounding's leftover to the first one
// (largest, older first when scaling down), clamped at 0. Four ReplicaSets
// of one replica each, scaled from 3 to 1 with maxSurge 1: each share of
// 1×2/4 rounds to 1 (no change), the leftover −2 takes the first to 0, and
// 3 replicas remain against a bound of 2 — the rollout's scale-downs take
// the rest (TestRolloutProperties allows exactly this: DEP-1 in
// spec/README.md).
func TestProportionalScaleDownLeavesLeftoverAsUpstream(t *testing.T) {
	d := newDeployment(1, "v3", intstr.FromInt32(1), intstr.FromInt32(0))
	d.Status.Replicas = 4
	var rss []*appsv1.ReplicaSet
	for i := range 4 {
		name := fmt.Sprint("web-", i)
		rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name),
			CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(i) * time.Minute)), Labels: map[string]string{"app": "web"},
			OwnerReferences: []metav1.OwnerReference{ControllerRef(d)},
			Annotations:     map[string]string{DesiredReplicasAnnotation: "3", MaxReplicasAnnotation: "4", RevisionAnnotation: fmt.Sprint(i + 1)}},
			Spec: appsv1.ReplicaSetSpec{Replicas: ptr(int32(1)), Template: *d.Spec.Template.DeepCopy()}}
		rs.Spec.Template.Spec.Containers[0].Image = fmt.Sprint("v", i)
		rs.Status.Replicas = 1
		rss = append(rss, rs)
	}
	plan, err := Decide(Observed{Deployment: d, ReplicaSets: rss, Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int32{}
	for _, rs := range rss {
		got[rs.Name] = replicas(rs)
	}
	for _, a := range plan.Actions {
		if a.Kind == UpdateReplicaSet {
			got[a.ReplicaSet.Name] = replicas(a.ReplicaSet)
		}
	}
	want := map[string]int32{"web-0": 0, "web-1": 1, "web-2": 1, "web-3": 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("replicas after the scale %v, want %v (upstream's leftover on the oldest, clamped at 0)", got, want)
	}
	if plan.Status == nil || plan.Status.ObservedGeneration != d.Generation {
		t.Fatalf("status %+v: the scaling sync observes the generation, as upstream's", plan.Status)
	}
}
