package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubeproof/kubeproof/impl/cluster/clustertest"
)

func TestCheckLinearizabilityCommand(t *testing.T) {
	c, _ := clustertest.Start(t, clustertest.Options{})
	report := t.TempDir()
	cmd := newCheckCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"linearizability", "--kubeconfig", c.AdminKubeconfig, "--duration", "2s", "--clients", "4", "--report", report, "--report-on-success"})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("check linearizability: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "result=PASS") {
		t.Errorf("no PASS summary line:\n%s", out.String())
	}
	for _, f := range []string{"history.html", "operations.json", "watches.json", "violations.json", "summary.txt"} {
		if st, err := os.Stat(filepath.Join(report, f)); err != nil || st.Size() == 0 {
			t.Errorf("report file %s missing or empty: %v", f, err)
		}
	}
}

// TestCheckLinearizabilityRefusesSizes: sizes the recorder would replace
// by its defaults (or a run without end) are refused before anything is
// read or sent, and so is a stray argument; before, --clients 0 ran with
// 8 clients, --keys 0 with 5, and --duration 0 recorded until killed.
func TestCheckLinearizabilityRefusesSizes(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such.kubeconfig")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--clients", "0"}, "--clients must be at least 1, got 0"},
		{[]string{"--clients", "-1"}, "--clients must be at least 1, got -1"},
		{[]string{"--keys", "0"}, "--keys must be at least 1, got 0"},
		{[]string{"--watchers", "-1"}, "--watchers must not be negative, got -1"},
		{[]string{"--duration", "0s"}, "--duration must be positive, got 0s"},
		{[]string{"--duration", "-1s"}, "--duration must be positive, got -1s"},
		{[]string{"--clients", "0", "--keys", "0"}, "--clients must be at least 1, got 0\n--keys must be at least 1, got 0"},
		{[]string{"extra"}, `unknown command "extra" for "check linearizability"`},
	} {
		cmd := newCheckCommand()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(append([]string{"linearizability", "--kubeconfig", missing}, tc.args...))
		err := cmd.Execute()
		if err == nil || err.Error() != tc.want {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
}

// TestCheckLinearizabilityNoWatchers: --watchers 0 records no watch
// stream (the recorder's own 0 means its default of 3).
func TestCheckLinearizabilityNoWatchers(t *testing.T) {
	c, _ := clustertest.Start(t, clustertest.Options{})
	cmd := newCheckCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"linearizability", "--kubeconfig", c.AdminKubeconfig, "--duration", "1s", "--clients", "2", "--watchers", "0", "--report", t.TempDir()})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("check linearizability: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), " watches=0 ") || !strings.Contains(out.String(), "result=PASS") {
		t.Errorf("want a PASS with watches=0:\n%s", out.String())
	}
}

// TestCheckLinearizabilityCleansGivenNamespace: with --namespace the
// namespace stays, but the run's ConfigMaps go (they were left behind,
// five more after every run in a namespace a CI job reuses).
func TestCheckLinearizabilityCleansGivenNamespace(t *testing.T) {
	c, cs := clustertest.Start(t, clustertest.Options{})
	cmd := newCheckCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"linearizability", "--kubeconfig", c.AdminKubeconfig, "--duration", "1s", "--clients", "2", "--namespace", "default", "--report", t.TempDir()})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("check linearizability: %v\n%s", err, out.String())
	}
	list, err := cs.CoreV1().ConfigMaps("default").List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cm := range list.Items {
		if strings.HasPrefix(cm.Name, "lin-") {
			t.Errorf("ConfigMap %s left in the given namespace", cm.Name)
		}
	}
	if _, err := cs.CoreV1().Namespaces().Get(t.Context(), "default", metav1.GetOptions{}); err != nil {
		t.Errorf("the given namespace: %v", err)
	}
}

