package fuzz

// The node's own objects and its pod graph under FuzzHTTP. Sent as the
// node identity (system:node:fuzz-node), a request built here writes a
// Node (its own or another's: create, update, merge patch, of the object
// or its status, with labels NodeRestriction lets a kubelet set and
// labels it does not, sometimes a taint), a Lease (its own or another's,
// in kube-node-lease or elsewhere), reads the secrets, configmaps and
// pods of fuzzNodeNS, where one pod bound to the node references some and
// one bound to another node others, or patches those pods' status. The
// oracle (expectNode) gives the exact answer kube-apiserver 1.37 gives,
// written from its Node
// authorizer (the Node rules with AuthorizeNodeWithSelectors, on by
// default, and the graph paths node <- pod <- secret/configmap) and
// NodeRestriction admission (its checks in order, its label policy: a
// kubelet may not add, change or remove a label under
// node-restriction.kubernetes.io, nor one under kubernetes.io or k8s.io
// that is not a kubelet label — the well-known hostname, os, arch,
// instance-type, region and zone labels and the kubelet.kubernetes.io and
// node.kubernetes.io namespaces), from the state the administrator reads
// just before the request.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// fuzzNodeNS holds the pods the Node authorizer's graph is built
	// from and the secrets and configmaps they use. No other request
	// names it.
	fuzzNodeNS    = "fuzz-node-ns"
	otherNodeName = "other-node"
	// ghostSecret is referenced by the node's pod and does not exist: the
	// node may read it (a 404), as the graph has it.
	ghostSecret = "ghost-secret"
)

// nodeLabelPool are label keys a node's writes set or remove: allowed
// (no prefix, a foreign domain, kubelet labels and namespaces) and
// refused (node-restriction.kubernetes.io, other kubernetes.io and k8s.io
// ones, the node-role labels).
var nodeLabelPool = []string{
	"plain", "example.com/team", "kubernetes.io/hostname", "kubernetes.io/os", "beta.kubernetes.io/arch",
	"topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region", "node.kubernetes.io/instance-type",
	"kubelet.kubernetes.io/x", "a.node.kubernetes.io/y", "node.kubernetes.io/exclude-from-external-load-balancers",
	"node-role.kubernetes.io/worker", "node-role.kubernetes.io/control-plane", "kubernetes.io/role",
	"node-restriction.kubernetes.io/pool", "x.node-restriction.kubernetes.io/y", "k8s.io/z", "sub.k8s.io/z",
	"example.kubernetes.io/w", "notkubernetes.io/v", "kubernetes.io.example.com/u",
}

// fuzzNodeLabels are the node's labels as the administrator registers it:
// some a kubelet could not have set, which it may keep but not remove or
// change.
var fuzzNodeLabels = map[string]string{
	"kubernetes.io/hostname": fuzzNodeName, "node-role.kubernetes.io/worker": "", "node-restriction.kubernetes.io/pool": "a", "plain": "x",
}

