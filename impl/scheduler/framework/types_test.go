package framework

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func podRequesting(name, cpu string, extra v1.ResourceList, affinity *v1.Affinity) *v1.Pod {
	req := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse("500Mi")}
	for k, v := range extra {
		req[k] = v
	}
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{"app": "web"}},
		Spec: v1.PodSpec{Affinity: affinity, Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: req}}}}}
}

// Cached pods share their requests and (absent) affinity terms with equal
// ones; what differs stays apart, and every PodInfo reads as computed.
func TestPodInfoSharesEqualRequestsAndNoAffinity(t *testing.T) {
	a, b := NewPodInfo(podRequesting("a", "100m", nil, nil)), NewPodInfo(podRequesting("b", "100m", nil, nil))
	c := NewPodInfo(podRequesting("c", "200m", nil, nil))
	gpu := NewPodInfo(podRequesting("d", "100m", v1.ResourceList{"example.com/gpu": resource.MustParse("1")}, nil))
	anti := &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, TopologyKey: "kubernetes.io/hostname"}}}}
	withAnti := NewPodInfo(podRequesting("e", "100m", nil, anti))

	if a.PodRequestsInfo != b.PodRequestsInfo || a.PodAffinityInfo != b.PodAffinityInfo {
		t.Error("equal requests or absent affinity not shared")
	}
	if c.PodRequestsInfo == a.PodRequestsInfo || c.Requests.MilliCPU != 200 || a.Requests.MilliCPU != 100 || a.Requests.Memory != 500<<20 {
		t.Errorf("requests mixed up: a %+v, c %+v", a.Requests, c.Requests)
	}
	if gpu.PodRequestsInfo == a.PodRequestsInfo || gpu.Requests.ScalarResources["example.com/gpu"] != 1 {
		t.Errorf("extended resources lost or shared: %+v", gpu.Requests)
	}
	if withAnti.PodAffinityInfo == a.PodAffinityInfo || len(withAnti.RequiredAntiAffinityTerms) != 1 || len(a.RequiredAntiAffinityTerms) != 0 {
		t.Errorf("anti-affinity terms: %+v vs %+v", withAnti.PodAffinityInfo, a.PodAffinityInfo)
	}
	want, wantNZ := PodRequests(a.Pod)
	if a.Requests.MilliCPU != want.MilliCPU || a.NonZeroRequests.Memory != wantNZ.Memory {
		t.Errorf("requests %+v / %+v, want %+v / %+v", a.Requests, a.NonZeroRequests, want, wantNZ)
	}
	// Update replaces, never changes, what may be shared.
	shared := *a.PodRequestsInfo
	a.Update(podRequesting("a", "300m", nil, anti))
	if b.Requests.MilliCPU != shared.Requests.MilliCPU || b.RequiredAntiAffinityTerms != nil || a.Requests.MilliCPU != 300 || len(a.RequiredAntiAffinityTerms) != 1 {
		t.Errorf("Update changed a shared value: b %+v %+v, a %+v", b.Requests, b.PodAffinityInfo, a.Requests)
	}
}

// A NodeInfo's facts of its node follow SetNode and RemoveNode, and a
// clone carries them.
func TestNodeInfoFactsFollowItsNode(t *testing.T) {
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: v1.NodeSpec{Unschedulable: true,
		Taints: []v1.Taint{{Key: "a", Effect: v1.TaintEffectPreferNoSchedule}, {Key: "b", Effect: v1.TaintEffectNoSchedule}}}}
	ni := NewNodeInfo()
	ni.SetNode(node)
	for _, n := range []*NodeInfo{ni, ni.Clone()} {
		if n.Name() != "n1" || !n.Unschedulable() || n.Taints() == nil ||
			len(n.Taints().NoScheduleOrNoExecute) != 1 || n.Taints().NoScheduleOrNoExecute[0].Key != "b" ||
			len(n.Taints().PreferNoSchedule) != 1 || n.Taints().PreferNoSchedule[0].Key != "a" {
			t.Fatalf("facts of n1: name %q unschedulable %v taints %+v", n.Name(), n.Unschedulable(), n.Taints())
		}
	}
	ni.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}})
	if ni.Unschedulable() || ni.Taints() != nil {
		t.Fatalf("after an update without them: unschedulable %v taints %+v", ni.Unschedulable(), ni.Taints())
	}
	ni.SetNode(node)
	ni.RemoveNode()
	if ni.Name() != "" || ni.Unschedulable() || ni.Taints() != nil || ni.Node() != nil {
		t.Fatalf("after RemoveNode: name %q unschedulable %v taints %+v", ni.Name(), ni.Unschedulable(), ni.Taints())
	}
}

// RemovePodInfo removes the very PodInfo added, with its requests, ports
// and affinity-list entries, and leaves the others; an absent one is an
// error.
func TestRemovePodInfoUndoesItsAdd(t *testing.T) {
	affinity := &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, TopologyKey: "kubernetes.io/hostname"}}}}
	a := NewPodInfo(podRequesting("a", "1", nil, affinity))
	a.Pod.UID = "ua"
	a.Pod.Spec.Containers[0].Ports = []v1.ContainerPort{{HostPort: 80, ContainerPort: 80}}
	b := NewPodInfo(podRequesting("b", "2", nil, nil))
	b.Pod.UID = "ub"
	ni := NewNodeInfo()
	ni.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}})
	ni.AddPodInfo(a)
	ni.AddPodInfo(b)
	if err := ni.RemovePodInfo(a); err != nil {
		t.Fatal(err)
	}
	if len(ni.Pods) != 1 || ni.Pods[0] != b || ni.Requested.MilliCPU != 2000 ||
		len(ni.PodsWithAffinity) != 0 || len(ni.PodsWithRequiredAntiAffinity) != 0 || ni.UsedPorts.CheckConflict("", "TCP", 80) {
		t.Errorf("after removing a: pods %d, cpu %dm, with affinity %d / %d, port 80 used %v",
			len(ni.Pods), ni.Requested.MilliCPU, len(ni.PodsWithAffinity), len(ni.PodsWithRequiredAntiAffinity), ni.UsedPorts.CheckConflict("", "TCP", 80))
	}
	if err := ni.RemovePodInfo(a); err == nil {
		t.Error("removing a twice succeeded")
	}
	if err := ni.RemovePodInfo(NewPodInfo(b.Pod)); err == nil {
		t.Error("removing another PodInfo of b's pod succeeded: removal is by the PodInfo added")
	}
}

// TestAffinityTermsLeaveLabelKeysToTheAPIServer: a term's matchLabelKeys
// and mismatchLabelKeys are merged into its labelSelector by the API
// server when the pod is created (MatchLabelKeysInPodAffinity); the
// scheduler, as upstream's, parses the selector alone.
func TestAffinityTermsLeaveLabelKeysToTheAPIServer(t *testing.T) {
	anti := &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
		LabelSelector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		MatchLabelKeys:    []string{"hash"},
		MismatchLabelKeys: []string{"tenant"},
		TopologyKey:       "kubernetes.io/hostname"}}}}
	p := podRequesting("a", "100m", nil, anti)
	p.Labels = map[string]string{"app": "web", "hash": "h1", "tenant": "t1"}
	terms := NewPodInfo(p).RequiredAntiAffinityTerms
	if len(terms) != 1 || terms[0].Selector.String() != "app=web" {
		t.Fatalf("terms %+v, want one with selector app=web", terms)
	}
}
