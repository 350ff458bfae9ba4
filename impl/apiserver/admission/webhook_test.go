package admission

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// hookServer is a real HTTPS admission webhook: decide answers each
// review; every request seen is kept.
type hookServer struct {
	*httptest.Server
	mu     sync.Mutex
	seen   []*admissionv1.AdmissionRequest
	decide func(path string, r *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse
}

func newHookServer(t *testing.T, decide func(path string, r *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse) *hookServer {
	h := &hookServer{decide: decide}
	h.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rev := &admissionv1.AdmissionReview{}
		if err := json.NewDecoder(r.Body).Decode(rev); err != nil || rev.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		h.mu.Lock()
		h.seen = append(h.seen, rev.Request)
		h.mu.Unlock()
		if r.URL.Path == "/fail" {
			http.Error(w, "boom", http.StatusInternalServerError)
			return
		}
		if r.URL.Path == "/slow" {
			<-r.Context().Done()
			return
		}
		resp := h.decide(r.URL.Path, rev.Request)
		resp.UID = rev.Request.UID
		out := admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Response: resp}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	}))
	// The unknown-CA case makes the server log a failed handshake.
	h.Config.ErrorLog = log.New(io.Discard, "", 0)
	h.StartTLS()
	t.Cleanup(h.Close)
	return h
}

func (h *hookServer) requests() []*admissionv1.AdmissionRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*admissionv1.AdmissionRequest(nil), h.seen...)
}

func (h *hookServer) caBundle() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: h.Certificate().Raw})
}

// hookSpec is a webhook definition in tests.
type hookSpec struct {
	name, path  string
	failure     admissionregistrationv1.FailurePolicyType
	sideEffects admissionregistrationv1.SideEffectClass
	nsSelector  *metav1.LabelSelector
	objSelector *metav1.LabelSelector
	rules       []admissionregistrationv1.RuleWithOperations
	reinvoke    bool
	noCA        bool
	timeout     int32
}

var podRules = []admissionregistrationv1.RuleWithOperations{{
	Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
	Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
}}

func (h *hookServer) mutating(specs ...hookSpec) []admissionregistrationv1.MutatingWebhookConfiguration {
	var hooks []admissionregistrationv1.MutatingWebhook
	for _, s := range specs {
		v := h.validatingHook(s)
		m := admissionregistrationv1.MutatingWebhook{Name: v.Name, ClientConfig: v.ClientConfig, Rules: v.Rules, FailurePolicy: v.FailurePolicy,
			NamespaceSelector: v.NamespaceSelector, ObjectSelector: v.ObjectSelector, SideEffects: v.SideEffects, TimeoutSeconds: v.TimeoutSeconds,
			AdmissionReviewVersions: v.AdmissionReviewVersions}
		if s.reinvoke {
			p := admissionregistrationv1.IfNeededReinvocationPolicy
			m.ReinvocationPolicy = &p
		}
		hooks = append(hooks, m)
	}
	return []admissionregistrationv1.MutatingWebhookConfiguration{{ObjectMeta: metav1.ObjectMeta{Name: "m"}, Webhooks: hooks}}
}

func (h *hookServer) validatingHook(s hookSpec) admissionregistrationv1.ValidatingWebhook {
	url := h.URL + s.path
	fp := s.failure
	if fp == "" {
		fp = admissionregistrationv1.Fail
	}
	se := s.sideEffects
	if se == "" {
		se = admissionregistrationv1.SideEffectClassNone
	}
	rules := s.rules
	if rules == nil {
		rules = podRules
	}
	timeout := s.timeout
	if timeout == 0 {
		timeout = 10
	}
	cc := admissionregistrationv1.WebhookClientConfig{URL: &url}
	if !s.noCA {
		cc.CABundle = h.caBundle()
	}
	return admissionregistrationv1.ValidatingWebhook{Name: s.name, ClientConfig: cc, Rules: rules, FailurePolicy: &fp,
		NamespaceSelector: s.nsSelector, ObjectSelector: s.objSelector, SideEffects: &se, TimeoutSeconds: &timeout,
		AdmissionReviewVersions: []string{"v1"}}
}

func (h *hookServer) validating(specs ...hookSpec) []admissionregistrationv1.ValidatingWebhookConfiguration {
	var hooks []admissionregistrationv1.ValidatingWebhook
	for _, s := range specs {
		hooks = append(hooks, h.validatingHook(s))
	}
	return []admissionregistrationv1.ValidatingWebhookConfiguration{{ObjectMeta: metav1.ObjectMeta{Name: "v"}, Webhooks: hooks}}
}