// setUpNodeGraph creates fuzzNodeNS with its secrets, configmaps and
// pods, the Nodes fuzz-node and other-node, and waits until the Node
// authorizer's graph lets the node read its pod's secret.
func (s *liveServer) setUpNodeGraph(ctx context.Context) error {
	node := func(name string, labels map[string]string) string {
		b, _ := json.Marshal(corev1.Node{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}, ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}})
		return string(b)
	}
	pod := func(name, node, secret, ghost, cm string) string {
		return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `"},"spec":{"nodeName":"` + node + `","containers":[{"name":"c","image":"i"}],` +
			`"volumes":[{"name":"s","secret":{"secretName":"` + secret + `"}},{"name":"g","secret":{"secretName":"` + ghost + `"}},{"name":"c","configMap":{"name":"` + cm + `"}}]}}`
	}
	ns := "/api/v1/namespaces/" + fuzzNodeNS
	writes := []struct{ path, body string }{
		{"/api/v1/namespaces", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"` + fuzzNodeNS + `"}}`},
		{ns + "/serviceaccounts", `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"default"}}`},
		{"/api/v1/nodes", node(fuzzNodeName, fuzzNodeLabels)},
		{"/api/v1/nodes", node(otherNodeName, nil)},
	}
	for _, name := range []string{"node-secret", "other-secret"} {
		writes = append(writes, struct{ path, body string }{ns + "/secrets", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"` + name + `"}}`})
	}
	for _, name := range []string{"node-cm", "other-cm"} {
		writes = append(writes, struct{ path, body string }{ns + "/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `"}}`})
	}
	writes = append(writes,
		struct{ path, body string }{ns + "/pods", pod("node-pod", fuzzNodeName, "node-secret", ghostSecret, "node-cm")},
		struct{ path, body string }{ns + "/pods", pod("other-pod", otherNodeName, "other-secret", "other-ghost", "other-cm")})
	for _, w := range writes {
		if code, body := s.do(ctx, http.MethodPost, w.path, "application/json", []byte(w.body)); code != http.StatusCreated {
			return fmt.Errorf("POST %s: %d %s", w.path, code, body)
		}
	}
	// The graph follows the pods through the authorizer's informers.
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, _, body := s.send(ctx, fuzzRequest{method: http.MethodGet, path: ns + "/secrets/node-secret", query: url.Values{}, as: nodeIdentity})
		if code == http.StatusOK {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the node cannot read its pod's secret: %d %s", code, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// buildNodeRequest decides one of the node's own requests from in (see
// the file comment).
func (s *liveServer) buildNodeRequest(in *input) fuzzRequest {
	r := fuzzRequest{query: url.Values{}, contentType: "application/json", as: nodeIdentity, node: true}
	switch in.intn(3) {
	case 0: // a Node
		name := pick(in, []string{fuzzNodeName, fuzzNodeName, otherNodeName})
		sub := pick(in, []string{"", "", "status"})
		r.path = "/api/v1/nodes/" + name
		if sub != "" {
			r.path += "/" + sub
		}
		labels := map[string]any{}
		for range in.intn(4) {
			k := pick(in, nodeLabelPool)
			switch in.intn(3) {
			case 0:
				labels[k] = nil
			case 1:
				labels[k] = "v"
			default:
				labels[k] = fuzzNodeLabels[k]
			}
		}
		taint := in.intn(6) == 0
		switch pick(in, []string{"POST", "PUT", "PATCH", "PATCH", "GET", "GET", "DELETE"}) {
		case "POST":
			r.method, r.path = "POST", "/api/v1/nodes"
			r.body = nodeBody(name, labels, taint)
		case "PUT":
			r.method, r.body = "PUT", nodeBody(name, labels, taint)
		case "PATCH":
			r.method, r.contentType = "PATCH", "application/merge-patch+json"
			patch := map[string]any{"metadata": map[string]any{"labels": labels}}
			if taint {
				patch["spec"] = map[string]any{"taints": []any{map[string]any{"key": "k", "effect": "NoSchedule"}}}
			}
			r.body, _ = json.Marshal(patch)
		case "GET":
			r.method = "GET"
			if in.intn(4) == 0 {
				r.path = "/api/v1/nodes"
			}
		default:
			r.method = "DELETE"
		}
	case 1: // a Lease
		ns := pick(in, []string{"kube-node-lease", "kube-node-lease", "default"})
		name := pick(in, []string{fuzzNodeName, fuzzNodeName, otherNodeName})
		coll := "/apis/coordination.k8s.io/v1/namespaces/" + ns + "/leases"
		r.path = coll + "/" + name
		body := fmt.Appendf(nil, `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":%q},"spec":{"holderIdentity":%q,"leaseDurationSeconds":40}}`, name, name)
		switch pick(in, []string{"POST", "PUT", "PATCH", "GET", "DELETE", "LIST"}) {
		case "POST":
			r.method, r.path, r.body = "POST", coll, body
		case "PUT":
			r.method, r.body = "PUT", body
		case "PATCH":
			r.method, r.contentType, r.body = "PATCH", "application/merge-patch+json", []byte(`{"spec":{"leaseDurationSeconds":41}}`)
		case "LIST":
			r.method, r.path = "GET", coll
		default:
			r.method = pick(in, []string{"GET", "DELETE"})
		}
	default: // the graph's objects
		res := pick(in, []string{"secrets", "configmaps", "pods"})
		names := map[string][]string{"secrets": {"node-secret", "other-secret", ghostSecret, "missing"},
			"configmaps": {"node-cm", "other-cm", "missing"}, "pods": {"node-pod", "other-pod", "missing"}}[res]
		ns := pick(in, []string{fuzzNodeNS, fuzzNodeNS, fuzzNodeNS, "default"})
		coll := "/api/v1/namespaces/" + ns + "/" + res
		switch in.intn(4) {
		case 0: // a list, by name or node or neither
			r.method, r.path = "GET", coll
			if res == "pods" && in.bool() {
				r.path = "/api/v1/pods"
			}
			switch in.intn(3) {
			case 0:
				r.query.Set("fieldSelector", "metadata.name="+pick(in, names))
			case 1:
				if res == "pods" {
					r.query.Set("fieldSelector", "spec.nodeName="+pick(in, []string{fuzzNodeName, otherNodeName}))
				}
			}
		case 1: // a write (never a pod's delete, which the node may do
			// to its own pods: the graph stays as set up)
			r.method = pick(in, []string{"PUT", "DELETE", "PATCH"})
			if res == "pods" && r.method == "DELETE" {
				r.method = "PUT"
			}
			r.path = coll + "/" + pick(in, names)
			if r.method == "PATCH" {
				r.contentType, r.body = "application/merge-patch+json", []byte(`{"metadata":{"labels":{"a":"b"}}}`)
			}
			if res == "pods" && in.bool() {
				// A pod's status, which the node may write for its own
				// pods, its labels excepted.
				r.method, r.path, r.contentType = "PATCH", r.path+"/status", "application/merge-patch+json"
				r.body = []byte(pick(in, []string{`{"status":{"message":"m"}}`, `{"metadata":{"labels":{"a":"b"}}}`}))
			}
		default:
			r.method, r.path = "GET", coll+"/"+pick(in, names)
		}
	}
	return r
}

