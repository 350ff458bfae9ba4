package fuzz

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver/auth/rbac"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// FuzzAuthorization decodes a small RBAC policy (ClusterRoles and Roles
// whose rules draw verbs, API groups, resources, resourceNames and
// nonResourceURLs from small alphabets with the "*" forms; bindings of
// User, Group and ServiceAccount subjects, some naming roles that do not
// exist) and one request (user, groups, verb and either a resource
// request or a non-resource path) from the fuzzer's bytes, and decides it
// with rbac.NewPolicy(...).Allows. Properties:
//   - nothing panics;
//   - the decision equals that of referenceAllows, a deliberately plain
//     evaluation of Kubernetes' documented RBAC semantics written for
//     this test (a differential oracle);
//   - a denial carries an "RBAC: " reason exactly when a binding that
//     applies to the user names a missing role, and an allow names a
//     binding.
//
// Not covered: aggregated ClusterRoles (no aggregationRule is generated).
func FuzzAuthorization(f *testing.F) {
	for _, s := range authzSeeds {
		f.Add(s.data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		pol, req := decodeAuthz(&input{data: data})
		checkAuthz(t, pol, req)
	})
}

// authzSeeds cover each rule feature; TestAuthorizationSeeds checks each
// decides as its comment says, so the byte layouts stay meaningful.
var authzSeeds = []struct {
	name  string
	data  []byte
	allow bool
}{
	{"exact verb, group, resource", seedCRB(rule("get", "", "pods"), req("alice", "get", "", "pods", "", "ns1", "")), true},
	{"a resource does not grant its subresources", seedCRB(rule("get", "", "pods"), req("alice", "get", "", "pods", "log", "ns1", "")), false},
	{"resource/subresource", seedCRB(rule("get", "", "pods/log"), req("alice", "get", "", "pods", "log", "ns1", "a")), true},
	{"every wildcard", seedCRB(rule("*", "*", "*"), req("alice", "delete", "apps", "deployments", "scale", "", "b")), true},
	{"*/scale", seedCRB(rule("get", "apps", "*/scale"), req("alice", "get", "apps", "deployments", "scale", "ns2", "")), true},
	{"*/scale is no plain resource", seedCRB(rule("get", "apps", "*/scale"), req("alice", "get", "apps", "deployments", "", "ns2", "")), false},
	{"pods/* is no wildcard", seedCRB(rule("get", "", "pods/*"), req("alice", "get", "", "pods", "log", "ns1", "")), false},
	{"wrong group", seedCRB(rule("get", "apps", "pods"), req("alice", "get", "", "pods", "", "ns1", "")), false},
	{"resourceNames match", seedCRB(ruleNames("get", "pods", "a"), req("alice", "get", "", "pods", "", "ns1", "a")), true},
	{"resourceNames other name", seedCRB(ruleNames("get", "pods", "a"), req("alice", "get", "", "pods", "", "ns1", "b")), false},
	{"resourceNames never match a list", seedCRB(ruleNames("list", "pods", "a"), req("alice", "list", "", "pods", "", "ns1", "")), false},
	{"nonResourceURL exact", seedCRB(ruleURL("get", "/healthz"), reqPath("alice", "get", "/healthz")), true},
	{"nonResourceURL prefix", seedCRB(ruleURL("get", "/healthz/*"), reqPath("alice", "get", "/healthz/ping")), true},
	{"nonResourceURL prefix without slash", seedCRB(ruleURL("get", "/api*"), reqPath("alice", "get", "/apis")), true},
	{"nonResourceURL is not a resource", seedCRB(ruleURL("*", "*"), req("alice", "get", "", "pods", "", "ns1", "")), false},
	{"RoleBinding to a group in its namespace", seedRB("Role", rule("get", "", "pods"), "Group", "devs", "", req("bob", "get", "", "pods", "", "ns1", "", "devs")), true},
	{"RoleBinding elsewhere", seedRB("Role", rule("get", "", "pods"), "Group", "devs", "", req("bob", "get", "", "pods", "", "ns2", "", "devs")), false},
	{"RoleBinding of a ClusterRole to a service account", seedRB("ClusterRole", rule("get", "", "pods"), "ServiceAccount", "sa", "",
		req("system:serviceaccount:ns1:sa", "get", "", "pods", "", "ns1", "")), true},
	{"service account of another namespace", seedRB("ClusterRole", rule("get", "", "pods"), "ServiceAccount", "sa", "ns2",
		req("system:serviceaccount:ns1:sa", "get", "", "pods", "", "ns1", "")), false},
	{"missing role", seedRB("Role", nil, "User", "alice", "", req("alice", "get", "", "pods", "", "ns1", "")), false},
}

