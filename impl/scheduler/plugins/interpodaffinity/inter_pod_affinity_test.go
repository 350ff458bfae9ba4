package interpodaffinity_test

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	fw "github.com/kubeproof/kubeproof/impl/scheduler/framework"
	ipa "github.com/kubeproof/kubeproof/impl/scheduler/plugins/interpodaffinity"
	tu "github.com/kubeproof/kubeproof/impl/scheduler/testutil"
	"github.com/kubeproof/kubeproof/impl/scheduler/testutil/fwtest"
)

func term(key, value, topologyKey string) v1.PodAffinityTerm {
	return v1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{key: value}}, TopologyKey: topologyKey}
}

func affinity(t v1.PodAffinityTerm) *v1.Affinity {
	return &v1.Affinity{PodAffinity: &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{t}}}
}

func antiAffinity(t v1.PodAffinityTerm) *v1.Affinity {
	return &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{t}}}
}

func TestFilter(t *testing.T) {
	nodes := []*v1.Node{
		tu.Node("a1").Label("zone", "a").Obj(),
		tu.Node("a2").Label("zone", "a").Obj(),
		tu.Node("b1").Label("zone", "b").Obj(),
	}
	tests := []struct {
		name     string
		existing []*v1.Pod
		pod      *v1.Pod
		want     map[string]string
	}{
		{
			name:     "affinity to cache pods in the same zone",
			existing: []*v1.Pod{tu.Pod("cache").Label("app", "cache").Node("a1").Obj()},
			pod:      tu.Pod("web").Affinity(affinity(term("app", "cache", "zone"))).Obj(),
			want:     map[string]string{"a1": "", "a2": "", "b1": ipa.ErrReasonAffinityRulesNotMatch},
		},
		{
			name:     "anti-affinity per host",
			existing: []*v1.Pod{tu.Pod("w1").Label("app", "web").Node("a1").Obj()},
			pod:      tu.Pod("w2").Label("app", "web").Affinity(antiAffinity(term("app", "web", v1.LabelHostname))).Obj(),
			want:     map[string]string{"a1": ipa.ErrReasonAntiAffinityRulesNotMatch, "a2": "", "b1": ""},
		},
		{
			name:     "existing pod's anti-affinity rejects the newcomer in its zone",
			existing: []*v1.Pod{tu.Pod("loner").Affinity(antiAffinity(term("app", "web", "zone"))).Node("b1").Obj()},
			pod:      tu.Pod("web").Label("app", "web").Obj(),
			want:     map[string]string{"a1": "", "a2": "", "b1": ipa.ErrReasonExistingAntiAffinityRulesNotMatch},
		},
		{
			name: "first pod of a self-affine group may go anywhere",
			pod:  tu.Pod("web").Label("app", "web").Affinity(affinity(term("app", "web", "zone"))).Obj(),
			want: map[string]string{"a1": "", "a2": "", "b1": ""},
		},
		{
			name: "affinity to pods that exist nowhere",
			pod:  tu.Pod("web").Affinity(affinity(term("app", "cache", "zone"))).Obj(),
			want: map[string]string{"a1": ipa.ErrReasonAffinityRulesNotMatch, "a2": ipa.ErrReasonAffinityRulesNotMatch, "b1": ipa.ErrReasonAffinityRulesNotMatch},
		},
		{
			name:     "other namespace does not count",
			existing: []*v1.Pod{tu.Pod("cache").Namespace("other").Label("app", "cache").Node("a1").Obj()},
			pod:      tu.Pod("web").Affinity(affinity(term("app", "cache", "zone"))).Obj(),
			want:     map[string]string{"a1": ipa.ErrReasonAffinityRulesNotMatch, "a2": ipa.ErrReasonAffinityRulesNotMatch, "b1": ipa.ErrReasonAffinityRulesNotMatch},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, snap, err := fwtest.New(tt.existing, nodes, nil)
			if err != nil {
				t.Fatal(err)
			}
			state := fw.NewCycleState()
			if s := f.RunPreFilterPlugins(context.Background(), state, tt.pod); !s.IsSuccess() {
				t.Fatal(s)
			}
			for node, want := range tt.want {
				ni, _ := snap.Get(node)
				if got := f.RunFilterPlugins(context.Background(), state, tt.pod, ni); got.Message() != want {
					t.Errorf("node %s: Filter = %v, want %q", node, got, want)
				}
			}
		})
	}
}

