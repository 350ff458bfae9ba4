package fuzz

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubeproof/kubeproof/impl/apiserver/auth/rbac"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
	"github.com/kubeproof/kubeproof/impl/controller/clusterroleaggregation"
)

// FuzzAuthorization decodes a small RBAC policy (ClusterRoles and Roles
// whose rules draw verbs, API groups, resources, resourceNames and
// nonResourceURLs from small alphabets with the "*" forms; ClusterRoles
// labelled and some aggregated, their aggregationRule selecting others by
// matchLabels or matchExpressions; bindings of User, Group and
// ServiceAccount subjects, some naming roles that do not exist) and one
// request (user, groups, verb and either a resource request or a
// non-resource path) from the fuzzer's bytes, and whether the
// clusterrole-aggregation controller has run: if not, every ClusterRole is
// stored with the rules it was created with; if it has, as
// referenceSettle leaves them — every aggregated role synced in name
// order, round after round until a round changes nothing, by upstream's
// sync rule, the result written as a forced server-side apply of .rules
// writes it. It decides the request with rbac.NewPolicy(stored
// objects).Allows. Properties:
//   - nothing panics;
//   - at every sync referenceSettle makes, from the roles as created to
//     the settled ones, the controller's decision
//     (clusterroleaggregation.AggregatedRules on the roles stored at that
//     moment) is the reference's sync rule's, rules and order;
//   - the decision equals that of referenceAllows, a deliberately plain
//     evaluation of Kubernetes' documented RBAC semantics written for
//     this test (a differential oracle), on the rules each role stores
//     (the authorizer never evaluates selectors);
//   - a denial carries an "RBAC: " reason exactly when a binding that
//     applies to the user names a missing role, and an allow names a
//     binding.
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
	// Aggregation: c0 is bound to alice; the bytes after the request label
	// each ClusterRole and give it selectors (decodeAggregation).
	{"aggregated role grants a selected role's rules", seedAgg([][]byte{nil, rules(rule("get", "", "pods"))}, getPods,
		slices.Concat(aggregates(0, sel("x", 1, "1")), aggregates(1))), true},
	{"aggregated role's own rules are replaced", seedAgg([][]byte{rules(rule("get", "", "pods")), rules(rule("list", "", "pods"))}, getPods,
		slices.Concat(aggregates(0, sel("x", 1, "1")), aggregates(1))), false},
	{"an aggregated role selecting nothing keeps the rules it was created with", seedAgg([][]byte{rules(rule("get", "", "pods")), rules(rule("list", "", "pods"))}, getPods,
		slices.Concat(aggregates(0, sel("x", 1, "2")), aggregates(1))), true},
	{"a selected aggregated role with an empty aggregate passes on the rules it was created with", seedAgg([][]byte{nil, rules(rule("get", "", "pods"))}, getPods,
		slices.Concat(aggregates(0, sel("x", 1, "1")), aggregates(1, sel("y", 1, "2")))), true},
	{"a role selecting itself takes nothing from itself", seedAgg([][]byte{rules(rule("get", "", "pods")), rules(rule("list", "", "pods"))}, getPods,
		slices.Concat(aggregates(1, sel("x", 5)), aggregates(1))), false},
	{"nested aggregation", seedAgg([][]byte{nil, nil, rules(rule("get", "", "pods"))}, getPods,
		slices.Concat(aggregates(0, sel("x", 3, 0, "1")), aggregates(1, sel("y", 1, "1")), aggregates(3))), true},
	{"cycle of aggregated roles", seedAgg([][]byte{nil, nil, rules(rule("get", "", "pods"))}, getPods,
		slices.Concat(aggregates(1, sel("y", 5)), aggregates(3, sel("x", 1, "1")), aggregates(1))), true},
	{"NotIn selects unlabelled roles", seedAgg([][]byte{nil, rules(rule("get", "", "pods"))}, getPods,
		slices.Concat(aggregates(0, sel("x", 4, "1")), aggregates(0))), true},
	{"DoesNotExist skips labelled roles", seedAgg([][]byte{nil, rules(rule("get", "", "pods"))}, getPods,
		slices.Concat(aggregates(0, sel("y", 6)), aggregates(6))), false},
	{"empty selector, equal rules kept once, in name order", seedAgg(
		[][]byte{nil, rules(rule("list", "", "pods"), rule("get", "", "pods")), rules(rule("get", "", "pods"), rule("delete", "", "pods"))}, getPods,
		slices.Concat(aggregates(0, sel("x", 0)), aggregates(0), aggregates(0))), true},
	{"second selector's roles after the first's", seedAgg([][]byte{nil, rules(rule("get", "", "pods")), rules(rule("list", "", "pods"))}, getPods,
		slices.Concat(aggregates(0, sel("y", 1, "1"), sel("x", 1, "1")), aggregates(1), aggregates(3))), true},
	{"an empty list equals none", seedAgg([][]byte{nil, rules(rule("get", "", "pods")), rules(emptyNames(rule("get", "", "pods")))}, getPods,
		slices.Concat(aggregates(0, sel("x", 5)), aggregates(1), aggregates(2))), true},
	// The same policies before the controller has run (a last odd byte):
	// the authorizer reads the rules stored at creation.
	{"before the controller runs, a selected role's rules are not granted", seedAgg([][]byte{nil, rules(rule("get", "", "pods"))}, getPods,
		slices.Concat(aggregates(0, sel("x", 1, "1")), aggregates(1), notAggregatedYet)), false},
	{"before the controller runs, an aggregated role's own rules are granted", seedAgg([][]byte{rules(rule("get", "", "pods")), rules(rule("list", "", "pods"))}, getPods,
		slices.Concat(aggregates(0, sel("x", 1, "1")), aggregates(1), notAggregatedYet)), true},
}

