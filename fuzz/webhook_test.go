package fuzz

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	crand "crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"math/rand"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	kubeqos "k8s.io/kubectl/pkg/util/qos"

	"github.com/kubeproof/kubeproof/impl/apiserver/codec"
)

// webhookNamespace is FuzzWebhook's first namespace (webhookNamespaces),
// the one holding its Service. Its webhooks select objects by labels no
// other target sets, so they never answer another target's requests.
const webhookNamespace = "fuzz-webhook"

// webhookNamespaces are the namespaces FuzzWebhook writes to, with the
// labels they are created with; the server adds
// kubernetes.io/metadata.name (nsLabels). Their labels differ so that the
// registrations' namespaceSelectors (hookVariant.nsSelector) each select
// some of them and not others.
var webhookNamespaces = []struct {
	name   string
	labels map[string]string
}{
	{webhookNamespace, map[string]string{"fuzz-webhook": "on", "tier": "a"}},
	{webhookNamespace + "-b", map[string]string{"tier": "b"}},
	{webhookNamespace + "-c", map[string]string{}},
}

// nsLabels are the labels of the namespace ns as stored: the ones it was
// created with, and kubernetes.io/metadata.name, which kube-apiserver sets
// to every namespace's name. nil for a namespace not of webhookNamespaces.
func nsLabels(ns string) map[string]string {
	for _, n := range webhookNamespaces {
		if n.name == ns {
			out := map[string]string{corev1.LabelMetadataName: ns}
			for k, v := range n.labels {
				out[k] = v
			}
			return out
		}
	}
	return nil
}

// fuzzHook is one webhook FuzzWebhook registers. Each selects objects
// carrying its label (hookLabel), so an input chooses which are called.
type fuzzHook struct {
	// name is the webhook's name: in fuzzHooks the base one; in fuzzRegs
	// the registration's (regName).
	name string
	// base is the base hook's name (whose answer the input decides);
	// variant the registration's (fuzzRegs only).
	base     string
	variant  hookVariant
	mutating bool
	// fail: failurePolicy Fail, else Ignore.
	fail bool
	// reinvoke: reinvocationPolicy IfNeeded.
	reinvoke bool
}

// fuzzHooks in the order kube-apiserver calls them (one configuration
// per kind; webhooks in the configuration's order).
var fuzzHooks = []fuzzHook{
	{name: "m0.fuzz.kubeproof.io", mutating: true, fail: true, reinvoke: true},
	{name: "m1.fuzz.kubeproof.io", mutating: true, fail: false},
	{name: "m2.fuzz.kubeproof.io", mutating: true, fail: true},
	{name: "v0.fuzz.kubeproof.io", fail: true},
	{name: "v1.fuzz.kubeproof.io", fail: false},
}

// hookLabel is the label selecting a hook; its value, the variant's key,
// selects the registration (hookVariants).
func hookLabel(h fuzzHook) string {
	return "hook.fuzz.kubeproof.io/" + strings.SplitN(strings.Split(h.name, ".")[0], "-", 2)[0]
}

// hookVariant is one way a hook is registered: each fuzzHook is
// registered once per variant (fuzzRegs, each selecting its label's value
// key), so an input picks, per hook, which AdmissionReview versions the
// webhook accepts and how it is addressed.
type hookVariant struct {
	key string
	// versions is admissionReviewVersions.
	versions []string
	// service: addressed by clientConfig.service (an ExternalName service
	// at the webhook server, port and path), else by clientConfig.url.
	service bool
	// nsSelector is the namespaceSelector; nil: matchLabels
	// fuzz-webhook=on (webhookNamespace only).
	nsSelector *metav1.LabelSelector
}

// nsSel builds a namespaceSelector of matchLabels (key, value pairs) and
// matchExpressions.
func nsSel(matchLabels []string, exprs ...metav1.LabelSelectorRequirement) *metav1.LabelSelector {
	s := &metav1.LabelSelector{MatchExpressions: exprs}
	for i := 0; i+1 < len(matchLabels); i += 2 {
		if s.MatchLabels == nil {
			s.MatchLabels = map[string]string{}
		}
		s.MatchLabels[matchLabels[i]] = matchLabels[i+1]
	}
	return s
}

// nsReq is one matchExpressions requirement.
func nsReq(key string, op metav1.LabelSelectorOperator, values ...string) metav1.LabelSelectorRequirement {
	return metav1.LabelSelectorRequirement{Key: key, Operator: op, Values: values}
}

// selector is the registration's namespaceSelector.
func (v hookVariant) selector() *metav1.LabelSelector {
	if v.nsSelector == nil {
		return nsSel([]string{"fuzz-webhook", "on"})
	}
	return v.nsSelector
}

// selectsNamespace: the variant's namespaceSelector matches a request in
// the namespace ns, as kube-apiserver's namespace matcher decides: a
// cluster-scoped request (ns "") always matches; an empty selector
// matches every namespace; otherwise the stored namespace's labels
// (nsLabels) must satisfy every matchLabels pair and every requirement —
// In: the key is set to one of the values; NotIn: the key is not set or
// set to none of them; Exists: set; DoesNotExist: not set. Written out
// here, not taken from apimachinery's labels package the server uses, so
// the oracle does not share the server's code.
func (v hookVariant) selectsNamespace(ns string) bool {
	if ns == "" {
		return true
	}
	return v.selectsLabels(nsLabels(ns))
}

// selectsLabels: the variant's namespaceSelector matches a namespace
// with these labels.
func (v hookVariant) selectsLabels(labels map[string]string) bool {
	sel := v.selector()
	for k, want := range sel.MatchLabels {
		if got, ok := labels[k]; !ok || got != want {
			return false
		}
	}
	for _, r := range sel.MatchExpressions {
		got, set := labels[r.Key]
		in := false
		for _, x := range r.Values {
			in = in || set && got == x
		}
		var ok bool
		switch r.Operator {
		case metav1.LabelSelectorOpIn:
			ok = in
		case metav1.LabelSelectorOpNotIn:
			ok = !in
		case metav1.LabelSelectorOpExists:
			ok = set
		case metav1.LabelSelectorOpDoesNotExist:
			ok = !set
		}
		if !ok {
			return false
		}
	}
	return true
}

var hookVariants = []hookVariant{
	{key: "", versions: []string{"v1"}},
	{key: "b", versions: []string{"v1beta1"}},
	{key: "bv", versions: []string{"v1beta1", "v1"}},
	{key: "vb", versions: []string{"v1", "v1beta1"}},
	{key: "xb", versions: []string{"v9", "v1beta1"}},
	{key: "s", versions: []string{"v1"}, service: true},
	{key: "sb", versions: []string{"v1beta1", "v1"}, service: true},
	// namespaceSelector variants over webhookNamespaces' labels (tier a,
	// b, none; kubernetes.io/metadata.name).
	{key: "ni", versions: []string{"v1"}, nsSelector: nsSel(nil, nsReq("tier", metav1.LabelSelectorOpIn, "a", "b"))},
	{key: "ne", versions: []string{"v1"}, nsSelector: nsSel(nil, nsReq("tier", metav1.LabelSelectorOpExists))},
	{key: "nn", versions: []string{"v1"}, nsSelector: nsSel(nil, nsReq("tier", metav1.LabelSelectorOpNotIn, "a"))},
	{key: "nd", versions: []string{"v1"}, nsSelector: nsSel(nil, nsReq("tier", metav1.LabelSelectorOpDoesNotExist))},
	{key: "n0", versions: []string{"v1"}, nsSelector: nsSel(nil)},
	{key: "nm", versions: []string{"v1beta1"}, service: true, nsSelector: nsSel([]string{corev1.LabelMetadataName, webhookNamespace + "-b"},
		nsReq("tier", metav1.LabelSelectorOpIn, "b", "c"), nsReq("fuzz-webhook", metav1.LabelSelectorOpDoesNotExist))},
}

// review is the apiVersion of the AdmissionReview kube-apiserver sends:
// the first of versions it knows.
func (v hookVariant) review() string {
	for _, x := range v.versions {
		if x == "v1" || x == "v1beta1" {
			return "admission.k8s.io/" + x
		}
	}
	return ""
}

const (
	reviewV1      = "admission.k8s.io/v1"
	reviewV1beta1 = "admission.k8s.io/v1beta1"
)

// fuzzRegs are the webhooks registered: every fuzzHook in every variant,
// a hook's variants next to each other (only one of them matches an
// object, so the order of the hooks called is fuzzHooks').
var fuzzRegs = func() []fuzzHook {
	var out []fuzzHook
	for _, h := range fuzzHooks {
		for _, v := range hookVariants {
			r := h
			r.base, r.variant = h.name, v
			if v.key != "" {
				first, rest, _ := strings.Cut(h.name, ".")
				r.name = first + "-" + v.key + "." + rest
			}
			out = append(out, r)
		}
	}
	return out
}()

// webhookService is the Service the variants addressed by service name.
const webhookService = "fuzz-hooks"

// hookAnswer is what one webhook answers, decided from the fuzzer's bytes.
type hookAnswer struct {
	// delay: 0 none, 1 a little below the 1 s timeout, 2 past it (the
	// handler waits until the caller gives up).
	delay int
	// status is the HTTP status code; contentType the answer's header.
	status      int
	contentType string
	// raw, when not nil, is the body as is (not JSON, truncated, empty).
	raw []byte
	// The AdmissionReview's fields.
	apiVersion, kind string
	noResponse       bool
	uid              string // "" the request's; "-" none; else this one
	allowed          bool
	allowedKey       string // "allowed" or a miscased key
	result           *metav1.Status
	patchType        *string
	patch            []byte
	warnings         []string
	auditAnnotations map[string]string
}

// hookCall is one call the webhook server answered.
type hookCall struct {
	hook   fuzzHook
	review admissionv1.AdmissionReview
	answer hookAnswer
	// body is what the server sent back (before a delay past the timeout
	// the call is failed whatever the body).
	body []byte
	// byPatch: the input did not label the object for this registration,
	// an earlier webhook's patch did.
	byPatch bool
}

// webhookServer answers the fuzzed webhooks' calls over TLS with the
// answers of the current input and records the calls.
type webhookServer struct {
	srv *httptest.Server
	ca  []byte
	// registrations counts register's calls, naming their probes apart.
	registrations int

	mu      sync.Mutex
	answers map[string]hookAnswer // nil: every hook allows, no patch
	calls   []hookCall
}

