package fuzz

// FuzzWebhook's scope inputs (kind byte 32k+15): requests whose
// namespaceSelector kube-apiserver does not match against the labels of
// the object's namespace as stored. Its namespace matcher
// (staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/
// namespace/matcher.go, MatchNamespaceSelector and GetNamespaceLabels,
// and generic/webhook.go's ShouldCallHook, read for this oracle) decides:
//   - a request without namespace to a resource other than namespaces
//     (a Node here) is never exempted: every selector matches;
//   - an empty selector matches without reading anything;
//   - a create or update of namespaces without subresource is matched
//     against the object's own labels (FuzzWebhook's Namespace inputs);
//     anything else — a Namespace's delete, its status and finalize
//     subresources, an object in a namespace — against the namespace the
//     request names as read from the informer's cache, then from storage;
//   - when that namespace does not exist, the lookup's NotFound (404
//     `namespaces "<ns>" not found`) is the webhook's error, returned by
//     ShouldCallHook only for a webhook whose objectSelector and rules
//     match, and the dispatchers return it at once whatever the failure
//     policy: the mutating one at that webhook's turn (after calling the
//     ones before it), the validating one before calling any.

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// namespaceSubresources are the ops of webhookCase writing a Namespace's
// subresource (a PUT of the namespace with an annotation added).
var namespaceSubresources = map[int]string{5: "status", 6: "finalize"}

// subresourceOf is the subresource a FuzzWebhook request writes: a
// Namespace's status or finalize, else "".
func subresourceOf(kind string, req fuzzRequest) string {
	if kind != "Namespace" {
		return ""
	}
	// /api/v1/namespaces/<name>/<subresource>
	if parts := strings.Split(req.path, "/"); len(parts) == 6 {
		return parts[5]
	}
	return ""
}

// sameClusterObjectMeta compares a cluster-scoped object's JSON as stored
// or sent to a validating webhook (got) with the mutating webhooks'
// result (made) by name, labels and annotations; got must have no
// namespace, since kube-apiserver's store clears one a webhook set on a
// cluster-scoped object before validating admission and storage
// (rest.BeforeCreate and BeforeUpdate: EnsureObjectNamespaceMatchesRequestNamespace).
func sameClusterObjectMeta(got, made []byte) bool {
	var x, y metav1.PartialObjectMetadata
	if utiljson.Unmarshal(got, &x) != nil || utiljson.Unmarshal(made, &y) != nil {
		return false
	}
	for _, m := range []*metav1.PartialObjectMetadata{&x, &y} {
		if len(m.Labels) == 0 {
			m.Labels = nil
		}
		if len(m.Annotations) == 0 {
			m.Annotations = nil
		}
	}
	return x.Namespace == "" && x.Name == y.Name && apiequality.Semantic.DeepEqual(x.Labels, y.Labels) &&
		apiequality.Semantic.DeepEqual(x.Annotations, y.Annotations)
}