// nodeBody is a Node named name with labels (nil values left out) and
// maybe a taint.
func nodeBody(name string, labels map[string]any, taint bool) []byte {
	l := map[string]string{}
	for k, v := range labels {
		if v, ok := v.(string); ok {
			l[k] = v
		}
	}
	n := corev1.Node{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}, ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}
	if taint {
		n.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}
	}
	b, _ := json.Marshal(n)
	return b
}

// nodeState is what the oracle needs to know before the request.
type nodeState struct {
	// nodes holds the Nodes fuzz-node and other-node that exist.
	nodes map[string]*corev1.Node
	// lease: fuzz-node's Lease in kube-node-lease exists.
	lease bool
}

// readNodeState reads the state the node's requests depend on.
func (s *liveServer) readNodeState(ctx context.Context) (nodeState, error) {
	st := nodeState{nodes: map[string]*corev1.Node{}}
	for _, name := range []string{fuzzNodeName, otherNodeName} {
		code, body := s.do(ctx, http.MethodGet, "/api/v1/nodes/"+name, "", nil)
		switch code {
		case http.StatusOK:
			var n corev1.Node
			if err := json.Unmarshal(body, &n); err != nil {
				return st, fmt.Errorf("decoding node %s: %w", name, err)
			}
			st.nodes[name] = &n
		case http.StatusNotFound:
		default:
			return st, fmt.Errorf("GET node %s: %d %s", name, code, body)
		}
	}
	code, body := s.do(ctx, http.MethodGet, "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/"+fuzzNodeName, "", nil)
	switch code {
	case http.StatusOK:
		st.lease = true
	case http.StatusNotFound:
	default:
		return st, fmt.Errorf("GET lease: %d %s", code, body)
	}
	return st, nil
}

// nodeGraph is the graph the setup built: what the node may read in
// fuzzNodeNS, by resource.
var nodeGraph = map[string][]string{
	"secrets":    {"node-secret", ghostSecret},
	"configmaps": {"node-cm"},
	"pods":       {"node-pod"},
}

// nodeExisting are the graph namespace's objects (none is ever deleted:
// the node may not, no other request names the namespace).
var nodeExisting = map[string][]string{
	"secrets":    {"node-secret", "other-secret"},
	"configmaps": {"node-cm", "other-cm"},
	"pods":       {"node-pod", "other-pod"},
}

