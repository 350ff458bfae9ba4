package admission

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// topologyTestNodeLabels are a node's labels: zone and region (copied) beside
// labels that only look like them (not copied), as in upstream's tests
// with the 1.34+ keys.
var topologyTestNodeLabels = map[string]string{
	"topology.kubernetes.io/zone":      "zone-a",
	"topology.kubernetes.io/region":    "region-1",
	"topology.kubernetes.io/arbitrary": "x",
	"sub.topology.kubernetes.io/zone":  "x",
	"topology.k8s.io/zone":             "x",
	"topology.kubernetes.io":           "x",
	"kubernetes.io/hostname":           "n1",
}

func TestWithTopologyLabels(t *testing.T) {
	tests := []struct {
		name             string
		labels, node     map[string]string
		want             map[string]string
		sameAsInput      bool
		inputAfterAdmits map[string]string
	}{
		{name: "zone and region only", node: topologyTestNodeLabels,
			want: map[string]string{"topology.kubernetes.io/zone": "zone-a", "topology.kubernetes.io/region": "region-1"}},
		{name: "kept beside other labels", labels: map[string]string{"app": "web"}, node: map[string]string{"topology.kubernetes.io/zone": "z"},
			want: map[string]string{"app": "web", "topology.kubernetes.io/zone": "z"}},
		{name: "overwrites a value already there", labels: map[string]string{"topology.kubernetes.io/zone": "old"},
			node: map[string]string{"topology.kubernetes.io/zone": "new"}, want: map[string]string{"topology.kubernetes.io/zone": "new"}},
		{name: "node without topology labels", labels: map[string]string{"app": "web"}, node: map[string]string{"topology.k8s.io/zone": "z"},
			want: map[string]string{"app": "web"}, sameAsInput: true},
		{name: "no labels anywhere", want: nil, sameAsInput: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := maps.Clone(tt.labels)
			got := withTopologyLabels(tt.labels, tt.node)
			if !maps.Equal(got, tt.want) || (got == nil) != (tt.want == nil) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			if !maps.Equal(tt.labels, before) {
				t.Fatalf("input changed to %v", tt.labels)
			}
			if tt.sameAsInput && tt.labels != nil && len(got) > 0 {
				got["probe"] = "x"
				if _, ok := tt.labels["probe"]; !ok {
					t.Fatal("nothing to add, yet a new map")
				}
			}
		})
	}
}

func TestTopologyLabelsTarget(t *testing.T) {
	pods := corev1.SchemeGroupVersion.WithResource("pods")
	binding := func(kind string) *corev1.Binding {
		return &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Target: corev1.ObjectReference{Kind: kind, Name: "n1"}}
	}
	bound := newPod("p")
	bound.Spec.NodeName = "n1"
	tests := []struct {
		name     string
		a        *Attributes
		wantNode string
		wantErr  string
	}{
		{name: "binding to a Node", a: &Attributes{Operation: Create, Resource: pods, Subresource: "binding", Object: binding("Node")}, wantNode: "n1"},
		{name: "binding with an empty target kind", a: &Attributes{Operation: Create, Resource: pods, Subresource: "binding", Object: binding("")}},
		{name: "binding to another kind", a: &Attributes{Operation: Create, Resource: pods, Subresource: "binding", Object: binding("Pod")}},
		{name: "pod created bound", a: podCreate(bound), wantNode: "n1"},
		{name: "pod created unbound", a: podCreate(newPod("p"))},
		{name: "pod update", a: &Attributes{Operation: Update, Resource: pods, Object: bound, OldObject: bound}},
		{name: "other subresource", a: &Attributes{Operation: Create, Resource: pods, Subresource: "eviction", Object: &corev1.Pod{}}},
		{name: "other resource", a: &Attributes{Operation: Create, Resource: corev1.SchemeGroupVersion.WithResource("nodes"), Object: &corev1.Node{}}},
		{name: "binding of the wrong type", a: &Attributes{Operation: Create, Resource: pods, Subresource: "binding", Kind: corev1.SchemeGroupVersion.WithKind("Pod"), Object: bound},
			wantErr: "expected Binding but got Pod"},
		{name: "pod of the wrong type", a: &Attributes{Operation: Create, Resource: pods, Object: binding("Node")},
			wantErr: "expected Pod but got *v1.Binding"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			labels, node, err := topologyLabelsTarget(tt.a)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (labels != nil) != (tt.wantNode != "") || node != tt.wantNode {
				t.Fatalf("labels %v node %q, want node %q", labels != nil, node, tt.wantNode)
			}
		})
	}
}