func (w *webhookServer) script(answers map[string]hookAnswer) []hookCall {
	w.mu.Lock()
	defer w.mu.Unlock()
	calls := w.calls
	w.answers, w.calls = answers, nil
	return calls
}

func (w *webhookServer) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(r.URL.Path, "/")
	var hook fuzzHook
	for _, h := range fuzzRegs {
		if h.name == name {
			hook = h
		}
	}
	body, _ := io.ReadAll(r.Body)
	var rev admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &rev); err != nil || rev.Request == nil || hook.name == "" {
		http.Error(rw, "bad review", http.StatusBadRequest)
		return
	}
	w.mu.Lock()
	ans, scripted := w.answers[hook.base]
	if w.answers == nil || !scripted {
		ans = hookAnswer{status: 200, apiVersion: "=", kind: "AdmissionReview", allowed: true, allowedKey: "allowed"}
	}
	out := ans.body(string(rev.Request.UID), rev.APIVersion)
	w.calls = append(w.calls, hookCall{hook: hook, review: rev, answer: ans, body: out})
	w.mu.Unlock()
	switch ans.delay {
	case 1:
		time.Sleep(600 * time.Millisecond)
	case 2:
		select {
		case <-r.Context().Done():
		case <-time.After(3 * time.Second):
		}
		return
	}
	if ans.contentType != "-" {
		rw.Header().Set("Content-Type", ans.contentType)
	}
	rw.WriteHeader(ans.status)
	rw.Write(out)
}

// body is the answer's HTTP body for a request of uid in a review of
// apiVersion (the answer's apiVersion "=" is that one).
func (a hookAnswer) body(uid, apiVersion string) []byte {
	if a.raw != nil {
		return a.raw
	}
	m := map[string]any{}
	switch a.apiVersion {
	case "-":
	case "=":
		m["apiVersion"] = apiVersion
	default:
		m["apiVersion"] = a.apiVersion
	}
	if a.kind != "-" {
		m["kind"] = a.kind
	}
	if !a.noResponse {
		resp := map[string]any{a.allowedKey: a.allowed}
		switch a.uid {
		case "":
			resp["uid"] = uid
		case "-":
		default:
			resp["uid"] = a.uid
		}
		if a.result != nil {
			resp["status"] = a.result
		}
		if a.patchType != nil {
			resp["patchType"] = *a.patchType
		}
		if a.patch != nil {
			resp["patch"] = base64.StdEncoding.EncodeToString(a.patch)
		}
		if a.warnings != nil {
			resp["warnings"] = a.warnings
		}
		if a.auditAnnotations != nil {
			resp["auditAnnotations"] = a.auditAnnotations
		}
		m["response"] = resp
	} else {
		m["response"] = nil
	}
	b, _ := json.Marshal(m)
	return b
}

var (
	hooksMu  sync.Mutex
	theHooks *webhookServer
	hooksErr error
)

// webhooks starts the webhook server and registers fuzzHooks with the
// process's API server (once per process), and registers them again when
// their configurations were deleted since: in `go test ./fuzz` every
// target shares the server, and another target's request (FuzzHTTP's
// DELETE of the validatingwebhookconfigurations collection) may delete
// them.
func webhooks(t testing.TB, s *liveServer) *webhookServer {
	t.Helper()
	hooksMu.Lock()
	defer hooksMu.Unlock()
	if theHooks == nil && hooksErr == nil {
		theHooks, hooksErr = startWebhooks(s)
	} else if hooksErr == nil && !webhookConfigurationsExist(s, fuzzWebhookConfiguration) {
		hooksErr = theHooks.register(s)
	}
	if hooksErr != nil {
		t.Fatalf("starting the webhooks: %v", hooksErr)
	}
	return theHooks
}

// fuzzWebhookConfiguration names the mutating and the validating webhook
// configuration of fuzzHooks.
const fuzzWebhookConfiguration = "fuzz-webhook"

// webhookConfigurationsExist reports whether both the mutating and the
// validating webhook configuration called name are stored.
func webhookConfigurationsExist(s *liveServer, name string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, kind := range []string{"mutatingwebhookconfigurations", "validatingwebhookconfigurations"} {
		if code, _ := s.do(ctx, http.MethodGet, "/apis/admissionregistration.k8s.io/v1/"+kind+"/"+name, "", nil); code != http.StatusOK {
			return false
		}
	}
	return true
}

func startWebhooks(s *liveServer) (*webhookServer, error) {
	w := &webhookServer{}
	w.srv = httptest.NewUnstartedServer(w)
	w.srv.Config.ErrorLog = nil
	cert, err := webhookCert()
	if err != nil {
		return nil, fmt.Errorf("making the webhook server's certificate: %w", err)
	}
	w.srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	w.srv.StartTLS()
	w.ca = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: w.srv.Certificate().Raw})
	if err := w.register(s); err != nil {
		return nil, err
	}
	return w, nil
}

