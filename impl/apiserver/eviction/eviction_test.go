package eviction

import (
	"context"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// fakeStores are in-memory pods and budgets; conflicts makes the next
// status updates fail with 409 (a concurrent eviction won the CAS).
type fakeStores struct {
	pods      map[string]*corev1.Pod
	pdbs      map[string]*policyv1.PodDisruptionBudget
	deleted   []string
	conflicts int
	updates   int
	// markedAtDelete is, per delete, the pod's DisruptionTarget
	// condition when it was deleted.
	markedAtDelete []*corev1.PodCondition
}

func disruptionTarget(p *corev1.Pod) *corev1.PodCondition {
	for i, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func (f *fakeStores) GetPod(_ context.Context, ns, name string) (*corev1.Pod, error) {
	p, ok := f.pods[name]
	if !ok {
		return nil, apierrors.NewNotFound(corev1.Resource("pods"), name)
	}
	return p.DeepCopy(), nil
}

func (f *fakeStores) UpdatePodStatus(_ context.Context, ns, name string, mutate func(*corev1.Pod) error) (*corev1.Pod, error) {
	p, ok := f.pods[name]
	if !ok {
		return nil, apierrors.NewNotFound(corev1.Resource("pods"), name)
	}
	next := p.DeepCopy()
	if err := mutate(next); err != nil {
		return nil, err
	}
	next.ResourceVersion += "1"
	f.pods[name] = next
	return next.DeepCopy(), nil
}

func (f *fakeStores) DeletePod(_ context.Context, ns, name string, opts *metav1.DeleteOptions) error {
	p := f.pods[name]
	if pre := opts.Preconditions; pre != nil && pre.ResourceVersion != nil && *pre.ResourceVersion != p.ResourceVersion {
		return apierrors.NewConflict(corev1.Resource("pods"), name, nil)
	}
	if len(opts.DryRun) == 0 {
		f.markedAtDelete = append(f.markedAtDelete, disruptionTarget(p))
	}
	f.deleted = append(f.deleted, name)
	if len(opts.DryRun) == 0 {
		delete(f.pods, name)
	}
	return nil
}

func (f *fakeStores) ListBudgets(_ context.Context, ns string) ([]*policyv1.PodDisruptionBudget, error) {
	var out []*policyv1.PodDisruptionBudget
	for _, p := range f.pdbs {
		out = append(out, p.DeepCopy())
	}
	return out, nil
}

func (f *fakeStores) GetBudget(_ context.Context, ns, name string) (*policyv1.PodDisruptionBudget, error) {
	return f.pdbs[name].DeepCopy(), nil
}

func (f *fakeStores) UpdateBudgetStatus(_ context.Context, pdb *policyv1.PodDisruptionBudget) error {
	cur := f.pdbs[pdb.Name]
	if f.conflicts > 0 {
		f.conflicts--
		// Someone else took a disruption meanwhile.
		cur.Status.DisruptionsAllowed--
		cur.ResourceVersion += "x"
		return apierrors.NewConflict(policyv1.Resource("poddisruptionbudgets"), pdb.Name, nil)
	}
	if pdb.ResourceVersion != cur.ResourceVersion {
		return apierrors.NewConflict(policyv1.Resource("poddisruptionbudgets"), pdb.Name, nil)
	}
	f.updates++
	cur.Status = pdb.Status
	return nil
}

var now = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func runningPod(name string, ready bool) *corev1.Pod {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", ResourceVersion: "5", Labels: map[string]string{"app": "web"}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}}}
}

func pdb(name string, allowed, healthy, desired int32) *policyv1.PodDisruptionBudget {
	one := intstr.FromInt32(1)
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Generation: 1, ResourceVersion: "7"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
		Status: policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, DisruptionsAllowed: allowed,
			CurrentHealthy: healthy, DesiredHealthy: desired, ExpectedPods: healthy},
	}
}