// The seed builders write the bytes decodeAuthz reads.
func azIndex(alphabet []string, v string) byte {
	i := slices.Index(alphabet, v)
	if i < 0 {
		panic("seed value " + v + " not in its alphabet")
	}
	return byte(i)
}

func azList(alphabet []string, vs ...string) []byte {
	out := []byte{byte(len(vs))}
	for _, v := range vs {
		out = append(out, azIndex(alphabet, v))
	}
	return out
}

// rule is one rule: verbs, groups, resources, no names, no URLs.
func rule(verb, group, resource string) []byte {
	return slices.Concat(azList(azVerbs, verb), azList(azGroups, group), azList(azResources, resource), []byte{0, 0})
}

func ruleNames(verb, resource, name string) []byte {
	return slices.Concat(azList(azVerbs, verb), azList(azGroups, ""), azList(azResources, resource), azList(azNames[1:], name), []byte{0})
}

func ruleURL(verb, url string) []byte {
	return slices.Concat(azList(azVerbs, verb), []byte{0, 0, 0}, azList(azURLs, url))
}

func req(user, verb, group, resource, sub, ns, name string, groups ...string) []byte {
	return slices.Concat([]byte{azIndex(azUsers, user)}, azList(azGroupNames, groups...), []byte{1, azIndex(azVerbs, verb),
		azIndex(azGroups, group), azIndex(azResRequests, resource), azIndex(azSubres, sub), azIndex(azNamespaces, ns), azIndex(azNames, name)})
}

func reqPath(user, verb, path string) []byte {
	return []byte{azIndex(azUsers, user), 0, 0, azIndex(azVerbs, verb), azIndex(azPaths, path)}
}

// seedCRB: ClusterRole c0 with one rule, bound by a ClusterRoleBinding
// to user alice; then the request.
func seedCRB(oneRule, request []byte) []byte {
	return slices.Concat([]byte{1, 1}, oneRule, []byte{0, 1, azIndex(azRoleKinds, "ClusterRole"), 0,
		1, azIndex(azSubjectKind, "User"), azIndex(azUsers, "alice"), 0, 0}, request)
}

// seedRB: a role of kind (ClusterRole c0 or Role r0 in ns1; nil rule:
// none exists) bound by a RoleBinding in ns1 to one subject; then the
// request.
func seedRB(kind string, oneRule []byte, subjectKind, subjectName, subjectNS string, request []byte) []byte {
	var roles []byte
	switch {
	case oneRule == nil:
		roles = []byte{0, 0}
	case kind == "ClusterRole":
		roles = slices.Concat([]byte{1, 1}, oneRule, []byte{0})
	default:
		roles = slices.Concat([]byte{0, 1, 0, 1}, oneRule)
	}
	var name byte
	switch subjectKind {
	case "Group":
		name = azIndex(azGroupNames, subjectName)
	case "ServiceAccount":
		name = azIndex(azSAName, subjectName)
	default:
		name = azIndex(azUsers, subjectName)
	}
	return slices.Concat(roles, []byte{0, 1, 0, azIndex(azRoleKinds, kind), 0,
		1, azIndex(azSubjectKind, subjectKind), name, azIndex(azNamespaces, subjectNS)}, request)
}