func testDispatcher(hooks []webhook, nss ...*corev1.Namespace) *webhookDispatcher {
	return &webhookDispatcher{
		list: func(context.Context) ([]webhook, error) { return hooks, nil },
		namespaces: func(_ context.Context, name string, _ bool) (*corev1.Namespace, error) {
			for _, ns := range nss {
				if ns.Name == name {
					return ns, nil
				}
			}
			return nil, apierrors.NewNotFound(nsResource, name)
		},
		clients: &webhookClients{},
		log:     slog.New(slog.DiscardHandler),
	}
}

func allow() *admissionv1.AdmissionResponse { return &admissionv1.AdmissionResponse{Allowed: true} }

func patchResponse(ops string) *admissionv1.AdmissionResponse {
	pt := admissionv1.PatchTypeJSONPatch
	return &admissionv1.AdmissionResponse{Allowed: true, PatchType: &pt, Patch: []byte(ops)}
}

func TestMutatingWebhookPatchesOverHTTPS(t *testing.T) {
	srv := newHookServer(t, func(string, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		r := patchResponse(`[{"op":"add","path":"/metadata/labels","value":{"injected":"yes"}},{"op":"replace","path":"/spec/containers/0/image","value":"busybox:2"}]`)
		r.Warnings = []string{"image rewritten"}
		return r
	})
	p := &MutatingWebhook{webhookDispatcher: testDispatcher(mutatingWebhooks(srv.mutating(hookSpec{name: "inject.example.com"})))}
	pod := newPod("p")
	a := podCreate(pod)
	a.User = &request.User{Name: "alice", Groups: []string{"devs"}}
	ctx, warnings := request.WithWarnings(context.Background())
	if err := p.Admit(ctx, a); err != nil {
		t.Fatal(err)
	}
	if pod.Labels["injected"] != "yes" || pod.Spec.Containers[0].Image != "busybox:2" {
		t.Fatalf("patch not applied: %+v", pod)
	}
	if w := warnings.List(); len(w) != 1 || w[0] != "image rewritten" {
		t.Fatalf("warnings %v", w)
	}
	reqs := srv.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d calls", len(reqs))
	}
	r := reqs[0]
	if r.Operation != admissionv1.Create || r.Kind.Kind != "Pod" || r.Resource.Resource != "pods" || r.Name != "p" || r.Namespace != "ns" ||
		r.UserInfo.Username != "alice" || r.UserInfo.Groups[0] != "devs" || *r.DryRun {
		t.Fatalf("request %+v", r)
	}
	var sent corev1.Pod
	if err := json.Unmarshal(r.Object.Raw, &sent); err != nil || sent.Kind != "Pod" || sent.APIVersion != "v1" || sent.Spec.Containers[0].Image != "busybox" {
		t.Fatalf("object sent %s (%v)", r.Object.Raw, err)
	}
}

func TestValidatingWebhookDecisions(t *testing.T) {
	srv := newHookServer(t, func(path string, r *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		switch path {
		case "/deny":
			return &admissionv1.AdmissionResponse{Result: &metav1.Status{Code: 403, Reason: metav1.StatusReasonForbidden, Message: "pods named p are not welcome"}}
		case "/deny-silent":
			return &admissionv1.AdmissionResponse{}
		}
		return allow()
	})
	tests := []struct {
		name     string
		spec     hookSpec
		dryRun   bool
		wantCode int32
		wantMsg  string
	}{
		{"allowed", hookSpec{name: "ok.example.com", path: "/allow"}, false, 0, ""},
		{"denied with message", hookSpec{name: "deny.example.com", path: "/deny"}, false, 403,
			`admission webhook "deny.example.com" denied the request: pods named p are not welcome`},
		{"denied without explanation", hookSpec{name: "deny.example.com", path: "/deny-silent"}, false, 400,
			`admission webhook "deny.example.com" denied the request without explanation`},
		{"failing webhook, Fail", hookSpec{name: "broken.example.com", path: "/fail"}, false, 500, `failed calling webhook "broken.example.com"`},
		{"failing webhook, Ignore", hookSpec{name: "broken.example.com", path: "/fail", failure: admissionregistrationv1.Ignore}, false, 0, ""},
		{"unknown CA, Fail", hookSpec{name: "untrusted.example.com", path: "/allow", noCA: true}, false, 500, "certificate"},
		{"timeout, Fail", hookSpec{name: "slow.example.com", path: "/slow", timeout: 1}, false, 500, `failed calling webhook "slow.example.com"`},
		{"timeout, Ignore", hookSpec{name: "slow.example.com", path: "/slow", timeout: 1, failure: admissionregistrationv1.Ignore}, false, 0, ""},
		{"dry run, side effects Unknown", hookSpec{name: "effects.example.com", path: "/allow", sideEffects: admissionregistrationv1.SideEffectClassUnknown}, true, 400,
			`admission webhook "effects.example.com" does not support dry run`},
		{"dry run, NoneOnDryRun", hookSpec{name: "effects.example.com", path: "/deny", sideEffects: admissionregistrationv1.SideEffectClassNoneOnDryRun}, true, 403, "denied the request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &ValidatingWebhook{testDispatcher(validatingWebhooks(srv.validating(tt.spec)))}
			a := podCreate(newPod("p"))
			a.DryRun = tt.dryRun
			err := p.Validate(context.Background(), a)
			if tt.wantCode == 0 {
				if err != nil {
					t.Fatalf("unexpected %v", err)
				}
				return
			}
			st, ok := err.(apierrors.APIStatus)
			if !ok || st.Status().Code != tt.wantCode || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("got %v, want %d containing %q", err, tt.wantCode, tt.wantMsg)
			}
		})
	}
}

