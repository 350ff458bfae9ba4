package fuzz

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
)

// The request generator is only useful if it gets past the handlers'
// first checks: over a few hundred random inputs it must produce created
// objects, successful reads and writes, and client errors alike.
func TestHTTPRequestsReachEveryOutcome(t *testing.T) {
	s := server(t)
	rng := rand.New(rand.NewSource(1))
	counts := map[int]int{}
	for range 200 {
		data := make([]byte, 64)
		rng.Read(data)
		req := s.buildRequest(&input{data: data})
		code, _ := s.check(t, req)
		counts[code/100*100]++
		if code == 201 {
			counts[201]++
		}
	}
	t.Logf("answers by class: %v", counts)
	for _, c := range []int{200, 201, 400} {
		if counts[c] == 0 {
			t.Errorf("no %d answers in 200 random requests: %v", c, counts)
		}
	}
}

// The identities are only fuzzed if their requests get past
// authorization sometimes and are refused in each way the others are:
// over random inputs sent as each identity, the node and the service
// account must each have a write accepted, and there must be RBAC
// refusals, admission refusals (NodeRestriction, Pod Security, or another
// plugin's own message), refused impersonation and accepted
// impersonation.
func TestHTTPIdentitiesReachEveryOutcome(t *testing.T) {
	s := server(t)
	rng := rand.New(rand.NewSource(2))
	counts := map[string]int{}
	for i := range 600 {
		data := make([]byte, 48)
		rng.Read(data)
		in := &input{data: data[:40]}
		req := s.buildRequest(in)
		// The identity bytes come last: cycle through them.
		in = &input{data: []byte{byte(1 + i%4), byte(i / 4 % 8), byte(i / 32 % 4), byte(i / 3 % 2)}}
		as := s.chooseIdentity(in)
		if as.namespace != "" && in.bool() {
			req = s.buildRequestIn(&input{data: data[:40]}, as.namespace)
		}
		req.as = as
		code, body := s.check(t, req)
		write := req.method != "GET" && req.method != "HEAD"
		switch {
		case code/100 == 2 && write && as.impersonateUser == "":
			counts[as.label+" write accepted"]++
		case as.admin && as.impersonateUser != "" && (code/100 == 2 || strings.Contains(string(body), `User \"`+as.impersonateUser+`\"`)):
			// Decided for the impersonated user.
			counts["impersonation accepted"]++
		case code == 403 && strings.Contains(string(body), "cannot impersonate"):
			counts["impersonation refused"]++
		case code == 403 && strings.Contains(string(body), `is forbidden: User \"`):
			counts["RBAC refusal"]++
		case code == 403:
			counts["admission refusal"]++
			for _, plugin := range []string{"PodSecurity", "node \"" + fuzzNodeName + "\"", "service account"} {
				if strings.Contains(string(body), plugin) {
					counts[plugin]++
				}
			}
		}
	}
	t.Logf("outcomes: %v", counts)
	for _, c := range []string{"node write accepted", "serviceaccount write accepted", "impersonation accepted", "impersonation refused", "RBAC refusal", "admission refusal"} {
		if counts[c] == 0 {
			t.Errorf("no %q in 600 random requests: %v", c, counts)
		}
	}
}

// The node's own requests are only fuzzed if each outcome the oracle
// knows is reached: over random inputs, its own Node written and another's
// refused, a label refused by NodeRestriction, its own Lease written and
// another's refused, a secret of its pod read and another refused by the
// graph, its pod's status written and another's refused by
// NodeRestriction.
func TestNodeRequestsReachEveryOutcome(t *testing.T) {
	s := server(t)
	rng := rand.New(rand.NewSource(3))
	counts := map[string]int{}
	for range 400 {
		data := make([]byte, 24)
		rng.Read(data)
		req := s.buildNodeRequest(&input{data: data})
		st, err := s.readNodeState(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		code, body := s.check(t, req)
		checkNode(t, req, st, code, body)
		a, _ := requestAttrs(req.method, req.path+"?"+req.query.Encode())
		key := a.resource
		if a.sub != "" {
			key += "/" + a.sub
		}
		switch {
		case code/100 == 2 && req.method != "GET":
			key += " write accepted"
		case code/100 == 2:
			key += " read"
		case code == 403 && strings.Contains(string(body), "not allowed to modify labels"), code == 403 && strings.Contains(string(body), "not allowed to set the following labels"):
			key += " labels refused"
		case code == 403 && strings.Contains(string(body), "not allowed to modify node"), code == 403 && strings.Contains(string(body), "only its own Node object"):
			key += " other node refused"
		case code == 403 && strings.Contains(string(body), "same name as the requesting node"):
			key += " other lease refused"
		case code == 403 && strings.Contains(string(body), "no relationship found"):
			key += " no relationship"
		case code == 403 && strings.Contains(string(body), "set to itself"), code == 403 && strings.Contains(string(body), "labels through pod status"):
			key += " other pod refused"
		default:
			key += fmt.Sprintf(" %d", code)
		}
		counts[key]++
	}
	t.Logf("outcomes: %v", counts)
	for _, c := range []string{"nodes write accepted", "nodes labels refused", "nodes other node refused", "leases write accepted", "leases other lease refused",
		"secrets read", "secrets no relationship", "configmaps read", "pods read", "pods no relationship",
		"pods/status write accepted", "pods/status other pod refused"} {
		if counts[c] == 0 {
			t.Errorf("no %q in 400 random node requests: %v", c, counts)
		}
	}
}
