package bootstrappolicy_test

import (
	"context"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver/auth/bootstrappolicy"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth/rbac"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// TestAggregatorWritesAggregatedRules: admin, edit and view get the rules
// of their aggregate-to-* roles written into them, a ClusterRole added
// later with the aggregate-to-view label reaches view, edit and admin, and
// its rules leave them again when it loses the label, moves to edit's
// label or is deleted.
func TestAggregatorWritesAggregatedRules(t *testing.T) {
	s := newStores(t)
	ctx, cancel := context.WithCancel(context.Background())
	if err := bootstrappolicy.Ensure(ctx, s); err != nil {
		t.Fatal(err)
	}
	ag, err := rbac.NewAggregator(s)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { ag.Run(ctx); close(done) }()
	defer func() {
		cancel()
		<-done
		checkNoLeak(t)
	}()

	grants := func(role string, info *request.Info) bool {
		return rbac.RulesAllow(info, getClusterRole(t, s, role).Rules...)
	}
	eventually := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("%s never happened", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	createPods := &request.Info{IsResourceRequest: true, Verb: "create", Resource: "pods", Namespace: "ns"}
	readLogs := &request.Info{IsResourceRequest: true, Verb: "get", Resource: "pods", Subresource: "log", Namespace: "ns", Name: "p"}
	bindRoles := &request.Info{IsResourceRequest: true, Verb: "create", APIGroup: "rbac.authorization.k8s.io", Resource: "rolebindings", Namespace: "ns"}
	eventually("view reads logs", func() bool { return grants("view", readLogs) })
	eventually("edit creates pods and reads logs", func() bool { return grants("edit", createPods) && grants("edit", readLogs) })
	eventually("admin binds roles, creates pods, reads logs", func() bool {
		return grants("admin", bindRoles) && grants("admin", createPods) && grants("admin", readLogs)
	})
	if grants("view", createPods) || grants("edit", bindRoles) {
		t.Fatal("aggregation leaked rules upwards")
	}

	widgets := &request.Info{IsResourceRequest: true, Verb: "list", APIGroup: "example.com", Resource: "widgets", Namespace: "ns"}
	create(t, s, rbacv1.Resource("clusterroles"), "", "widget-viewer", &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "widget-viewer", Labels: map[string]string{"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
		Rules:      []rbacv1.PolicyRule{{Verbs: []string{"list"}, APIGroups: []string{"example.com"}, Resources: []string{"widgets"}}},
	})
	eventually("a new aggregate-to-view role reaches view, edit and admin", func() bool {
		return grants("view", widgets) && grants("edit", widgets) && grants("admin", widgets)
	})

	// As upstream's controller, whose sync recomputes the union from the
	// roles selected now: a role no longer selected, then one deleted,
	// takes its rules out of every role that aggregated it.
	updateClusterRole(t, s, "widget-viewer", func(r *rbacv1.ClusterRole) { r.Labels = nil })
	eventually("an unlabelled role's rules leave view, edit and admin", func() bool {
		return !grants("view", widgets) && !grants("edit", widgets) && !grants("admin", widgets)
	})
	if !grants("admin", readLogs) || !grants("view", readLogs) {
		t.Fatal("removing one role's rules removed others")
	}
	updateClusterRole(t, s, "widget-viewer", func(r *rbacv1.ClusterRole) {
		r.Labels = map[string]string{"rbac.authorization.k8s.io/aggregate-to-edit": "true"}
	})
	eventually("a role relabelled aggregate-to-edit reaches edit and admin", func() bool {
		return !grants("view", widgets) && grants("edit", widgets) && grants("admin", widgets)
	})
	gr := rbacv1.Resource("clusterroles")
	st, _ := s.Store(gr)
	if err := st.Delete(ctx, s.ObjectKey(gr, "", "widget-viewer"), &rbacv1.ClusterRole{}, nil, nil); err != nil {
		t.Fatal(err)
	}
	eventually("a deleted role's rules leave edit and admin", func() bool {
		return !grants("edit", widgets) && !grants("admin", widgets) && grants("admin", createPods)
	})
}