func TestWebhookSelectors(t *testing.T) {
	srv := newHookServer(t, func(string, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Result: &metav1.Status{Message: "called"}}
	})
	prod := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", Labels: map[string]string{"env": "prod"}}}
	onlyProd := &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
	onlyDev := &metav1.LabelSelector{MatchLabels: map[string]string{"env": "dev"}}
	onlyWeb := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"web"}}}}
	deployments := []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{"*"},
		Rule: admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"*"}, Resources: []string{"deployments"}}}}
	tests := []struct {
		name   string
		spec   hookSpec
		labels map[string]string
		called bool
	}{
		{"namespace selector matches", hookSpec{nsSelector: onlyProd}, nil, true},
		{"namespace selector does not match", hookSpec{nsSelector: onlyDev}, nil, false},
		{"object selector matches", hookSpec{objSelector: onlyWeb}, map[string]string{"app": "web"}, true},
		{"object selector does not match", hookSpec{objSelector: onlyWeb}, map[string]string{"app": "db"}, false},
		{"rule for another resource", hookSpec{rules: deployments}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.spec.name, tt.spec.path = "sel.example.com", "/deny"
			p := &ValidatingWebhook{testDispatcher(validatingWebhooks(srv.validating(tt.spec)), prod)}
			pod := newPod("p")
			pod.Labels = tt.labels
			err := p.Validate(context.Background(), podCreate(pod))
			if called := err != nil; called != tt.called {
				t.Fatalf("called %v (%v), want %v", called, err, tt.called)
			}
		})
	}
}

func TestWebhookRuleMatching(t *testing.T) {
	namespaced := admissionregistrationv1.NamespacedScope
	cluster := admissionregistrationv1.ClusterScope
	rule := func(ops []admissionregistrationv1.OperationType, groups, versions, resources []string, scope *admissionregistrationv1.ScopeType) admissionregistrationv1.RuleWithOperations {
		return admissionregistrationv1.RuleWithOperations{Operations: ops, Rule: admissionregistrationv1.Rule{APIGroups: groups, APIVersions: versions, Resources: resources, Scope: scope}}
	}
	create := []admissionregistrationv1.OperationType{admissionregistrationv1.Create}
	all := []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll}
	core, v1 := []string{""}, []string{"v1"}
	podCreateA := podCreate(newPod("p"))
	podStatus := &Attributes{Operation: Update, Resource: corev1.SchemeGroupVersion.WithResource("pods"), Subresource: "status", Namespace: "ns", Name: "p"}
	nodeCreate := &Attributes{Operation: Create, Resource: corev1.SchemeGroupVersion.WithResource("nodes"), Name: "n"}
	tests := []struct {
		name string
		rule admissionregistrationv1.RuleWithOperations
		a    *Attributes
		want bool
	}{
		{"exact", rule(create, core, v1, []string{"pods"}, nil), podCreateA, true},
		{"other operation", rule([]admissionregistrationv1.OperationType{admissionregistrationv1.Delete}, core, v1, []string{"pods"}, nil), podCreateA, false},
		{"other group", rule(create, []string{"apps"}, v1, []string{"pods"}, nil), podCreateA, false},
		{"wildcards", rule(all, []string{"*"}, []string{"*"}, []string{"*"}, nil), podCreateA, true},
		{"* excludes subresources", rule(all, core, v1, []string{"*"}, nil), podStatus, false},
		{"*/* includes subresources", rule(all, core, v1, []string{"*/*"}, nil), podStatus, true},
		{"pods/status", rule(all, core, v1, []string{"pods/status"}, nil), podStatus, true},
		{"pods does not include status", rule(all, core, v1, []string{"pods"}, nil), podStatus, false},
		{"*/status", rule(all, core, v1, []string{"*/status"}, nil), podStatus, true},
		{"namespaced scope", rule(all, core, v1, []string{"*"}, &namespaced), podCreateA, true},
		{"cluster scope skips pods", rule(all, core, v1, []string{"*"}, &cluster), podCreateA, false},
		{"cluster scope nodes", rule(all, core, v1, []string{"nodes"}, &cluster), nodeCreate, true},
		{"namespaced scope skips nodes", rule(all, core, v1, []string{"nodes"}, &namespaced), nodeCreate, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ruleMatches(&tt.rule, tt.a); got != tt.want {
				t.Fatalf("matches %v, want %v", got, tt.want)
			}
		})
	}
}