// The plugin on a Binding and on a bound pod create, with nodes from a
// getter: labels go into the Binding's or the pod's labels; a missing
// node adds nothing; another lookup failure is the request's error.
func TestPodTopologyLabelsAdmit(t *testing.T) {
	ctx := context.Background()
	nodes := map[string]*corev1.Node{
		"zoned": {ObjectMeta: metav1.ObjectMeta{Name: "zoned", Labels: topologyTestNodeLabels}},
		"plain": {ObjectMeta: metav1.ObjectMeta{Name: "plain", Labels: map[string]string{"kubernetes.io/hostname": "plain"}}},
	}
	p := &PodTopologyLabels{GetNode: func(_ context.Context, name string) (*corev1.Node, error) {
		if name == "broken" {
			return nil, errors.New("etcd unavailable")
		}
		if n, ok := nodes[name]; ok {
			return n, nil
		}
		return nil, apierrors.NewNotFound(nodeResource, name)
	}}
	zoned := map[string]string{"topology.kubernetes.io/zone": "zone-a", "topology.kubernetes.io/region": "region-1"}
	for node, want := range map[string]map[string]string{"zoned": zoned, "plain": nil, "missing": nil} {
		b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Target: corev1.ObjectReference{Kind: "Node", Name: node}}
		if err := p.Admit(ctx, &Attributes{Operation: Create, Resource: corev1.SchemeGroupVersion.WithResource("pods"), Subresource: "binding", Object: b}); err != nil {
			t.Fatalf("binding to %s: %v", node, err)
		}
		if !maps.Equal(b.Labels, want) {
			t.Fatalf("binding to %s: labels %v, want %v", node, b.Labels, want)
		}
		pod := newPod("p")
		pod.Labels = map[string]string{"app": "web", "topology.kubernetes.io/zone": "mine"}
		pod.Spec.NodeName = node
		if err := p.Admit(ctx, podCreate(pod)); err != nil {
			t.Fatalf("pod on %s: %v", node, err)
		}
		wantPod := map[string]string{"app": "web", "topology.kubernetes.io/zone": "mine"}
		maps.Copy(wantPod, want)
		if !maps.Equal(pod.Labels, wantPod) {
			t.Fatalf("pod on %s: labels %v, want %v", node, pod.Labels, wantPod)
		}
	}
	if !maps.Equal(nodes["zoned"].Labels, topologyTestNodeLabels) {
		t.Fatal("the node's labels were changed")
	}
	b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Target: corev1.ObjectReference{Kind: "Node", Name: "broken"}}
	err := p.Admit(ctx, &Attributes{Operation: Create, Resource: corev1.SchemeGroupVersion.WithResource("pods"), Subresource: "binding", Object: b})
	if err == nil || !strings.Contains(err.Error(), `reading node "broken" for its topology labels: etcd unavailable`) {
		t.Fatalf("lookup failure: %v", err)
	}
}

// PodTopologyLabels is registered on by default, after RuntimeClass and
// the certificate plugins and before the webhooks, as in kube-apiserver's
// plugin order.
func TestPodTopologyLabelsRegistered(t *testing.T) {
	all := AllPlugins()
	i := slices.Index(all, "PodTopologyLabels")
	if i < 0 || i != slices.Index(all, "CertificateSubjectRestriction")+1 || i > slices.Index(all, "MutatingAdmissionWebhook") {
		t.Fatalf("PodTopologyLabels not between CertificateSubjectRestriction and MutatingAdmissionWebhook: %v", all)
	}
	if slices.Index(DefaultPlugins(), "PodTopologyLabels") < 0 {
		t.Fatalf("PodTopologyLabels not on by default: %v", DefaultPlugins())
	}
	st := newMemStores(nodeResource)
	muts, vals, starters, err := NewPlugins([]string{"PodTopologyLabels"}, st)
	if err != nil {
		t.Fatal(err)
	}
	if len(muts) != 1 || len(vals) != 0 || len(starters) != 1 {
		t.Fatalf("mutators %d validators %d starters %d, want 1, 0 and the node cache", len(muts), len(vals), len(starters))
	}
	if _, ok := muts[0].(*PodTopologyLabels); !ok {
		t.Fatalf("mutator %T", muts[0])
	}
}
