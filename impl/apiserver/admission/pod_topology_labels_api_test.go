package admission_test

import (
	"context"
	"fmt"
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPodTopologyLabelsThroughTheAPIServer: with the default plugins, a
// pods/binding to a node with zone and region labels leaves exactly those
// two of the node's labels on the pod, in the same write as spec.nodeName;
// a binding to a node without them adds none; labels a client puts on the
// Binding are written to the pod as well (upstream's binding copies every
// label of the Binding); a pod created with spec.nodeName gets them too.
func TestPodTopologyLabelsThroughTheAPIServer(t *testing.T) {
	cs, _ := startServer(t)
	ctx := context.Background()
	core := cs.CoreV1()
	// plain first: the plugin's node cache applies events in order, so once
	// it has zoned it has plain.
	created(core.Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "plain",
		Labels: map[string]string{"kubernetes.io/hostname": "plain"}}}, metav1.CreateOptions{})).must(t, "node plain")
	created(core.Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "zoned", Labels: map[string]string{
		"topology.kubernetes.io/zone": "zone-a", "topology.kubernetes.io/region": "region-1",
		"topology.kubernetes.io/rack": "r1", "kubernetes.io/hostname": "zoned", "topology.k8s.io/zone": "old-domain",
	}}}, metav1.CreateOptions{})).must(t, "node zoned")
	created(core.ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})).must(t, "service account")
	zone := map[string]string{"topology.kubernetes.io/zone": "zone-a", "topology.kubernetes.io/region": "region-1"}
	pod := func(name, node string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	}
	withApp := func(extra map[string]string) map[string]string {
		out := map[string]string{"app": "web"}
		maps.Copy(out, extra)
		return out
	}
	// A pod created bound gets the labels as well; polled with dry runs
	// until the plugin's node cache has the nodes.
	eventually(t, "a dry-run pod created on zoned gets its zone", func() error {
		p, err := core.Pods("default").Create(ctx, pod("dry", "zoned"), dryRun)
		if err != nil {
			return err
		}
		if !maps.Equal(p.Labels, withApp(zone)) {
			return fmt.Errorf("labels %v, want %v", p.Labels, withApp(zone))
		}
		return nil
	})
	for _, tt := range []struct {
		pod, node     string
		bindingLabels map[string]string
		want          map[string]string
	}{
		{"to-zoned", "zoned", nil, withApp(zone)},
		{"to-plain", "plain", nil, withApp(nil)},
		{"client-labels", "plain", map[string]string{"example.com/rack": "r7"}, withApp(map[string]string{"example.com/rack": "r7"})},
	} {
		created(core.Pods("default").Create(ctx, pod(tt.pod, ""), metav1.CreateOptions{})).must(t, "pod "+tt.pod)
		b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: tt.pod, Labels: tt.bindingLabels},
			Target: corev1.ObjectReference{Kind: "Node", Name: tt.node}}
		if err := core.Pods("default").Bind(ctx, b, metav1.CreateOptions{}); err != nil {
			t.Fatalf("binding %s to %s: %v", tt.pod, tt.node, err)
		}
		got, err := core.Pods("default").Get(ctx, tt.pod, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Spec.NodeName != tt.node || !maps.Equal(got.Labels, tt.want) {
			t.Fatalf("pod %s bound to %s: node %q labels %v, want labels %v", tt.pod, tt.node, got.Spec.NodeName, got.Labels, tt.want)
		}
	}
}
