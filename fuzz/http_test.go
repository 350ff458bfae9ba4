package fuzz

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/randfill/bytesource"
	"sigs.k8s.io/yaml"

	"github.com/kubeproof/kubeproof/impl/apiserver/codec"
)

// allowed5xx documents the server errors a fuzzed request may legitimately
// get, with the reason each is not a bug. Everything else 5xx is a finding.
var allowed5xx = []struct {
	code   int
	reason metav1.StatusReason
	// message, when set, must be contained in the Status message: a
	// generic reason such as InternalError is allowed only for that case.
	message string
	why     string
}{
	// Creating with generateName retries a colliding random suffix a
	// bounded number of times, then answers 500 ServerTimeout as
	// kube-apiserver does; with 5 random characters it needs thousands of
	// objects of one prefix to become likely.
	{http.StatusInternalServerError, metav1.StatusReasonServerTimeout, "", "generateName collisions exhausted the retries"},
	// A read at a resourceVersion newer than the store's waits briefly for
	// it, then answers 504 Timeout (cause ResourceVersionTooLarge), as
	// kube-apiserver does; a watch ended by the fuzzer's own short deadline
	// before it started streaming answers the same way.
	{http.StatusGatewayTimeout, metav1.StatusReasonTimeout, "", "resourceVersion too large, or the fuzzer's deadline ended a watch"},
	// Evicting a pod that more than one PodDisruptionBudget selects is a
	// 500 in kube-apiserver too (the fuzzer creates budgets with the same
	// selector as its pods).
	{http.StatusInternalServerError, metav1.StatusReasonInternalError, "more than one PodDisruptionBudget", "eviction of a pod with several budgets"},
	// An admission webhook with failurePolicy Fail that cannot be called
	// (the fuzzer's webhook configurations name https://127.0.0.1:1 or a
	// fuzzed URL) refuses the write with kube-apiserver's 500.
	{http.StatusInternalServerError, metav1.StatusReasonInternalError, "failed calling webhook ", "a failurePolicy Fail webhook that cannot be called"},
	// An object asked for as YAML whose strings hold a control character
	// YAML refuses (DEL, which JSON carries as is) does not encode:
	// kube-apiserver answers a Status of code 500 and no reason with the
	// encoder's error, in YAML.
	{http.StatusInternalServerError, "", "yaml: control characters are not allowed", "an object YAML cannot carry"},
	// pods/proxy and services/proxy answer kube-apiserver's 503s when
	// there is nothing to proxy to: a Service without (ready) endpoints
	// for the port, a port number the Service lacks, or a pod or endpoint
	// address not reached (the fuzzer's server refuses every proxy
	// connection).
	{http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "no endpoints available for service ", "services/proxy without a ready endpoint"},
	{http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "no service port ", "services/proxy to a port number the Service lacks"},
	{http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "error trying to reach service: ", "a proxied pod or endpoint not reached"},
}

// httpMethods are the verbs' methods plus a few no handler serves.
var httpMethods = []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "CONNECT", "TRACE", "FOO"}

// contentTypes are request bodies' media types, served or not.
var contentTypes = []string{
	codec.JSON, codec.YAML, codec.Protobuf,
	"application/merge-patch+json", "application/json-patch+json", "application/strategic-merge-patch+json",
	"application/apply-patch+yaml", "application/json; charset=utf-8", "text/plain", "", "application/", ";;;",
}

// accepts are Accept headers, including the "as=" conversions kubectl uses.
var accepts = []string{
	"", "*/*", codec.JSON, codec.YAML, codec.Protobuf,
	"application/json;as=Table;v=v1;g=meta.k8s.io", "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json",
	"application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io", "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;v=v1;g=meta.k8s.io",
	"application/json;as=APIGroupDiscoveryList;v=v2;g=apidiscovery.k8s.io", "text/html", "application/json;q=0", "a/b;as=Table",
}