// notAggregatedYet is the byte after the aggregation section that says the
// clusterrole-aggregation controller has not run (decodeAuthz).
var notAggregatedYet = []byte{1}

var getPods = req("alice", "get", "", "pods", "", "ns1", "")

// aggregatedSeedVerbs is, for the aggregation seeds, the verb of each rule
// c0 stores once the controller has run (referenceSettle, whose every
// sync TestAuthorizationSeeds also checks against the controller's
// decision), in order.
var aggregatedSeedVerbs = map[string][]string{
	"aggregated role grants a selected role's rules":                                             {"get"},
	"aggregated role's own rules are replaced":                                                   {"list"},
	"an aggregated role selecting nothing keeps the rules it was created with":                   {"get"},
	"a selected aggregated role with an empty aggregate passes on the rules it was created with": {"get"},
	"a role selecting itself takes nothing from itself":                                          {"list"},
	"nested aggregation":                                                     {"get"},
	"cycle of aggregated roles":                                              {"get"},
	"NotIn selects unlabelled roles":                                         {"get"},
	"DoesNotExist skips labelled roles":                                      {},
	"empty selector, equal rules kept once, in name order":                   {"list", "get", "delete"},
	"second selector's roles after the first's":                              {"list", "get"},
	"an empty list equals none":                                              {"get"},
	"before the controller runs, a selected role's rules are not granted":    {"get"},
	"before the controller runs, an aggregated role's own rules are granted": {"list"},
}

// rules is a ClusterRole's or Role's rule list.
func rules(rs ...[]byte) []byte { return slices.Concat([]byte{byte(len(rs))}, slices.Concat(rs...)) }

// emptyNames makes a rule's empty resourceNames an empty list, not nil.
func emptyNames(r []byte) []byte {
	out := slices.Clone(r)
	out[len(out)-2] = 0x81
	return out
}

// seedAgg: ClusterRoles c0, c1, … with the given rule lists (nil: none),
// c0 bound by a ClusterRoleBinding to alice; the request; then the
// aggregation section.
func seedAgg(roles [][]byte, request, aggregation []byte) []byte {
	out := []byte{byte(len(roles))}
	for _, r := range roles {
		if r == nil {
			r = []byte{0}
		}
		out = append(out, r...)
	}
	return slices.Concat(out, []byte{0, 1, azIndex(azRoleKinds, "ClusterRole"), 0,
		1, azIndex(azSubjectKind, "User"), azIndex(azUsers, "alice"), 0, 0}, request, aggregation)
}