func TestEvict(t *testing.T) {
	for _, tc := range []struct {
		name      string
		pod       *corev1.Pod
		pdbs      []*policyv1.PodDisruptionBudget
		conflicts int
		code      int32 // 0: success
		cause     string
		deleted   bool
		allowed   int32 // the first budget's disruptionsAllowed afterwards
	}{
		{"no budget: deleted", runningPod("a", true), nil, 0, 0, "", true, 0},
		{"allowed: decremented and deleted", runningPod("a", true), []*policyv1.PodDisruptionBudget{pdb("b", 2, 3, 1)}, 0, 0, "", true, 1},
		{"none allowed: 429", runningPod("a", true), []*policyv1.PodDisruptionBudget{pdb("b", 0, 1, 1)}, 0, http.StatusTooManyRequests,
			"The disruption budget b needs 1 healthy pods and has 1 currently", false, 0},
		{"not yet observed: 429", runningPod("a", true), []*policyv1.PodDisruptionBudget{func() *policyv1.PodDisruptionBudget {
			p := pdb("b", 1, 2, 1)
			p.Generation = 2
			return p
		}()}, 0, http.StatusTooManyRequests, "The disruption budget b is still being processed by the server.", false, 1},
		{"two budgets: 500", runningPod("a", true), []*policyv1.PodDisruptionBudget{pdb("b", 1, 2, 1), pdb("c", 1, 2, 1)}, 0,
			http.StatusInternalServerError, "", false, 1},
		{"a conflict is retried on the fresh budget", runningPod("a", true), []*policyv1.PodDisruptionBudget{pdb("b", 2, 3, 1)}, 1, 0, "", true, 0},
		{"a conflict that used the last disruption: 429", runningPod("a", true), []*policyv1.PodDisruptionBudget{pdb("b", 1, 2, 1)}, 1,
			http.StatusTooManyRequests, "The disruption budget b needs 1 healthy pods and has 2 currently", false, 0},
		{"unready pod with a healthy budget: deleted, budget untouched", runningPod("a", false), []*policyv1.PodDisruptionBudget{pdb("b", 0, 1, 1)}, 0, 0, "", true, 0},
		{"unready pod with an unhealthy budget: 429", runningPod("a", false), []*policyv1.PodDisruptionBudget{pdb("b", 0, 0, 1)}, 0,
			http.StatusTooManyRequests, "The disruption budget b needs 1 healthy pods and has 0 currently", false, 0},
		{"unready pod, AlwaysAllow: deleted", runningPod("a", false), []*policyv1.PodDisruptionBudget{func() *policyv1.PodDisruptionBudget {
			p := pdb("b", 0, 0, 1)
			p.Spec.UnhealthyPodEvictionPolicy = ptr(policyv1.AlwaysAllow)
			return p
		}()}, 0, 0, "", true, 0},
		{"pending pod ignores budgets", func() *corev1.Pod { p := runningPod("a", true); p.Status.Phase = corev1.PodPending; return p }(),
			[]*policyv1.PodDisruptionBudget{pdb("b", 0, 1, 1)}, 0, 0, "", true, 0},
		{"a budget not selecting the pod is ignored", runningPod("a", true), []*policyv1.PodDisruptionBudget{func() *policyv1.PodDisruptionBudget {
			p := pdb("b", 0, 1, 1)
			p.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}
			return p
		}()}, 0, 0, "", true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeStores{pods: map[string]*corev1.Pod{"a": tc.pod}, pdbs: map[string]*policyv1.PodDisruptionBudget{}, conflicts: tc.conflicts}
			for _, p := range tc.pdbs {
				f.pdbs[p.Name] = p
			}
			e := &Evictor{Pods: f, Budgets: f, Now: func() time.Time { return now }}
			st, err := e.Evict(context.Background(), "ns", "a", &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}})
			if tc.code == 0 {
				if err != nil || st.Status != metav1.StatusSuccess {
					t.Fatalf("Evict: %v %v", st, err)
				}
			} else {
				se, ok := err.(apierrors.APIStatus)
				if !ok || se.Status().Code != tc.code {
					t.Fatalf("Evict error %v, want code %d", err, tc.code)
				}
				if tc.code == http.StatusTooManyRequests {
					s := se.Status()
					if s.Message != MessageViolatesBudget || len(s.Details.Causes) != 1 || s.Details.Causes[0].Message != tc.cause ||
						s.Details.Causes[0].Type != policyv1.DisruptionBudgetCause {
						t.Errorf("status %+v", s)
					}
				}
			}
			if (len(f.deleted) == 1) != tc.deleted {
				t.Errorf("deleted %v, want deleted=%v", f.deleted, tc.deleted)
			}
			if tc.deleted {
				c := f.markedAtDelete[0]
				if c == nil || c.Status != corev1.ConditionTrue || c.Reason != "EvictionByEvictionAPI" || c.Message != "Eviction API: evicting" {
					t.Errorf("pod deleted with DisruptionTarget %+v, want True/EvictionByEvictionAPI", c)
				}
			} else if c := disruptionTarget(f.pods["a"]); c != nil {
				t.Errorf("pod not evicted but marked %+v", c)
			}
			if len(tc.pdbs) > 0 {
				b := f.pdbs[tc.pdbs[0].Name]
				if b.Status.DisruptionsAllowed != tc.allowed {
					t.Errorf("disruptionsAllowed %d, want %d", b.Status.DisruptionsAllowed, tc.allowed)
				}
				if _, recorded := b.Status.DisruptedPods["a"]; recorded != (f.updates > 0) {
					t.Errorf("disruptedPods %v after %d updates", b.Status.DisruptedPods, f.updates)
				}
			}
		})
	}
}

