package fuzz

// Who FuzzHTTP's requests are sent as. An input byte after the request's
// own chooses the requester among a fixed set — the administrator (no
// credentials: admin, server_test.go), a node (system:node:fuzz-node in
// system:nodes, by a static token), a service account of fuzzIDNamespace
// bound to a fixed Role there (by a token the TokenRequest API issued at
// start), an anonymous request — and sometimes adds Impersonate-User
// (and Impersonate-Group) headers. The server authorizes as `kubeproof
// apiserver` does by default (system:masters, Node, RBAC with the
// bootstrap policy) and admits with its default plugins, so
// NodeRestriction, ServiceAccount admission, PodSecurity (fuzzIDNamespace
// enforces "restricted") and RBAC refusals are reached for every kind.
//
// The oracle for a requester other than the administrator (checkIdentity)
// works from what kube-apiserver 1.37 would allow, written here from its
// bootstrap policy and the fixed Role, not from the server's code:
//   - a 2xx answer to a resource request is allowed by the effective
//     user's rules (fuzzRules);
//   - a request outside them is a 403 Forbidden Status whose message is
//     kube-apiserver's authorization refusal for the attributes its
//     request-info parser gives the path (requestAttrs);
//   - any 403 naming a user ("is forbidden: User ...") has that shape;
//   - impersonation by anyone but the administrator is refused with the
//     impersonation refusal.
//
// The rules are an upper bound only while no binding but the fixed and
// bootstrap ones names the user or its groups: the administrator's own
// fuzzed requests may create such bindings, so extraGrants is checked
// and the bound not asserted when one exists.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

const (
	// fuzzIDNamespace holds the service account identity, its Role and
	// binding. No request of the administrator names it
	// (fuzzNamespaces), so the fixed policy stays as set up; it enforces
	// the restricted Pod Security level.
	fuzzIDNamespace = "fuzz-id"
	fuzzSAName      = "fuzz-writer"
	fuzzSAUser      = "system:serviceaccount:" + fuzzIDNamespace + ":" + fuzzSAName
	fuzzNodeName    = "fuzz-node"
	fuzzNodeUser    = "system:node:" + fuzzNodeName
	fuzzNodeToken   = "fuzz-node-token-0123456789"
	nodesGroup      = "system:nodes"
	fuzzNobody      = "fuzz-nobody"
)

// identity is who a request is sent as.
type identity struct {
	label string
	// token is sent as a bearer token; anonymous sends no credentials
	// and is not taken for the administrator.
	token     string
	anonymous bool
	// user and groups are what the server should see.
	user   string
	groups []string
	// admin: in system:masters, allowed everything.
	admin bool
	// namespace is where the identity's requests may be retargeted to.
	namespace string
	// impersonateUser and impersonateGroups are sent as headers.
	impersonateUser   string
	impersonateGroups []string
}

var (
	adminIdentity = identity{label: "admin", user: "fuzz-admin", groups: []string{"system:masters", "system:authenticated"}, admin: true}
	nodeIdentity  = identity{label: "node", token: fuzzNodeToken, user: fuzzNodeUser, groups: []string{nodesGroup, "system:authenticated"}, namespace: "kube-node-lease"}
	saIdentity    = identity{label: "serviceaccount", user: fuzzSAUser, namespace: fuzzIDNamespace,
		groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + fuzzIDNamespace, "system:authenticated"}}
	anonIdentity = identity{label: "anonymous", anonymous: true, user: "system:anonymous", groups: []string{"system:unauthenticated"}}
)

// chooseIdentity reads the requester from in (after the request's own
// bytes: an input that ends before is the administrator's, so older
// corpus entries keep their meaning).
func (s *liveServer) chooseIdentity(in *input) identity {
	var id identity
	switch in.intn(5) {
	case 1:
		id = nodeIdentity
	case 2:
		id = saIdentity
		id.token = s.saToken
	case 3:
		id = anonIdentity
	default:
		id = adminIdentity
	}
	if in.intn(4) == 3 {
		switch in.intn(4) {
		case 0:
			id.impersonateUser = fuzzNobody
		case 1:
			id.impersonateUser = fuzzSAUser
		case 2:
			id.impersonateUser, id.impersonateGroups = fuzzNodeUser, []string{nodesGroup}
		default:
			id.impersonateUser = fuzzNodeUser
		}
	}
	return id
}