// authzAlphabets are the small alphabets the policy and request draw from.
var (
	azVerbs       = []string{"*", "get", "list", "watch", "create", "update", "patch", "delete"}
	azGroups      = []string{"", "apps", "*"}
	azResources   = []string{"pods", "pods/log", "deployments/scale", "*", "*/scale", "deployments", "pods/*"}
	azNames       = []string{"", "a", "b"}
	azURLs        = []string{"/healthz", "/healthz/*", "/api*", "*", "/api", "/metrics"}
	azPaths       = []string{"/healthz", "/healthz/ping", "/api", "/apis", "/metrics", "/", "/healthz/", "/api/v1"}
	azNamespaces  = []string{"", "ns1", "ns2"}
	azUsers       = []string{"alice", "bob", "system:serviceaccount:ns1:sa", "system:serviceaccount:ns2:sa", "system:serviceaccount:ns1:other", ""}
	azGroupNames  = []string{"system:authenticated", "devs", "ops", "system:serviceaccounts"}
	azSubjectKind = []string{rbacv1.UserKind, rbacv1.GroupKind, rbacv1.ServiceAccountKind, "Other"}
	azSAName      = []string{"sa", "other"}
	azRoleKinds   = []string{"ClusterRole", "Role", "Other"}
	azResRequests = []string{"pods", "deployments", "nodes"}
	azSubres      = []string{"", "log", "scale", "status"}
)

// authzPolicy is the decoded policy, kept as plain slices for the oracle.
type authzPolicy struct {
	clusterRoles    []*rbacv1.ClusterRole
	roles           []*rbacv1.Role
	clusterBindings []*rbacv1.ClusterRoleBinding
	bindings        []*rbacv1.RoleBinding
}

// decodeAuthz reads, one byte per choice: the ClusterRoles (count 0–3,
// named c0, c1, …, each with 0–2 rules), the Roles (count 0–3, named r0,
// r1, …, each a namespace then rules), the ClusterRoleBindings (count 0–3,
// each a roleRef then 0–2 subjects) and RoleBindings (count 0–3, each a
// namespace, roleRef and subjects); then the request: user (an index past
// the alphabet takes up to 12 raw bytes), 0–2 groups, whether it is a
// resource request, verb, then API group, resource, subresource,
// namespace, name — or a path.
// A rule is verbs, groups, resources, resourceNames, nonResourceURLs,
// each a count 0–2 then indexes. A roleRef is a kind then a name index
// 0–3 (so some name missing roles); a subject is a kind, a name, a namespace.
func decodeAuthz(in *input) (*authzPolicy, *authzRequest) {
	p := &authzPolicy{}
	for i := range in.intn(4) {
		p.clusterRoles = append(p.clusterRoles, &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("c%d", i)}, Rules: decodeRules(in)})
	}
	for i := range in.intn(4) {
		ns := azNamespaces[1+in.intn(2)]
		p.roles = append(p.roles, &rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("r%d", i), Namespace: ns}, Rules: decodeRules(in)})
	}
	for i := range in.intn(4) {
		p.clusterBindings = append(p.clusterBindings, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("crb%d", i)},
			RoleRef:    decodeRoleRef(in), Subjects: decodeSubjects(in)})
	}
	for i := range in.intn(4) {
		ns := azNamespaces[1+in.intn(2)]
		p.bindings = append(p.bindings, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("rb%d", i), Namespace: ns},
			RoleRef:    decodeRoleRef(in), Subjects: decodeSubjects(in)})
	}
	return p, decodeRequest(in)
}

func decodeStrings(in *input, alphabet []string) []string {
	var out []string
	for range in.intn(3) {
		out = append(out, pick(in, alphabet))
	}
	return out
}

func decodeRules(in *input) []rbacv1.PolicyRule {
	var rules []rbacv1.PolicyRule
	for range in.intn(3) {
		rules = append(rules, rbacv1.PolicyRule{
			Verbs:           decodeStrings(in, azVerbs),
			APIGroups:       decodeStrings(in, azGroups),
			Resources:       decodeStrings(in, azResources),
			ResourceNames:   decodeStrings(in, azNames[1:]),
			NonResourceURLs: decodeStrings(in, azURLs),
		})
	}
	return rules
}