// TestCheckLinearizabilityCleansManyKeys: the cleanup deletes every key's
// ConfigMap within its 10 s deadline. Before, the deletes went through
// client-go's default client-side limiter (5/s, burst 10), so with --keys
// 80 about 60 were deleted and the rest left in the given namespace.
func TestCheckLinearizabilityCleansManyKeys(t *testing.T) {
	c, cs := clustertest.Start(t, clustertest.Options{})
	cmd := newCheckCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"linearizability", "--kubeconfig", c.AdminKubeconfig, "--duration", "1s", "--clients", "4", "--keys", "80", "--namespace", "default", "--report", t.TempDir()})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("check linearizability: %v\n%s", err, out.String())
	}
	list, err := cs.CoreV1().ConfigMaps("default").List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	left := 0
	for _, cm := range list.Items {
		if strings.HasPrefix(cm.Name, "lin-") {
			left++
		}
	}
	if left > 0 {
		t.Errorf("%d ConfigMaps lin-* left in the given namespace", left)
	}
}

// TestCheckLinearizabilityNamespacedUser: a CI job's credentials are often
// allowed ConfigMaps in one namespace and nothing at the cluster scope. With
// --namespace naming that namespace the check runs; before, it stopped at
// once on the forbidden namespace create ("creating namespace ci: namespaces
// is forbidden"). A namespace that does not exist is still an error, not a
// run whose every write fails.
func TestCheckLinearizabilityNamespacedUser(t *testing.T) {
	c, cs := clustertest.Start(t, clustertest.Options{})
	ctx := t.Context()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ci"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().Roles("ci").Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "configmaps"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"*"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().RoleBindings("ci").Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "ci"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "configmaps"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "ci"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	run := func(kubeconfig, namespace string) (string, error) {
		cmd := newCheckCommand()
		cmd.SilenceUsage = true
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs([]string{"linearizability", "--kubeconfig", kubeconfig, "--duration", "1s", "--clients", "2", "--namespace", namespace, "--report", t.TempDir()})
		err := cmd.Execute()
		return out.String(), err
	}
	waitAllowed(t, cs, "ci", "ci")
	kubeconfig := impersonatingKubeconfig(t, c.AdminKubeconfig, "ci")
	if out, err := run(kubeconfig, "ci"); err != nil || !strings.Contains(out, "result=PASS") {
		t.Errorf("--namespace ci as a user allowed ConfigMaps there only: %v\n%s", err, out)
	}

	// The same ConfigMap rights everywhere, so that only the namespace's
	// absence fails the run in "missing".
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "ci-configmaps"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"*"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "ci-configmaps"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "ci-configmaps"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "ci"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAllowed(t, cs, "ci", "missing")
	out, err := run(kubeconfig, "missing")
	if err == nil || !strings.Contains(err.Error(), `namespaces "missing" not found`) {
		t.Errorf("--namespace missing: error %v, want the namespace's 404\n%s", err, out)
	}
}

// impersonatingKubeconfig writes a copy of the kubeconfig at path whose
// users impersonate user.
func impersonatingKubeconfig(t *testing.T, path, user string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, auth := range cfg.AuthInfos {
		auth.Impersonate = user
	}
	out := filepath.Join(t.TempDir(), user+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// waitAllowed waits until the authorizer lets user create ConfigMaps in
// namespace (RBAC objects take effect once its informers have them).
func waitAllowed(t *testing.T, cs kubernetes.Interface, user, namespace string) {
	t.Helper()
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               user,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: namespace, Verb: "create", Resource: "configmaps"},
	}}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := cs.AuthorizationV1().SubjectAccessReviews().Create(t.Context(), review, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Allowed {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s is still not allowed to create ConfigMaps in %s: %s", user, namespace, got.Status.Reason)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestCheckLinearizabilityCleansOwnNamespace: without --namespace the run's
// namespace is deleted, and its ConfigMaps before it: on an API server with
// no namespace controller (as here) the namespace stays Terminating and
// whatever was in it stays with it, so the ConfigMaps were left behind.
func TestCheckLinearizabilityCleansOwnNamespace(t *testing.T) {
	c, cs := clustertest.Start(t, clustertest.Options{})
	cmd := newCheckCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"linearizability", "--kubeconfig", c.AdminKubeconfig, "--duration", "1s", "--clients", "2", "--report", t.TempDir()})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("check linearizability: %v\n%s", err, out.String())
	}
	namespaces, err := cs.CoreV1().Namespaces().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	own := 0
	for _, ns := range namespaces.Items {
		if !strings.HasPrefix(ns.Name, "kubeproof-lin-") {
			continue
		}
		own++
		if ns.DeletionTimestamp == nil {
			t.Errorf("namespace %s not deleted", ns.Name)
		}
		list, err := cs.CoreV1().ConfigMaps(ns.Name).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, cm := range list.Items {
			t.Errorf("ConfigMap %s left in the run's namespace %s", cm.Name, ns.Name)
		}
	}
	if own != 1 {
		t.Errorf("%d namespaces kubeproof-lin-*, want the run's one (Terminating: nothing here removes its finalizer)", own)
	}
}