// aggregates is one ClusterRole's aggregation bytes: its labels byte (x:
// +1 or +2, y: +3 or +6) and its selectors.
func aggregates(labels byte, selectors ...[]byte) []byte {
	return slices.Concat([]byte{labels, byte(len(selectors))}, slices.Concat(selectors...))
}

// sel is one selector's bytes (decodeSelector): key, form, then the
// form's value bytes as strings of azLabelValues or raw bytes.
func sel(key string, form byte, values ...any) []byte {
	out := []byte{azIndex(azLabelKeys, key), form}
	for _, v := range values {
		switch v := v.(type) {
		case string:
			out = append(out, azIndex(azLabelValues, v))
		case int:
			out = append(out, byte(v))
		}
	}
	return out
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
// clusterRoles are the ClusterRoles as created; aggregatorRan says whether
// the clusterrole-aggregation controller has written the aggregated ones'
// rules since (storedClusterRoles).
type authzPolicy struct {
	clusterRoles    []*rbacv1.ClusterRole
	roles           []*rbacv1.Role
	clusterBindings []*rbacv1.ClusterRoleBinding
	bindings        []*rbacv1.RoleBinding
	aggregatorRan   bool
}

// storedClusterRoles returns the ClusterRoles as stored: as created, or,
// once the controller has run, as referenceSettle leaves them.
func (p *authzPolicy) storedClusterRoles() []*rbacv1.ClusterRole {
	if !p.aggregatorRan {
		return p.clusterRoles
	}
	settled, _ := referenceSettle(p.clusterRoles, nil)
	return settled
}

// decodeAuthz reads, one byte per choice: the ClusterRoles (count 0–3,
// named c0, c1, …, each with 0–2 rules), the Roles (count 0–3, named r0,
// r1, …, each a namespace then rules), the ClusterRoleBindings (count 0–3,
// each a roleRef then 0–2 subjects) and RoleBindings (count 0–3, each a
// namespace, roleRef and subjects); then the request: user (an index past
// the alphabet takes up to 12 raw bytes), 0–2 groups, whether it is a
// resource request, verb, then API group, resource, subresource,
// namespace, name — or a path; then the aggregation section
// (decodeAggregation) and a byte whose low bit set says the
// clusterrole-aggregation controller has not run (missing, it reads as
// zero: older inputs keep meaning the controller has converged).
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
	r := decodeRequest(in)
	decodeAggregation(in, p.clusterRoles)
	p.aggregatorRan = in.byte()%2 == 0
	return p, r
}

// Label keys and values of the aggregation section.
var (
	azLabelKeys   = []string{"x", "y"}
	azLabelValues = []string{"1", "2"}
)

// decodeAggregation reads, after the request (so that inputs written
// before aggregation was fuzzed keep their meaning: their missing bytes
// read as zero, no labels and no aggregationRule), for each ClusterRole in
// order a labels byte (x = byte%3, y = byte/3%3: absent, "1" or "2") and a
// selector count 0–2; a non-zero count gives the role an aggregationRule
// of that many selectors (decodeSelector).
func decodeAggregation(in *input, roles []*rbacv1.ClusterRole) {
	for _, r := range roles {
		b := int(in.byte())
		for i, v := range []int{b % 3, b / 3 % 3} {
			if v > 0 {
				if r.Labels == nil {
					r.Labels = map[string]string{}
				}
				r.Labels[azLabelKeys[i]] = azLabelValues[v-1]
			}
		}
		n := in.intn(3)
		if n == 0 {
			continue
		}
		r.AggregationRule = &rbacv1.AggregationRule{}
		for range n {
			r.AggregationRule.ClusterRoleSelectors = append(r.AggregationRule.ClusterRoleSelectors, decodeSelector(in))
		}
	}
}