func TestScorePreferredAffinity(t *testing.T) {
	nodes := []*v1.Node{tu.Node("a1").Label("zone", "a").Obj(), tu.Node("b1").Label("zone", "b").Obj()}
	existing := []*v1.Pod{tu.Pod("cache").Label("app", "cache").Node("b1").Obj()}
	pod := tu.Pod("web").Affinity(&v1.Affinity{PodAffinity: &v1.PodAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.WeightedPodAffinityTerm{
		{Weight: 50, PodAffinityTerm: term("app", "cache", "zone")},
	}}}).Obj()
	f, snap, err := fwtest.New(existing, nodes, nil)
	if err != nil {
		t.Fatal(err)
	}
	pl, _ := ipa.New(nil, f)
	p := pl.(*ipa.InterPodAffinity)
	state := fw.NewCycleState()
	all, _ := snap.List()
	if s := p.PreScore(context.Background(), state, pod, all); !s.IsSuccess() {
		t.Fatal(s)
	}
	var scores fw.NodeScoreList
	for _, ni := range all {
		s, _ := p.Score(context.Background(), state, pod, ni)
		scores = append(scores, fw.NodeScore{Name: ni.Name(), Score: s})
	}
	p.NormalizeScore(context.Background(), state, pod, scores)
	if scores[0].Score != 0 || scores[1].Score != 100 {
		t.Errorf("scores %v: the zone with the cache pod must score 100, the other 0", scores)
	}
}

func TestNamespaceSelector(t *testing.T) {
	nodes := []*v1.Node{tu.Node("a1").Label("zone", "a").Obj(), tu.Node("b1").Label("zone", "b").Obj()}
	existing := []*v1.Pod{
		tu.Pod("cache-prod").Namespace("prod").Label("app", "cache").Node("a1").Obj(),
		tu.Pod("cache-dev").Namespace("dev").Label("app", "cache").Node("b1").Obj(),
	}
	nsLabels := map[string]labels.Set{"prod": {"env": "prod"}, "dev": {"env": "dev"}}
	tm := term("app", "cache", "zone")
	tm.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
	pod := tu.Pod("web").Affinity(affinity(tm)).Obj()
	f, snap, err := fwtest.New(existing, nodes, nil, fw.WithNamespaceLabels(func(ns string) labels.Set { return nsLabels[ns] }))
	if err != nil {
		t.Fatal(err)
	}
	state := fw.NewCycleState()
	if s := f.RunPreFilterPlugins(context.Background(), state, pod); !s.IsSuccess() {
		t.Fatal(s)
	}
	for node, want := range map[string]string{"a1": "", "b1": ipa.ErrReasonAffinityRulesNotMatch} {
		ni, _ := snap.Get(node)
		if got := f.RunFilterPlugins(context.Background(), state, pod, ni); got.Message() != want {
			t.Errorf("node %s: %v, want %q", node, got, want)
		}
	}
	// An empty namespaceSelector selects every namespace.
	all := term("app", "cache", "zone")
	all.NamespaceSelector = &metav1.LabelSelector{}
	anywhere := tu.Pod("web2").Affinity(affinity(all)).Obj()
	state = fw.NewCycleState()
	f.RunPreFilterPlugins(context.Background(), state, anywhere)
	for _, node := range []string{"a1", "b1"} {
		ni, _ := snap.Get(node)
		if got := f.RunFilterPlugins(context.Background(), state, anywhere, ni); !got.IsSuccess() {
			t.Errorf("node %s: %v", node, got)
		}
	}
}