// TestCheckLinearizabilityContext: the API server is found as kubectl finds
// it: --context picks a context of the kubeconfig other than its current
// one, and without --kubeconfig $KUBECONFIG names the file. Before, only
// --kubeconfig's current context could be checked ("unknown flag:
// --context"; "--kubeconfig is required" with $KUBECONFIG set).
func TestCheckLinearizabilityContext(t *testing.T) {
	c, _ := clustertest.Start(t, clustertest.Options{})
	twoContexts := kubeconfigWithBrokenCurrent(t, c.AdminKubeconfig)
	good, err := clientcmd.LoadFromFile(c.AdminKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, error) {
		cmd := newCheckCommand()
		cmd.SilenceUsage = true
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(append([]string{"linearizability", "--duration", "1s", "--clients", "2", "--watchers", "1", "--report", t.TempDir()}, args...))
		err := cmd.Execute()
		return out.String(), err
	}
	home := t.TempDir()
	t.Setenv("HOME", home) // no ~/.kube/config to fall back to, until the last run
	t.Setenv("KUBERNETES_SERVICE_HOST", "")

	if out, err := run("--kubeconfig", twoContexts, "--context", good.CurrentContext); err != nil || !strings.Contains(out, "result=PASS") {
		t.Errorf("--context %s: %v\n%s", good.CurrentContext, err, out)
	}
	if _, err := run("--kubeconfig", twoContexts, "--context", "nope"); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("--context nope: error %v, want one naming the missing context", err)
	}
	t.Setenv("KUBECONFIG", twoContexts)
	if out, err := run("--context", good.CurrentContext); err != nil || !strings.Contains(out, "result=PASS") {
		t.Errorf("$KUBECONFIG with --context %s: %v\n%s", good.CurrentContext, err, out)
	}
	t.Setenv("KUBECONFIG", c.AdminKubeconfig)
	if out, err := run(); err != nil || !strings.Contains(out, "result=PASS") {
		t.Errorf("$KUBECONFIG alone: %v\n%s", err, out)
	}
	t.Setenv("KUBECONFIG", "")
	if _, err := run(); err == nil || !strings.Contains(err.Error(), "no kubeconfig found") {
		t.Errorf("no kubeconfig at all: error %v, want no kubeconfig found", err)
	}
	// ~/.kube/config of the home of now: client-go's default path is the
	// home the process started with, so before, this run did not find it
	// (and a test with $HOME set aside still reached the kubeconfig of the
	// user running it).
	if err := os.MkdirAll(filepath.Join(home, ".kube"), 0o700); err != nil {
		t.Fatal(err)
	}
	kc, err := os.ReadFile(c.AdminKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".kube", "config"), kc, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := run(); err != nil || !strings.Contains(out, "result=PASS") {
		t.Errorf("~/.kube/config alone: %v\n%s", err, out)
	}
}

// kubeconfigWithBrokenCurrent writes a copy of the kubeconfig at path with
// one more context, "broken" (a server nothing listens on), made current.
func kubeconfigWithBrokenCurrent(t *testing.T, path string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Clusters["broken"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1", InsecureSkipTLSVerify: true}
	cfg.Contexts["broken"] = &clientcmdapi.Context{Cluster: "broken", AuthInfo: cfg.Contexts[cfg.CurrentContext].AuthInfo}
	cfg.CurrentContext = "broken"
	out := filepath.Join(t.TempDir(), "two-contexts.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, out); err != nil {
		t.Fatal(err)
	}
	return out
}
