package auth

import (
	"context"
	"errors"
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

type failing string

func (f failing) Authorize(context.Context, Attributes) (Decision, string, error) {
	return DecisionNoOpinion, "", errors.New(string(f))
}

// When several members fail and none decides, the union's error is
// their aggregate as kube-apiserver's (utilerrors.NewAggregate: one
// message alone, several as "[a, b]" with repeats dropped), which is
// what the 500 shows.
func TestUnionAggregatesErrors(t *testing.T) {
	attrs := Attributes{User: &request.User{Name: "dave"}, Info: &request.Info{Path: "/x", Verb: "get"}}
	_, _, err := AuthorizerUnion{failing("webhook down")}.Authorize(context.Background(), attrs)
	if err == nil || err.Error() != "webhook down" {
		t.Errorf("one failure: %v", err)
	}
	_, _, err = AuthorizerUnion{failing("a down"), noOpinionBecause("no"), failing("b down"), failing("a down")}.Authorize(context.Background(), attrs)
	if err == nil || err.Error() != "[a down, b down]" {
		t.Errorf("several failures: %q, want [a down, b down]", err)
	}
	if _, _, err = (AuthorizerUnion{noOpinionBecause("no")}).Authorize(context.Background(), attrs); err != nil {
		t.Errorf("no failure: %v", err)
	}
}