func TestMutatingWebhookReinvocation(t *testing.T) {
	var first atomic.Int32
	srv := newHookServer(t, func(path string, r *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		var pod corev1.Pod
		_ = json.Unmarshal(r.Object.Raw, &pod)
		switch path {
		case "/first": // adds label a once; sees b when reinvoked
			first.Add(1)
			if _, ok := pod.Labels["a"]; !ok {
				return patchResponse(`[{"op":"add","path":"/metadata/labels","value":{"a":"1"}}]`)
			}
			if pod.Labels["b"] == "1" {
				return patchResponse(`[{"op":"add","path":"/metadata/labels/seen-b","value":"yes"}]`)
			}
		case "/second":
			return patchResponse(`[{"op":"add","path":"/metadata/labels/b","value":"1"}]`)
		}
		return allow()
	})
	p := &MutatingWebhook{webhookDispatcher: testDispatcher(mutatingWebhooks(srv.mutating(
		hookSpec{name: "first.example.com", path: "/first", reinvoke: true},
		hookSpec{name: "second.example.com", path: "/second"},
	)))}
	pod := newPod("p")
	if err := p.Admit(context.Background(), podCreate(pod)); err != nil {
		t.Fatal(err)
	}
	if first.Load() != 2 || pod.Labels["seen-b"] != "yes" || pod.Labels["a"] != "1" || pod.Labels["b"] != "1" {
		t.Fatalf("first called %d times, labels %v", first.Load(), pod.Labels)
	}
}

func TestWebhooksSkipTheirOwnConfigurations(t *testing.T) {
	srv := newHookServer(t, func(string, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{}
	})
	everything := []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{"*"},
		Rule: admissionregistrationv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*"}}}}
	p := &ValidatingWebhook{testDispatcher(validatingWebhooks(srv.validating(hookSpec{name: "all.example.com", rules: everything})))}
	a := &Attributes{Operation: Delete, Resource: admissionregistrationv1.SchemeGroupVersion.WithResource("validatingwebhookconfigurations"), Name: "v"}
	if err := p.Validate(context.Background(), a); err != nil {
		t.Fatalf("a webhook must not be able to block changes to webhook configurations: %v", err)
	}
	if err := p.Validate(context.Background(), podCreate(newPod("p"))); err == nil {
		t.Fatal("the deny-all webhook was not called for pods")
	}
}

// TestWebhookClientsLeaveNoGoroutines: once the server's context ends the
// plugins' starters close their idle connections.
func TestWebhookClientsLeaveNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	srv := newHookServer(t, func(string, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse { return allow() })
	d := testDispatcher(validatingWebhooks(srv.validating(hookSpec{name: "ok.example.com"})))
	p := &ValidatingWebhook{d}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Start(ctx); close(done) }()
	for range 5 {
		if err := p.Validate(context.Background(), podCreate(newPod("p"))); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	<-done
	srv.Close()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines left, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}