// queryParams are the parameters handlers read, each with values worth
// trying; "" values are replaced by fuzzer bytes.
var queryParams = map[string][]string{
	"dryRun":               {"All", "all", ""},
	"fieldValidation":      {"Strict", "Warn", "Ignore", ""},
	"labelSelector":        {"app=fuzz", "app!=fuzz,x", "!app", "app in (a,b)", ""},
	"fieldSelector":        {"metadata.name=seed", "metadata.namespace!=default", "spec.nodeName=", "status.phase=Pending", ""},
	"resourceVersion":      {"0", "1", "999999999", "-1", ""},
	"resourceVersionMatch": {"NotOlderThan", "Exact", ""},
	"limit":                {"1", "0", "-1", "500", ""},
	"continue":             {"eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiJhIn0", ""},
	"gracePeriodSeconds":   {"0", "-1", "30", ""},
	"propagationPolicy":    {"Foreground", "Background", "Orphan", ""},
	"orphanDependents":     {"true", "false", ""},
	"pretty":               {"true", ""},
	"fieldManager":         {"kubectl", ""},
	"force":                {"true", ""},
	"timeoutSeconds":       {"1", "-5", ""},
	"watch":                {"true", "1", ""},
	"allowWatchBookmarks":  {"true", ""},
	"sendInitialEvents":    {"true", ""},
	"includeObject":        {"Object", "Metadata", "None", ""},
}

var queryKeys = sortedKeys(queryParams)

