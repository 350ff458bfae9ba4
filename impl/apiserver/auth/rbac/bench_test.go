package rbac_test

import (
	"fmt"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver/auth/bootstrappolicy"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth/rbac"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
	"github.com/kubeproof/kubeproof/impl/controller/clusterroleaggregation"
)

// benchPolicy is the default policy, with the aggregated roles' rules
// written as the clusterrole-aggregation controller writes them, plus 1000
// namespaces with two RoleBindings each.
func benchPolicy() *rbac.Policy {
	var crs []*rbacv1.ClusterRole
	for _, r := range bootstrappolicy.ClusterRoles() {
		crs = append(crs, &r)
	}
	// Sync every aggregated role as the clusterrole-aggregation controller
	// does until a round changes nothing (admin over edit over view takes
	// several rounds).
	for changed := true; changed; {
		changed = false
		for _, r := range crs {
			if r.AggregationRule == nil {
				continue
			}
			rules, err := clusterroleaggregation.AggregatedRules(r, crs)
			if err != nil {
				panic(err)
			}
			if !equality.Semantic.DeepEqual(rules, r.Rules) {
				r.Rules, changed = rules, true
			}
		}
	}
	var crbs []*rbacv1.ClusterRoleBinding
	for _, b := range bootstrappolicy.ClusterRoleBindings() {
		crbs = append(crbs, &b)
	}
	var rbs []*rbacv1.RoleBinding
	for i := 0; i < 1000; i++ {
		ns := fmt.Sprintf("ns-%d", i)
		for _, role := range []string{"edit", "view"} {
			rbs = append(rbs, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: role},
				RoleRef:  rbacv1.RoleRef{Kind: "ClusterRole", Name: role},
				Subjects: []rbacv1.Subject{{Kind: "User", Name: fmt.Sprintf("%s-%d", role, i)}}})
		}
	}
	return rbac.NewPolicy(crs, nil, crbs, rbs)
}

func BenchmarkPolicyAllows(b *testing.B) {
	p := benchPolicy()
	cases := []struct {
		name string
		user *request.User
		info *request.Info
		want bool
	}{
		{"scheduler-bind", &request.User{Name: "system:kube-scheduler", Groups: []string{"system:authenticated"}},
			&request.Info{IsResourceRequest: true, Verb: "create", Resource: "pods", Subresource: "binding", Namespace: "ns-5", Name: "p"}, true},
		{"editor-create-pod", &request.User{Name: "edit-500", Groups: []string{"system:authenticated"}},
			&request.Info{IsResourceRequest: true, Verb: "create", Resource: "pods", Namespace: "ns-500"}, true},
		{"denied", &request.User{Name: "view-7", Groups: []string{"system:authenticated"}},
			&request.Info{IsResourceRequest: true, Verb: "delete", Resource: "pods", Namespace: "ns-7", Name: "p"}, false},
		{"admin", &request.User{Name: "admin", Groups: []string{"system:masters", "system:authenticated"}},
			&request.Info{IsResourceRequest: true, Verb: "create", Resource: "configmaps", Namespace: "ns-1"}, true},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if ok, _ := p.Allows(c.user, c.info); ok != c.want {
					b.Fatalf("allowed=%v", ok)
				}
			}
		})
	}
}