// effective is the user a request is decided for: the impersonated one
// when the administrator impersonates (kube-apiserver adds
// system:authenticated, and a service account's groups), else the
// requester. ok is false when a requester other than the administrator
// impersonates (refused).
func (id identity) effective() (user string, groups []string, ok bool) {
	if id.impersonateUser == "" {
		return id.user, id.groups, true
	}
	if !id.admin {
		return "", nil, false
	}
	groups = append([]string(nil), id.impersonateGroups...)
	if id.impersonateUser == fuzzSAUser {
		groups = append(groups, saIdentity.groups[:2]...)
	}
	return id.impersonateUser, append(groups, "system:authenticated"), true
}

// setUpIdentities writes the fixed policy: the namespace fuzzIDNamespace
// (Pod Security "restricted" enforced), its default service account and
// fuzzSAName, the Role fuzzSARole bound to it, and issues its token.
func (s *liveServer) setUpIdentities(ctx context.Context) error {
	role, err := json.Marshal(rbacv1.Role{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
		ObjectMeta: metav1.ObjectMeta{Name: fuzzSAName}, Rules: fuzzSARole})
	if err != nil {
		return err
	}
	for _, w := range []struct{ path, body string }{
		{"/api/v1/namespaces", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"` + fuzzIDNamespace + `","labels":{"pod-security.kubernetes.io/enforce":"restricted"}}}`},
		{"/api/v1/namespaces/" + fuzzIDNamespace + "/serviceaccounts", `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"default"}}`},
		{"/api/v1/namespaces/" + fuzzIDNamespace + "/serviceaccounts", `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"` + fuzzSAName + `"}}`},
		{"/apis/rbac.authorization.k8s.io/v1/namespaces/" + fuzzIDNamespace + "/roles", string(role)},
		{"/apis/rbac.authorization.k8s.io/v1/namespaces/" + fuzzIDNamespace + "/rolebindings", `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"` + fuzzSAName + `"},` +
			`"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"` + fuzzSAName + `"},"subjects":[{"kind":"ServiceAccount","name":"` + fuzzSAName + `","namespace":"` + fuzzIDNamespace + `"}]}`},
	} {
		if code, body := s.do(ctx, http.MethodPost, w.path, "application/json", []byte(w.body)); code != http.StatusCreated {
			return fmt.Errorf("POST %s: %d %s", w.path, code, body)
		}
	}
	path := "/api/v1/namespaces/" + fuzzIDNamespace + "/serviceaccounts/" + fuzzSAName + "/token"
	code, body := s.do(ctx, http.MethodPost, path, "application/json",
		[]byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"expirationSeconds":604800}}`))
	var tr struct {
		Status struct{ Token string } `json:"status"`
	}
	if code != http.StatusCreated || json.Unmarshal(body, &tr) != nil || tr.Status.Token == "" {
		return fmt.Errorf("POST %s: %d %s", path, code, body)
	}
	s.saToken = tr.Status.Token
	bindings, err := s.bindingVersions(ctx)
	if err != nil {
		return err
	}
	s.fixedBindings = bindings
	return nil
}

// rule builds a policy rule.
func prule(group string, resources, verbs []string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{group}, Resources: resources, Verbs: verbs}
}

var (
	readVerbs = []string{"get", "list", "watch"}
	// fuzzSARole is the service account's Role in fuzzIDNamespace.
	fuzzSARole = []rbacv1.PolicyRule{
		prule("", []string{"configmaps"}, []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}),
		prule("", []string{"pods"}, []string{"get", "list", "watch", "create", "delete"}),
		prule("", []string{"secrets", "serviceaccounts"}, []string{"get"}),
		prule("", []string{"serviceaccounts/token", "events", "services"}, []string{"create"}),
		prule("apps", []string{"deployments"}, []string{"get", "list", "watch", "create", "update", "patch"}),
	}
	// basicUserRules: kube-apiserver's bootstrap system:basic-user,
	// bound to system:authenticated (its other bindings for groups grant
	// non-resource URLs only).
	basicUserRules = []rbacv1.PolicyRule{
		prule("authorization.k8s.io", []string{"selfsubjectaccessreviews", "selfsubjectrulesreviews"}, []string{"create"}),
		prule("authentication.k8s.io", []string{"selfsubjectreviews"}, []string{"create"}),
	}
	// upstreamNodeRules: what kube-apiserver's Node authorizer can allow
	// a node at most (its static node rules; it narrows reads of secrets,
	// configmaps, volumes and tokens to its pods' and NodeRestriction
	// narrows writes to its own objects).
	upstreamNodeRules = []rbacv1.PolicyRule{
		prule("authentication.k8s.io", []string{"tokenreviews"}, []string{"create"}),
		prule("authorization.k8s.io", []string{"subjectaccessreviews", "localsubjectaccessreviews"}, []string{"create"}),
		prule("", []string{"services", "pods", "secrets", "configmaps"}, readVerbs),
		prule("", []string{"nodes"}, []string{"create", "get", "list", "watch", "update", "patch"}),
		prule("", []string{"nodes/status", "pods/status"}, []string{"update", "patch"}),
		prule("", []string{"events"}, []string{"create", "update", "patch"}),
		prule("", []string{"pods"}, []string{"create", "delete"}),
		prule("", []string{"pods/eviction", "serviceaccounts/token"}, []string{"create"}),
		prule("", []string{"persistentvolumeclaims", "persistentvolumes", "endpoints"}, []string{"get"}),
		prule("", []string{"persistentvolumeclaims/status"}, []string{"get", "update", "patch"}),
		prule("certificates.k8s.io", []string{"certificatesigningrequests"}, []string{"create", "get", "list", "watch"}),
		prule("coordination.k8s.io", []string{"leases"}, []string{"get", "create", "update", "patch", "delete"}),
		prule("storage.k8s.io", []string{"volumeattachments"}, []string{"get"}),
		prule("storage.k8s.io", []string{"csidrivers"}, readVerbs),
		prule("storage.k8s.io", []string{"csinodes"}, []string{"get", "create", "update", "patch", "delete"}),
		prule("node.k8s.io", []string{"runtimeclasses"}, readVerbs),
	}
)

// mayDo: the rules a user with groups has at most allow attrs.
func mayDo(user string, groups []string, a authzAttrs) bool {
	var rules []rbacv1.PolicyRule
	if slices.Contains(groups, "system:authenticated") {
		rules = append(rules, basicUserRules...)
	}
	if user == fuzzNodeUser && slices.Contains(groups, nodesGroup) {
		rules = append(rules, upstreamNodeRules...)
	}
	if user == fuzzSAUser && a.ns == fuzzIDNamespace {
		rules = append(rules, fuzzSARole...)
	}
	res := a.resource
	if a.sub != "" {
		res += "/" + a.sub
	}
	for _, r := range rules {
		if slices.Contains(r.Verbs, a.verb) && slices.Contains(r.APIGroups, a.group) && slices.Contains(r.Resources, res) {
			return true
		}
	}
	return false
}

// authzAttrs are the authorization attributes of a resource request.
type authzAttrs struct {
	verb, group, resource, sub, ns, name string
}

// requestAttrs parses a request as kube-apiserver's request-info parser
// does (rewritten from its rules): /api/<v> or /apis/<g>/<v>, then
// /namespaces/<ns>/ moved past unless what follows is the namespace's
// status or finalize, then resource/name/subresource; a GET without a
// name is a list, or a watch when the first "watch" parameter is other
// than false or 0, named by a metadata.name field selector
// (selectedName); a DELETE without a name a deletecollection; other
// methods than the six have the verb "". ok is false for a path that is
// not a resource request (or a /watch/ path, which FuzzHTTP does not
// build).
func requestAttrs(method, target string) (a authzAttrs, ok bool) {
	u, err := url.Parse("http://fuzz" + target)
	if err != nil {
		return a, false
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		a.group = parts[1]
		parts = parts[3:]
	default:
		return a, false
	}
	if parts[0] == "watch" || parts[0] == "proxy" {
		return a, false
	}
	a.verb = map[string]string{"POST": "create", "GET": "get", "HEAD": "get", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}[method]
	if parts[0] == "namespaces" && len(parts) > 1 {
		a.ns = parts[1]
		if len(parts) > 2 && parts[2] != "status" && parts[2] != "finalize" {
			parts = parts[2:]
		}
	}
	a.resource = parts[0]
	if len(parts) >= 2 {
		a.name = parts[1]
	}
	if len(parts) >= 3 {
		a.sub = parts[2]
	}
	if a.name == "" && a.verb == "get" {
		a.verb = "list"
		if w := u.Query()["watch"]; len(w) > 0 && !strings.EqualFold(w[0], "false") && w[0] != "0" {
			a.verb = "watch"
		}
	}
	if a.name == "" && a.verb == "delete" {
		a.verb = "deletecollection"
	}
	if a.name == "" && (a.verb == "list" || a.verb == "watch") {
		a.name = selectedName(u.Query())
	}
	return a, true
}

// selectedName is the name a list's or watch's field selector requires
// (metadata.name=<name>), which kube-apiserver's request-info parser
// takes as the request's name when the list options decode and the name
// could be a path segment; "" otherwise.
func selectedName(q url.Values) string {
	first := func(k string) (string, bool) {
		v, ok := q[k]
		if !ok || len(v) == 0 {
			return "", false
		}
		return v[0], true
	}
	for _, k := range []string{"limit", "timeoutSeconds"} {
		if v, ok := first(k); ok {
			if _, err := strconv.ParseInt(v, 10, 64); err != nil {
				return ""
			}
		}
	}
	if v, ok := first("labelSelector"); ok {
		if _, err := labels.Parse(v); err != nil {
			return ""
		}
	}
	v, ok := first("fieldSelector")
	if !ok {
		return ""
	}
	sel, err := fields.ParseSelector(v)
	if err != nil {
		return ""
	}
	name, ok := sel.RequiresExactMatch("metadata.name")
	if !ok || name == "." || name == ".." || strings.ContainsAny(name, "/%") {
		return ""
	}
	return name
}

// forbiddenMessage is kube-apiserver's 403 message refusing user attrs.
func forbiddenMessage(user string, a authzAttrs) string {
	res := a.resource
	if a.sub != "" {
		res += "/" + a.sub
	}
	qualified := a.resource
	if a.group != "" {
		qualified += "." + a.group
	}
	prefix := qualified + " is forbidden: "
	if a.name != "" {
		prefix = fmt.Sprintf("%s %q is forbidden: ", qualified, a.name)
	}
	scope := "at the cluster scope"
	if a.ns != "" {
		scope = fmt.Sprintf("in the namespace %q", a.ns)
	}
	return fmt.Sprintf("%sUser %q cannot %s resource %q in API group %q %s", prefix, user, a.verb, res, a.group, scope)
}

// impersonationMessage is kube-apiserver's refusal of requester's
// impersonation of user (the first header checked).
func impersonationMessage(requester, user string) string {
	if ns, name, ok := strings.Cut(strings.TrimPrefix(user, "system:serviceaccount:"), ":"); ok && strings.HasPrefix(user, "system:serviceaccount:") {
		return fmt.Sprintf(`serviceaccounts %q is forbidden: User %q cannot impersonate resource "serviceaccounts" in API group "" in the namespace %q`, name, requester, ns)
	}
	return fmt.Sprintf(`users %q is forbidden: User %q cannot impersonate resource "users" in API group "" at the cluster scope`, user, requester)
}

// refusal reports whether msg is the refusal want, possibly followed by
// RBAC's reason: kube-apiserver's RBAC authorizer gives the errors it met
// resolving the user's bindings ("RBAC: clusterrole... not found", once
// the administrator's fuzzed requests deleted a bootstrap role a binding
// names), after ": " or, behind another authorizer's reason, on a new
// line.
func refusal(msg, want string) bool {
	rest, ok := strings.CutPrefix(msg, want)
	return ok && (rest == "" || strings.HasPrefix(rest, ": RBAC: ") || strings.HasPrefix(rest, "\nRBAC: "))
}

// userRefusal finds a refusal naming a user in a 403's message.
var userRefusal = regexp.MustCompile(`is forbidden: User "`)