// register creates fuzzHooks' namespaces, service and configurations
// (those already there are kept) and waits until the admission plugins
// call every hook.
func (w *webhookServer) register(s *liveServer) error {
	w.registrations++
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	post := func(path, doc string) error {
		code, body := s.do(ctx, http.MethodPost, path, "application/json", []byte(doc))
		if code != http.StatusCreated && code != http.StatusConflict {
			return fmt.Errorf("POST %s: %d %s", path, code, body)
		}
		return nil
	}
	for _, n := range webhookNamespaces {
		doc, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": n.name, "labels": n.labels}})
		if err := post("/api/v1/namespaces", string(doc)); err != nil {
			return err
		}
		if err := post("/api/v1/namespaces/"+n.name+"/serviceaccounts", `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"default"}}`); err != nil {
			return err
		}
	}
	// The service the variants addressed by service call: an
	// ExternalName service at the webhook server's address, on its port.
	port, _ := strconv.Atoi(w.srv.URL[strings.LastIndex(w.srv.URL, ":")+1:])
	svc, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": webhookService},
		"spec": map[string]any{"type": "ExternalName", "externalName": "127.0.0.1", "ports": []any{map[string]any{"name": "https", "port": port}}}})
	if err := post("/api/v1/namespaces/"+webhookNamespace+"/services", string(svc)); err != nil {
		return err
	}
	var mutating, validating []map[string]any
	for _, h := range fuzzRegs {
		policy := "Ignore"
		if h.fail {
			policy = "Fail"
		}
		cc := map[string]any{"url": w.srv.URL + "/" + h.name, "caBundle": w.ca}
		if h.variant.service {
			cc = map[string]any{"service": map[string]any{"namespace": webhookNamespace, "name": webhookService, "path": "/" + h.name, "port": port}, "caBundle": w.ca}
		}
		hook := map[string]any{
			"name":                    h.name,
			"clientConfig":            cc,
			"rules":                   []any{map[string]any{"operations": []string{"CREATE", "UPDATE", "DELETE"}, "apiGroups": []string{""}, "apiVersions": []string{"v1"}, "resources": []string{"configmaps", "pods", "namespaces", "namespaces/status", "namespaces/finalize", "nodes"}}},
			"failurePolicy":           policy,
			"sideEffects":             "None",
			"admissionReviewVersions": h.variant.versions,
			"timeoutSeconds":          1,
			"namespaceSelector":       h.variant.selector(),
			"objectSelector":          map[string]any{"matchExpressions": []any{map[string]any{"key": hookLabel(h), "operator": "In", "values": []string{h.variant.key}}}},
		}
		if h.mutating {
			if h.reinvoke {
				hook["reinvocationPolicy"] = "IfNeeded"
			}
			mutating = append(mutating, hook)
		} else {
			validating = append(validating, hook)
		}
	}
	for _, c := range []struct {
		path, kind string
		hooks      []map[string]any
	}{
		{"/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", "MutatingWebhookConfiguration", mutating},
		{"/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", "ValidatingWebhookConfiguration", validating},
	} {
		doc, _ := json.Marshal(map[string]any{"apiVersion": "admissionregistration.k8s.io/v1", "kind": c.kind,
			"metadata": map[string]any{"name": fuzzWebhookConfiguration}, "webhooks": c.hooks})
		if err := post(c.path, string(doc)); err != nil {
			return err
		}
	}
	// The plugins read configurations from a cache: wait until
	// configmaps labelled for every hook, one per variant, reach each
	// registration (in a namespace the variant selects).
	called := map[string]bool{}
	for i := 0; ; i++ {
		v := hookVariants[i%len(hookVariants)]
		labels := map[string]string{}
		for _, h := range fuzzHooks {
			labels[hookLabel(h)] = v.key
		}
		ns := ""
		for _, n := range webhookNamespaces {
			if ns == "" && v.selectsNamespace(n.name) {
				ns = n.name
			}
		}
		w.script(nil)
		doc, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": fmt.Sprintf("probe-%d-%d", w.registrations, i), "labels": labels}})
		// A probe's webhook call may time out on a loaded machine (a 500
		// "failed calling webhook"): the call was made, which is all the
		// probe asks, and the next probes go on.
		if code, body := s.do(ctx, http.MethodPost, "/api/v1/namespaces/"+ns+"/configmaps", "application/json", doc); code != http.StatusCreated &&
			!(code == http.StatusInternalServerError && strings.Contains(string(body), "failed calling webhook")) {
			return fmt.Errorf("POST a probe configmap in %s: %d %s", ns, code, body)
		}
		for _, c := range w.script(nil) {
			called[c.hook.name] = true
		}
		if len(called) == len(fuzzRegs) {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("the webhooks were not called within a minute (called: %v)", called)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// webhookCert is a self-signed certificate for the webhook server, valid
// for 127.0.0.1 (url webhooks) and the service's name (service webhooks
// are called with that server name).
func webhookCert() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), crand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "fuzz-webhook"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true,
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{webhookService + "." + webhookNamespace + ".svc"},
	}
	der, err := x509.CreateCertificate(crand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// webhookPaths are the paths a webhook's patch edits, by kind.
var webhookPaths = map[string][]string{
	"ConfigMap": {"/data/a", "/data/b", "/data/k~1x", "/data", "/binaryData/b", "/immutable", "/metadata/labels/l",
		"/metadata/annotations/a", "/metadata/name", "/metadata/namespace", "/metadata/uid", "/metadata/resourceVersion",
		"/metadata/finalizers", "/metadata/finalizers/0", "/metadata/ownerReferences", "/kind", "/apiVersion", "/metadata", "/x", "",
		selectorPaths[0], selectorPaths[1], selectorPaths[0], selectorPaths[1]},
	"Namespace": {"/metadata/labels/tier", "/metadata/labels/fuzz-webhook", "/metadata/labels/kubernetes.io~1metadata.name", "/metadata/labels",
		"/metadata/annotations/a", "/spec/finalizers/-", "/status/phase", "/kind", "/metadata/labels/l",
		selectorPaths[0], selectorPaths[1], selectorPaths[0], selectorPaths[1]},
	// A Node: cluster-scoped, so every namespaceSelector matches it.
	"Node": {"/metadata/labels/l", "/metadata/annotations/a", "/metadata/name", "/metadata/namespace", "/metadata/labels",
		"/spec/unschedulable", "/spec/taints/-", "/spec/podCIDR", "/kind", "/apiVersion",
		selectorPaths[0], selectorPaths[1], selectorPaths[0], selectorPaths[1]},
	"Pod": {"/spec/containers/0/image", "/spec/containers/0/name", "/spec/containers/-", "/spec/containers/1", "/spec/nodeName",
		"/spec/restartPolicy", "/spec/containers/0/resources/limits/cpu", "/spec/activeDeadlineSeconds", "/spec/tolerations/-",
		"/metadata/labels/l", "/metadata/annotations/a", "/metadata/name", "/status/phase", "/spec/serviceAccountName", "/spec", "/kind",
		selectorPaths[0], selectorPaths[1], selectorPaths[0], selectorPaths[1]},
}

// selectorPaths are the labels selecting m2 and v0: a mutating webhook's
// patch setting or removing them makes the objectSelector of a later
// webhook match or not (kube-apiserver matches each at its turn, against
// the object as the webhooks before it left it).
var selectorPaths = []string{"/metadata/labels/hook.fuzz.kubeproof.io~1m2", "/metadata/labels/hook.fuzz.kubeproof.io~1v0"}

// patchValues are the values a patch operation sets.
func patchValue(in *input) any {
	switch in.intn(13) {
	case 11: // a variant's key (hookVariants)
		return pick(in, []string{"", "b", "s"})
	case 0:
		return "v"
	case 1:
		return "x.y-z"
	case 2:
		return 7
	case 3:
		return true
	case 4:
		return nil
	case 5:
		return map[string]any{"name": "c2", "image": "busybox"}
	case 6:
		return []any{"a", "b"}
	case 7:
		return map[string]any{}
	case 8:
		return strings.Repeat("h", 300<<10) // over the annotations' and a label's limits
	case 9:
		return "NotValid!"
	case 10:
		return json.RawMessage(in.number())
	default:
		return in.string(16)
	}
}

// buildPatch makes a JSON patch for an object of kind.
func buildPatch(in *input, kind string) []byte {
	switch in.intn(10) {
	case 0:
		return []byte("[]")
	case 1:
		return in.bytes(32) // anything
	case 2:
		return []byte(`{"op":"add","path":"/data/a","value":"v"}`) // not a list
	case 3:
		return []byte(`[{"op":"add"}]`)
	}
	var ops []map[string]any
	for range 1 + in.intn(3) {
		op := pick(in, []string{"add", "add", "replace", "replace", "remove", "test", "copy", "move", "bogus"})
		o := map[string]any{"op": op, "path": pick(in, webhookPaths[kind])}
		switch op {
		case "add", "replace", "test":
			o["value"] = patchValue(in)
			if strings.HasPrefix(o["path"].(string), "/metadata/labels/hook.") && in.intn(4) != 0 {
				o["value"] = hookVariants[in.intn(len(hookVariants))].key // selects a registration
			}
		case "copy", "move":
			o["from"] = pick(in, webhookPaths[kind])
		}
		ops = append(ops, o)
	}
	b, _ := json.Marshal(ops)
	return b
}

// buildAnswer decides one webhook's answer.
func buildAnswer(in *input, kind string, mutating bool) hookAnswer {
	a := hookAnswer{status: 200, contentType: "application/json", apiVersion: "=", kind: "AdmissionReview", allowed: true, allowedKey: "allowed"}
	flags := in.byte()
	if flags&1 == 0 { // a well-formed answer, allowed or denied, with or without a patch
		a.allowed = in.intn(4) != 0
		if !a.allowed || in.intn(4) == 0 {
			a.result = &metav1.Status{
				Code:    int32(pick(in, []int{0, 200, 399, 400, 403, 404, 409, 422, 429, 500, 503, 599, 600, 999, 1000, -1, 1 << 30})),
				Message: pick(in, []string{"", "no", "denied: " + in.string(12), strings.Repeat("m", 64<<10)}),
				Reason:  metav1.StatusReason(pick(in, []string{"", "Forbidden", "Invalid", "Custom"})),
				Status:  pick(in, []string{"", metav1.StatusFailure, metav1.StatusSuccess, "Weird"}),
			}
			if in.intn(4) == 0 {
				a.result.Details = &metav1.StatusDetails{Name: "x", RetryAfterSeconds: int32(in.intn(3))}
			}
		}
		if mutating && in.intn(3) != 0 {
			pt := string(admissionv1.PatchTypeJSONPatch)
			a.patchType = &pt
			a.patch = buildPatch(in, kind)
		}
		if in.intn(4) == 0 {
			a.warnings = []string{pick(in, []string{"careful", "", "line\nbreak", strings.Repeat("w", 8<<10), in.string(20)})}
		}
		if in.intn(8) == 0 {
			a.auditAnnotations = map[string]string{"k": in.string(8)}
		}
		return a
	}
	// Something wrong with it.
	switch in.intn(16) {
	case 0:
		a.status = pick(in, []int{201, 202, 204, 302, 400, 404, 500, 503})
	case 1:
		a.raw = pick(in, [][]byte{nil, []byte("not json"), []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{`), []byte("null"), []byte("[]")})
		if a.raw == nil {
			a.raw = []byte{}
		}
	case 2:
		a.raw = in.rest()
	case 3:
		a.apiVersion = pick(in, []string{reviewV1beta1, reviewV1, "-", "v1", "admission.k8s.io/v2"})
	case 4:
		a.kind = pick(in, []string{"-", "Status", "admissionreview"})
	case 5:
		a.noResponse = true
	case 6:
		a.uid = pick(in, []string{"-", "wrong", " "})
	case 7:
		a.allowedKey = pick(in, []string{"Allowed", "ALLOWED"})
	case 8: // a patch without its type, a type without a patch, or another type
		switch in.intn(4) {
		case 0:
			a.patch = []byte(`[{"op":"add","path":"/metadata/labels/l","value":"v"}]`)
		case 1:
			pt := string(admissionv1.PatchTypeJSONPatch)
			a.patchType = &pt
		default:
			pt := pick(in, []string{"", "MergePatch", "jsonpatch"})
			a.patchType = &pt
			a.patch = []byte(`[{"op":"add","path":"/metadata/labels/l","value":"v"}]`)
		}
	case 9:
		a.delay = 1
	case 10:
		a.delay = 2
	case 11:
		a.contentType = pick(in, []string{"-", "text/plain", ";;;", "application/yaml"})
	default: // a patch from a validating webhook too
		pt := string(admissionv1.PatchTypeJSONPatch)
		a.patchType = &pt
		a.patch = buildPatch(in, kind)
	}
	return a
}

// webhookTemplate is the object an input writes, by kind.
func webhookTemplate(kind, ns, name string, labels map[string]string, in *input) map[string]any {
	meta := map[string]any{"name": name, "namespace": ns, "labels": labels}
	if kind == "Namespace" || kind == "Node" {
		delete(meta, "namespace")
		return map[string]any{"apiVersion": "v1", "kind": kind, "metadata": meta}
	}
	if kind == "ConfigMap" {
		obj := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": map[string]any{"a": "1"}}
		if in.intn(4) == 0 {
			obj["immutable"] = true
		}
		return obj
	}
	return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": meta,
		"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "busybox"}}}}
}

// FuzzWebhook creates, updates and deletes configmaps and pods that
// mutating and validating webhooks (failurePolicy Fail and Ignore, one
// reinvoked IfNeeded) answer from an in-process TLS server with fuzzed
// answers: allowed or denied with any status, JSON patches valid or not
// (invalid values, immutable fields, huge), wrong uid, apiVersion or
// kind, non-JSON bodies, HTTP errors, answers near or past the 1 s
// timeout, warnings. The expected outcome is worked out from the calls
// the webhooks answered, as kube-apiserver 1.37's dispatchers treat each
// answer (webhookOutcome). Properties: FuzzHTTP's (no 5xx outside
// allowed5xx, errors are Status, nothing written by a refused request),
// and:
//   - a call that fails (error, timeout, non-2xx, bad review) under
//     failurePolicy Fail is a 500 InternalError "failed calling webhook";
//     under Ignore the request goes on;
//   - a denial is the webhook's code (400 when below 400) with
//     `admission webhook "<name>" denied the request`;
//   - a patch that does not apply or makes an undecodable object is a 500,
//     whatever the failure policy; an object the patches made invalid is a
//     422 (and no validating webhook is called);
//   - the webhooks are called in order, each only when its label is set;
//   - a pod delete (its pods are unscheduled: grace period 0) is admitted
//     twice, on the pod as stored and then on the pod marked for
//     deletion, the second time only when the first let it through, and
//     a refusal then leaves the pod marked (deletePasses);
//   - an accepted write stores exactly the object the webhooks made.
func FuzzWebhook(f *testing.F) {
	s := server(f)
	w := webhooks(f, s)
	for _, seed := range [][]byte{
		{0, 0xff, 0}, {0, 1, 0, 0}, {0, 1, 0, 1, 0, 2, 0, 0, 1, 0}, {1, 0x1f, 0, 0, 0, 0, 0, 0, 0, 0},
		{2, 0x1f}, {3, 3, 1, 1}, {0, 4, 1, 0, 2}, {0, 1, 0, 2, 1, 3, 5, 4, 0},
		{0, 8, 0, 1, 0, 3, 3}, {1, 1, 0, 2, 1, 0, 1, 1}, {4, 2, 0, 0, 3},
		// namespaceSelector variants (hookVariants from index 7), the
		// namespace last: m0 NotIn and v0 In a configmap create in
		// fuzz-webhook-b (both called), then in fuzz-webhook-c (v0 not);
		// a pod update in fuzz-webhook with every hook labelled for a
		// variant, DoesNotExist, empty, Exists, NotIn, matchLabels (the
		// empty and Exists ones called); a delete in fuzz-webhook-c that
		// the empty selector's m1 allows and DoesNotExist's v1 denies (403).
		{0, 1, 0x09, 9, 7, 0, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1, 1},
		{0, 1, 0x09, 9, 7, 0, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1, 2},
		{2, 0, 0x1f, 10, 11, 8, 9, 12, 0, 1, 1, 0, 1, 1, 0, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 0, 1, 1, 1, 1, 0},
		{3, 1, 0x12, 11, 10, 0, 1, 1, 0, 1, 1, 0, 0, 4, 1, 1, 1, 1, 1, 1, 1, 2},
		// Namespaces (kind byte 3), matched by their own labels (tier a,
		// b, none by the last byte): a create with m0 In and v0
		// DoesNotExist, tier b (m0 called, v0 not), then with no tier
		// (v0 called, m0 not); a delete (stored labels) of a tier a
		// namespace with m1 Exists and v1 NotIn (m1 called).
		{0, 3, 0x09, 7, 10, 0, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1},
		{0, 3, 0x09, 7, 10, 0, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 2},
		{3, 3, 0x12, 8, 9, 0, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 0},
		// A namespace created without tier: m0 NotIn a is called and adds
		// tier=a, so m2 In (a, b) is called too, matched against the
		// patched labels (be8d3c4e).
		{0, 3, 0x05, 9, 7, 0, 1, 1, 1, 4, 0, 0, 0, 12, 1, 97, 1, 1, 0, 1, 1, 0, 1, 1, 2},
		// Protobuf answers (the byte after the rest odd): a configmap
		// created with no webhook, a pod created in fuzz-webhook-c.
		{0, 0xff, 0, 1, 0, 1},
		{0, 0, 0, 2, 1},
		// Events (kind byte 7): a core/v1 create every event hook
		// selects, all allowing (the Equivalent events.k8s.io/v1 ones
		// called too, the Exact one not); an events.k8s.io/v1 create
		// whose Equivalent core/v1 mutating hook writes the message and
		// its Exact one unlabels the Equivalent one (protobuf answer); an
		// events.k8s.io/v1 update whose core/v1 hook changes the message
		// (the note is immutable there: 422); a core/v1 delete the
		// Equivalent events.k8s.io/v1 validating hook denies (protobuf
		// Status); a dry-run events.k8s.io/v1 create (protobuf).
		{0, 7, 0, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0},
		{0, 7, 1, 0x0f, 2, 1, 1, 1, 9, 2, 1, 2, 1, 9, 2, 0, 1, 3, 2, 1, 0, 1, 9, 1},
		{2, 7, 1, 0x02, 2, 1, 1, 0, 9, 0},
		{3, 7, 0, 0x80, 1, 1},
		{4, 7, 1, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 1},
		// An events.k8s.io/v1 update of an event recorded through core/v1
		// with a count (accepted: b19ec5b2); an events.k8s.io/v1 create
		// whose core/v1 hook sets the count (422 naming count).
		{2, 7, 1, 0, 1, 0},
		{0, 7, 1, 0x02, 3, 0, 0, 9, 1, 1},
		// Scope inputs (kind byte 15, webhook_scope_test.go). A Node
		// created for m0 NotIn a and v0 matchLabels (both called: a
		// cluster-scoped object is never exempted by namespaceSelector);
		// a Node deleted, denied by v1 DoesNotExist.
		{0, 15, 0, 0x09, 9, 12, 0, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 0, 0},
		{3, 15, 0, 0x10, 10, 0, 0, 2, 1, 1, 1, 1, 1, 1},
		// namespaces/status, then namespaces/finalize, of a tier b
		// namespace: m0 In (a, b) is called and removes the tier label;
		// v0 DoesNotExist tier is not, matched against the stored labels.
		{0, 15, 1, 0x09, 7, 10, 0, 1, 1, 1, 4, 0, 4, 0, 1, 1, 0, 1, 1, 1, 1, 1, 0},
		{1, 15, 1, 0x09, 7, 10, 0, 1, 1, 1, 4, 0, 4, 0, 1, 1, 0, 1, 1, 1, 1, 1, 0},
		// A configmap deleted in a namespace gone since: m0 (empty
		// selector) called, then m1 In (a, b) ends it with the namespace's
		// 404; m0 and v1 with empty selectors, v1 denying (403); no
		// webhook (deleted); v0 Exists (404, v0 not called).
		{3, 15, 3, 0x0b, 11, 7, 11, 0, 1, 1, 0, 1, 1, 0, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1},
		{3, 15, 3, 0x11, 11, 11, 0, 1, 1, 0, 1, 1, 0, 0, 2, 1, 1, 1, 1, 1, 1},
		{3, 15, 3, 0},
		{3, 15, 3, 0x08, 8, 0, 1, 1, 1, 1},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		webhookInput(t, s, w, data)
	})
}

// webhookInputs counts inputs, naming each input's object apart.
var webhookInputs int

// webhookRun is what one input did: the answer, the webhook calls, the
// namespace written to and the labels the input gave the object.
type webhookRun struct {
	code   int
	body   []byte
	calls  []hookCall
	ns     string
	labels map[string]string
	// For events inputs: the event hooks' calls and answers, the API
	// group written through, and whether the answer was protobuf.
	eventCalls   []eventCall
	eventAnswers map[string]eventAnswer
	group        string
	proto        bool
	// scope: "" for FuzzWebhook's configmaps, pods and Namespaces; else
	// the scope input's case (webhook_scope_test.go): Node,
	// namespaces/status, namespaces/finalize, orphan.
	scope string
}

// webhookInput runs one input of FuzzWebhook and checks its properties.
func webhookInput(t *testing.T, s *liveServer, w *webhookServer, data []byte) webhookRun {
	webhookInputs++
	in := &input{data: data}
	op := in.intn(5) // 0,1 create, 2 update, 3 delete, 4 dry-run create (5, 6: namespaceSubresources)
	kind, scope := "ConfigMap", ""
	switch k := in.byte(); {
	case k%16 == 7:
		// An event through core/v1 or events.k8s.io/v1, for webhooks
		// registered under matchPolicy Exact or Equivalent
		// (webhook_events_test.go); protobuf answers when the input's
		// last byte asks.
		return eventInput(t, s, op, in)
	case k%32 == 15:
		// Where a namespaceSelector is decided otherwise than by the
		// object's namespace (webhook_scope_test.go): a Node
		// (cluster-scoped: never exempted), a Namespace's status or
		// finalize (the stored namespace's labels), a delete in a
		// namespace gone since (the matcher's 404).
		switch in.intn(4) {
		case 0:
			kind, scope = "Node", "Node"
		case 1, 2:
			kind, op = "Namespace", 4+op%2+1 // 5 status, 6 finalize
			scope = "namespaces/" + namespaceSubresources[op]
		default:
			return orphanDeleteInput(t, s, w, in)
		}
	case k%4 == 0:
		kind = "Pod"
	case k%8 == 3:
		kind = "Namespace"
	}
	labels := map[string]string{}
	mask := in.byte()
	for i, h := range fuzzHooks {
		if mask&(1<<i) != 0 {
			labels[hookLabel(h)] = hookVariants[in.intn(len(hookVariants))].key
		}
	}
	answers := map[string]hookAnswer{}
	for _, h := range fuzzHooks {
		if _, on := labels[hookLabel(h)]; on {
			answers[h.name] = buildAnswer(in, kind, h.mutating)
		}
	}
	name := fmt.Sprintf("w%d-%d", webhookInputs, time.Now().UnixNano()%1e6)
	obj := webhookTemplate(kind, webhookNamespace, name, labels, in)
	// The namespace is decided last, from what the answers and the
	// template left, so inputs written before there were several keep
	// their meaning (the first namespace).
	nsi := in.intn(len(webhookNamespaces))
	ns := webhookNamespaces[nsi].name
	if kind == "Namespace" {
		// The namespace written is its own request namespace; it takes
		// the labels of one of webhookNamespaces besides the hooks'.
		ns = name
		for k, v := range webhookNamespaces[nsi].labels {
			labels[k] = v
		}
	} else if kind == "Node" {
		ns = ""
	} else {
		obj["metadata"].(map[string]any)["namespace"] = ns
	}
	// The answer in protobuf instead of JSON, when the input's byte after
	// all the others asks (inputs written before keep theirs: JSON).
	proto := in.bool()
	code, body, calls := webhookCase(t, s, w, op, kind, name, labels, answers, obj, proto)
	return webhookRun{code: code, body: body, calls: calls, ns: ns, labels: labels, proto: proto, scope: scope}
}

// webhookCase writes obj (op as webhookInput's) with the webhooks
// answering answers, and checks the answer.
func webhookCase(t *testing.T, s *liveServer, w *webhookServer, op int, kind, name string, labels map[string]string,
	answers map[string]hookAnswer, obj map[string]any, proto bool) (int, []byte, []hookCall) {
	ns, _ := obj["metadata"].(map[string]any)["namespace"].(string)
	collection := "/api/v1/namespaces/" + ns + "/" + strings.ToLower(kind) + "s"
	switch kind {
	case "Namespace":
		ns, collection = name, "/api/v1/namespaces"
	case "Node":
		ns, collection = "", "/api/v1/nodes"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	doc, _ := json.Marshal(obj)
	if op == 2 || op == 3 || namespaceSubresources[op] != "" {
		w.script(nil)
		if code, body := s.do(ctx, http.MethodPost, collection, "application/json", doc); code != http.StatusCreated {
			t.Fatalf("creating %s %s for the input: %d %s", kind, name, code, body)
		}
		if op != 3 {
			obj["metadata"].(map[string]any)["annotations"] = map[string]string{"edit": "1"}
			doc, _ = json.Marshal(obj)
		}
	}
	defer func() {
		w.script(nil)
		s.do(ctx, http.MethodDelete, collection+"/"+name+"?gracePeriodSeconds=0", "", nil)
		if kind == "Namespace" {
			// No namespace controller runs: empty its finalizers so that
			// the deleted namespace goes away.
			fin, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name}, "spec": map[string]any{"finalizers": []string{}}})
			s.do(ctx, http.MethodPut, collection+"/"+name+"/finalize", "application/json", fin)
		}
	}()
	req := fuzzRequest{method: http.MethodPost, path: collection, query: map[string][]string{}, contentType: "application/json", body: doc}
	switch op {
	case 2:
		req.method, req.path = http.MethodPut, collection+"/"+name
	case 3:
		req.method, req.path, req.body = http.MethodDelete, collection+"/"+name, nil
	case 4:
		req.query.Set("dryRun", "All")
	case 5, 6:
		req.method, req.path = http.MethodPut, collection+"/"+name+"/"+namespaceSubresources[op]
	}
	if proto {
		req.accept = protobufAccept
	}
	w.script(answers)
	rev0, err := s.revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	code, header, body := s.send(ctx, req)
	calls := w.script(nil)
	rev1, err := s.revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if proto {
		// The protobuf answer read as a client reads it must be what the
		// JSON oracle expects of the JSON answer; an object answer is
		// the object then stored (read back as JSON).
		if header, body, err = protobufAsJSON(header, body); err != nil {
			t.Fatalf("%s\nanswer %d: %v\n%q", req, code, err, body)
		}
		if code >= 200 && code < 300 && req.method != http.MethodDelete && req.query.Get("dryRun") != "All" {
			gc, gb := s.do(ctx, http.MethodGet, collection+"/"+name, "", nil)
			if d := sameJSONObject(body, gb); gc != http.StatusOK || d != "" {
				t.Fatalf("%s\nprotobuf answer %d\n%s\nis not the object stored (GET %d %s): %s", req, code, body, gc, gb, d)
			}
		}
	}
	checkWebhookOutcome(t, s, req, kind, ns, labels, calls, code, header, body, rev0, rev1)
	for i, c := range calls {
		v, on := labels[hookLabel(c.hook)]
		calls[i].byPatch = !on || v != c.hook.variant.key
	}
	return code, body, calls
}

// hookOutcome is what kube-apiserver answers.
type hookOutcome struct {
	// code 0: the request goes on (the webhooks let it through).
	code int
	// message, if set, is contained in the Status message.
	message string
	// maybe: the call's result depends on timing (a delayed answer); any
	// of the outcomes of its answer being taken or the call failing.
	maybe bool
}

// webhookOutcome is kube-apiserver's reading of one call: nil when the
// request goes on (obj then the object after the webhook's patch, changed
// whether the patch changed it).
func webhookOutcome(c hookCall, kind string) (out *hookOutcome, obj []byte, changed bool) {
	failed := func(why string) (*hookOutcome, []byte, bool) {
		if !c.hook.fail {
			return nil, c.review.Request.Object.Raw, false
		}
		return &hookOutcome{code: 500, message: fmt.Sprintf("failed calling webhook %q", c.hook.name)}, nil, false
	}
	a := c.answer
	if a.delay == 2 {
		return failed("timeout")
	}
	if a.status < 200 || a.status > 206 || a.status == 204 || a.contentType == ";;;" {
		return failed("status")
	}
	// client-go's JSON decoding: keys are case-sensitive.
	var rev admissionv1.AdmissionReview
	if err := utiljson.Unmarshal(c.body, &rev); err != nil {
		return failed("decode")
	}
	r := rev.Response
	if c.review.APIVersion == reviewV1beta1 {
		// kube-apiserver decodes the answer into a v1beta1 review: an
		// apiVersion or kind left out is that one's, another (a v1
		// review, which does not convert) fails; it checks neither the
		// uid nor the patchType (a patch is a JSONPatch; a validating
		// webhook's, and a type without a patch, are dropped).
		if rev.APIVersion != "" && rev.APIVersion != reviewV1beta1 || rev.Kind != "" && rev.Kind != "AdmissionReview" || r == nil {
			return failed("v1beta1 review")
		}
		r.PatchType = nil
		if !c.hook.mutating || len(r.Patch) == 0 {
			r.Patch = nil
		} else {
			pt := admissionv1.PatchTypeJSONPatch
			r.PatchType = &pt
		}
	} else if r == nil || string(r.UID) != string(c.review.Request.UID) || rev.APIVersion != reviewV1 || rev.Kind != "AdmissionReview" {
		return failed("review")
	}
	if c.hook.mutating {
		if len(r.Patch) > 0 && r.PatchType == nil || len(r.Patch) == 0 && r.PatchType != nil || r.PatchType != nil && *r.PatchType == "" {
			return failed("patch type")
		}
	} else if len(r.Patch) > 0 || r.PatchType != nil {
		return failed("validating patch")
	}
	if !r.Allowed {
		st := metav1.Status{}
		if r.Result != nil {
			st = *r.Result
		}
		code := int(st.Code)
		switch {
		case code < 400:
			code = 400
		case code > 999:
			// Not an HTTP status: kube-apiserver's response writer
			// panics on it and its panic filter answers 500.
			code = 500
		}
		return &hookOutcome{code: code, message: fmt.Sprintf("admission webhook %q denied the request", c.hook.name)}, nil, false
	}
	if len(r.Patch) == 0 {
		return nil, c.review.Request.Object.Raw, false
	}
	patch, err := jsonpatch.DecodePatch(r.Patch)
	if err != nil {
		return failed("undecodable patch")
	}
	if len(patch) == 0 {
		return nil, c.review.Request.Object.Raw, false
	}
	orig := c.review.Request.Object.Raw
	if len(orig) == 0 || string(orig) == "null" {
		return &hookOutcome{code: 500, message: "attempted to modify the object"}, nil, false
	}
	if *r.PatchType != admissionv1.PatchTypeJSONPatch {
		return failed("patch type")
	}
	patched, err := patch.Apply(orig)
	if err != nil {
		return &hookOutcome{code: 500}, nil, false
	}
	var before, after runtime.Object = &corev1.ConfigMap{}, &corev1.ConfigMap{}
	switch kind {
	case "Pod":
		before, after = &corev1.Pod{}, &corev1.Pod{}
	case "Namespace":
		before, after = &corev1.Namespace{}, &corev1.Namespace{}
	case "Node":
		before, after = &corev1.Node{}, &corev1.Node{}
	}
	if err := utiljson.Unmarshal(patched, after); err != nil {
		return &hookOutcome{code: 500}, nil, false
	}
	// The decoder takes a missing apiVersion or kind as the object's; any
	// other kind (unregistered, or not convertible back) is a 500.
	var tm metav1.TypeMeta
	utiljson.Unmarshal(patched, &tm)
	if tm.Kind != "" && tm.Kind != kind || tm.APIVersion != "" && tm.APIVersion != "v1" {
		return &hookOutcome{code: 500}, nil, false
	}
	utiljson.Unmarshal(orig, before)
	return nil, patched, !apiequality.Semantic.DeepEqual(before, after)
}

// timedOutOutcome is, for an answer near the timeout (taken or failed, by
// timing), the outcome of its call failing, as a maybe; nil for other
// answers, or when the failure lets the request go on.
func timedOutOutcome(c hookCall, kind string) *hookOutcome {
	if c.answer.delay != 1 {
		return nil
	}
	c.answer.delay = 2
	out, _, _ := webhookOutcome(c, kind)
	if out != nil {
		out.maybe = true
	}
	return out
}

// checkWebhookOutcome checks an answer against the calls the webhooks
// answered.
func checkWebhookOutcome(t *testing.T, s *liveServer, req fuzzRequest, kind, ns string, labels map[string]string, calls []hookCall,
	code int, header http.Header, body []byte, rev0, rev1 int64) {
	t.Helper()
	ctx := context.Background()
	report := func(format string, args ...any) {
		t.Helper()
		var b strings.Builder
		for _, c := range calls {
			fmt.Fprintf(&b, "  %s (fail=%v) got %s %s/%s, answered %+v\n    body %.600q\n", c.hook.name, c.hook.fail, c.review.Request.Operation,
				c.review.Request.Namespace, c.review.Request.Name, c.answer, c.body)
		}
		t.Fatalf("%s\nrequest:\n%s\nanswer %d: %.2000s\ncalls:\n%s", fmt.Sprintf(format, args...), req, code, body, b.String())
	}
	var status metav1.Status
	if code >= 400 {
		if !strings.HasPrefix(header.Get("Content-Type"), codec.JSON) {
			report("error answer is not JSON")
		}
		if err := json.Unmarshal(body, &status); err != nil || status.Kind != "Status" {
			report("error answer is not a Status")
		}
	}
	// Warnings capped as kube-apiserver's recorder caps them: whole while
	// 4,096 runes together, else each cut to 256.
	total, longest := 0, 0
	for _, h := range header.Values("Warning") {
		text, err := strconv.Unquote(strings.TrimPrefix(h, "299 - "))
		if err != nil {
			report("Warning header %.200q is not `299 - \"text\"`", h)
		}
		n := utf8.RuneCountInString(text)
		total, longest = total+n, max(longest, n)
	}
	if total > 4096 && longest > 256 {
		report("warnings of %d runes together, the longest %d: kube-apiserver cuts each to 256 beyond 4,096", total, longest)
	}
	// The admission passes: one per request, but a pod delete whose grace
	// period is 0 is admitted once in each of its two writes
	// (deletePasses), and each pass is replayed on its own.
	passes := deletePasses(report, req, kind, calls)
	sub := subresourceOf(kind, req)
	var want []hookOutcome // any of these (several validating webhooks may refuse)
	var final, made []byte
	mutated, validatingCalled := false, false
	for i, p := range passes {
		if i > 0 && len(p.calls) == 0 && len(passes[i-1].want) > 0 {
			// The pass before may have ended the request.
			break
		}
		replayPass(report, s, req, kind, ns, labels, p)
		if i > 0 && len(p.calls) > 0 {
			for _, o := range passes[i-1].want {
				if !o.maybe {
					report("admitted again (pass %d) after the pass before refused: %+v", i+1, o)
				}
			}
			// The pass before let the request through: the answer is
			// this pass's.
			want = nil
		}
		want = append(want, p.want...)
		final, made, mutated = p.final, p.made, p.mutated
		validatingCalled = validatingCalled || p.validatingCalled
	}
	definite := false
	for _, o := range want {
		if !o.maybe {
			definite = true
		}
	}
	if foreignWebhook(status.Message) {
		// In `go test ./fuzz` every target shares the server: a webhook
		// configuration FuzzHTTP made (its URLs never answer) may match.
		t.Skipf("a webhook another target registered answered: %s", status.Message)
	}
	// Every webhook the request's namespace and object select is called
	// in each pass: the mutating ones at their turn (missedMutating), the
	// validating ones, when the request was accepted, by the object
	// stored.
	for i, p := range passes {
		if i > 0 && len(p.calls) == 0 && len(passes[i-1].want) > 0 {
			break
		}
		if h := missedMutating(p.calls, kind, ns, sub, req.method, labels); h != "" {
			report("mutating webhook %s not called in admission pass %d, though its namespaceSelector matches namespace %s and its label the object at its turn", h, i+1, ns)
		}
		if code < 200 || code >= 300 || timingDecides(calls) {
			continue
		}
		obj, old := labelsDoc(labels), []byte(nil)
		switch req.method {
		case http.MethodDelete:
			obj, old = nil, obj
		case http.MethodPut:
			old = obj
		}
		if p.made != nil && req.method != http.MethodDelete {
			obj = p.made
		}
		for _, h := range fuzzRegs {
			if !h.mutating && namespaceSelects(h.variant, kind, ns, sub, req.method, obj, labels) && labelledFor(h, obj, old) && p.seen[h.name] == 0 {
				report("validating webhook %s not called in admission pass %d of an accepted request, though its namespaceSelector matches namespace %s and its label %s=%q the object",
					h.name, i+1, ns, hookLabel(h), h.variant.key)
			}
		}
	}
	// A create the webhooks gave a resourceVersion that is an unsigned
	// number other than 0: kube-apiserver's store refuses it with a 500
	// (another one it ignores; a dry run does not reach the store).
	rvSet := false
	if req.method == http.MethodPost && made != nil && req.query.Get("dryRun") != "All" {
		var m metav1.PartialObjectMetadata
		if utiljson.Unmarshal(made, &m) == nil {
			n, err := strconv.ParseUint(m.ResourceVersion, 10, 64)
			rvSet = err == nil && n != 0
		}
	}
	success := code >= 200 && code < 300
	fromWebhook := false
	for _, o := range want {
		fromWebhook = fromWebhook || code == o.code && strings.Contains(status.Message, o.message)
	}
	switch {
	case success && definite:
		report("accepted, but kube-apiserver would refuse it: %+v", want)
	case success && rvSet:
		report("accepted a create the webhooks gave a resourceVersion: kube-apiserver's store refuses it")
	case success, fromWebhook:
	case rvSet && code == http.StatusInternalServerError && status.Reason == metav1.StatusReasonInternalError &&
		strings.Contains(status.Message, "resourceVersion should not be set on objects to be created"):
	case definite:
		report("answer %d %q, kube-apiserver's would be one of %+v", code, status.Message, want)
	case code >= 500 && !allowedServerError(code, header, body),
		strings.Contains(status.Message, "failed calling webhook"), strings.Contains(status.Message, "denied the request"):
		// Every webhook let the request through: a refusal is the
		// server's own (validation, conflicts), never a webhook's.
		report("answer %d %q, but the webhooks let the request through (%+v)", code, status.Message, want)
	case code == http.StatusUnprocessableEntity && validatingCalled:
		report("a 422 after the validating webhooks were called: validation comes before them")
	}
	// Nothing written unless accepted (and not a dry run); but a delete
	// refused in its second admission pass has made its first write, the
	// marking, which stays (kube-apiserver's store does not undo it).
	written := rev1 != rev0
	markedThenRefused := len(passes) > 1 && len(passes[1].calls) > 0 && !success
	switch {
	case markedThenRefused && !written:
		report("refused in the second admission pass, but the pod was not left marked for deletion (revision %d unchanged)", rev0)
	case markedThenRefused:
	case written && (!success || req.query.Get("dryRun") == "All"):
		report("storage changed (revision %d → %d) on a %d answer", rev0, rev1, code)
	}
	if !success || req.method == http.MethodDelete || req.query.Get("dryRun") == "All" || final == nil {
		return
	}
	// An accepted write stored exactly what the webhooks made.
	stored, err := s.writtenSince(ctx, rev0)
	if err != nil {
		report("reading what was written: %v", err)
	}
	var got []byte
	for _, o := range stored {
		if cm, ok := o.obj.(*corev1.ConfigMap); ok && kind == "ConfigMap" {
			got, _ = json.Marshal(cm)
		}
		if p, ok := o.obj.(*corev1.Pod); ok && kind == "Pod" {
			got, _ = json.Marshal(p)
		}
		if n, ok := o.obj.(*corev1.Namespace); ok && kind == "Namespace" {
			got, _ = json.Marshal(n)
		}
		if n, ok := o.obj.(*corev1.Node); ok && kind == "Node" {
			got, _ = json.Marshal(n)
		}
	}
	if kind == "Node" && got != nil && !sameClusterObjectMeta(got, final) {
		report("stored node %s\nbut the webhooks made %s (name, labels and annotations; no namespace)", got, final)
	}
	if kind == "Namespace" && got != nil && !sameNamespaceMeta(got, final) {
		report("stored namespace %s\nbut the webhooks made %s", got, final)
	}
	if got == nil {
		report("accepted, but no %s was written", kind)
	}
	if kind == "ConfigMap" && !sameConfigMap(got, final) {
		report("stored %s\nbut the webhooks made %s", got, final)
	}
	if kind == "Pod" && made != nil {
		var old []byte
		for _, c := range calls {
			old = c.review.Request.OldObject.Raw
		}
		want, err := podAfterWebhooks(s, made, old, mutated)
		if err != nil {
			report("the webhooks' pod: %v", err)
		}
		if diff := samePod(got, want); diff != "" {
			report("stored pod %s\nbut the webhooks made %s\n(kube-apiserver's stored pod from it: %s)", got, made, diff)
		}
	}
}

// admissionPass is one run of the admission chain (the mutating
// webhooks in order, then the validating ones at once) within a request,
// and what replaying its calls expects.
type admissionPass struct {
	calls []hookCall
	// seen counts each webhook's calls in the pass.
	seen map[string]int
	// want: any of these outcomes (several validating webhooks may
	// refuse); none when the pass lets the request through.
	want []hookOutcome
	// final is the object the last webhook was sent or made; made the
	// mutating webhooks' result; mutated whether any of them changed the
	// object (kube-apiserver then runs its own mutating plugins once
	// more: podAfterWebhooks).
	final, made      []byte
	mutated          bool
	validatingCalled bool
}

// deletePasses splits a request's calls into its admission passes. A
// request is admitted once, but kube-apiserver's generic store runs a
// delete's admission in each write it makes (Store.Delete: in
// updateForGracefulDeletionAndFinalizers on the object as stored, then in
// the storage delete's validation on the object as that update left it),
// and a pod's delete is always graceful there (the pod strategy's
// CheckGracefulDelete). So a pod whose grace period is 0 (unscheduled or
// terminal, as FuzzWebhook's pods are; or gracePeriodSeconds=0 asked for)
// is admitted twice: first with the pod as stored as the old object, then
// with the pod marked (deletionTimestamp, deletionGracePeriodSeconds 0).
// The second pass runs only when the first let the delete through; its
// calls come after all of the first's. Other deletes (configmaps,
// namespaces, dry runs) are admitted once.
func deletePasses(report func(string, ...any), req fuzzRequest, kind string, calls []hookCall) []*admissionPass {
	if req.method != http.MethodDelete || kind != "Pod" || req.query.Get("dryRun") == "All" {
		return []*admissionPass{{calls: calls}}
	}
	first, second := &admissionPass{}, &admissionPass{}
	uid := ""
	for _, c := range calls {
		var old corev1.Pod
		if err := utiljson.Unmarshal(c.review.Request.OldObject.Raw, &old); err != nil {
			report("webhook %s was sent an old object that is not a pod: %v", c.hook.name, err)
		}
		if uid == "" {
			uid = string(old.UID)
		} else if string(old.UID) != uid {
			report("webhook %s was sent the old pod uid %s, not %s as the calls before", c.hook.name, old.UID, uid)
		}
		if old.DeletionTimestamp == nil {
			if len(second.calls) > 0 {
				report("webhook %s was sent the pod not yet marked for deletion after calls on the marked pod", c.hook.name)
			}
			first.calls = append(first.calls, c)
			continue
		}
		if g := old.DeletionGracePeriodSeconds; g == nil || *g != 0 {
			report("webhook %s was sent a pod marked with deletionGracePeriodSeconds %v, not 0 (the pod is not scheduled)", c.hook.name, g)
		}
		if old.Generation < 2 {
			report("webhook %s was sent a marked pod of generation %d: marking it bumps the generation", c.hook.name, old.Generation)
		}
		second.calls = append(second.calls, c)
	}
	return []*admissionPass{first, second}
}

// replayPass checks one admission pass's calls (which webhooks were
// called, in which order, with what) and works out what it leads to:
// p.want, p.final, p.made, p.mutated, p.validatingCalled and p.seen.
func replayPass(report func(string, ...any), s *liveServer, req fuzzRequest, kind, ns string, labels map[string]string, p *admissionPass) {
	calls := p.calls
	// Which webhooks were called, in which order: the mutating ones in
	// order (one reinvoked at most once: never on a delete, whose
	// webhooks cannot change the object), each only if labelled.
	seen := map[string]int{}
	p.seen = seen
	sub := subresourceOf(kind, req)
	for _, c := range calls {
		if c.review.Request.Namespace != ns {
			report("webhook %s was sent a request in namespace %q, not %q", c.hook.name, c.review.Request.Namespace, ns)
		}
		if c.review.Request.SubResource != sub {
			report("webhook %s was sent subResource %q, not %q", c.hook.name, c.review.Request.SubResource, sub)
		}
		nsOK := namespaceSelects(c.hook.variant, kind, ns, sub, req.method, c.review.Request.Object.Raw, labels)
		if !nsOK {
			report("webhook %s called, but its namespaceSelector %v does not match namespace %s (labels %v)", c.hook.name,
				c.hook.variant.selector(), ns, namespaceLabelsOf(kind, ns, sub, req.method, c.review.Request.Object.Raw, labels))
		}
		if !selectedBy(c.hook, c.review.Request, nsOK) {
			report("webhook %s called, but neither the object it was sent nor the old object has its label %s=%q", c.hook.name, hookLabel(c.hook), c.hook.variant.key)
		}
		if c.review.APIVersion != c.hook.variant.review() {
			report("webhook %s (admissionReviewVersions %v) was sent an AdmissionReview %s, not %s", c.hook.name,
				c.hook.variant.versions, c.review.APIVersion, c.hook.variant.review())
		}
		seen[c.hook.name]++
		if n := seen[c.hook.name]; n > 2 || n == 2 && (!c.hook.reinvoke || req.method == http.MethodDelete) {
			report("webhook %s called %d times in one admission pass", c.hook.name, n)
		}
	}
	// The expected outcome, replaying the calls.
	var want []hookOutcome
	var final []byte
	// made is the mutating webhooks' result; mutated whether any of them
	// changed the object (kube-apiserver then runs its own mutating
	// plugins once more: podAfterWebhooks).
	var made []byte
	mutated := false
	mutatingEnded := false
	validatingCalled := false
	for _, c := range calls {
		if !c.hook.mutating {
			validatingCalled = true
			continue
		}
		if mutatingEnded {
			report("webhook %s called after the mutating chain ended", c.hook.name)
		}
		out, obj, changed := webhookOutcome(c, kind)
		if fo := timedOutOutcome(c, kind); fo != nil {
			want = append(want, *fo)
		}
		if out != nil {
			want = append(want, *out)
			mutatingEnded = true
			continue
		}
		final, made, mutated = obj, obj, mutated || changed
	}
	if validatingCalled && mutatingEnded && len(want) > 0 && !want[len(want)-1].maybe {
		report("validating webhooks called after a mutating webhook refused")
	}
	for _, c := range calls {
		if c.hook.mutating {
			continue
		}
		if final != nil && kind == "ConfigMap" && !sameConfigMap(c.review.Request.Object.Raw, final) && req.method != http.MethodDelete {
			report("validating webhook %s got %s, not the mutating webhooks' result %s", c.hook.name, c.review.Request.Object.Raw, final)
		}
		if final != nil && kind == "Namespace" && !sameNamespaceMeta(c.review.Request.Object.Raw, final) && req.method != http.MethodDelete {
			report("validating webhook %s got %s, not the mutating webhooks' result %s", c.hook.name, c.review.Request.Object.Raw, final)
		}
		if final != nil && kind == "Node" && !sameClusterObjectMeta(c.review.Request.Object.Raw, final) && req.method != http.MethodDelete {
			report("validating webhook %s got %s, not the mutating webhooks' result %s", c.hook.name, c.review.Request.Object.Raw, final)
		}
		if made != nil && kind == "Pod" && req.method != http.MethodDelete {
			// The pod as it is to be stored (podAfterWebhooks).
			want, err := podAfterWebhooks(s, made, c.review.Request.OldObject.Raw, mutated)
			if err != nil {
				report("the webhooks' pod: %v", err)
			}
			if diff := samePod(c.review.Request.Object.Raw, want); diff != "" {
				report("validating webhook %s got %s, not the pod the mutating webhooks' result %s makes: %s", c.hook.name, c.review.Request.Object.Raw, made, diff)
			}
		}
		out, _, _ := webhookOutcome(c, kind)
		if fo := timedOutOutcome(c, kind); fo != nil {
			want = append(want, *fo)
		}
		if out != nil {
			want = append(want, *out)
		}
		final = c.review.Request.Object.Raw
	}
	// The validating webhooks are called all at once: every one whose
	// objectSelector matches the object they were sent.
	for _, c := range calls {
		if c.hook.mutating {
			continue
		}
		for _, h := range fuzzRegs {
			if !h.mutating && selectedBy(h, c.review.Request, namespaceSelects(h.variant, kind, ns, sub, req.method, c.review.Request.Object.Raw, labels)) && seen[h.name] == 0 {
				report("validating webhook %s not called, though its label %s=%q selects the object and its namespaceSelector namespace %s",
					h.name, hookLabel(h), h.variant.key, ns)
			}
		}
		break
	}
	p.want, p.final, p.made, p.mutated, p.validatingCalled = want, final, made, mutated, validatingCalled
}

// podAfterWebhooks is the pod kube-apiserver 1.37 stores when the mutating
// webhooks' result is made (old: the stored pod of an update, else nil),
// worked out from the admission order (impl/apiserver/admission's
// plugins, kube-apiserver's): every in-tree mutating plugin runs before
// MutatingAdmissionWebhook, so the webhooks' input has their changes, and
// MutatingAdmissionWebhook is the last mutating plugin. Then:
//   - the dispatcher defaults each patched object (the scheme's
//     defaulter: here the server's own, Server.DefaultObject, whose
//     defaults the registry's tests check);
//   - when a webhook changed the object (mutated), kube-apiserver's
//     reinvoker runs the whole mutating chain once more: of its in-tree
//     plugins, on a pod of FuzzWebhook's namespace (no LimitRange, no
//     RuntimeClass, no PriorityClass named) only ServiceAccount (on
//     create: the "default" account when none is named, and the token
//     mount added to every init and regular container lacking one) and
//     DefaultTolerationSeconds (create and update: the not-ready and
//     unreachable NoExecute tolerations of 300 s, unless tolerated) can
//     change it;
//   - PrepareForCreate: the status is Pending with the pod's QoS class,
//     and nothing else the client sent (no scheduling gates, pod-level
//     resources or stop signals are generated, so nothing more);
//     PrepareForUpdate: the stored status;
//   - uid, creationTimestamp, resourceVersion, generation and managedFields
//     are the server's (samePod ignores them).
//
// The ResourceQuota and the validating plugins that run afterwards do not
// change the object.
func podAfterWebhooks(s *liveServer, made, old []byte, mutated bool) (*corev1.Pod, error) {
	pod := &corev1.Pod{}
	if err := utiljson.Unmarshal(made, pod); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", made, err)
	}
	s.srv.DefaultObject(corev1.SchemeGroupVersion.WithKind("Pod"), pod)
	create := len(old) == 0 || string(old) == "null"
	if mutated {
		if create {
			rerunServiceAccount(pod)
		}
		rerunDefaultTolerationSeconds(pod)
	}
	if create {
		pod.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: kubeqos.GetPodQOS(pod)}
	} else {
		var stored corev1.Pod
		if err := utiljson.Unmarshal(old, &stored); err != nil {
			return nil, fmt.Errorf("decoding the old pod %s: %w", old, err)
		}
		pod.Status = stored.Status
	}
	return pod, nil
}

