package bootstrappolicy_test

import (
	"context"
	"reflect"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/component-helpers/auth/rbac/validation"

	"github.com/kubeproof/kubeproof/impl/apiserver/auth/bootstrappolicy"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth/rbac/objcache/objcachetest"
)

func defaultClusterRole(t *testing.T, name string) rbacv1.ClusterRole {
	t.Helper()
	for _, r := range bootstrappolicy.ClusterRoles() {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no default clusterrole %s", name)
	return rbacv1.ClusterRole{}
}

// TestEnsureAddsOnlyUncoveredRules: as kube-apiserver's reconciliation
// (computeReconciledRole, validation.Covers), a stored role gets only the
// pieces of the default rules its own rules, taken together, do not
// allow, each as one verb on one resource (and name); a stored broader
// rule, or the defaults split over several stored rules, gets nothing
// added and the role is not written. Rules used to be matched by
// equality, so each of these got whole default rules appended.
func TestEnsureAddsOnlyUncoveredRules(t *testing.T) {
	const name = "system:kube-scheduler"
	def := defaultClusterRole(t, name)
	var brokenDown []rbacv1.PolicyRule
	for _, r := range def.Rules {
		brokenDown = append(brokenDown, validation.BreakdownRule(r)...)
	}
	leaseGet := rbacv1.PolicyRule{Verbs: []string{"get", "update"}, APIGroups: []string{"coordination.k8s.io"},
		Resources: []string{"leases"}, ResourceNames: []string{"kube-scheduler"}}
	var withoutLeaseUpdate []rbacv1.PolicyRule
	found := false
	for _, r := range def.Rules {
		if reflect.DeepEqual(r, leaseGet) {
			found = true
			r = *r.DeepCopy()
			r.Verbs = []string{"get"}
		}
		withoutLeaseUpdate = append(withoutLeaseUpdate, r)
	}
	if !found {
		t.Fatalf("default %s has no rule %+v", name, leaseGet)
	}
	tests := []struct {
		name   string
		stored []rbacv1.PolicyRule
		added  []rbacv1.PolicyRule // nil: the role is not written
	}{
		{name: "a wildcard rule covers every default",
			stored: []rbacv1.PolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}}},
		{name: "the defaults split into one rule per verb and resource", stored: brokenDown},
		{name: "one verb of one default rule missing", stored: withoutLeaseUpdate,
			added: []rbacv1.PolicyRule{{Verbs: []string{"update"}, APIGroups: []string{"coordination.k8s.io"},
				Resources: []string{"leases"}, ResourceNames: []string{"kube-scheduler"}}}},
		{name: "a subresource wildcard covers pods/binding and pods/status", stored: func() []rbacv1.PolicyRule {
			var out []rbacv1.PolicyRule
			for _, r := range brokenDown {
				if r.Resources[0] != "pods/binding" && r.Resources[0] != "pods/status" {
					out = append(out, r)
				}
			}
			return append(out, rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{""}, Resources: []string{"*/binding", "*/status"}})
		}()},
		{name: "every rule missing", stored: []rbacv1.PolicyRule{}, added: brokenDown},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newStores(t)
			ctx := context.Background()
			c := objcachetest.PolicyClient{Stores: s}
			if err := bootstrappolicy.Ensure(ctx, c); err != nil {
				t.Fatal(err)
			}
			updateClusterRole(t, s, name, func(r *rbacv1.ClusterRole) { r.Rules = tc.stored })
			before := getClusterRole(t, s, name)
			if err := bootstrappolicy.Ensure(ctx, c); err != nil {
				t.Fatal(err)
			}
			got := getClusterRole(t, s, name)
			n := min(len(tc.stored), len(got.Rules))
			if kept := got.Rules[:n]; n != len(tc.stored) || (n > 0 && !reflect.DeepEqual(kept, tc.stored)) {
				t.Errorf("stored rules not kept as they were: %d of %d left", n, len(tc.stored))
			}
			if added := got.Rules[n:]; len(added) != len(tc.added) || (len(added) > 0 && !reflect.DeepEqual(added, tc.added)) {
				t.Errorf("rules added:\n%+v\nwant\n%+v", added, tc.added)
			}
			if written := got.ResourceVersion != before.ResourceVersion; written != (tc.added != nil) {
				t.Errorf("role written: %v, want %v", written, tc.added != nil)
			}
			if ok, missing := validation.Covers(got.Rules, def.Rules); !ok {
				t.Errorf("the role does not cover the defaults after Ensure: missing %+v", missing)
			}
		})
	}
}
