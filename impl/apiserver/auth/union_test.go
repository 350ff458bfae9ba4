package auth

import (
	"context"
	"testing"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

type noOpinionBecause string

func (r noOpinionBecause) Authorize(context.Context, Attributes) (Decision, string, error) {
	return DecisionNoOpinion, string(r), nil
}

// When no member decides, the union's reason is the members' reasons one
// per line, as kube-apiserver's union authorizer joins them (and the 403
// message ends with them).
func TestUnionJoinsNoOpinionReasonsByLine(t *testing.T) {
	u := AuthorizerUnion{noOpinionBecause("webhook: no rule"), noOpinionBecause(""), noOpinionBecause("RBAC: lookup failed")}
	d, reason, err := u.Authorize(context.Background(), Attributes{User: &request.User{Name: "dave"}, Info: &request.Info{Path: "/x", Verb: "get"}})
	if d != DecisionNoOpinion || err != nil || reason != "webhook: no rule\nRBAC: lookup failed" {
		t.Errorf("got %v %q %v, want no opinion with the reasons one per line", d, reason, err)
	}
}