// saTokenPath is where kube-apiserver's ServiceAccount plugin mounts the
// service account token.
const saTokenPath = "/var/run/secrets/kubernetes.io/serviceaccount"

// rerunServiceAccount is upstream's ServiceAccount admission on a pod that
// went through it once: the default account when none is named, and the
// token volume (kube-api-access-*, already there) mounted in every
// container lacking a mount at saTokenPath.
func rerunServiceAccount(pod *corev1.Pod) {
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = "default"
	}
	if pod.Spec.AutomountServiceAccountToken != nil && !*pod.Spec.AutomountServiceAccountToken {
		return
	}
	volume := ""
	for _, v := range pod.Spec.Volumes {
		if strings.HasPrefix(v.Name, "kube-api-access-") {
			volume = v.Name
			break
		}
	}
	if volume == "" {
		return
	}
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			mounted := false
			for _, m := range cs[i].VolumeMounts {
				mounted = mounted || m.MountPath == saTokenPath
			}
			if !mounted {
				cs[i].VolumeMounts = append(cs[i].VolumeMounts, corev1.VolumeMount{Name: volume, ReadOnly: true, MountPath: saTokenPath})
			}
		}
	}
}

// rerunDefaultTolerationSeconds is upstream's DefaultTolerationSeconds: a
// pod that tolerates neither not-ready nor unreachable NoExecute taints
// (a toleration of that key, or of every key, with effect NoExecute or
// every effect) gets a 300 s one.
func rerunDefaultTolerationSeconds(pod *corev1.Pod) {
	for _, key := range []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable} {
		tolerated := false
		for _, t := range pod.Spec.Tolerations {
			tolerated = tolerated || (t.Key == key || t.Key == "") && (t.Effect == corev1.TaintEffectNoExecute || t.Effect == "")
		}
		if !tolerated {
			seconds := int64(300)
			pod.Spec.Tolerations = append(pod.Spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists,
				Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &seconds})
		}
	}
}

