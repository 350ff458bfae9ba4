package cluster

import (
	"context"
	"slices"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestBootstrapAggregatedRolesGetRules: in a cluster whose controller
// manager runs as `kubeproof up` runs it (per-controller service account
// credentials under RBAC), the clusterrole-aggregation controller writes
// the rules of the bootstrap aggregated roles, so reading "view", "edit"
// and "admin" shows what they grant (view: get on pods among them), as
// `kubectl get clusterrole view -o yaml` shows on a kubeadm cluster.
func TestBootstrapAggregatedRolesGetRules(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, admin, _ := startForTest(t, Config{DataDir: t.TempDir(), BindAddress: "127.0.0.1:0", WatchCache: true,
		UnsafeNoFsync: true, CompactionInterval: -1, ControllerManager: true})
	deadline := time.Now().Add(time.Minute)
	for _, name := range []string{"view", "edit", "admin"} {
		for {
			r, err := admin.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("getting clusterrole %s: %v", name, err)
			}
			if r.AggregationRule == nil {
				t.Fatalf("clusterrole %s has no aggregationRule", name)
			}
			grantsPodGet := slices.ContainsFunc(r.Rules, func(rule rbacv1.PolicyRule) bool {
				return slices.Contains(rule.Resources, "pods") && slices.Contains(rule.Verbs, "get")
			})
			if grantsPodGet {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("clusterrole %s: no rule granting get on pods written (rules %v)", name, r.Rules)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}