func decodeRoleRef(in *input) rbacv1.RoleRef {
	kind := pick(in, azRoleKinds)
	prefix := "c"
	if kind == "Role" {
		prefix = "r"
	}
	return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: fmt.Sprintf("%s%d", prefix, in.intn(4))}
}

func decodeSubjects(in *input) []rbacv1.Subject {
	var out []rbacv1.Subject
	for range in.intn(3) {
		s := rbacv1.Subject{Kind: pick(in, azSubjectKind)}
		name, ns := in.byte(), pick(in, azNamespaces)
		switch s.Kind {
		case rbacv1.UserKind, "Other":
			s.Name = azUsers[int(name)%len(azUsers)]
		case rbacv1.GroupKind:
			s.Name = azGroupNames[int(name)%len(azGroupNames)]
		case rbacv1.ServiceAccountKind:
			s.Name, s.Namespace = azSAName[int(name)%len(azSAName)], ns
		}
		out = append(out, s)
	}
	return out
}

// authzRequest is the decoded request.
type authzRequest struct {
	user request.User
	info request.Info
}

func decodeRequest(in *input) *authzRequest {
	r := &authzRequest{}
	if i := in.intn(len(azUsers) + 1); i < len(azUsers) {
		r.user.Name = azUsers[i]
	} else {
		r.user.Name = in.string(12)
	}
	r.user.Groups = decodeStrings(in, azGroupNames)
	r.info.IsResourceRequest = in.bool()
	r.info.Verb = pick(in, azVerbs)
	if r.info.IsResourceRequest {
		r.info.APIGroup = pick(in, azGroups[:2])
		r.info.Resource = pick(in, azResRequests)
		r.info.Subresource = pick(in, azSubres)
		r.info.Namespace = pick(in, azNamespaces)
		r.info.Name = pick(in, azNames)
		return r
	}
	if i := in.intn(len(azPaths) + 1); i < len(azPaths) {
		r.info.Path = azPaths[i]
	} else {
		r.info.Path = "/" + in.string(12)
	}
	return r
}

func checkAuthz(t *testing.T, p *authzPolicy, r *authzRequest) {
	t.Helper()
	pol := rbac.NewPolicy(p.clusterRoles, p.roles, p.clusterBindings, p.bindings)
	got, reason := pol.Allows(&r.user, &r.info)
	want, missing := referenceAllows(p, r)
	if got != want {
		t.Fatalf("RBAC says allowed=%v (%q), the reference says %v\nrequest: user %+v, %+v\npolicy: %s",
			got, reason, want, r.user, r.info, describePolicy(p))
	}
	switch {
	case got && !strings.HasPrefix(reason, "RBAC: allowed by "):
		t.Fatalf("an allow's reason %q names no binding", reason)
	case !got && missing != strings.HasPrefix(reason, "RBAC: "):
		t.Fatalf("denied with reason %q, but a binding of the user names a missing role: %v\npolicy: %s",
			reason, missing, describePolicy(p))
	}
}

