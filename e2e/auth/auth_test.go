// Package auth is issue 8's end-to-end test of the request chain: an
// in-process kubeproof control plane with --authorization-mode=Node,RBAC,
// the default bootstrap policy, a --token-auth-file and service account
// tokens, driven by a real kubectl (from the PATH, or built from the
// k8s.io/kubectl module) and by raw HTTP: kubectl auth whoami, auth can-i
// (also --list), --as impersonation, create token, a bound token rejected
// once its pod is gone, 401 for an unauthenticated client and 403 for a
// user without rights on every path the discovery documents list, and the
// scheduler and kubelets running pods under least privilege.
package auth

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeproof/kubeproof/impl/cluster"
)

var kubectlPath string

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	if p, err := exec.LookPath("kubectl"); err == nil && os.Getenv("KUBEPROOF_E2E_BUILD_KUBECTL") == "" {
		kubectlPath = p
	} else {
		dir, err := os.MkdirTemp("", "kubeproof-e2e-auth-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		kubectlPath = filepath.Join(dir, "kubectl")
		cmd := exec.Command("go", "build", "-o", kubectlPath, "github.com/kubeproof/kubeproof/e2e/internal/kubectlbin")
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "building kubectl: %v\n%s", err, out)
			return 1
		}
	}
	return m.Run()
}

// env is a running RBAC cluster and the files kubectl needs.
type env struct {
	c       *cluster.Cluster
	cs      kubernetes.Interface
	caFile  string
	dataDir string
}

const aliceToken = "alice-secret-token"

func start(t *testing.T, nodes int, configure ...func(dir string, o *cluster.AuthOptions)) *env {
	t.Helper()
	return startCluster(t, nodes, false, configure...)
}

// startCluster is start, with the controller manager run in-process when
// controllerManager is set (as `kubeproof up` runs it): its
// clusterrole-aggregation controller is what gives the bootstrap admin,
// edit and view roles their rules, which the RBAC authorizer reads.
func startCluster(t *testing.T, nodes int, controllerManager bool, configure ...func(dir string, o *cluster.AuthOptions)) *env {
	t.Helper()
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(aliceToken+",alice,1001,\"devs\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	opts := cluster.AuthOptions{AuthorizationModes: []string{"Node", "RBAC"}, TokenAuthFile: tokens}
	for _, f := range configure {
		f(dir, &opts)
	}
	c, err := cluster.Start(context.Background(), cluster.Config{
		DataDir: filepath.Join(dir, "data"), BindAddress: "127.0.0.1:0", WatchCache: true, UnsafeNoFsync: true,
		CompactionInterval: -1, Scheduler: nodes > 0, Nodes: nodes, Auth: opts, ControllerManager: controllerManager,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stopping the cluster: %v", err)
		}
	})
	cs, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(caFile, c.CA.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return &env{c: c, cs: cs, caFile: caFile, dataDir: dir}
}

// kubectl runs kubectl as admin (the admin kubeconfig).
func (e *env) kubectl(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return e.run(t, append([]string{"--kubeconfig", e.c.AdminKubeconfig}, args...)...)
}

// kubectlToken runs kubectl with a bearer token and no kubeconfig.
func (e *env) kubectlToken(t *testing.T, token string, args ...string) (string, string, error) {
	t.Helper()
	return e.run(t, append([]string{"--kubeconfig", os.DevNull, "--server", e.c.URL, "--certificate-authority", e.caFile, "--token", token}, args...)...)
}

func (e *env) run(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectlPath, args...)
	cmd.Env = append(os.Environ(), "HOME="+e.dataDir, "KUBECACHEDIR="+filepath.Join(e.dataDir, "cache"))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	return out.String(), errOut.String(), err
}

