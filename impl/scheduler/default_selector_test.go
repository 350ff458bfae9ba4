package scheduler

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

func TestDefaultSelectorMergesServicesAndTheControllingWorkload(t *testing.T) {
	idx := func(objs ...any) toolscache.Indexer {
		i := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
		for _, o := range objs {
			_ = i.Add(o)
		}
		return i
	}
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: "ns", Name: name} }
	services := corelisters.NewServiceLister(idx(
		&v1.Service{ObjectMeta: meta("web"), Spec: v1.ServiceSpec{Selector: map[string]string{"app": "web"}}},
		&v1.Service{ObjectMeta: meta("tier"), Spec: v1.ServiceSpec{Selector: map[string]string{"tier": "front"}}},
		&v1.Service{ObjectMeta: meta("headless")}, // nil selector selects nothing
		&v1.Service{ObjectMeta: meta("db"), Spec: v1.ServiceSpec{Selector: map[string]string{"app": "db"}}},
	))
	rss := appslisters.NewReplicaSetLister(idx(&appsv1.ReplicaSet{ObjectMeta: meta("web-7f"),
		Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"pod-template-hash": "7f"}}}}))
	sss := appslisters.NewStatefulSetLister(idx(&appsv1.StatefulSet{ObjectMeta: meta("store"),
		Spec: appsv1.StatefulSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "store"}}}}))
	rcs := corelisters.NewReplicationControllerLister(idx(&v1.ReplicationController{ObjectMeta: meta("old"),
		Spec: v1.ReplicationControllerSpec{Selector: map[string]string{"rc": "old"}}}))
	var w workloadListers
	w.services.Store(&services)
	w.replicaSets.Store(&rss)
	w.statefulSets.Store(&sss)
	w.rcs.Store(&rcs)

	owned := func(apiVersion, kind, name string, lbls map[string]string) *v1.Pod {
		p := &v1.Pod{ObjectMeta: meta("p")}
		p.Labels = lbls
		if kind != "" {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, Controller: ptrTo(true)}}
		}
		return p
	}
	tests := []struct {
		name string
		pod  *v1.Pod
		want string
	}{
		{"services selecting the pod", owned("", "", "", map[string]string{"app": "web", "tier": "front"}), "app=web,tier=front"},
		{"no service, no owner", owned("", "", "", map[string]string{"app": "batch"}), ""},
		{"replica set owner", owned("apps/v1", "ReplicaSet", "web-7f", map[string]string{"app": "web", "pod-template-hash": "7f"}), "app=web,pod-template-hash=7f"},
		{"stateful set owner", owned("apps/v1", "StatefulSet", "store", map[string]string{"app": "store"}), "app=store"},
		{"replication controller owner", owned("v1", "ReplicationController", "old", map[string]string{"rc": "old"}), "rc=old"},
		{"owner not found", owned("apps/v1", "ReplicaSet", "gone", map[string]string{"x": "y"}), ""},
		{"unsupported owner kind", owned("batch/v1", "Job", "j", map[string]string{"x": "y"}), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := w.DefaultSelector(tt.pod)
			want, err := labels.Parse(tt.want)
			if err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Errorf("selector %q, want %q", got.String(), want.String())
			}
		})
	}
	var none workloadListers
	if sel := none.DefaultSelector(owned("apps/v1", "ReplicaSet", "web-7f", map[string]string{"app": "web"})); !sel.Empty() {
		t.Errorf("without listers the selector is %q, want empty", sel)
	}
}