func TestEvictNameMismatchAndMissingPod(t *testing.T) {
	f := &fakeStores{pods: map[string]*corev1.Pod{}}
	e := &Evictor{Pods: f, Budgets: f}
	if _, err := e.Evict(context.Background(), "ns", "a", &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "b"}}); !apierrors.IsBadRequest(err) {
		t.Errorf("mismatched name: %v, want 400", err)
	}
	if _, err := e.Evict(context.Background(), "ns", "a", &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "a"}}); !apierrors.IsNotFound(err) {
		t.Errorf("missing pod: %v, want 404", err)
	}
}

func TestDryRunWritesNothing(t *testing.T) {
	f := &fakeStores{pods: map[string]*corev1.Pod{"a": runningPod("a", true)}, pdbs: map[string]*policyv1.PodDisruptionBudget{"b": pdb("b", 1, 2, 1)}}
	e := &Evictor{Pods: f, Budgets: f}
	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "a"}, DeleteOptions: &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}}
	if _, err := e.Evict(context.Background(), "ns", "a", ev); err != nil {
		t.Fatal(err)
	}
	if f.updates != 0 || f.pdbs["b"].Status.DisruptionsAllowed != 1 {
		t.Errorf("dry run wrote the budget: %+v", f.pdbs["b"].Status)
	}
	if c := disruptionTarget(f.pods["a"]); c != nil {
		t.Errorf("dry run marked the pod: %+v", c)
	}
}

// The delete's preconditions are checked before the pod is marked, and a
// resourceVersion precondition follows the mark's write.
func TestEvictPreconditions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pre     *metav1.Preconditions
		deleted bool
	}{
		{"matching resourceVersion", &metav1.Preconditions{ResourceVersion: ptr("5")}, true},
		{"stale resourceVersion", &metav1.Preconditions{ResourceVersion: ptr("4")}, false},
		{"other uid", &metav1.Preconditions{UID: ptr[types.UID]("other")}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeStores{pods: map[string]*corev1.Pod{"a": runningPod("a", true)}}
			e := &Evictor{Pods: f, Budgets: f}
			_, err := e.Evict(context.Background(), "ns", "a", &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "a"},
				DeleteOptions: &metav1.DeleteOptions{Preconditions: tc.pre}})
			if tc.deleted != (err == nil) || tc.deleted != (len(f.deleted) == 1) {
				t.Fatalf("err %v, deleted %v; want deleted=%v", err, f.deleted, tc.deleted)
			}
			if !tc.deleted {
				if !apierrors.IsConflict(err) {
					t.Fatalf("err %v, want 409", err)
				}
				if c := disruptionTarget(f.pods["a"]); c != nil {
					t.Fatalf("pod marked though its preconditions failed: %+v", c)
				}
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