// samePod compares a stored pod's JSON with the pod kube-apiserver would
// store, ignoring what the server sets (uid, creation time,
// resourceVersion, generation, managed fields); it returns the latter's
// JSON when they differ, "" when they are the same.
func samePod(stored []byte, want *corev1.Pod) string {
	var got corev1.Pod
	if err := utiljson.Unmarshal(stored, &got); err != nil {
		return err.Error()
	}
	w := want.DeepCopy()
	for _, p := range []*corev1.Pod{&got, w} {
		p.UID, p.ResourceVersion, p.Generation, p.ManagedFields = "", "", 0, nil
		p.CreationTimestamp = metav1.Time{}
		p.TypeMeta = metav1.TypeMeta{}
	}
	if apiequality.Semantic.DeepEqual(&got, w) {
		return ""
	}
	b, _ := json.Marshal(w)
	return string(b)
}

// selectedBy: the registration h matches the request r: its
// namespaceSelector the request (nsOK, namespaceSelects), and its
// objectSelector the request's object or its old object (kube-apiserver
// matches either).
func selectedBy(h fuzzHook, r *admissionv1.AdmissionRequest, nsOK bool) bool {
	return nsOK && labelledFor(h, r.Object.Raw, r.OldObject.Raw)
}

// namespaceSelects: the variant's namespaceSelector matches a request of
// kind (sub its subresource) in ns, as kube-apiserver's namespace matcher
// decides: a request of a cluster-scoped kind other than Namespace (here
// a Node) is never exempted, whatever the selector; otherwise the
// selector is matched against namespaceLabelsOf.
func namespaceSelects(v hookVariant, kind, ns, sub, method string, obj []byte, labels map[string]string) bool {
	if kind == "Node" {
		return true
	}
	return v.selectsLabels(namespaceLabelsOf(kind, ns, sub, method, obj, labels))
}