// FuzzHTTP sends one request built from discovery and the fuzzer's bytes
// to the process's API server. Properties:
//   - no 5xx outside allowed5xx (a panic in a handler is a 500);
//   - an error answer is a metav1.Status when it is JSON;
//   - etcd's revision moves only on a 2xx answer to a write without
//     dryRun — nothing is stored by a rejected, read-only or dry-run
//     request;
//   - every object written by the request validates with its kind's
//     strategy (an object validation rejects is never stored);
//   - sent as a node, a service account, anonymously or impersonating
//     (the bytes after the request's, identity_test.go): a 2xx only
//     within the identity's fixed rules, a 403 in kube-apiserver's words
//     outside them, impersonation only by the administrator;
//   - a method outside the six on a resource path: the router's 405 for
//     the administrator, the authorizer's 403 for anyone else;
//   - sent as the node, half its requests are its own (the bytes after
//     the identity's, node_identity_test.go): its Node, its Lease and
//     another's, its pods' secrets and configmaps, answered exactly as
//     kube-apiserver's Node authorizer and NodeRestriction answer.
func FuzzHTTP(f *testing.F) {
	s := server(f)
	idx := map[string]byte{}
	for i := range s.discovered {
		f.Add([]byte{byte(i), 0, 0, 0, 0, 0})
		f.Add([]byte{byte(i), 1, 2, 1, 3, 0, 1, 2})
		if s.discovered[i].gv.Group == "" {
			idx[s.discovered[i].Name] = byte(i)
		}
	}
	// In order (seeds run in one process): the service account "seed",
	// the pod "seed" running as it, a TokenRequest of the account bound
	// to the pod (201), and a PUT of the pod's resize (a 422 on a fresh
	// server: the body is another pod variant's; 200 on a pod of that
	// variant, or on one a LimitRange in default gave resources, which
	// earlier inputs of the process — TestHTTPRequestsReachEveryOutcome's
	// in `go test` — may have created). The bytes after the first were
	// found by search for these requests. The server admits them with the
	// default plugins: the pod gets the kube-api-access volume, tolerations
	// and priority, and any limit range's defaults.
	for _, seed := range []struct {
		res  string
		rest string
	}{
		{"serviceaccounts", "\xe5\xc8(\x1e\xe6\x06b\xdc\xbdn \"N\x7f\x00\x9a\x86"},
		{"pods", "\xc7<$\xectLr\xa9\"\x86\xd3\xee\x8e\xe6\x82\xa5\x8aC\x9cK\x99\xb6a\xe7"},
		{"serviceaccounts/token", "\x84\x90*\xda\xf1\xaed\xe8j\x85i\xd2\xe9O"},
		{"pods/resize", "\x16" + "8V\xb6\x02:\xd8i\x1a\x95\xfbd\x993\xb3\x03\xb8"},
	} {
		f.Add(append([]byte{idx[seed.res]}, seed.rest...))
	}
	// Sent as other identities (the bytes after the request's choose,
	// identity_test.go; found by search for these outcomes): the node
	// creating a lease of another name in kube-node-lease
	// (NodeRestriction's 403) and an event (201); the service account
	// creating a configmap in its namespace (201), a pod there (Pod
	// Security's 403) and a secret (RBAC's 403); anonymous listing pods
	// (403); the administrator as the node creating a Node of another name
	// (NodeRestriction); the service account impersonating (refused).
	for _, seed := range []string{
		"$\x9f\xf7\xc8\x7fVw|\xab\r\xdb\xac\xe0:G\xb42\x01\x00\x01",
		"=\xb4\x15I\x94\x93\xc0\xc4<eg *\"+z\xa9\x04%I\x01\x00\x00\x00",
		"\xb1\xb3\xac\xdd\xb5\fq\xbd\xd5\x81@&uS\x8b\x90\x84\xb7r\x06\x91\xbb\xd8&V/\x1c\n\x02\x00\x01",
		"\x87K\x10\xe8@Z\xa0x\xb5/\xddv0\x1f\x8e\xa8F>H\xc6z^z\x96\x02\x00\x01",
		"QF\xa9\x9c\x11\xf0^V\x06\xc0\x98\xf1\x96\x02\x00\x01",
		"E\"\xa3\xc7\x12\x018\xef\xf4\xe9G\xda\xb0_Q\x82\x03\x00\x00\x00",
		"\b0>\xc4q\a]m\xfd\xa5u!x\x04\x03\x02\x00",
		"\xf2\xde$\xa8\xef,+d\x8d\x87\xa9=9\xf5\x13\x00{\xc4f\xdf\xb1T\xae\x02\x03\x00\x00",
	} {
		f.Add([]byte(seed))
	}
	// The node's own requests (node_identity_test.go): some request's
	// bytes (measured by building it), the node without impersonation,
	// the choice of one of its own requests, then bytes for each kind of
	// them (a Node, a Lease, the pod graph's objects).
	rng := rand.New(rand.NewSource(5))
	for kind := range 3 {
		for j := range 6 {
			var prefix []byte
			for prefix == nil {
				data := make([]byte, 48)
				rng.Read(data)
				in := &input{data: data}
				s.buildRequest(in)
				if len(in.data) > 0 {
					prefix = data[:len(data)-len(in.data)]
				}
			}
			f.Add(append(prefix, 1, 0, 0, byte(kind), byte(j), byte(j*7), byte(j*13), byte(j*3), 1, byte(j), byte(j*5)))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in := &input{data: data}
		req := s.buildRequest(in)
		as := s.chooseIdentity(in)
		if as.label == nodeIdentity.label && as.impersonateUser == "" && in.intn(2) == 0 {
			// One of the node's own requests (node_identity_test.go),
			// checked against the state just before it.
			req = s.buildNodeRequest(in)
			st, err := s.readNodeState(context.Background())
			if err != nil {
				t.Fatalf("reading the node's state: %v", err)
			}
			code, body := s.check(t, req)
			checkNode(t, req, st, code, body)
			return
		}
		if as.namespace != "" && in.bool() {
			req = s.buildRequestIn(&input{data: data}, as.namespace)
		}
		req.as = as
		if in.intn(6) == 5 {
			// The request in quotaNamespace, its ResourceQuotas' charges
			// checked (quota_test.go).
			req = s.buildRequestIn(&input{data: data}, quotaNamespace)
			req.as = as
			s.quotaRequest(t, req, in)
			return
		}
		s.check(t, req)
	})
}

// fuzzRequest is a request before it becomes an *http.Request.
type fuzzRequest struct {
	method, path        string
	query               url.Values
	contentType, accept string
	body                []byte
	// res is the discovered resource the path was built for.
	res *discoveredResource
	// as is who sends it (identity_test.go); zero: the administrator.
	as identity
	// node: one of the node's own requests (node_identity_test.go).
	node bool
}

func (r fuzzRequest) String() string {
	as := ""
	if r.as.label != "" {
		as = fmt.Sprintf("\nAs: %s (%s), Impersonate-User: %q, Impersonate-Group: %q", r.as.label, r.as.user, r.as.impersonateUser, r.as.impersonateGroups)
	}
	return fmt.Sprintf("%s %s?%s\nContent-Type: %q\nAccept: %q%s\n\n%q", r.method, r.path, r.query.Encode(), r.contentType, r.accept, as, r.body)
}

// buildRequest decides a request from in.
func (s *liveServer) buildRequest(in *input) fuzzRequest { return s.buildRequestIn(in, "") }