// checkIdentity checks the answer to req against who sent it (see the
// file comment). status is the answer decoded, when it is a JSON Status.
func (s *liveServer) checkIdentity(t *testing.T, ctx context.Context, req fuzzRequest, code int, status *metav1.Status) {
	t.Helper()
	id := req.as
	if id.label == "" {
		id = adminIdentity
	}
	standard := slices.Contains([]string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"}, req.method)
	target := req.path
	if len(req.query) > 0 {
		target += "?" + req.query.Encode()
	}
	attrs, resourceReq := requestAttrs(req.method, target)
	user, groups, impersonationOK := id.effective()
	if status != nil && code == http.StatusForbidden && userRefusal.MatchString(status.Message) {
		// Whoever sent it, a refusal naming a user is the authorizer's
		// or the impersonation filter's, in kube-apiserver's words.
		if status.Reason != metav1.StatusReasonForbidden {
			t.Fatalf("403 refusal with reason %q: %s\nas %s\nrequest:\n%s", status.Reason, status.Message, id.label, req)
		}
		want := []string{}
		if !impersonationOK {
			want = append(want, jsonString(impersonationMessage(id.user, id.impersonateUser)))
		}
		if resourceReq && impersonationOK {
			want = append(want, jsonString(forbiddenMessage(user, attrs)))
		}
		matched := slices.ContainsFunc(want, func(w string) bool { return refusal(status.Message, w) })
		if !matched && (user == fuzzNodeUser || id.user == fuzzNodeUser) {
			// The Node authorizer gives reasons, appended after ": ".
			for _, w := range want {
				matched = matched || strings.HasPrefix(status.Message, w+": ")
			}
		}
		if !matched && !(id.admin && id.impersonateUser == "") {
			t.Fatalf("403 message %q is not kube-apiserver's refusal, one of %q\nas %s (%s)\nrequest:\n%s", status.Message, want, id.label, user, req)
		}
		if id.admin && id.impersonateUser == "" {
			t.Fatalf("the administrator was refused: %s\nrequest:\n%s", status.Message, req)
		}
	}
	if !standard && resourceReq || resourceReq && id.admin && id.impersonateUser == "" && s.collectionMethodUnrouted(req, attrs) {
		s.checkUnservedMethod(t, ctx, req, id, code, status, attrs)
		return
	}
	if id.admin && id.impersonateUser == "" || !resourceReq {
		return
	}
	if !impersonationOK {
		if code != http.StatusForbidden {
			t.Fatalf("%s impersonating %s got %d, want 403\nrequest:\n%s", id.user, id.impersonateUser, code, req)
		}
		return
	}
	allowed := mayDo(user, groups, attrs)
	if allowed {
		return
	}
	// Outside the fixed rules: refused, unless the administrator's
	// fuzzed requests bound something to this user or its groups.
	extra, err := s.extraGrants(ctx, user, groups)
	if err != nil {
		t.Fatalf("reading the bindings: %v", err)
	}
	if extra != "" {
		return
	}
	if code != http.StatusForbidden {
		t.Fatalf("%s (%v) may not %+v, yet the answer is %d (want kube-apiserver's 403)\nas %s\nrequest:\n%s", user, groups, attrs, code, id.label, req)
	}
	if status == nil { // an answer in a media type not decoded here
		return
	}
	want := jsonString(forbiddenMessage(user, attrs))
	if !refusal(status.Message, want) && !(user == fuzzNodeUser && strings.HasPrefix(status.Message, want+": ")) {
		t.Fatalf("403 message %q, want %q\nas %s\nrequest:\n%s", status.Message, want, id.label, req)
	}
	if d := status.Details; d == nil || d.Name != jsonString(attrs.name) || d.Group != jsonString(attrs.group) || d.Kind != jsonString(attrs.resource) {
		t.Fatalf("403 details %+v, want name %q group %q kind %q\nrequest:\n%s", status.Details, attrs.name, attrs.group, attrs.resource, req)
	}
}

// bindingVersions are the resourceVersions of every RoleBinding and
// ClusterRoleBinding, by namespace/name.
func (s *liveServer) bindingVersions(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	for _, path := range []string{"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", "/apis/rbac.authorization.k8s.io/v1/rolebindings"} {
		code, body := s.do(ctx, http.MethodGet, path, "", nil)
		var list struct {
			Items []rbacv1.RoleBinding `json:"items"`
		}
		if code != http.StatusOK || json.Unmarshal(body, &list) != nil {
			return nil, fmt.Errorf("GET %s: %d %s", path, code, body)
		}
		for _, b := range list.Items {
			out[b.Namespace+"/"+b.Name] = b.ResourceVersion
		}
	}
	return out, nil
}

// extraGrants names a binding other than the fixed and bootstrap ones
// (as they were at start) that names user, one of groups, or (a service
// account's user) the account: "" when there is none.
func (s *liveServer) extraGrants(ctx context.Context, user string, groups []string) (string, error) {
	for _, path := range []string{"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", "/apis/rbac.authorization.k8s.io/v1/rolebindings"} {
		code, body := s.do(ctx, http.MethodGet, path, "", nil)
		var list struct {
			Items []rbacv1.RoleBinding `json:"items"`
		}
		if code != http.StatusOK || json.Unmarshal(body, &list) != nil {
			return "", fmt.Errorf("GET %s: %d %s", path, code, body)
		}
		for _, b := range list.Items {
			key := b.Namespace + "/" + b.Name
			if rv, ok := s.fixedBindings[key]; ok && rv == b.ResourceVersion {
				continue
			}
			for _, sub := range b.Subjects {
				if sub.Kind == "User" && sub.Name == user || sub.Kind == "Group" && slices.Contains(groups, sub.Name) ||
					sub.Kind == "ServiceAccount" && "system:serviceaccount:"+sub.Namespace+":"+sub.Name == user ||
					sub.Kind == "ServiceAccount" && sub.Namespace == "" && b.Namespace != "" && "system:serviceaccount:"+b.Namespace+":"+sub.Name == user {
					return key, nil
				}
			}
		}
	}
	return "", nil
}

// anonymousKey in a request's context tells admin not to authenticate it.
type anonymousKey struct{}

// jsonString is s as a JSON answer carries it: bytes that are not UTF-8
// become U+FFFD.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	var out string
	_ = json.Unmarshal(b, &out)
	return out
}