// namespaceLabelsOf are the labels kube-apiserver's namespace matcher
// matches a request's namespaceSelector against: for a Namespace's create
// or update its own labels as the webhook is sent them (obj, as the
// earlier webhooks patched it), with kubernetes.io/metadata.name, which
// defaulting sets to the name after every patch; for a Namespace's delete
// and for its status or finalize subresource (sub) the stored
// namespace's (created with labels: upstream's matcher takes the object's
// own labels only for a create or update without subresource, and reads
// the namespace otherwise); for an object in a namespace, that
// namespace's (nsLabels).
func namespaceLabelsOf(kind, ns, sub, method string, obj []byte, labels map[string]string) map[string]string {
	if kind != "Namespace" {
		return nsLabels(ns)
	}
	out := map[string]string{}
	if method == http.MethodDelete || sub != "" {
		for k, v := range labels {
			out[k] = v
		}
	} else {
		var m struct {
			Metadata struct {
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
		}
		json.Unmarshal(obj, &m)
		for k, v := range m.Metadata.Labels {
			out[k] = v
		}
	}
	out[corev1.LabelMetadataName] = ns
	return out
}

// labelsDoc is an object's JSON with these labels (all selectedBy reads).
func labelsDoc(labels map[string]string) []byte {
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
	return b
}

// timingDecides: some call's answer came near the timeout, so whether it
// was taken depends on timing.
func timingDecides(calls []hookCall) bool {
	for _, c := range calls {
		if c.answer.delay == 1 {
			return true
		}
	}
	return false
}

// missedMutating replays the mutating webhooks' first round as
// kube-apiserver's dispatcher runs it: each registration in order, called
// when its namespaceSelector matches the request's namespace ns and its
// objectSelector the object as the webhooks before it left it (or the old
// object; a DELETE has only the old one, labelled with the input's
// labels, as is an update's). It returns the first registration so
// selected that was not called, "" when none was missed (or the round
// ended: a refusal, or an answer whose fate depends on timing).
func missedMutating(calls []hookCall, kind, ns, sub, method string, labels map[string]string) string {
	var mcalls []hookCall
	for _, c := range calls {
		if c.hook.mutating {
			mcalls = append(mcalls, c)
		}
	}
	cur, old := labelsDoc(labels), []byte(nil)
	switch method {
	case http.MethodDelete:
		cur, old = nil, cur
	case http.MethodPut:
		old = cur
	}
	next := 0
	for _, r := range fuzzRegs {
		if !r.mutating {
			continue
		}
		if next < len(mcalls) && mcalls[next].hook.name == r.name {
			c := mcalls[next]
			next++
			out, obj, _ := webhookOutcome(c, kind)
			if out != nil || c.answer.delay == 1 {
				return ""
			}
			if method != http.MethodDelete {
				cur = obj
			}
			continue
		}
		if namespaceSelects(r.variant, kind, ns, sub, method, cur, labels) && labelledFor(r, cur, old) {
			return r.name
		}
	}
	return ""
}

// labelledFor: the objectSelector of the registration h matches obj or
// old (JSON; either may be empty or null).
func labelledFor(h fuzzHook, obj, old []byte) bool {
	for _, raw := range [][]byte{obj, old} {
		var m struct {
			Metadata struct {
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
		}
		if len(raw) > 0 && json.Unmarshal(raw, &m) == nil {
			if v, ok := m.Metadata.Labels[hookLabel(h)]; ok && v == h.variant.key {
				return true
			}
		}
	}
	return false
}

// foreignWebhook: msg is about a webhook not of fuzzHooks.
func foreignWebhook(msg string) bool {
	if !strings.Contains(msg, "failed calling webhook") && !strings.Contains(msg, "denied the request") {
		return false
	}
	for _, h := range fuzzRegs {
		if strings.Contains(msg, fmt.Sprintf("%q", h.name)) {
			return false
		}
	}
	return true
}

// sameNamespaceMeta compares two namespaces' JSON by name, labels and
// annotations (the spec's finalizers and the status are the server's on
// create and the stored ones on update), kubernetes.io/metadata.name being
// the name on both (defaulting sets it after every patch).
func sameNamespaceMeta(a, b []byte) bool {
	var x, y corev1.Namespace
	if utiljson.Unmarshal(a, &x) != nil || utiljson.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	for _, n := range []*corev1.Namespace{&x, &y} {
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		n.Labels[corev1.LabelMetadataName] = n.Name
		if len(n.Annotations) == 0 {
			n.Annotations = nil
		}
	}
	return x.Name == y.Name && apiequality.Semantic.DeepEqual(x.Labels, y.Labels) && apiequality.Semantic.DeepEqual(x.Annotations, y.Annotations)
}

// sameConfigMap compares two configmaps' JSON, ignoring what the server
// sets after the mutating webhooks (uid, creation time, resourceVersion,
// generation, managed fields).
func sameConfigMap(a, b []byte) bool {
	var x, y corev1.ConfigMap
	if utiljson.Unmarshal(a, &x) != nil || utiljson.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	for _, c := range []*corev1.ConfigMap{&x, &y} {
		c.UID, c.ResourceVersion, c.Generation, c.ManagedFields = "", "", 0, nil
		c.CreationTimestamp = metav1.Time{}
		c.TypeMeta = metav1.TypeMeta{}
	}
	return apiequality.Semantic.DeepEqual(x, y)
}

// FuzzWebhook's generator is only useful if its answers reach every kind
// of outcome: over a few hundred random inputs, accepted writes, failed
// calls (500), denials, patches that do not apply (500 without "failed
// calling webhook") and objects the patches made invalid (422), and
// protobuf answers, accepted (an object) or not (a Status).
func TestWebhookInputsReachEveryOutcome(t *testing.T) {
	s := server(t)
	w := webhooks(t, s)
	rng := rand.New(rand.NewSource(2))
	seen := map[string]int{}
	for range 300 {
		data := make([]byte, 96)
		rng.Read(data)
		run := webhookInput(t, s, w, data)
		code, body, calls := run.code, run.body, run.calls
		var st metav1.Status
		json.Unmarshal(body, &st)
		// The namespaceSelector variants: called in a namespace they
		// select, and left out where the input's label selects them but
		// their namespaceSelector does not.
		for _, c := range calls {
			if c.hook.variant.nsSelector != nil {
				seen["namespaceSelector "+c.hook.variant.key+" called"]++
			}
		}
		for _, h := range fuzzRegs {
			if v, on := run.labels[hookLabel(h)]; on && v == h.variant.key && run.scope == "" && nsLabels(run.ns) != nil && !h.variant.selectsNamespace(run.ns) {
				seen["namespaceSelector excludes "+run.ns]++
			}
		}
		// Namespaces written: webhooks called for them, and left out by
		// their namespaceSelector on the namespace's own labels.
		if nsLabels(run.ns) == nil && run.scope == "" {
			if len(calls) > 0 {
				seen["Namespace write called webhooks"]++
			}
			own := namespaceLabelsOf("Namespace", run.ns, "", http.MethodPost, labelsDoc(run.labels), nil)
			for _, h := range fuzzRegs {
				if v, on := run.labels[hookLabel(h)]; on && v == h.variant.key && !h.variant.selectsLabels(own) {
					seen["namespaceSelector excludes a Namespace by its labels"]++
				}
			}
		}
		// Each registration variant's calls, and how they ended.
		for _, c := range calls {
			if c.byPatch {
				seen["selected by a patch"]++
			}
			out, _, _ := webhookOutcome(c, "ConfigMap")
			v := "url"
			if c.hook.variant.service {
				v = "service"
			}
			v += " " + strings.TrimPrefix(c.review.APIVersion, "admission.k8s.io/")
			switch {
			case out == nil:
				seen[v+" allowed"]++
			case strings.Contains(out.message, "failed calling"):
				seen[v+" failed"]++
			case strings.Contains(out.message, "denied"):
				seen[v+" denied"]++
			}
		}
		switch {
		case code < 300:
			seen["accepted"]++
		case code == 500 && strings.Contains(st.Message, "failed calling webhook"):
			seen["failed call"]++
		case strings.Contains(st.Message, "denied the request"):
			seen["denied"]++
		case code == 500:
			seen["patch error"]++
		case code == http.StatusUnprocessableEntity:
			seen["invalid"]++
		default:
			seen["other"]++
		}
		if run.proto && run.eventAnswers == nil {
			seen[fmt.Sprintf("protobuf answer, accepted %v", code < 300)]++
		}
	}
	t.Logf("outcomes: %v", seen)
	want := []string{"accepted", "failed call", "denied", "patch error", "invalid", "selected by a patch",
		"protobuf answer, accepted true", "protobuf answer, accepted false"}
	for _, v := range hookVariants {
		if v.nsSelector != nil {
			want = append(want, "namespaceSelector "+v.key+" called")
		}
	}
	for _, n := range webhookNamespaces {
		want = append(want, "namespaceSelector excludes "+n.name)
	}
	want = append(want, "Namespace write called webhooks", "namespaceSelector excludes a Namespace by its labels")
	for _, v := range []string{"url v1", "url v1beta1", "service v1", "service v1beta1"} {
		want = append(want, v+" allowed", v+" failed", v+" denied")
	}
	for _, o := range want {
		if seen[o] == 0 {
			t.Errorf("no %q outcome in 300 random inputs: %v", o, seen)
		}
	}
}

// A mutating webhook adding a container to a pod: kube-apiserver runs its
// in-tree mutating plugins once more, so the new container gets the
// service account token mount (FuzzWebhook's pod comparison).
func TestWebhookAddedContainerGetsTokenMount(t *testing.T) {
	s := server(t)
	w := webhooks(t, s)
	pt := string(admissionv1.PatchTypeJSONPatch)
	m1 := fuzzHooks[1]
	answers := map[string]hookAnswer{m1.name: {status: 200, contentType: "application/json", apiVersion: "admission.k8s.io/v1",
		kind: "AdmissionReview", allowed: true, allowedKey: "allowed", patchType: &pt,
		patch: []byte(`[{"op":"add","path":"/spec/containers/-","value":{"name":"c2","image":"busybox"}}]`)}}
	labels := map[string]string{hookLabel(m1): ""}
	name := fmt.Sprintf("added-container-%d", time.Now().UnixNano()%1e6)
	webhookInputs++
	code, body, _ := webhookCase(t, s, w, 0, "Pod", name, labels, answers, webhookTemplate("Pod", webhookNamespace, name, labels, &input{}), false)
	if code != http.StatusCreated {
		t.Fatalf("creating the pod: %d %s", code, body)
	}
}

// TestWebhooksRegisteredAgainAfterDelete: in `go test ./fuzz` the
// targets share one API server, and a FuzzHTTP input may DELETE the
// webhook configurations' collections (its seed a9ee2b0247198cdb did once
// componentstatuses shifted the resources it picks): FuzzWebhook's
// webhooks are then registered again before its inputs run, so its
// oracle does not see a validating webhook that is no longer registered
// as one the server skipped.
func TestWebhooksRegisteredAgainAfterDelete(t *testing.T) {
	s := server(t)
	webhooks(t, s)
	eventWebhooks(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, kind := range []string{"mutatingwebhookconfigurations", "validatingwebhookconfigurations"} {
		if code, body := s.do(ctx, http.MethodDelete, "/apis/admissionregistration.k8s.io/v1/"+kind, "", nil); code != http.StatusOK {
			t.Fatalf("DELETE %s: %d %s", kind, code, body)
		}
	}
	// FuzzWebhook's seeds: a configmap create both a mutating and a
	// validating hook select, and a core/v1 event create every event
	// hook selects.
	webhookInput(t, s, webhooks(t, s), []byte{0, 1, 0x09, 9, 7, 0, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1, 1})
	webhookInput(t, s, webhooks(t, s), []byte{0, 7, 0, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0})
}
