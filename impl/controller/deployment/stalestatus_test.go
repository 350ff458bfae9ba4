package deployment

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// An old ReplicaSet the controller has just scaled down still reports its
// former available pods until the ReplicaSet controller catches up. The
// rollout must not count them (DEP-2): found by e2e/props' campaign, where
// replicas 4 / maxUnavailable 1 went to 2 available pods.
func TestStaleOldStatusKeepsMinAvailable(t *testing.T) {
	d := newDeployment(4, "nginx:1", intstr.FromInt32(1), intstr.FromInt32(1))
	w := newWorld(t, d)
	w.converge(false)
	w.setImage("nginx:2")
	byImage := func(img string) string {
		for name, rs := range w.rss {
			if rs.Spec.Template.Spec.Containers[0].Image == img {
				return name
			}
		}
		return ""
	}
	// Syncs with no ReplicaSet controller in between, except that the new
	// ReplicaSet's pods become available: the old one's status stays at its
	// former 4 available pods while its replicas go down.
	for i := 0; i < 6; i++ {
		w.syncDeployment()
		if n := byImage("nginx:2"); n != "" {
			rs := w.rss[n]
			rs.Status.Replicas, rs.Status.ReadyReplicas, rs.Status.AvailableReplicas = replicas(rs), replicas(rs), replicas(rs)
		}
		old, nw := w.rss[byImage("nginx:1")], w.rss[byImage("nginx:2")]
		if nw == nil {
			continue
		}
		// At most replicas(old) of the old pods stay; the new ones count
		// as available once their ReplicaSet says so.
		if avail := replicas(old) + nw.Status.AvailableReplicas; avail < 3 {
			t.Fatalf("sync %d: old replicaset at %d (status still %d available), new %d available: %d < replicas-maxUnavailable 3",
				i, replicas(old), old.Status.AvailableReplicas, nw.Status.AvailableReplicas, avail)
		}
	}
}