// orphanDeleteInput deletes a configmap whose namespace is gone (no
// namespace controller runs, so a namespace deleted and finalized leaves
// its objects stored; NamespaceLifecycle lets deletes through), labelled
// for the input's hooks, and checks the answer against
// expectOrphanDelete.
func orphanDeleteInput(t *testing.T, s *liveServer, w *webhookServer, in *input) webhookRun {
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
			answers[h.name] = buildAnswer(in, "ConfigMap", h.mutating)
		}
	}
	name := fmt.Sprintf("w%d-%d", webhookInputs, time.Now().UnixNano()%1e6)
	ns := "fuzz-gone-" + name
	nsPath := "/api/v1/namespaces/" + ns
	cmPath := nsPath + "/configmaps/" + name
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	must := func(what string, want int, code int, body []byte) {
		t.Helper()
		if code != want {
			t.Fatalf("%s: %d %s", what, code, body)
		}
	}
	nsDoc, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns, "labels": map[string]string{"tier": "a"}}})
	fin, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}, "spec": map[string]any{"finalizers": []string{}}})
	removeNamespace := func() {
		t.Helper()
		code, body := s.do(ctx, http.MethodDelete, nsPath, "", nil)
		must("deleting namespace "+ns, http.StatusOK, code, body)
		code, body = s.do(ctx, http.MethodPut, nsPath+"/finalize", "application/json", fin)
		if code != http.StatusOK && code != http.StatusNotFound {
			t.Fatalf("finalizing namespace %s: %d %s", ns, code, body)
		}
	}
	w.script(nil)
	code, body := s.do(ctx, http.MethodPost, "/api/v1/namespaces", "application/json", nsDoc)
	must("creating namespace "+ns, http.StatusCreated, code, body)
	cm, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name, "labels": labels}, "data": map[string]any{"a": "1"}})
	code, body = s.do(ctx, http.MethodPost, nsPath+"/configmaps", "application/json", cm)
	must("creating the configmap", http.StatusCreated, code, body)
	// A probe the v0 registration selecting tier=a (hookVariants' "ni")
	// denies while the admission plugins' namespace cache still holds the
	// namespace, and that fails with the 404 once it does not (the oracle
	// models a cache in step with storage, as kube-apiserver's settles).
	probe, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "probe", "labels": map[string]string{"hook.fuzz.kubeproof.io/v0": "ni"}}})
	code, body = s.do(ctx, http.MethodPost, nsPath+"/configmaps", "application/json", probe)
	must("creating the probe configmap", http.StatusCreated, code, body)
	removeNamespace()
	defer func() {
		// Put the namespace back to delete what it holds, then remove it.
		w.script(nil)
		code, body := s.do(ctx, http.MethodPost, "/api/v1/namespaces", "application/json", nsDoc)
		must("creating namespace "+ns+" again", http.StatusCreated, code, body)
		s.do(ctx, http.MethodDelete, cmPath, "", nil)
		s.do(ctx, http.MethodDelete, nsPath+"/configmaps/probe", "", nil)
		removeNamespace()
	}()
	for i := 0; ; i++ {
		w.script(map[string]hookAnswer{"v0.fuzz.kubeproof.io": {status: 200, contentType: "application/json", apiVersion: "=", kind: "AdmissionReview", allowedKey: "allowed"}})
		code, body := s.do(ctx, http.MethodDelete, nsPath+"/configmaps/probe", "", nil)
		w.script(nil)
		if code == http.StatusNotFound && strings.Contains(string(body), fmt.Sprintf(`namespaces \"%s\" not found`, ns)) {
			break
		}
		if code < 300 {
			// v0-ni selects the probe and its namespaceSelector needs the
			// namespace: kube-apiserver answers the lookup's 404, or, its
			// cache lagging, v0-ni's denial; never a delete.
			t.Fatalf("DELETE of configmap probe in the deleted namespace %s: %d %s, but the webhook v0-ni selecting it needs the namespace (kube-apiserver: 404 namespaces %q not found)", ns, code, body, ns)
		}
		if code != http.StatusBadRequest || i == 200 {
			t.Fatalf("probing the namespace cache after deleting %s: %d %s", ns, code, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	req := fuzzRequest{method: http.MethodDelete, path: cmPath, query: map[string][]string{}}
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
	checkOrphanDelete(t, req, ns, labels, calls, code, header, body, rev0 != rev1)
	return webhookRun{code: code, body: body, calls: calls, ns: ns, labels: labels, scope: "orphan"}
}

// expectOrphanDelete replays a delete of a configmap labelled labels in
// the missing namespace ns as kube-apiserver's dispatchers run it, from
// the calls made: the mutating registrations in order, each whose
// objectSelector matches the stored configmap either called (an empty
// namespaceSelector) or ending the request with the lookup's 404; then,
// if the request got that far, the 404 if any validating registration
// with a non-empty namespaceSelector is selected, else every selected
// one called. It returns the registrations to be called in order
// (mutating ones) and as a set (validating ones: reached tells the
// request gets to them), and the outcomes the answer may be (none: the
// delete goes through). settled is false when an answer near the timeout
// leaves the outcome to timing.
func expectOrphanDelete(ns string, labels map[string]string, calls []hookCall) (mutating, validating []string, reached bool, want []hookOutcome, settled bool) {
	old := labelsDoc(labels)
	notFound := hookOutcome{code: http.StatusNotFound, message: notFoundMessage(ns)}
	byName := map[string]hookCall{}
	for _, c := range calls {
		byName[c.hook.name] = c
	}
	settled = true
	for _, r := range fuzzRegs {
		if !r.mutating || !labelledFor(r, nil, old) {
			continue
		}
		if len(r.variant.selector().MatchLabels)+len(r.variant.selector().MatchExpressions) > 0 {
			return mutating, nil, false, append(want, notFound), settled
		}
		mutating = append(mutating, r.name)
		c, ok := byName[r.name]
		if !ok {
			// Not called: checkOrphanDelete reports it.
			return mutating, nil, false, want, settled
		}
		if c.answer.delay == 1 {
			settled = false
		}
		if out, _, _ := webhookOutcome(c, "ConfigMap"); out != nil {
			return mutating, nil, false, append(want, *out), settled
		}
	}
	for _, r := range fuzzRegs {
		if r.mutating || !labelledFor(r, nil, old) {
			continue
		}
		if len(r.variant.selector().MatchLabels)+len(r.variant.selector().MatchExpressions) > 0 {
			return mutating, nil, false, []hookOutcome{notFound}, settled
		}
		validating = append(validating, r.name)
	}
	for _, name := range validating {
		c, ok := byName[name]
		if !ok {
			continue
		}
		if c.answer.delay == 1 {
			settled = false
		}
		if out, _, _ := webhookOutcome(c, "ConfigMap"); out != nil {
			want = append(want, *out)
		}
	}
	return mutating, validating, true, want, settled
}

// checkOrphanDelete checks the answer to a delete in a missing namespace
// (orphanDeleteInput) against expectOrphanDelete.
func checkOrphanDelete(t *testing.T, req fuzzRequest, ns string, labels map[string]string, calls []hookCall, code int, header http.Header, body []byte, written bool) {
	t.Helper()
	report := func(format string, args ...any) {
		t.Helper()
		var b strings.Builder
		for _, c := range calls {
			fmt.Fprintf(&b, "  %s (fail=%v) answered %+v\n", c.hook.name, c.hook.fail, c.answer)
		}
		t.Fatalf("%s\nrequest:\n%s (namespace %s deleted, labels %v)\nanswer %d: %.2000s\ncalls:\n%s", fmt.Sprintf(format, args...), req, ns, labels, code, body, b.String())
	}
	var status metav1.Status
	if code >= 400 {
		if !strings.HasPrefix(header.Get("Content-Type"), "application/json") {
			report("error answer is not JSON")
		}
		if err := json.Unmarshal(body, &status); err != nil || status.Kind != "Status" {
			report("error answer is not a Status")
		}
	}
	if foreignWebhook(status.Message) {
		t.Skipf("a webhook another target registered answered: %s", status.Message)
	}
	mutating, validating, reached, want, settled := expectOrphanDelete(ns, labels, calls)
	var gotMutating []string
	gotValidating := map[string]bool{}
	for _, c := range calls {
		if c.review.Request.Namespace != ns || c.review.Request.Operation != admissionv1.Delete {
			report("webhook %s was sent %s in namespace %q, not DELETE in %q", c.hook.name, c.review.Request.Operation, c.review.Request.Namespace, ns)
		}
		if c.hook.mutating {
			gotMutating = append(gotMutating, c.hook.name)
		} else {
			gotValidating[c.hook.name] = true
		}
	}
	// An answer near the timeout may have failed the call, ending the
	// request there: then the calls are a prefix of the expected ones.
	if settled && !slices.Equal(gotMutating, mutating) || !settled && !slices.Equal(gotMutating, mutating[:min(len(gotMutating), len(mutating))]) {
		report("mutating webhooks called %v, kube-apiserver calls %v (a non-empty namespaceSelector ends the request with the namespace's 404 at its webhook's turn)", gotMutating, mutating)
	}
	for _, c := range calls {
		if !c.hook.mutating && !slices.Contains(validating, c.hook.name) {
			report("validating webhook %s called, but kube-apiserver calls only %v", c.hook.name, validating)
		}
	}
	if reached && settled {
		for _, name := range validating {
			if !gotValidating[name] {
				report("validating webhook %s not called, though it selects the configmap and its namespaceSelector is empty", name)
			}
		}
	}
	success := code >= 200 && code < 300
	switch {
	case !settled:
	case len(want) == 0 && !success:
		report("answer %d %q, but kube-apiserver deletes the configmap (every webhook called let it through, none needed the namespace)", code, status.Message)
	case len(want) > 0 && success:
		report("deleted, but kube-apiserver answers one of %+v", want)
	case len(want) > 0:
		ok, lookup := false, false
		for _, o := range want {
			if code == o.code && strings.Contains(status.Message, o.message) {
				ok = true
				// (A webhook may deny with a 404 of its own.)
				lookup = lookup || o.message == notFoundMessage(ns)
			}
		}
		if !ok {
			report("answer %d %q, kube-apiserver's is one of %+v", code, status.Message, want)
		}
		if lookup && (status.Reason != metav1.StatusReasonNotFound || status.Details == nil ||
			status.Details.Name != ns || status.Details.Kind != "namespaces") {
			report("the namespace's 404 is the lookup's NotFound (reason NotFound, details namespaces %s), got %+v", ns, status)
		}
	}
	if written != success {
		report("storage written %v on a %d answer", written, code)
	}
}

// The scope inputs reach what they are for: webhooks called for a Node
// whatever their namespaceSelector, for namespaces/status and
// namespaces/finalize by the stored namespace's labels, and left out by
// them; and deletes in a missing namespace answered with its 404,
// through, and refused by a webhook with an empty selector.
func TestWebhookScopeInputsReachEveryOutcome(t *testing.T) {
	s := server(t)
	w := webhooks(t, s)
	rng := rand.New(rand.NewSource(7))
	seen := map[string]int{}
	for range 80 {
		data := make([]byte, 64)
		rng.Read(data)
		data[1] = 15
		run := webhookInput(t, s, w, data)
		var st metav1.Status
		json.Unmarshal(run.body, &st)
		for _, c := range run.calls {
			if run.scope == "Node" && c.hook.variant.nsSelector != nil {
				seen["Node called by a namespaceSelector variant"]++
			}
			if strings.HasPrefix(run.scope, "namespaces/") {
				seen[run.scope+" called"]++
			}
		}
		if strings.HasPrefix(run.scope, "namespaces/") {
			for _, h := range fuzzRegs {
				if v, on := run.labels[hookLabel(h)]; on && v == h.variant.key && !h.variant.selectsLabels(namespaceLabelsOf("Namespace", run.ns, "status", http.MethodPut, nil, run.labels)) {
					seen[run.scope+" excluded by the stored labels"]++
				}
			}
			if run.code < 300 {
				seen[run.scope+" accepted"]++
			}
		}
		if run.scope == "orphan" {
			switch {
			case run.code == http.StatusNotFound && st.Details != nil && st.Details.Kind == "namespaces":
				seen["orphan: namespace's 404"]++
			case run.code < 300:
				seen["orphan: deleted"]++
			case strings.Contains(st.Message, "denied the request"):
				seen["orphan: denied"]++
			}
			if len(run.calls) > 0 {
				seen["orphan: empty selector called"]++
			}
		}
	}
	t.Logf("outcomes: %v", seen)
	for _, o := range []string{"Node called by a namespaceSelector variant", "namespaces/status called", "namespaces/finalize called",
		"namespaces/status excluded by the stored labels", "namespaces/finalize excluded by the stored labels",
		"namespaces/status accepted", "namespaces/finalize accepted",
		"orphan: namespace's 404", "orphan: deleted", "orphan: denied", "orphan: empty selector called"} {
		if seen[o] == 0 {
			t.Errorf("no %q outcome in 80 random scope inputs: %v", o, seen)
		}
	}
}

// notFoundMessage is the message of the namespace lookup's NotFound.
func notFoundMessage(ns string) string { return fmt.Sprintf("namespaces %q not found", ns) }