func TestKubectlUnderRBAC(t *testing.T) {
	// With the controller manager: "view", bound below, grants only the
	// rules its clusterrole-aggregation controller writes into it.
	e := startCluster(t, 0, true)

	// whoami: the admin certificate, the token file's alice, impersonation.
	out := must(t)(e.kubectl(t, "auth", "whoami", "-o", "json"))
	if !strings.Contains(out, `"username": "kubernetes-admin"`) || !strings.Contains(out, "system:masters") {
		t.Errorf("admin whoami: %s", out)
	}
	out = must(t)(e.kubectlToken(t, aliceToken, "auth", "whoami", "-o", "json"))
	for _, want := range []string{`"username": "alice"`, `"uid": "1001"`, `"devs"`, `"system:authenticated"`} {
		if !strings.Contains(out, want) {
			t.Errorf("alice whoami lacks %s: %s", want, out)
		}
	}
	out = must(t)(e.kubectl(t, "auth", "whoami", "--as", "bob", "--as-group", "qa", "-o", "json"))
	if !strings.Contains(out, `"username": "bob"`) || !strings.Contains(out, `"qa"`) || strings.Contains(out, "system:masters") {
		t.Errorf("whoami --as bob: %s", out)
	}
	if _, errOut, err := e.kubectlToken(t, "wrong", "auth", "whoami"); err == nil || !strings.Contains(errOut, "Unauthorized") {
		t.Errorf("whoami with a wrong token: %v %s", err, errOut)
	}

	// alice has the default policy only: she may ask, not read.
	if out, _, err := e.kubectlToken(t, aliceToken, "auth", "can-i", "list", "pods"); err == nil || strings.TrimSpace(out) != "no" {
		t.Errorf("alice can-i list pods: %q %v", out, err)
	}
	_, errOut, err := e.kubectlToken(t, aliceToken, "get", "pods")
	if err == nil || !strings.Contains(errOut, `pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default"`) {
		t.Errorf("alice get pods: %v %s", err, errOut)
	}
	_, errOut, err = e.kubectl(t, "get", "pods", "--as", "alice")
	if err == nil || !strings.Contains(errOut, `User "alice" cannot list resource "pods"`) {
		t.Errorf("admin --as alice get pods: %v %s", err, errOut)
	}
	// alice may not impersonate.
	_, errOut, err = e.kubectlToken(t, aliceToken, "get", "pods", "--as", "kubernetes-admin")
	if err == nil || !strings.Contains(errOut, `User "alice" cannot impersonate resource "users" in API group "" at the cluster scope`) {
		t.Errorf("alice --as admin: %v %s", err, errOut)
	}
	out = must(t)(e.kubectlToken(t, aliceToken, "auth", "can-i", "--list"))
	if !strings.Contains(out, "selfsubjectaccessreviews.authorization.k8s.io") || strings.Contains(out, "pods ") {
		t.Errorf("alice can-i --list:\n%s", out)
	}

	// Granting view in default changes every answer (once the
	// clusterrole-aggregation controller has written view's rules).
	must(t)(e.kubectl(t, "create", "rolebinding", "alice-view", "--clusterrole=view", "--user=alice", "-n", "default"))
	waitFor(t, "alice can list pods", func() bool {
		out, _, err := e.kubectlToken(t, aliceToken, "auth", "can-i", "list", "pods")
		return err == nil && strings.TrimSpace(out) == "yes"
	})
	must(t)(e.kubectlToken(t, aliceToken, "get", "pods"))
	must(t)(e.kubectl(t, "get", "pods", "--as", "alice"))
	if out, _, err := e.kubectl(t, "auth", "can-i", "delete", "pods", "--as", "alice"); err == nil || strings.TrimSpace(out) != "no" {
		t.Errorf("can-i delete pods --as alice: %q %v", out, err)
	}
	if out, _, err := e.kubectl(t, "auth", "can-i", "list", "pods", "--as", "alice", "-n", "kube-system"); err == nil || strings.TrimSpace(out) != "no" {
		t.Errorf("can-i list pods -n kube-system --as alice: %q %v", out, err)
	}
	out = must(t)(e.kubectlToken(t, aliceToken, "auth", "can-i", "--list", "-n", "default"))
	if !strings.Contains(out, "pods ") {
		t.Errorf("alice can-i --list after the binding lacks pods:\n%s", out)
	}
	if out := must(t)(e.kubectl(t, "auth", "can-i", "*", "*")); strings.TrimSpace(out) != "yes" {
		t.Errorf("admin can-i '*' '*': %q", out)
	}

	// create token; the token is a service account; bound to a pod, it
	// dies with the pod.
	must(t)(e.kubectl(t, "create", "serviceaccount", "builder"))
	tok := strings.TrimSpace(must(t)(e.kubectl(t, "create", "token", "builder", "--duration", "20m")))
	out = must(t)(e.kubectlToken(t, tok, "auth", "whoami", "-o", "json"))
	if !strings.Contains(out, `"username": "system:serviceaccount:default:builder"`) || !strings.Contains(out, `"system:serviceaccounts:default"`) {
		t.Errorf("service account whoami: %s", out)
	}
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.PodSpec{ServiceAccountName: "builder",
		Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	if _, err := e.cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bound := strings.TrimSpace(must(t)(e.kubectl(t, "create", "token", "builder", "--bound-object-kind", "Pod", "--bound-object-name", "web")))
	out = must(t)(e.kubectlToken(t, bound, "auth", "whoami", "-o", "json"))
	if !strings.Contains(out, `"authentication.kubernetes.io/pod-name"`) {
		t.Errorf("bound token whoami lacks the pod: %s", out)
	}
	must(t)(e.kubectl(t, "delete", "pod", "web", "--grace-period=0", "--force"))
	// The API server's token cache keeps an acceptance 10 s, as
	// kube-apiserver's: the token dies with the pod within that.
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, errOut, err := e.kubectlToken(t, bound, "auth", "whoami")
		if err != nil && strings.Contains(errOut, "Unauthorized") {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("token bound to a deleted pod, 20 s later: %v %s", err, errOut)
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	must(t)(e.kubectlToken(t, tok, "auth", "whoami")) // the unbound token lives on
}

// must fails the test when a kubectl call failed and returns its stdout.
func must(t *testing.T) func(string, string, error) string {
	return func(out, errOut string, err error) string {
		t.Helper()
		if err != nil {
			t.Fatalf("kubectl: %v\nstdout: %s\nstderr: %s", err, out, errOut)
		}
		return out
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestNoRequestReachesStorageUnchecked: every path the discovery
// documents list answers 401 to a client without credentials, and 403 to
// an authenticated user without rights (alice, whom the default policy
// lets read discovery and ask about herself, nothing else).
func TestNoRequestReachesStorageUnchecked(t *testing.T) {
	e := start(t, 0)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(e.c.CA.CertPEM)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	t.Cleanup(client.CloseIdleConnections)
	do := func(method, path, token string) int {
		req, err := http.NewRequest(method, e.c.URL+path, strings.NewReader(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode >= 400 && !bytes.Contains(body, []byte(`"kind":"Status"`)) {
			t.Errorf("%s %s: %d without a Status body: %s", method, path, resp.StatusCode, body)
		}
		return resp.StatusCode
	}
	get := func(path string, into any) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, e.c.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+aliceToken)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("alice GET %s: %d (system:discovery should allow it)", path, resp.StatusCode)
		}
		if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
			t.Fatal(err)
		}
	}
	var groups metav1.APIGroupList
	get("/apis", &groups)
	gvs := []string{"/api/v1"}
	for _, g := range groups.Groups {
		for _, v := range g.Versions {
			gvs = append(gvs, "/apis/"+v.GroupVersion)
		}
	}
	var collections, objects []string
	selfReviews := 0
	for _, gv := range gvs {
		var list metav1.APIResourceList
		get(gv, &list)
		for _, r := range list.APIResources {
			name, sub, isSub := strings.Cut(r.Name, "/")
			base := gv + "/" + name
			if r.Namespaced {
				base = gv + "/namespaces/default/" + name
			}
			switch {
			case isSub:
				objects = append(objects, base+"/x/"+sub)
			case strings.HasPrefix(name, "self"):
				selfReviews++ // every authenticated user may create these
			default:
				collections = append(collections, base)
				if slices.Contains(r.Verbs, "get") {
					objects = append(objects, base+"/x")
				}
			}
		}
	}
	if len(collections) < 20 || selfReviews < 2 {
		t.Fatalf("discovery lists too little: %d collections, %d self reviews", len(collections), selfReviews)
	}
	for _, p := range append(append([]string{"/api", "/apis", "/metrics", "/openapi/v2"}, gvs...), append(collections, objects...)...) {
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete} {
			if code := do(m, p, ""); code != http.StatusUnauthorized {
				t.Errorf("anonymous %s %s: %d, want 401", m, p, code)
			}
		}
	}
	for _, p := range append(collections, objects...) {
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete} {
			if code := do(m, p, aliceToken); code != http.StatusForbidden {
				t.Errorf("alice %s %s: %d, want 403", m, p, code)
			}
		}
	}
}