// referenceAllows is the oracle: Kubernetes' RBAC semantics as documented
// (https://kubernetes.io/docs/reference/access-authn-authz/rbac/), written
// as plainly as possible. missing reports whether a binding that applies
// to the user names a role that does not exist.
func referenceAllows(p *authzPolicy, r *authzRequest) (allowed, missing bool) {
	u, req := &r.user, &r.info
	namespace := ""
	if req.IsResourceRequest {
		namespace = req.Namespace
	}
	subjectIs := func(s rbacv1.Subject, bindingNamespace string) bool {
		switch s.Kind {
		case "User":
			return s.Name == u.Name
		case "Group":
			return slices.Contains(u.Groups, s.Name)
		case "ServiceAccount":
			ns := s.Namespace
			if ns == "" {
				ns = bindingNamespace
			}
			return ns != "" && u.Name == "system:serviceaccount:"+ns+":"+s.Name
		}
		return false
	}
	rulesOf := func(ref rbacv1.RoleRef, bindingNamespace string) ([]rbacv1.PolicyRule, bool) {
		for _, cr := range p.clusterRoles {
			if ref.Kind == "ClusterRole" && cr.Name == ref.Name {
				return cr.Rules, true
			}
		}
		for _, role := range p.roles {
			if ref.Kind == "Role" && role.Name == ref.Name && role.Namespace == bindingNamespace {
				return role.Rules, true
			}
		}
		return nil, false
	}
	consider := func(ref rbacv1.RoleRef, subjects []rbacv1.Subject, bindingNamespace string) {
		if !slices.ContainsFunc(subjects, func(s rbacv1.Subject) bool { return subjectIs(s, bindingNamespace) }) {
			return
		}
		rules, ok := rulesOf(ref, bindingNamespace)
		if !ok {
			missing = true
		}
		for _, rule := range rules {
			if referenceRuleAllows(&rule, req) {
				allowed = true
			}
		}
	}
	for _, b := range p.clusterBindings {
		consider(b.RoleRef, b.Subjects, "")
	}
	for _, b := range p.bindings {
		if namespace != "" && b.Namespace == namespace {
			consider(b.RoleRef, b.Subjects, b.Namespace)
		}
	}
	return allowed, missing
}

// referenceRuleAllows: "*" matches anything; a resource request names
// "resource" or "resource/subresource", and "*/sub" matches subresource
// sub of any resource; resourceNames, when set, must list the request's
// name (so never a request without one); a URL ending in "*" matches by
// prefix.
func referenceRuleAllows(rule *rbacv1.PolicyRule, req *request.Info) bool {
	has := func(list []string, v string) bool { return slices.Contains(list, "*") || slices.Contains(list, v) }
	if !has(rule.Verbs, req.Verb) {
		return false
	}
	if !req.IsResourceRequest {
		for _, u := range rule.NonResourceURLs {
			if u == "*" || u == req.Path || (strings.HasSuffix(u, "*") && strings.HasPrefix(req.Path, strings.TrimRight(u, "*"))) {
				return true
			}
		}
		return false
	}
	resource := req.Resource
	if req.Subresource != "" {
		resource += "/" + req.Subresource
	}
	resourceOK := has(rule.Resources, resource) ||
		(req.Subresource != "" && slices.Contains(rule.Resources, "*/"+req.Subresource))
	nameOK := len(rule.ResourceNames) == 0 || (req.Name != "" && slices.Contains(rule.ResourceNames, req.Name))
	return has(rule.APIGroups, req.APIGroup) && resourceOK && nameOK
}

func describePolicy(p *authzPolicy) string {
	var b strings.Builder
	for _, r := range p.clusterRoles {
		fmt.Fprintf(&b, "\n  ClusterRole %s %+v", r.Name, r.Rules)
	}
	for _, r := range p.roles {
		fmt.Fprintf(&b, "\n  Role %s/%s %+v", r.Namespace, r.Name, r.Rules)
	}
	for _, x := range p.clusterBindings {
		fmt.Fprintf(&b, "\n  ClusterRoleBinding %s -> %s %s %+v", x.Name, x.RoleRef.Kind, x.RoleRef.Name, x.Subjects)
	}
	for _, x := range p.bindings {
		fmt.Fprintf(&b, "\n  RoleBinding %s/%s -> %s %s %+v", x.Namespace, x.Name, x.RoleRef.Kind, x.RoleRef.Name, x.Subjects)
	}
	return b.String()
}

// TestAuthorizationSeeds checks that each seed decodes to the case its
// comment describes (the reference and the RBAC package both decide as
// expected).
func TestAuthorizationSeeds(t *testing.T) {
	for _, s := range authzSeeds {
		t.Run(s.name, func(t *testing.T) {
			p, r := decodeAuthz(&input{data: s.data})
			if got, _ := referenceAllows(p, r); got != s.allow {
				t.Fatalf("reference decides %v, want %v\nrequest: %+v %+v\npolicy: %s", got, s.allow, r.user, r.info, describePolicy(p))
			}
			checkAuthz(t, p, r)
		})
	}
}
