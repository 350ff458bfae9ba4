package cri

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/e2e/cri/harness"
	"github.com/kubeproof/kubeproof/e2e/cri/images"
)

// TestTwoNodes: a second node whose containerd, bridge and pods live in a
// network namespace of their own, with its own pod subnet. A Deployment
// whose pods must not share a node lands on both; pods on different nodes
// reach each other over HTTP through the routes between the namespaces,
// and the kubelet's readiness probes reach pods on both. The second node is
// removed at the end, so the other tests see one node.
func TestTwoNodes(t *testing.T) {
	ctx := ctxFor(t, 5*time.Minute)
	node2, err := env.AddNode(ctx, harness.NodeOptions{OwnNetNS: true})
	t.Cleanup(func() {
		if node2 != nil {
			if err := env.RemoveNode(context.Background(), node2); err != nil {
				t.Errorf("removing the second node: %v", err)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	ns := newNamespace(t)
	d := httpdDeployment("spread", 2)
	d.Spec.Template.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "spread"}},
			TopologyKey:   v1.LabelHostname,
		}},
	}}
	if _, err := env.Client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := waitPodsReady(t, ns, "app=spread", 2, 90*time.Second)
	byNode := map[string]v1.Pod{}
	for _, p := range pods {
		byNode[p.Spec.NodeName] = p
	}
	a, okA := byNode[node.Name]
	b, okB := byNode[node2.Name]
	if !okA || !okB {
		t.Fatalf("pods not on both nodes: %v", byNode)
	}
	if !inCIDR(a.Status.PodIP, node.PodCIDR) || !inCIDR(b.Status.PodIP, node2.PodCIDR) {
		t.Fatalf("pod IPs %s (%s) and %s (%s) not in their nodes' pod CIDRs %s and %s",
			a.Status.PodIP, a.Spec.NodeName, b.Status.PodIP, b.Spec.NodeName, node.PodCIDR, node2.PodCIDR)
	}
	for _, pair := range [][2]v1.Pod{{a, b}, {b, a}} {
		from, to := pair[0], pair[1]
		out, err := kubectl(t, "exec", "-n", ns, from.Name, "--", "timeout", "3", "wget", "-qO-", "http://"+to.Status.PodIP+"/")
		if err != nil || out != images.IndexHTML {
			t.Fatalf("pod on %s fetching http://%s/ (pod on %s): %q %v", from.Spec.NodeName, to.Status.PodIP, to.Spec.NodeName, out, err)
		}
	}

	if err := env.Client.AppsV1().Deployments(ns).Delete(ctx, "spread", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitNoPods(t, ns, 60*time.Second)
	if !waitUntil(30*time.Second, func() bool {
		sbs, err := node2.CRI.ListPodSandbox(ctx, nil)
		ips, _ := node2.AllocatedIPs()
		return err == nil && len(sbs) == 0 && len(ips) == 0
	}) {
		sbs, _ := node2.CRI.ListPodSandbox(ctx, nil)
		ips, _ := node2.AllocatedIPs()
		t.Fatalf("second node after the deletion: %d sandboxes, IPs still held %v", len(sbs), ips)
	}
}
