package fuzz

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubeproof/kubeproof/impl/apiserver/codec"
)

// admissionNS is the namespace TestHTTPServerRunsDefaultAdmission works
// in (not one of fuzzNamespaces, so its limit range, quota and labels
// change nothing the fuzzer's requests meet).
const admissionNS = "admission-check"

// TestHTTPServerRunsDefaultAdmission shows that the fuzzed API server
// admits writes with `kubeproof apiserver`'s default admission plugins,
// each seen by what it does to a pod (or a configmap) created as the
// fuzzer's administrator. Every request goes through check, so the
// properties FuzzHTTP checks hold for them too.
func TestHTTPServerRunsDefaultAdmission(t *testing.T) {
	s := server(t)
	do := func(method, path, body string) (int, string) {
		t.Helper()
		code, answer := s.check(t, fuzzRequest{method: method, path: path, query: url.Values{}, contentType: codec.JSON, body: []byte(body)})
		return code, string(answer)
	}
	mustDo := func(want int, method, path, body string) string {
		t.Helper()
		code, answer := do(method, path, body)
		if code != want {
			t.Fatalf("%s %s: %d, want %d: %s", method, path, code, want, answer)
		}
		return answer
	}
	ns := "/api/v1/namespaces/" + admissionNS
	mustDo(http.StatusCreated, "POST", "/api/v1/namespaces",
		`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"`+admissionNS+`","labels":{"admission-check":"true","pod-security.kubernetes.io/enforce":"baseline"}}}`)
	mustDo(http.StatusCreated, "POST", ns+"/serviceaccounts", `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"default"}}`)
	mustDo(http.StatusCreated, "POST", ns+"/limitranges",
		`{"apiVersion":"v1","kind":"LimitRange","metadata":{"name":"l"},"spec":{"limits":[{"type":"Container","defaultRequest":{"cpu":"150m"},"default":{"cpu":"300m"}}]}}`)
	mustDo(http.StatusCreated, "POST", ns+"/resourcequotas", `{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"q"},"spec":{"hard":{"pods":"2"}}}`)
	// What the resource quota controller would write.
	mustDo(http.StatusOK, "PUT", ns+"/resourcequotas/q/status",
		`{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"q"},"spec":{"hard":{"pods":"2"}},"status":{"hard":{"pods":"2"},"used":{"pods":"0"}}}`)

	pod := func(name, spec string) string {
		return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `"},"spec":{` + spec + `"containers":[{"name":"c","image":"nginx"}]}}`
	}
	// Refusals, each by one plugin, before ResourceQuota (the last) could
	// charge anything.
	for _, c := range []struct{ plugin, spec, message string }{
		{"ServiceAccount", `"serviceAccountName":"nobody",`, `error looking up service account ` + admissionNS + `/nobody`},
		{"Priority", `"priorityClassName":"missing",`, `no PriorityClass with name missing was found`},
		{"RuntimeClass", `"runtimeClassName":"missing",`, `pod rejected: RuntimeClass \"missing\" not found`},
		{"PodSecurity", `"hostNetwork":true,`, `violates PodSecurity \"baseline:latest\": host namespaces (hostNetwork=true)`},
	} {
		code, answer := do("POST", ns+"/pods", pod("refused-"+strings.ToLower(c.plugin), c.spec))
		if code != http.StatusForbidden || !strings.Contains(answer, c.message) {
			t.Errorf("%s: a pod with %s: %d %s, want 403 with %q", c.plugin, c.spec, code, answer, c.message)
		}
	}

	// NamespaceLifecycle, first of the mutating plugins: the namespace's
	// 404 at once, not ServiceAccount's 403 after it has waited for the
	// namespace's "default" account.
	if code, answer := do("POST", "/api/v1/namespaces/missing/pods", pod("p", "")); code != http.StatusNotFound || !strings.Contains(answer, `namespaces \"missing\" not found`) {
		t.Errorf("NamespaceLifecycle: a pod in a missing namespace: %d %s, want the namespace's 404", code, answer)
	}

	mustDo(http.StatusCreated, "POST", ns+"/pods", pod("p0", ""))
	var p corev1.Pod
	if err := json.Unmarshal([]byte(mustDo(http.StatusOK, "GET", ns+"/pods/p0", "")), &p); err != nil {
		t.Fatal(err)
	}
	if p.Spec.ServiceAccountName != "default" || p.Spec.DeprecatedServiceAccount != "default" || len(p.Spec.Volumes) != 1 || !strings.HasPrefix(p.Spec.Volumes[0].Name, "kube-api-access-") {
		t.Errorf("ServiceAccount: pod has serviceAccountName %q, serviceAccount %q and volumes %v, want default, default and kube-api-access-*",
			p.Spec.ServiceAccountName, p.Spec.DeprecatedServiceAccount, p.Spec.Volumes)
	}
	if got := p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; got.Cmp(resource.MustParse("150m")) != 0 {
		t.Errorf("LimitRanger: the container requests cpu %s, want the limit range's 150m", got.String())
	}
	if p.Spec.Priority == nil || *p.Spec.Priority != 0 || p.Spec.PreemptionPolicy == nil {
		t.Errorf("Priority: pod has priority %v and preemptionPolicy %v, want 0 and the default", p.Spec.Priority, p.Spec.PreemptionPolicy)
	}
	tolerated := map[string]bool{}
	for _, tol := range p.Spec.Tolerations {
		if tol.Effect == corev1.TaintEffectNoExecute && tol.TolerationSeconds != nil && *tol.TolerationSeconds == 300 {
			tolerated[tol.Key] = true
		}
	}
	if !tolerated[corev1.TaintNodeNotReady] || !tolerated[corev1.TaintNodeUnreachable] {
		t.Errorf("DefaultTolerationSeconds: pod tolerations %v, want not-ready and unreachable for 300s", p.Spec.Tolerations)
	}

	// ResourceQuota: pods are charged to status.used until it reaches
	// status.hard, then refused. The plugin lists quotas from its cache,
	// which may not yet hold the status written above: a pod admitted
	// before it does is not charged, so poll until a create is refused.
	deadline := time.Now().Add(30 * time.Second)
	for i := 1; ; i++ {
		code, answer := do("POST", ns+"/pods", pod(fmt.Sprintf("p%d", i), ""))
		if code == http.StatusForbidden && strings.Contains(answer, "exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2") {
			break
		}
		if code != http.StatusCreated {
			t.Fatalf("ResourceQuota: pod p%d: %d %s, want 201 or the exceeded quota refusal", i, code, answer)
		}
		if time.Now().After(deadline) {
			t.Fatalf("ResourceQuota: %d pods created in a namespace whose quota allows 2, none refused", i+1)
		}
	}
	var q corev1.ResourceQuota
	if err := json.Unmarshal([]byte(mustDo(http.StatusOK, "GET", ns+"/resourcequotas/q", "")), &q); err != nil {
		t.Fatal(err)
	}
	if used := q.Status.Used[corev1.ResourcePods]; used.Cmp(resource.MustParse("2")) != 0 {
		t.Errorf("ResourceQuota: status.used pods %s after the refusal, want 2", used.String())
	}

	// ValidatingAdmissionWebhook: a webhook that cannot be called, with
	// failurePolicy Fail, refuses with kube-apiserver's 500 (allowed5xx).
	// The plugin reads the configuration from its cache: poll until it
	// is called.
	mustDo(http.StatusCreated, "POST", "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
		`{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingWebhookConfiguration","metadata":{"name":"admission-check"},"webhooks":[{"name":"check.fuzz.example.com",`+
			`"clientConfig":{"url":"https://127.0.0.1:1/validate"},"rules":[{"operations":["CREATE"],"apiGroups":[""],"apiVersions":["v1"],"resources":["configmaps"]}],`+
			`"namespaceSelector":{"matchLabels":{"admission-check":"true"}},"sideEffects":"None","admissionReviewVersions":["v1"],"failurePolicy":"Fail","timeoutSeconds":1}]}`)
	defer mustDo(http.StatusOK, "DELETE", "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/admission-check", "")
	deadline = time.Now().Add(30 * time.Second)
	for i := 0; ; i++ {
		code, answer := do("POST", ns+"/configmaps", fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c%d"}}`, i))
		if code == http.StatusInternalServerError && strings.Contains(answer, `failed calling webhook \"check.fuzz.example.com\"`) {
			break
		}
		if code != http.StatusCreated {
			t.Fatalf("ValidatingAdmissionWebhook: configmap c%d: %d %s, want 201 or the failed call's 500", i, code, answer)
		}
		if time.Now().After(deadline) {
			t.Fatalf("ValidatingAdmissionWebhook: %d configmaps created, the webhook never called", i+1)
		}
	}
}