// Webhooks are called as kube-apiserver's webhook clients call them: over
// HTTP/1.1 even when their server offers HTTP/2 (util/webhook
// ClientManager: http/1.1 only, kubernetes#75791), so concurrent calls open
// connections of their own and a service's calls spread over its
// endpoints; and with the time left to the call, rounded up to whole
// seconds, in a timeout query parameter (the dispatchers' r.Timeout).
func TestWebhookCallRequest(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rev := &admissionv1.AdmissionReview{}
		if err := json.NewDecoder(r.Body).Decode(rev); err != nil || rev.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		mu.Lock()
		seen = append(seen, r.Proto+" "+r.URL.Path+"?"+r.URL.RawQuery)
		mu.Unlock()
		out := admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Response: &admissionv1.AdmissionResponse{UID: rev.Request.UID, Allowed: true}}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	h := &hookServer{Server: srv}
	for _, tc := range []struct {
		spec hookSpec
		want string
	}{
		{hookSpec{name: "default.example.com", path: "/default"}, "HTTP/1.1 /default?timeout=10s"},
		{hookSpec{name: "short.example.com", path: "/short", timeout: 3}, "HTTP/1.1 /short?timeout=3s"},
	} {
		d := testDispatcher(validatingWebhooks(h.validating(tc.spec)))
		if err := (&ValidatingWebhook{d}).Validate(context.Background(), podCreate(newPod("p"))); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		got := seen[len(seen)-1]
		mu.Unlock()
		if got != tc.want {
			t.Errorf("%s called as %q, want %q", tc.spec.name, got, tc.want)
		}
	}
}

// A mutating webhook called for a DELETE (kube-apiserver runs the mutating
// phase on deletes) that answers with a patch has nothing to patch: as
// kube-apiserver's dispatcher, that is a 500 whatever its failurePolicy
// (not a failed call), and an empty patch is no change.
func TestMutatingWebhookPatchOnDelete(t *testing.T) {
	srv := newHookServer(t, func(path string, _ *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		if path == "/empty" {
			return patchResponse(`[]`)
		}
		return patchResponse(`[{"op":"add","path":"/metadata/labels","value":{"injected":"yes"}}]`)
	})
	deletes := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Delete},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
	}}
	hook := func(path string) *MutatingWebhook {
		return &MutatingWebhook{webhookDispatcher: testDispatcher(mutatingWebhooks(srv.mutating(hookSpec{name: "inject.example.com", path: path, rules: deletes, failure: admissionregistrationv1.Ignore})))}
	}
	del := &Attributes{Operation: Delete, Resource: corev1.SchemeGroupVersion.WithResource("pods"), Kind: corev1.SchemeGroupVersion.WithKind("Pod"),
		Namespace: "ns", Name: "p", OldObject: newPod("p")}
	err := hook("/patch").Admit(context.Background(), del)
	if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), `admission webhook "inject.example.com" attempted to modify the object, which is not supported for this operation`) {
		t.Fatalf("a patch for a DELETE: %v", err)
	}
	if err := hook("/empty").Admit(context.Background(), del); err != nil {
		t.Fatalf("an empty patch for a DELETE: %v", err)
	}
	if n := len(srv.requests()); n != 2 {
		t.Fatalf("%d calls, want 2", n)
	}
}

// TestWebhookCallsExcludedFromSLILatency: the time of the webhook calls
// goes to the request's excluded latency (request.ExcludedLatency), which
// kube-apiserver leaves out of apiserver_request_sli_duration_seconds:
// a mutating call and, separately, two parallel validating calls of at
// least 150 ms each.
func TestWebhookCallsExcludedFromSLILatency(t *testing.T) {
	srv := newHookServer(t, func(string, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		time.Sleep(150 * time.Millisecond)
		return allow()
	})
	newCtx := func() context.Context {
		return request.NewContext(context.Background(), httptest.NewRequest("POST", "/api/v1/namespaces/ns/pods", nil))
	}
	mctx := newCtx()
	mp := &MutatingWebhook{webhookDispatcher: testDispatcher(mutatingWebhooks(srv.mutating(hookSpec{name: "m.example.com"})))}
	if err := mp.Admit(mctx, podCreate(newPod("p"))); err != nil {
		t.Fatal(err)
	}
	if got := request.ExcludedLatencyFrom(mctx).Total(); got < 150*time.Millisecond {
		t.Errorf("mutating call excluded %v, want at least 150ms", got)
	}
	vctx := newCtx()
	vp := &ValidatingWebhook{testDispatcher(validatingWebhooks(srv.validating(hookSpec{name: "a.example.com"}, hookSpec{name: "b.example.com"})))}
	if err := vp.Validate(vctx, podCreate(newPod("p"))); err != nil {
		t.Fatal(err)
	}
	if got := request.ExcludedLatencyFrom(vctx).Total(); got < 150*time.Millisecond {
		t.Errorf("validating calls excluded %v, want at least 150ms", got)
	}
}