// buildRequestIn decides a request from in, sent to namespace ns when
// that is set (the same bytes decide the same request otherwise).
func (s *liveServer) buildRequestIn(in *input, nsOverride string) fuzzRequest {
	d := &s.discovered[in.intn(len(s.discovered))]
	parent, sub, _ := strings.Cut(d.Name, "/")
	verb := pick(in, append(append([]string{}, d.Verbs...), "get", "create"))
	ns := pick(in, fuzzNamespaces)
	if nsOverride != "" {
		ns = nsOverride
	}
	name := pick(in, []string{"seed", "a", "b", "", "x." + in.string(12)})
	if name == "" && sub != "" {
		name = "seed"
	}
	path := d.root
	if d.Namespaced && !(verb == "list" && in.intn(4) == 0) {
		path += "/namespaces/" + url.PathEscape(ns)
	}
	path += "/" + parent
	collection := verb == "create" || verb == "list" || verb == "deletecollection" || verb == "watch"
	if !collection || in.intn(8) == 0 {
		path += "/" + url.PathEscape(name)
		if sub != "" {
			path += "/" + sub
		}
	}
	method := map[string]string{"get": "GET", "list": "GET", "watch": "GET", "create": "POST", "update": "PUT",
		"patch": "PATCH", "delete": "DELETE", "deletecollection": "DELETE"}[verb]
	if method == "" || in.intn(16) == 0 {
		method = pick(in, httpMethods)
	}
	r := fuzzRequest{method: method, path: path, query: url.Values{}, res: d}
	if verb == "watch" {
		r.query.Set("watch", "true")
	}
	for range max(0, in.intn(6)-2) {
		k := pick(in, queryKeys)
		v := pick(in, queryParams[k])
		if v == "" {
			v = in.string(16)
		}
		r.query.Add(k, v)
	}
	if in.intn(4) == 0 {
		r.accept = pick(in, accepts)
	}
	r.contentType = pick(in, contentTypes[:3])
	if method == "PATCH" {
		r.contentType = pick(in, contentTypes[3:7])
	}
	if in.intn(8) == 0 {
		r.contentType = pick(in, contentTypes)
	}
	if method == "POST" || method == "PUT" || method == "PATCH" || (method == "DELETE" && in.bool()) {
		r.body = s.buildBody(in, d, sub, ns, name, r.contentType, method)
	}
	return r
}