// expectNode is kube-apiserver's answer to the node's request r in state
// st: the status code and, for a 403, the exact message ("" when the
// message is not checked).
func expectNode(r fuzzRequest, st nodeState) (int, string) {
	target := r.path
	if len(r.query) > 0 {
		target += "?" + r.query.Encode()
	}
	a, _ := requestAttrs(r.method, target)
	deny := func(reason string) (int, string) {
		msg := forbiddenMessage(fuzzNodeUser, a)
		if reason != "" {
			msg += ": " + reason
		}
		return http.StatusForbidden, msg
	}
	admissionDeny := func(qualified, name, reason string) (int, string) {
		return http.StatusForbidden, fmt.Sprintf("%s %q is forbidden: %s", qualified, name, reason)
	}
	switch a.resource {
	case "nodes":
		return expectNodeWrite(r, a, st, deny, admissionDeny)
	case "leases":
		switch a.verb {
		case "get", "create", "update", "patch", "delete":
		default:
			return deny("can only get, create, update, patch, or delete a node lease")
		}
		if a.ns != "kube-node-lease" {
			return deny(`can only access leases in the "kube-node-lease" system namespace`)
		}
		if a.verb != "create" && a.name != fuzzNodeName {
			return deny("can only access node lease with the same name as the requesting node")
		}
		var body struct {
			Metadata struct{ Name string } `json:"metadata"`
		}
		_ = json.Unmarshal(r.body, &body)
		switch a.verb {
		case "create":
			if body.Metadata.Name != fuzzNodeName {
				return admissionDeny("leases.coordination.k8s.io", body.Metadata.Name, "can only access node lease with the same name as the requesting node")
			}
			if st.lease {
				return http.StatusConflict, ""
			}
			return http.StatusCreated, ""
		case "update":
			if !st.lease {
				return http.StatusCreated, "" // leases are created on update
			}
			return http.StatusOK, ""
		default:
			if !st.lease {
				return http.StatusNotFound, ""
			}
			return http.StatusOK, ""
		}
	}
	// secrets, configmaps and pods of the graph.
	related := a.ns == fuzzNodeNS && slices.Contains(nodeGraph[a.resource], a.name)
	noPath := fmt.Sprintf("no relationship found between node '%s' and this object", fuzzNodeName)
	found := func() (int, string) {
		if a.name == "" || a.verb == "list" {
			return http.StatusOK, ""
		}
		if a.ns == fuzzNodeNS && slices.Contains(nodeExisting[a.resource], a.name) {
			return http.StatusOK, ""
		}
		return http.StatusNotFound, ""
	}
	if a.resource == "pods" && a.sub == "status" {
		if a.verb != "update" && a.verb != "patch" {
			return deny("")
		}
		// Allowed by the authorizer; NodeRestriction decides, on the
		// pod read first (a 404 when there is none).
		if a.ns != fuzzNodeNS || !slices.Contains(nodeExisting["pods"], a.name) {
			return http.StatusNotFound, ""
		}
		if a.name != "node-pod" {
			return admissionDeny("pods", a.name, fmt.Sprintf("node %q can only update pod status for pods with spec.nodeName set to itself", fuzzNodeName))
		}
		if strings.Contains(string(r.body), `"labels"`) {
			return admissionDeny("pods", a.name, fmt.Sprintf("node %q cannot update labels through pod status", fuzzNodeName))
		}
		return http.StatusOK, ""
	}
	if a.resource == "pods" {
		switch a.verb {
		case "get":
			if !related {
				return deny(noPath)
			}
			return found()
		case "list", "watch":
			if sel := r.query.Get("fieldSelector"); sel == "spec.nodeName="+fuzzNodeName {
				return http.StatusOK, ""
			}
			if a.name != "" {
				if !related {
					return deny(noPath)
				}
				return found()
			}
			return deny("can only list/watch pods with spec.nodeName field selector")
		}
		// update and patch (the generator sends no delete).
		return deny("")
	}
	switch a.verb {
	case "get", "list", "watch":
	default:
		return deny("can only read resources of this type")
	}
	if a.name == "" {
		return deny("No Object name found")
	}
	if !related {
		return deny(noPath)
	}
	return found()
}