// answerStatus decodes an error answer's Status, in JSON, YAML or
// protobuf; nil when it is none of them, or when it is the Status of an
// answer that did not encode (code 500, no reason, under another HTTP
// status: see allowed5xx), which says nothing of the refusal.
func answerStatus(header http.Header, body []byte) *metav1.Status {
	st := decodeStatus(header, body)
	if st != nil && st.Code == http.StatusInternalServerError && st.Reason == "" {
		return nil
	}
	return st
}

// decodeStatus decodes a Status answer in JSON, YAML or protobuf; nil
// when it is none of them.
func decodeStatus(header http.Header, body []byte) *metav1.Status {
	ct := header.Get("Content-Type")
	switch {
	case strings.HasPrefix(ct, protobufAccept):
		h, b, err := protobufAsJSON(header, body)
		if err != nil {
			return nil
		}
		header, body = h, b
	case strings.HasPrefix(ct, "application/yaml"):
		b, err := yaml.YAMLToJSON(body)
		if err != nil {
			return nil
		}
		body = b
	case !strings.HasPrefix(ct, "application/json"):
		return nil
	}
	var st metav1.Status
	if json.Unmarshal(body, &st) != nil || st.Kind != "Status" {
		return nil
	}
	return &st
}

// checkUnservedMethod checks the answer to a method outside the six
// (OPTIONS, TRACE, CONNECT, any other) on a resource path. The verb is
// "": the administrator passes authorization and kube-apiserver's router,
// which has no route for the method, answers 405 MethodNotAllowed with
// its generic message and empty details (checked where the path is one
// the router has a route for — a fixed name, no proxy subresource — and
// the answer's media type is negotiable); anyone else is refused by the
// authorizer, as no rule but a wildcard one grants the verb "".
func (s *liveServer) checkUnservedMethod(t *testing.T, ctx context.Context, req fuzzRequest, id identity, code int, status *metav1.Status, attrs authzAttrs) {
	t.Helper()
	user, groups, impersonationOK := id.effective()
	if !impersonationOK {
		if code != http.StatusForbidden {
			t.Fatalf("%s impersonating %s got %d, want 403\nrequest:\n%s", id.user, id.impersonateUser, code, req)
		}
		return
	}
	if !slices.Contains(groups, "system:masters") {
		extra, err := s.extraGrants(ctx, user, groups)
		if err != nil {
			t.Fatalf("reading the bindings: %v", err)
		}
		if extra == "" && code != http.StatusForbidden {
			t.Fatalf("%s (%v) sent %s on a resource path: %d, want kube-apiserver's 403\nrequest:\n%s", user, groups, req.method, code, req)
		}
		return
	}
	routed := slices.Contains([]string{"", "seed", "a", "b"}, attrs.name) && attrs.sub != "proxy" &&
		!strings.HasSuffix(req.path, "/") && !strings.Contains(req.path, "//") && s.hasRoute(req, attrs)
	negotiable := slices.Contains([]string{"", "*/*", "application/json", "application/yaml", protobufAccept}, req.accept)
	if !routed || !negotiable {
		return
	}
	if code != http.StatusMethodNotAllowed || status == nil {
		t.Fatalf("%s on a resource path answered %d (%v), want kube-apiserver's router's 405\nrequest:\n%s", req.method, code, status, req)
	}
	if status.Reason != metav1.StatusReasonMethodNotAllowed || status.Message != "the server does not allow this method on the requested resource" ||
		status.Details == nil || status.Details.Name != "" || status.Details.Group != "" || status.Details.Kind != "" || status.Details.UID != "" ||
		len(status.Details.Causes) > 0 || status.Code != http.StatusMethodNotAllowed {
		t.Fatalf("405 Status %+v (details %+v), want MethodNotAllowed, the router's message and empty details\nrequest:\n%s", status, status.Details, req)
	}
}

