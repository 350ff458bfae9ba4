package auth

import (
	"context"
	"testing"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// A PrivilegedGroups member of a union allows its groups' users before the
// members after it decide, has no opinion on others, and makes no rules
// listing incomplete (kube-apiserver leaves it out of its rule resolvers).
func TestPrivilegedGroupsInAUnion(t *testing.T) {
	u := AuthorizerUnion{PrivilegedGroups{"system:masters"}, AlwaysDeny{}}
	info := &request.Info{Verb: "list", Resource: "secrets", IsResourceRequest: true}
	admin := &request.User{Name: "admin", Groups: []string{"system:masters", "system:authenticated"}}
	alice := &request.User{Name: "alice", Groups: []string{"devs", "system:authenticated"}}
	if d, _, err := u.Authorize(context.Background(), Attributes{User: admin, Info: info}); d != DecisionAllow || err != nil {
		t.Errorf("system:masters: %v %v, want allowed", d, err)
	}
	if d, reason, _ := u.Authorize(context.Background(), Attributes{User: alice, Info: info}); d != DecisionDeny || reason != "Everything is forbidden." {
		t.Errorf("alice: %v %q, want AlwaysDeny's deny", d, reason)
	}
	rules, nonResource, incomplete, err := u.RulesFor(context.Background(), admin, "default")
	if len(rules) != 0 || len(nonResource) != 0 || incomplete || err != nil {
		t.Errorf("rules of system:masters: %v %v incomplete=%v %v, want none, complete", rules, nonResource, incomplete, err)
	}
}