// decodeSelector reads a key, a form and the form's values: the empty
// selector (every ClusterRole), matchLabels on the key or on both keys,
// or one requirement on the key — In (1–2 values), NotIn, Exists,
// DoesNotExist — the forms upstream's validation accepts.
func decodeSelector(in *input) metav1.LabelSelector {
	key := pick(in, azLabelKeys)
	val := func() string { return pick(in, azLabelValues) }
	req := func(op metav1.LabelSelectorOperator, values ...string) metav1.LabelSelector {
		return metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: key, Operator: op, Values: values}}}
	}
	switch in.intn(7) {
	case 1:
		return metav1.LabelSelector{MatchLabels: map[string]string{key: val()}}
	case 2:
		return metav1.LabelSelector{MatchLabels: map[string]string{"x": val(), "y": val()}}
	case 3:
		if in.bool() {
			return req(metav1.LabelSelectorOpIn, azLabelValues...)
		}
		return req(metav1.LabelSelectorOpIn, val())
	case 4:
		return req(metav1.LabelSelectorOpNotIn, val())
	case 5:
		return req(metav1.LabelSelectorOpExists)
	case 6:
		return req(metav1.LabelSelectorOpDoesNotExist)
	}
	return metav1.LabelSelector{}
}

// decodeStrings reads a count byte then that many indexes; a count byte
// that is a multiple of three with its high bit set (0x81, 0x84, …)
// gives an empty list that is not nil,
// which the aggregation controller's semantic equality takes as nil.
func decodeStrings(in *input, alphabet []string) []string {
	var out []string
	count := in.byte()
	if count%3 == 0 && count&0x80 != 0 {
		return []string{}
	}
	for range count % 3 {
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
	checkAggregation(t, p)
	pol := rbac.NewPolicy(p.storedClusterRoles(), p.roles, p.clusterBindings, p.bindings)
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
// as plainly as possible, on the rules each role stores
// (storedClusterRoles: an aggregated ClusterRole's selectors count for
// nothing here). missing reports whether a binding that applies to the
// user names a role that does not exist.
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
	stored := p.storedClusterRoles()
	rulesOf := func(ref rbacv1.RoleRef, bindingNamespace string) ([]rbacv1.PolicyRule, bool) {
		for _, cr := range stored {
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

// referenceSync is the oracle of the clusterrole-aggregation
// controller's sync of one aggregated role r, on the ClusterRoles as
// stored at that moment (roles): for each selector in order, the roles it
// matches sorted by name, r itself skipped, each of their stored rules —
// aggregated or not, nothing expanded — appended unless a semantically
// equal one (apimachinery's equality.Semantic, under which a nil list
// equals an empty one) is already there.
func referenceSync(r *rbacv1.ClusterRole, roles []*rbacv1.ClusterRole) []rbacv1.PolicyRule {
	sorted := slices.Clone(roles)
	slices.SortFunc(sorted, func(a, b *rbacv1.ClusterRole) int { return strings.Compare(a.Name, b.Name) })
	out := []rbacv1.PolicyRule{}
	for _, sel := range r.AggregationRule.ClusterRoleSelectors {
		s, err := metav1.LabelSelectorAsSelector(&sel)
		if err != nil {
			continue // decodeSelector makes only valid selectors
		}
		for _, other := range sorted {
			if other.Name == r.Name || !s.Matches(labels.Set(other.Labels)) {
				continue
			}
			for _, rule := range other.Rules {
				if !slices.ContainsFunc(out, func(have rbacv1.PolicyRule) bool { return equality.Semantic.DeepEqual(have, rule) }) {
					out = append(out, rule)
				}
			}
		}
	}
	return out
}

// referenceSettle returns the ClusterRoles as stored once the controller
// has run over roles (as created): it syncs every aggregated role in name
// order (referenceSync on the roles stored at that moment), round after
// round until a round changes nothing or 4n+4 rounds have run, and writes
// each result as the controller's forced server-side apply of .rules does
// (.rules is an atomic list): a sync equal to the stored rules writes
// nothing; a non-empty one replaces them and the controller's field
// manager owns them; an empty one carries no rules, so it removes them
// only when that manager owns them — a role created with rules keeps them
// until a non-empty aggregate first replaces them. With decide set (the
// implementation's decision), each sync also asks decide on the same
// stored roles and returns an error at the first answer that differs from
// the reference's, rules or order.
func referenceSettle(roles []*rbacv1.ClusterRole, decide func(*rbacv1.ClusterRole, []*rbacv1.ClusterRole) ([]rbacv1.PolicyRule, error)) ([]*rbacv1.ClusterRole, error) {
	stored := make([]*rbacv1.ClusterRole, len(roles))
	for i, r := range roles {
		stored[i] = r.DeepCopy()
	}
	slices.SortFunc(stored, func(a, b *rbacv1.ClusterRole) int { return strings.Compare(a.Name, b.Name) })
	owned := map[string]bool{}
	for round := 0; round < 4*len(stored)+4; round++ {
		changed := false
		for _, r := range stored {
			if r.AggregationRule == nil {
				continue
			}
			want := referenceSync(r, stored)
			if decide != nil {
				got, err := decide(r, stored)
				if err != nil || !equality.Semantic.DeepEqual(got, want) {
					return nil, fmt.Errorf("round %d, sync of %s: the controller decides %+v (%v), the reference %+v", round, r.Name, got, err, want)
				}
			}
			switch {
			case equality.Semantic.DeepEqual(want, r.Rules):
			case len(want) > 0:
				r.Rules, owned[r.Name], changed = want, true, true
			case owned[r.Name]:
				r.Rules, owned[r.Name], changed = nil, false, true
			}
		}
		if !changed {
			break
		}
	}
	return stored, nil
}

// checkAggregation holds the controller's decision
// (clusterroleaggregation.AggregatedRules) to referenceSync at every sync
// of referenceSettle.
func checkAggregation(t *testing.T, p *authzPolicy) {
	t.Helper()
	if _, err := referenceSettle(p.clusterRoles, clusterroleaggregation.AggregatedRules); err != nil {
		t.Fatalf("%v\npolicy: %s", err, describePolicy(p))
	}
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
		fmt.Fprintf(&b, "\n  ClusterRole %s labels %v %+v", r.Name, r.Labels, r.Rules)
		if r.AggregationRule != nil {
			fmt.Fprintf(&b, " aggregating %+v", r.AggregationRule.ClusterRoleSelectors)
		}
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
			want, ok := aggregatedSeedVerbs[s.name]
			if !ok {
				return
			}
			settled, err := referenceSettle(p.clusterRoles, clusterroleaggregation.AggregatedRules)
			if err != nil {
				t.Fatal(err)
			}
			c0 := settled[slices.IndexFunc(settled, func(r *rbacv1.ClusterRole) bool { return r.Name == "c0" })]
			var verbs []string
			for _, rule := range c0.Rules {
				verbs = append(verbs, rule.Verbs[0])
			}
			if !slices.Equal(verbs, want) {
				t.Errorf("c0 settles to %+v, want rules with verbs %v\npolicy: %s", c0.Rules, want, describePolicy(p))
			}
		})
	}
}

// TestAuthorizationReachesAggregation: inputs made by randomly mutating
// the seeds reach what the aggregation part of FuzzAuthorization is for —
// allows through an aggregated role once the controller has run, and
// through its own rules before; settled aggregates of several rules (whose
// order the controller check holds); nested aggregation (a selected
// aggregated role storing rules); roles reaching a cycle of aggregated
// roles; semantically equal rules merged; and an aggregated role whose
// aggregate is empty keeping the rules it was created with and passing
// them on to a role selecting it — and each passes checkAuthz.
func TestAuthorizationReachesAggregation(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 10))
	var allowedViaAggregate, allowedBeforeAggregation, many, nested, cyclic, merged, passedOn int
	for range 3000 {
		// A seed with one to three bytes replaced and up to 20 random
		// bytes appended, as the fuzzer's first mutations would (wholly
		// random bytes almost never allow anything).
		data := slices.Clone(authzSeeds[rng.IntN(len(authzSeeds))].data)
		for range 1 + rng.IntN(3) {
			data[rng.IntN(len(data))] = byte(rng.UintN(256))
		}
		for range rng.IntN(21) {
			data = append(data, byte(rng.UintN(256)))
		}
		p, r := decodeAuthz(&input{data: data})
		checkAuthz(t, p, r)
		settled, _ := referenceSettle(p.clusterRoles, nil)
		stored := map[string]*rbacv1.ClusterRole{}
		for _, cr := range settled {
			stored[cr.Name] = cr
		}
		selects := func(a, b *rbacv1.ClusterRole) bool {
			if a.AggregationRule == nil || a.Name == b.Name {
				return false
			}
			for _, sel := range a.AggregationRule.ClusterRoleSelectors {
				if s, err := metav1.LabelSelectorAsSelector(&sel); err == nil && s.Matches(labels.Set(b.Labels)) {
					return true
				}
			}
			return false
		}
		// reach[a][b]: aggregated role a takes rules from aggregated
		// role b, directly or through others.
		reach := map[string]map[string]bool{}
		for _, a := range settled {
			reach[a.Name] = map[string]bool{}
			for _, b := range settled {
				if b.AggregationRule != nil && selects(a, b) {
					reach[a.Name][b.Name] = true
				}
			}
		}
		for _, k := range settled {
			for _, a := range settled {
				for _, b := range settled {
					if reach[a.Name][k.Name] && reach[k.Name][b.Name] {
						reach[a.Name][b.Name] = true
					}
				}
			}
		}
		aggregatedNames := map[string]bool{}
		for _, cr := range settled {
			if cr.AggregationRule == nil {
				continue
			}
			aggregatedNames[cr.Name] = true
			if len(cr.Rules) >= 2 {
				many++
			}
			for b := range reach[cr.Name] {
				if reach[b][b] {
					cyclic++
					break
				}
			}
			var given int
			for _, other := range settled {
				if !selects(cr, other) {
					continue
				}
				given += len(other.Rules)
				if other.AggregationRule != nil && len(other.Rules) > 0 {
					nested++
					if len(referenceSync(other, settled)) == 0 && len(cr.Rules) > 0 {
						passedOn++
					}
				}
			}
			if given > len(cr.Rules) && len(cr.Rules) > 0 && len(cr.AggregationRule.ClusterRoleSelectors) == 1 {
				merged++
			}
		}
		if allowed, _ := referenceAllows(p, r); allowed {
			pol := rbac.NewPolicy(p.storedClusterRoles(), p.roles, p.clusterBindings, p.bindings)
			if _, reason := pol.Allows(&r.user, &r.info); strings.Contains(reason, "ClusterRole \"") {
				for name := range aggregatedNames {
					if !strings.Contains(reason, "of ClusterRole \""+name+"\"") {
						continue
					}
					if p.aggregatorRan {
						allowedViaAggregate++
					} else {
						allowedBeforeAggregation++
					}
				}
			}
		}
	}
	t.Logf("allowed through an aggregated role %d (before the controller ran %d), settled aggregates of 2+ rules %d, nested %d, reaching a cycle %d, equal rules merged %d, created rules passed on %d",
		allowedViaAggregate, allowedBeforeAggregation, many, nested, cyclic, merged, passedOn)
	for what, n := range map[string]int{"allowed through an aggregated role": allowedViaAggregate,
		"allowed through an aggregated role's own rules before the controller ran": allowedBeforeAggregation, "settled aggregates of 2+ rules": many,
		"nested aggregation": nested, "roles reaching a cycle": cyclic, "equal rules merged": merged,
		"an empty aggregate's created rules passed on": passedOn} {
		if n == 0 {
			t.Errorf("no input reached: %s", what)
		}
	}
}
