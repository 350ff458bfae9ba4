package defaultpreemption

import (
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fw "github.com/kubeproof/kubeproof/impl/scheduler/framework"
)

func pdb(ns string, allowed int32, selector map[string]string, disrupted ...string) *policyv1.PodDisruptionBudget {
	p := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pdb"},
		Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed},
	}
	if selector != nil {
		p.Spec.Selector = &metav1.LabelSelector{MatchLabels: selector}
	}
	for _, d := range disrupted {
		if p.Status.DisruptedPods == nil {
			p.Status.DisruptedPods = map[string]metav1.Time{}
		}
		p.Status.DisruptedPods[d] = metav1.Now()
	}
	return p
}

func labeledPod(ns, name string, labels map[string]string) *fw.PodInfo {
	return fw.NewPodInfo(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}})
}

func podNames(pis []*fw.PodInfo) []string {
	var out []string
	for _, pi := range pis {
		out = append(out, pi.Pod.Name)
	}
	return out
}

func TestSplitByPDBViolation(t *testing.T) {
	web := map[string]string{"app": "web"}
	tests := []struct {
		name                      string
		pods                      []*fw.PodInfo
		pdbs                      []*policyv1.PodDisruptionBudget
		wantViolating, wantOthers []string
	}{
		{
			name:       "no budgets",
			pods:       []*fw.PodInfo{labeledPod("ns", "a", web)},
			wantOthers: []string{"a"},
		},
		{
			name:          "budget allows none",
			pods:          []*fw.PodInfo{labeledPod("ns", "a", web)},
			pdbs:          []*policyv1.PodDisruptionBudget{pdb("ns", 0, web)},
			wantViolating: []string{"a"},
		},
		{
			name:          "budget allows one: the first (most important) pod uses it",
			pods:          []*fw.PodInfo{labeledPod("ns", "a", web), labeledPod("ns", "b", web), labeledPod("ns", "c", web)},
			pdbs:          []*policyv1.PodDisruptionBudget{pdb("ns", 1, web)},
			wantViolating: []string{"b", "c"},
			wantOthers:    []string{"a"},
		},
		{
			name:       "budget of another namespace",
			pods:       []*fw.PodInfo{labeledPod("ns", "a", web)},
			pdbs:       []*policyv1.PodDisruptionBudget{pdb("other", 0, web)},
			wantOthers: []string{"a"},
		},
		{
			name:       "selector does not match",
			pods:       []*fw.PodInfo{labeledPod("ns", "a", map[string]string{"app": "db"})},
			pdbs:       []*policyv1.PodDisruptionBudget{pdb("ns", 0, web)},
			wantOthers: []string{"a"},
		},
		{
			name:       "empty and nil selectors match nothing",
			pods:       []*fw.PodInfo{labeledPod("ns", "a", web)},
			pdbs:       []*policyv1.PodDisruptionBudget{pdb("ns", 0, map[string]string{}), pdb("ns", 0, nil)},
			wantOthers: []string{"a"},
		},
		{
			name:       "pod without labels",
			pods:       []*fw.PodInfo{labeledPod("ns", "a", nil)},
			pdbs:       []*policyv1.PodDisruptionBudget{pdb("ns", 0, web)},
			wantOthers: []string{"a"},
		},
		{
			name:       "pod already counted in disruptedPods is not charged again",
			pods:       []*fw.PodInfo{labeledPod("ns", "a", web), labeledPod("ns", "b", web)},
			pdbs:       []*policyv1.PodDisruptionBudget{pdb("ns", 1, web, "a")},
			wantOthers: []string{"a", "b"},
		},
		{
			name: "one of two matching budgets exhausted",
			pods: []*fw.PodInfo{labeledPod("ns", "a", map[string]string{"app": "web", "tier": "front"})},
			pdbs: []*policyv1.PodDisruptionBudget{
				pdb("ns", 5, web),
				pdb("ns", 0, map[string]string{"tier": "front"}),
			},
			wantViolating: []string{"a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, o := splitByPDBViolation(tt.pods, tt.pdbs)
			if got := podNames(v); !slices.Equal(got, tt.wantViolating) {
				t.Errorf("violating %v, want %v", got, tt.wantViolating)
			}
			if got := podNames(o); !slices.Equal(got, tt.wantOthers) {
				t.Errorf("non-violating %v, want %v", got, tt.wantOthers)
			}
		})
	}
}

func victim(name string, prio int32, start time.Time) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1.PodSpec{Priority: &prio},
		Status:     v1.PodStatus{StartTime: &metav1.Time{Time: start}},
	}
}

func TestPickOneNodeCriteriaInOrder(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Hour)
	cand := func(node string, violations int, victims ...*v1.Pod) *candidate {
		return &candidate{node: node, victims: victims, numPDBViolations: violations}
	}
	tests := []struct {
		name  string
		cands []*candidate
		want  string
	}{
		{
			name: "fewest PDB violations wins over lower priority victims",
			cands: []*candidate{
				cand("violates", 1, victim("a", 1, t0)),
				cand("respects", 0, victim("b", 100, t0), victim("c", 100, t0)),
			},
			want: "respects",
		},
		{
			name: "equal violations: lowest highest-priority victim",
			cands: []*candidate{
				cand("high", 1, victim("a", 10, t0)),
				cand("low", 1, victim("b", 5, t0), victim("c", 5, t0)),
			},
			want: "low",
		},
		{
			name: "then smallest priority sum",
			cands: []*candidate{
				cand("more", 0, victim("a", 5, t0), victim("b", 5, t0)),
				cand("less", 0, victim("c", 5, t0), victim("d", 1, t0)),
			},
			want: "less",
		},
		{
			name: "then fewest victims",
			cands: []*candidate{
				cand("two", 0, victim("a", -5, t0), victim("b", -5, t0)),
				cand("one", 0, victim("c", -5, t0)),
			},
			want: "one",
		},
		{
			name: "then the latest started highest-priority victims",
			cands: []*candidate{
				cand("old", 0, victim("a", 5, t0)),
				cand("young", 0, victim("b", 5, t1)),
			},
			want: "young",
		},
		{
			name: "all equal: the first listed",
			cands: []*candidate{
				cand("first", 2, victim("a", 5, t0)),
				cand("second", 2, victim("b", 5, t0)),
			},
			want: "first",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i, c := range tt.cands {
				c.index = i
			}
			if got := pickOneNode(tt.cands).node; got != tt.want {
				t.Errorf("picked %s, want %s", got, tt.want)
			}
		})
	}
}