// TestPipelineUnderLeastPrivilege: the scheduler (system:kube-scheduler)
// and the kubelets (system:node:<name>, Node authorizer and
// NodeRestriction) run pods with no superuser rights.
func TestPipelineUnderLeastPrivilege(t *testing.T) {
	before := runtime.NumGoroutine()
	e := start(t, 2)
	ctx := context.Background()
	for _, name := range []string{"a", "b", "c"} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		if _, err := e.cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "three pods run", func() bool {
		pods, err := e.cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running == 3
	})
	// A kubelet may not read another node's pods.
	_, errOut, err := e.kubectl(t, "get", "pods", "--as", "system:node:node-1", "--as-group", "system:nodes", "-A")
	if err == nil || !strings.Contains(errOut, "forbidden") {
		t.Errorf("node-1 listing every pod: %v %s", err, errOut)
	}
	if err := e.c.Stop(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "goroutines end", func() bool { return runtime.NumGoroutine() <= before+5 })
}

// TestAnonymousAndAudit: with --anonymous-auth unauthenticated requests
// are system:anonymous, which RBAC lets read /version and nothing in the
// API; the audit log records each request's user, impersonated user and
// authorization decision, and failed authentications.
func TestAnonymousAndAudit(t *testing.T) {
	var auditLog string
	e := start(t, 0, func(dir string, o *cluster.AuthOptions) {
		o.AnonymousAuth = true
		o.DefaultNotReadyTolerationSeconds = 42
		policy := filepath.Join(dir, "audit-policy.yaml")
		if err := os.WriteFile(policy, []byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		auditLog = filepath.Join(dir, "audit.log")
		o.AuditPolicyFile, o.AuditLogPath = policy, auditLog
	})
	// The admission plugins get their options (DefaultTolerationSeconds).
	pod, err := e.cs.CoreV1().Pods("default").Create(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var notReady, unreachable int64
	for _, tol := range pod.Spec.Tolerations {
		if tol.TolerationSeconds == nil {
			continue
		}
		switch tol.Key {
		case corev1.TaintNodeNotReady:
			notReady = *tol.TolerationSeconds
		case corev1.TaintNodeUnreachable:
			unreachable = *tol.TolerationSeconds
		}
	}
	if notReady != 42 || unreachable != 300 {
		t.Errorf("default tolerations %d s (not ready), %d s (unreachable), want 42 and 300", notReady, unreachable)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(e.c.CA.CertPEM)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	t.Cleanup(client.CloseIdleConnections)
	status := func(path string) (int, string) {
		resp, err := client.Get(e.c.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, _ := status("/version"); code != http.StatusOK {
		t.Errorf("anonymous /version: %d", code)
	}
	code, body := status("/api/v1/namespaces/default/pods")
	if code != http.StatusForbidden || !strings.Contains(body, `User \"system:anonymous\" cannot list resource \"pods\"`) {
		t.Errorf("anonymous list pods: %d %s", code, body)
	}
	// A wrong token is a 401 even with anonymous access on, and audited.
	req, _ := http.NewRequest(http.MethodGet, e.c.URL+"/api/v1/namespaces/default/secrets", nil)
	req.Header.Set("Authorization", "Bearer wrong")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("wrong token with anonymous auth on: %d, want 401", resp.StatusCode)
	}
	// bob may not list config maps; the refusal is audited.
	if _, errOut, err := e.kubectl(t, "get", "configmaps", "--as", "bob"); err == nil || !strings.Contains(errOut, "forbidden") {
		t.Errorf("get configmaps --as bob: %v %s", err, errOut)
	}
	data, err := os.ReadFile(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	var sawAnonymous, sawImpersonation, sawFailed bool
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var ev struct {
			User             struct{ Username string }
			ImpersonatedUser *struct{ Username string }
			ObjectRef        *struct{ Resource string }
			Annotations      map[string]string
			ResponseStatus   *struct {
				Code            int
				Message, Reason string
			}
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		if ev.ObjectRef == nil {
			continue
		}
		if ev.ObjectRef.Resource == "secrets" && ev.ResponseStatus != nil && ev.ResponseStatus.Code == 401 &&
			ev.ResponseStatus.Message == "Unauthorized" && ev.ResponseStatus.Reason == "Unauthorized" {
			sawFailed = true
		}
		if ev.User.Username == "system:anonymous" && ev.ObjectRef.Resource == "pods" && ev.Annotations["authorization.k8s.io/decision"] == "forbid" {
			sawAnonymous = true
		}
		if ev.User.Username == "kubernetes-admin" && ev.ImpersonatedUser != nil && ev.ImpersonatedUser.Username == "bob" &&
			ev.ObjectRef.Resource == "configmaps" && ev.Annotations["authorization.k8s.io/decision"] == "forbid" {
			sawImpersonation = true
		}
	}
	if !sawAnonymous || !sawImpersonation || !sawFailed {
		t.Errorf("audit log lacks the anonymous (%v), the impersonated (%v) or the unauthenticated (%v) request:\n%s", sawAnonymous, sawImpersonation, sawFailed, data)
	}
}