// expectNodeWrite is expectNode for nodes and nodes/status.
func expectNodeWrite(r fuzzRequest, a authzAttrs, st nodeState, deny func(string) (int, string), admissionDeny func(string, string, string) (int, string)) (int, string) {
	switch a.sub {
	case "":
		switch a.verb {
		case "create", "update", "patch":
		case "get", "list", "watch":
			switch a.name {
			case fuzzNodeName:
				if st.nodes[fuzzNodeName] == nil {
					return http.StatusNotFound, ""
				}
				return http.StatusOK, ""
			case "":
				return deny(fmt.Sprintf("node '%s' cannot read all nodes, only its own Node object", fuzzNodeName))
			default:
				return deny(fmt.Sprintf("node '%s' cannot read '%s', only its own Node object", fuzzNodeName, a.name))
			}
		default:
			return deny("")
		}
	case "status":
		if a.verb != "update" && a.verb != "patch" {
			return deny("")
		}
	default:
		return deny("")
	}
	var sent corev1.Node
	_ = json.Unmarshal(r.body, &sent)
	name := a.name
	if a.verb == "create" {
		name = sent.Name
	}
	old := st.nodes[name]
	if a.verb != "create" && old == nil {
		return http.StatusNotFound, "" // read before admission
	}
	if name != fuzzNodeName {
		return admissionDeny("nodes", name, fmt.Sprintf("node %q is not allowed to modify node %q", fuzzNodeName, name))
	}
	if a.verb == "create" {
		if bad := refusedNodeLabels(sent.Labels, nil); len(bad) > 0 {
			return admissionDeny("nodes", name, fmt.Sprintf("node %q is not allowed to set the following labels: %s", fuzzNodeName, strings.Join(bad, ", ")))
		}
		if old != nil {
			return http.StatusConflict, ""
		}
		return http.StatusCreated, ""
	}
	// The object after the update, as admission sees it.
	next := sent
	if a.verb == "patch" {
		next = *old.DeepCopy()
		var patch struct {
			Metadata struct {
				Labels map[string]*string `json:"labels"`
			} `json:"metadata"`
			Spec *struct {
				Taints []corev1.Taint `json:"taints"`
			} `json:"spec"`
		}
		_ = json.Unmarshal(r.body, &patch)
		for k, v := range patch.Metadata.Labels {
			if next.Labels == nil {
				next.Labels = map[string]string{}
			}
			if v == nil {
				delete(next.Labels, k)
			} else {
				next.Labels[k] = *v
			}
		}
		if patch.Spec != nil {
			next.Spec.Taints = patch.Spec.Taints
		}
	}
	if !sameTaints(next.Spec.Taints, old.Spec.Taints) {
		return admissionDeny("nodes", name, fmt.Sprintf("node %q is not allowed to modify taints", fuzzNodeName))
	}
	if bad := refusedNodeLabels(next.Labels, old.Labels); len(bad) > 0 {
		return admissionDeny("nodes", name, "is not allowed to modify labels: "+strings.Join(bad, ", "))
	}
	return http.StatusOK, ""
}

// sameTaints compares taint lists as NodeRestriction does (semantically:
// nil and empty are the same).
func sameTaints(a, b []corev1.Taint) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Key != b[i].Key || a[i].Value != b[i].Value || a[i].Effect != b[i].Effect || !a[i].TimeAdded.Equal(b[i].TimeAdded) {
			return false
		}
	}
	return true
}

// refusedNodeLabels are the label keys added, changed or removed between
// old and labels that a kubelet may not touch, sorted.
func refusedNodeLabels(labels, old map[string]string) []string {
	var bad []string
	for _, k := range changedKeys(labels, old) {
		domain, _, ok := strings.Cut(k, "/")
		if !ok {
			continue
		}
		within := func(d string) bool { return domain == d || strings.HasSuffix(domain, "."+d) }
		kubeletLabel := slices.Contains([]string{"kubernetes.io/hostname", "topology.kubernetes.io/zone", "topology.kubernetes.io/region",
			"failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region", "beta.kubernetes.io/instance-type",
			"node.kubernetes.io/instance-type", "kubernetes.io/os", "kubernetes.io/arch", "beta.kubernetes.io/os", "beta.kubernetes.io/arch"}, k) ||
			within("kubelet.kubernetes.io") || within("node.kubernetes.io")
		if within("node-restriction.kubernetes.io") || (within("kubernetes.io") || within("k8s.io")) && !kubeletLabel {
			bad = append(bad, k)
		}
	}
	sort.Strings(bad)
	return bad
}

// changedKeys are the keys whose presence or value differs.
func changedKeys(a, b map[string]string) []string {
	var out []string
	for k, v := range a {
		if w, ok := b[k]; !ok || v != w {
			out = append(out, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	return out
}

// checkNode compares the answer to the node's request with expectNode's.
func checkNode(t *testing.T, r fuzzRequest, st nodeState, code int, body []byte) {
	t.Helper()
	wantCode, wantMsg := expectNode(r, st)
	if code != wantCode {
		t.Fatalf("node request answered %d, want %d (%s)\n%s\nrequest:\n%s", code, wantCode, wantMsg, body, r)
	}
	if wantMsg == "" {
		return
	}
	var status metav1.Status
	if err := json.Unmarshal(body, &status); err != nil || status.Kind != "Status" {
		t.Fatalf("node request answered %d without a Status: %s\nrequest:\n%s", code, body, r)
	}
	if !refusal(status.Message, wantMsg) || status.Reason != metav1.StatusReasonForbidden {
		t.Fatalf("node request refused with %s %q, want Forbidden %q\nrequest:\n%s", status.Reason, status.Message, wantMsg, r)
	}
}