// hasRoute reports whether kube-apiserver registers a route for the path
// of req (for some method): a subresource's path when it is discovered,
// an object's path when its resource has a verb on objects (get, update,
// patch, delete), a collection's when it has one on collections (list,
// watch, create, deletecollection; across namespaces list or watch) —
// review resources, create only, have no object path, and a namespaced
// object has none outside a namespace (a 404 whatever the method).
func (s *liveServer) hasRoute(req fuzzRequest, a authzAttrs) bool {
	if req.res == nil {
		return false
	}
	name := a.resource
	if a.sub != "" {
		name += "/" + a.sub
	}
	var verbs []string
	namespaced := false
	for _, d := range s.discovered {
		if d.root == req.res.root && d.Name == name {
			verbs = d.Verbs
		}
		if d.root == req.res.root && d.Name == a.resource {
			namespaced = d.Namespaced
		}
	}
	want := []string{"list", "watch", "create", "deletecollection"}
	switch {
	case namespaced && a.ns == "" && a.name != "":
		// A namespaced object outside a namespace has no route.
		return false
	case namespaced && a.ns == "":
		// Across namespaces, only lists and watches.
		want = []string{"list", "watch"}
	case a.sub != "":
		return len(verbs) > 0
	case a.name != "":
		want = []string{"get", "update", "patch", "delete"}
	}
	return slices.ContainsFunc(verbs, func(v string) bool { return slices.Contains(want, v) })
}

// collectionMethodUnrouted reports whether req is one of the six methods
// kube-apiserver has no route for on a collection's path: PUT or PATCH,
// and across namespaces (a namespaced resource's path without one) POST
// or DELETE — only lists and watches are served there.
func (s *liveServer) collectionMethodUnrouted(req fuzzRequest, a authzAttrs) bool {
	if req.res == nil || a.sub != "" || a.name != "" || !strings.HasSuffix(req.path, "/"+a.resource) {
		return false // not a collection's path (an object's, a subresource's, a trailing slash)
	}
	switch req.method {
	case "PUT", "PATCH":
		return true
	case "POST", "DELETE":
		namespaced := false
		for _, d := range s.discovered {
			if d.root == req.res.root && d.Name == a.resource {
				namespaced = d.Namespaced
			}
		}
		return namespaced && a.ns == ""
	}
	return false
}