// buildBody makes a request body: a valid object of the kind, one with a
// field replaced by fuzzed JSON, a randfill object, a patch, or raw bytes.
// For pods/resize the object and patches mostly edit the containers'
// resources and resizePolicy (resizedDoc, resizePatchBody).
func (s *liveServer) buildBody(in *input, d *discoveredResource, sub, ns, name, contentType, method string) []byte {
	_, c := served()
	var doc []byte
	switch sub {
	case "scale":
		doc = fmt.Appendf(nil, `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":%q,"namespace":%q},"spec":{"replicas":%s}}`, name, ns, in.number())
	case "binding":
		doc = fmt.Appendf(nil, `{"apiVersion":"v1","kind":"Binding","metadata":{"name":%q},"target":{"kind":"Node","name":%q}}`, name, pick(in, []string{"seed", "a", ""}))
	case "token":
		// A TokenRequest, bound to a pod, a secret, a node or nothing
		// (the server has a signing key, so serviceaccounts/token issues
		// tokens for service accounts the fuzzer created).
		ref := ""
		if kind := pick(in, []string{"", "Pod", "Pod", "Secret", "Node", "Deployment"}); kind != "" {
			ref = fmt.Sprintf(`,"boundObjectRef":{"kind":%q,"apiVersion":%q,"name":%q%s}`, kind, pick(in, []string{"v1", "", "apps/v1"}),
				pick(in, []string{"seed", "a", "missing"}), pick(in, []string{"", "", `,"uid":"x"`}))
		}
		doc = fmt.Appendf(nil, `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","metadata":{"name":%q,"namespace":%q},"spec":{"audiences":%s,"expirationSeconds":%s%s}}`,
			name, ns, pick(in, []string{`[]`, `["api"]`, `["a","b"]`, `[""]`, `null`}), pick(in, []string{"3600", "600", "599", "4294967296", in.number()}), ref)
	case "eviction":
		doc = fmt.Appendf(nil, `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":%q,"namespace":%q}}`, name, ns)
	default:
		if d.res == nil { // a review resource: a generic object of its kind
			doc = fmt.Appendf(nil, `{"apiVersion":%q,"kind":%q,"metadata":{"name":%q},"spec":{"user":"u","resourceAttributes":{"verb":"get","resource":"pods","namespace":%q},"audiences":["a"],"token":"x"}}`,
				d.gv.String(), d.Kind, name, ns)
		} else {
			v := 0
			if n := len(templateVariants[templateKey(d.res)]); n > 0 {
				v = in.intn(n + 1)
			}
			doc = templateVariant(d.res, ns, name, v)
			if sub == "resize" && method != "PATCH" && in.intn(4) > 0 {
				doc = resizedDoc(in, doc)
			}
		}
	}
	if method == "DELETE" {
		doc = fmt.Appendf(nil, `{"apiVersion":"v1","kind":"DeleteOptions","gracePeriodSeconds":%s,"propagationPolicy":%q}`, in.number(), pick(in, []string{"Orphan", "Background", "x"}))
	}
	switch in.intn(8) {
	case 0, 1, 2: // as built
	case 3, 4:
		doc = mutateJSON(in, doc)
	case 5:
		if sub == "" && method != "DELETE" && d.res != nil {
			obj := d.res.New()
			fuzzer.FuzzerFor(fillFuncs, bytesource.New(in.bytes(256)), c.Factory).NilChance(0.3).NumElements(0, 2).Fill(obj)
			if b, err := encodeAs(c, codec.JSON, obj); err == nil {
				doc = b
			}
		}
	case 6:
		if method == "PATCH" && sub == "resize" {
			return resizePatchBody(in, contentType, doc)
		}
		if method == "PATCH" {
			return patchBody(in, contentType, doc)
		}
	default:
		return in.rest()
	}
	return encodeBody(c, d, contentType, doc)
}

// encodeBody converts a JSON document to contentType when it is YAML or
// protobuf (sending it as is when it does not decode).
func encodeBody(c *codec.Codecs, d *discoveredResource, contentType string, doc []byte) []byte {
	switch {
	case strings.HasPrefix(contentType, codec.YAML), strings.HasPrefix(contentType, "application/apply-patch+yaml"):
		if y, err := yaml.JSONToYAML(doc); err == nil {
			return y
		}
	case strings.HasPrefix(contentType, codec.Protobuf) && d.res != nil:
		gvk := d.res.GroupVersionKind()
		obj, _, err := c.Factory.UniversalDeserializer().Decode(doc, &gvk, nil)
		if err == nil {
			if b, err := encodeAs(c, codec.Protobuf, obj); err == nil {
				return b
			}
		}
	}
	return doc
}

// check sends req and checks the properties listed on FuzzHTTP.
// It returns the answer's status code and body.
func (s *liveServer) check(t *testing.T, req fuzzRequest) (int, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rev0, err := s.revision(ctx)
	if err != nil {
		t.Fatalf("reading etcd revision: %v", err)
	}
	code, header, body := s.send(ctx, req)
	skipKnownBugs(t, body)
	if req.method == "DELETE" && strings.Contains(req.path, "/serviceaccounts") {
		// Put back a deleted "default" account once the request is
		// checked, as the service account controller would.
		defer func() {
			if err := s.ensureDefaultServiceAccounts(ctx); err != nil {
				t.Errorf("restoring the default service accounts: %v", err)
			}
		}()
	}
	rev1, err := s.revision(ctx)
	if err != nil {
		t.Fatalf("reading etcd revision: %v", err)
	}
	var status metav1.Status
	isJSON := strings.HasPrefix(header.Get("Content-Type"), codec.JSON)
	if code >= 400 && isJSON {
		if err := json.Unmarshal(body, &status); err != nil || status.Kind != "Status" {
			t.Fatalf("error answer %d is not a Status: %q\nrequest:\n%s", code, body, req)
		}
	}
	if code >= 500 && !allowedServerError(code, header, body) {
		t.Fatalf("server error %d: %s\nrequest:\n%s", code, body, req)
	}
	s.checkIdentity(t, ctx, req, code, answerStatus(header, body))
	changed := rev1 != rev0
	success := code >= 200 && code < 300
	if changed && (!success || req.method == "GET" || req.method == "HEAD" || req.method == "OPTIONS" || req.query.Get("dryRun") == "All") {
		// A service write takes its ClusterIPs and NodePorts before it
		// validates and gives them back when it does not end in a write,
		// as kube-apiserver's allocators do: the bitmaps' revisions move,
		// what they hold must not.
		given, err := s.allocationsGivenBack(ctx, rev0)
		if err != nil {
			t.Fatalf("reading what the request wrote: %v\nrequest:\n%s", err, req)
		}
		changed = !given
	}
	if changed && !success && (req.method == "POST" || req.method == "PUT" || req.method == "PATCH") {
		// Quota admission charged the write before something after it
		// refused (kube-apiserver does not undo the charge).
		charged, err := s.quotaChargedOnly(ctx, rev0, requestNamespace(req.path))
		if err != nil {
			t.Fatalf("reading what the request wrote: %v\nrequest:\n%s", err, req)
		}
		changed = !charged
	}
	switch {
	case !changed:
	case !success:
		t.Fatalf("storage changed (revision %d → %d) on a %d answer: %s\nrequest:\n%s", rev0, rev1, code, body, req)
	case req.method == "GET" || req.method == "HEAD" || req.method == "OPTIONS":
		t.Fatalf("storage changed (revision %d → %d) on a read:\nrequest:\n%s", rev0, rev1, req)
	case req.query.Get("dryRun") == "All":
		t.Fatalf("storage changed (revision %d → %d) on a dry run:\nrequest:\n%s", rev0, rev1, req)
	}
	if !changed {
		return code, body
	}
	written, err := s.writtenSince(ctx, rev0)
	if err != nil {
		t.Fatalf("reading what the request wrote: %v\nrequest:\n%s", err, req)
	}
	for _, w := range written {
		if errs := w.res.Strategy.Validate(ctx, w.obj); len(errs) > 0 {
			t.Fatalf("stored %s fails validation: %v\nrequest:\n%s\nanswer %d: %s", w.key, errs.ToAggregate(), req, code, body)
		}
	}
	return code, body
}

// send serves req in-process. Watches get a short deadline: the stream is
// ended by it, which is how a client's timeout ends a watch.
func (s *liveServer) send(ctx context.Context, req fuzzRequest) (int, http.Header, []byte) {
	// A watch is any "watch" parameter but 0 or false (an empty one
	// included), as kube-apiserver reads it.
	if w, ok := req.query["watch"]; ok && len(w) > 0 && w[0] != "0" && !strings.EqualFold(w[0], "false") || strings.Contains(req.path, "/watch/") {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 30*time.Millisecond)
		defer cancel()
	}
	target := req.path
	if len(req.query) > 0 {
		target += "?" + req.query.Encode()
	}
	hr, err := http.NewRequestWithContext(ctx, req.method, "http://fuzz"+target, bytes.NewReader(req.body))
	if err != nil {
		return http.StatusBadRequest, http.Header{}, nil // not sendable by any client
	}
	if req.contentType != "" {
		hr.Header.Set("Content-Type", req.contentType)
	}
	if req.accept != "" {
		hr.Header.Set("Accept", req.accept)
	}
	if req.as.token != "" {
		hr.Header.Set("Authorization", "Bearer "+req.as.token)
	}
	if req.as.anonymous {
		hr = hr.WithContext(context.WithValue(hr.Context(), anonymousKey{}, true))
	}
	if req.as.impersonateUser != "" {
		hr.Header.Set("Impersonate-User", req.as.impersonateUser)
	}
	for _, g := range req.as.impersonateGroups {
		hr.Header.Add("Impersonate-Group", g)
	}
	hr.RemoteAddr = "127.0.0.1:1"
	hr.RequestURI = target
	rec := httptest.NewRecorder()
	s.handler.ServeHTTP(rec, hr)
	return rec.Code, rec.Header(), rec.Body.Bytes()
}

func allowedServerError(code int, header http.Header, body []byte) bool {
	st := decodeStatus(header, body)
	if st == nil {
		return false
	}
	for _, a := range allowed5xx {
		if a.code == code && a.reason == st.Reason && strings.Contains(st.Message, a.message) {
			return true
		}
	}
	return false
}
