package main

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeproof/kubeproof/impl/cluster"
)

// TestStandaloneComponentsSecureServing: `kubeproof scheduler` and
// `kubeproof controller-manager` serve HTTPS on kube-scheduler's and
// kube-controller-manager's secure ports (10259, 10257; a self-signed
// certificate), so the componentstatuses of an API server with neither
// in-process (it probes those ports) report both Healthy. /healthz is
// anyone's; /metrics is 403 for system:anonymous, 401 for a token the API
// server's TokenReview refuses, 200 for a service account an RBAC rule
// lets get the /metrics non-resource URL (a SubjectAccessReview), 403 for
// one without. Before, both served plain HTTP on 127.0.0.1 and had none of
// the secure serving flags.
func TestStandaloneComponentsSecureServing(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:10257", "127.0.0.1:10259"} {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Skipf("%s is taken (another control plane on this machine): %v", addr, err)
		}
		_ = ln.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := cluster.Start(ctx, cluster.Config{DataDir: t.TempDir(), BindAddress: "127.0.0.1:0", UnsafeNoFsync: true, CompactionInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stopping the cluster: %v", err)
		}
	})
	admin := c.AdminKubeconfig
	common := []string{"--kubeconfig", admin, "--leader-elect=false", "--bind-address", "127.0.0.1",
		"--authentication-kubeconfig", admin, "--authorization-kubeconfig", admin, "--log-level", "error"}
	components := []*component{
		runComponent(t, ctx, append([]string{"scheduler"}, common...)...),
		runComponent(t, ctx, append([]string{"controller-manager"}, common...)...),
	}

	cs, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := map[string]corev1.ComponentCondition{}
		list, err := cs.CoreV1().ComponentStatuses().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, item := range list.Items {
			got[item.Name] = item.Conditions[0]
		}
		healthy := true
		for _, name := range []string{"controller-manager", "scheduler", "etcd-0"} {
			if cond := got[name]; cond.Status != corev1.ConditionTrue || cond.Message != "ok" {
				healthy = false
			}
		}
		if healthy {
			break
		}
		for _, c := range components {
			select {
			case <-c.done:
				if c.err != nil && strings.Contains(c.err.Error(), "address already in use") {
					// Taken since the check above, by another test's
					// control plane.
					t.Skipf("a secure port was taken meanwhile: %v", c.err)
				}
				t.Fatalf("a component stopped: %v", c.err)
			default:
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("componentstatuses: %+v, want all Healthy ok", got)
		}
		time.Sleep(200 * time.Millisecond)
	}

	reader, stranger := serviceAccountToken(t, ctx, cs, "metrics-reader", true), serviceAccountToken(t, ctx, cs, "stranger", false)
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // self-signed, as kube-apiserver probes it
	}}
	for _, base := range []string{"https://127.0.0.1:10259", "https://127.0.0.1:10257"} {
		if code, body := httpsGet(t, client, base+"/healthz", ""); code != 200 || body != "ok" {
			t.Errorf("%s/healthz: %d %q", base, code, body)
		}
		if code, body := httpsGet(t, client, base+"/metrics", ""); code != 403 || !strings.Contains(body, `"message":"forbidden: User \"system:anonymous\" cannot get path \"/metrics\""`) {
			t.Errorf("%s/metrics without credentials: %d %s", base, code, body)
		}
		if code, body := httpsGet(t, client, base+"/metrics", "not-a-token"); code != 401 || !strings.Contains(body, `"reason":"Unauthorized"`) {
			t.Errorf("%s/metrics with a bad token: %d %s", base, code, body)
		}
		if code, body := httpsGet(t, client, base+"/metrics", reader); code != 200 || !strings.Contains(body, "go_goroutines") {
			t.Errorf("%s/metrics as metrics-reader: %d %.200s", base, code, body)
		}
		if code, body := httpsGet(t, client, base+"/metrics", stranger); code != 403 || !strings.Contains(body, `forbidden: User \"system:serviceaccount:default:stranger\" cannot get path \"/metrics\"`) {
			t.Errorf("%s/metrics as stranger: %d %s", base, code, body)
		}
	}
	if code, body := httpsGet(t, client, "https://127.0.0.1:10259/readyz", ""); code != 200 {
		t.Errorf("scheduler /readyz: %d %s", code, body)
	}
	// The components' own health checks (kube-scheduler's and
	// kube-controller-manager's), open to all on the endpoint itself; a
	// check's own path needs authorization.
	for url, want := range map[string]string{
		"https://127.0.0.1:10259/readyz?verbose":  "[+]shutdown ok\n[+]sched-handler-sync ok\nreadyz check passed\n",
		"https://127.0.0.1:10259/healthz?verbose": "[+]ping ok\nhealthz check passed\n",
	} {
		if code, body := httpsGet(t, client, url, ""); code != 200 || body != want {
			t.Errorf("%s: %d %q, want %q", url, code, body, want)
		}
	}
	if code, body := httpsGet(t, client, "https://127.0.0.1:10257/healthz?verbose", ""); code != 200 || !strings.Contains(body, "[+]deployment-controller ok\n") || !strings.HasSuffix(body, "healthz check passed\n") {
		t.Errorf("controller-manager /healthz?verbose: %d %q", code, body)
	}
	if code, body := httpsGet(t, client, "https://127.0.0.1:10259/readyz/sched-handler-sync", ""); code != 403 {
		t.Errorf("scheduler /readyz/sched-handler-sync as system:anonymous: %d %s, want 403", code, body)
	}
}

// runComponent runs kubeproof with args until the test ends.
func runComponent(t *testing.T, ctx context.Context, args ...string) *component {
	t.Helper()
	root := newRootCommand()
	root.SetArgs(args)
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	runCtx, stop := context.WithCancel(ctx)
	c := &component{done: make(chan struct{})}
	go func() { c.err = root.ExecuteContext(runCtx); close(c.done) }()
	t.Cleanup(func() {
		stop()
		<-c.done
		if c.err != nil && ctx.Err() == nil {
			t.Errorf("kubeproof %s: %v", args[0], c.err)
		}
	})
	return c
}

// component is a running command: err is set when done is closed.
type component struct {
	done chan struct{}
	err  error
}

// serviceAccountToken creates service account name in default, allowed to
// get /metrics when reads, and returns a token of it.
func serviceAccountToken(t *testing.T, ctx context.Context, cs kubernetes.Interface, name string, reads bool) string {
	t.Helper()
	if _, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if reads {
		if _, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name},
			Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "default", Name: name}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	tr, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

func httpsGet(t *testing.T, client *http.Client, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestSecureServingFlagDefaults: kube-scheduler's and
// kube-controller-manager's secure serving, authentication and
// authorization flags and defaults.
func TestSecureServingFlagDefaults(t *testing.T) {
	for name, tc := range map[string]struct {
		port string
		cmd  func() *cobra.Command
	}{"scheduler": {"10259", newSchedulerCommand}, "controller-manager": {"10257", newControllerManagerCommand}} {
		f := tc.cmd().Flags()
		for flag, want := range map[string]string{
			"secure-port": tc.port, "bind-address": "0.0.0.0", "cert-dir": "", "tls-cert-file": "", "tls-private-key-file": "",
			"client-ca-file": "", "authentication-kubeconfig": "", "authentication-skip-lookup": "false",
			"authentication-tolerate-lookup-failure": "false", "authorization-kubeconfig": "",
			"authorization-always-allow-paths": "[/healthz,/readyz,/livez]", "metrics-bind-address": "",
			"tls-cipher-suites": "[]", "tls-min-version": "", "tls-sni-cert-key": "[]",
			"http2-max-streams-per-connection": "0", "permit-port-sharing": "false", "permit-address-sharing": "false",
		} {
			if got := f.Lookup(flag); got == nil || got.DefValue != want {
				t.Errorf("%s --%s: %v, want default %q", name, flag, got, want)
			}
		}
	}
}

// TestKubeadmManifestFlagsAccepted: the command lines of kubeadm 1.37's
// static pod manifests for kube-controller-manager and kube-scheduler
// (cmd/kubeadm/app/phases/controlplane/manifests.go
// getControllerManagerCommand, getSchedulerCommand, with a pod subnet)
// parse, with the review cache TTLs and front-proxy header flags at
// upstream's defaults.
func TestKubeadmManifestFlagsAccepted(t *testing.T) {
	cm := []string{
		"--allocate-node-cidrs=true",
		"--authentication-kubeconfig=/etc/kubernetes/controller-manager.conf",
		"--authorization-kubeconfig=/etc/kubernetes/controller-manager.conf",
		"--bind-address=127.0.0.1",
		"--client-ca-file=/etc/kubernetes/pki/ca.crt",
		"--cluster-cidr=10.244.0.0/16",
		"--cluster-name=kubernetes",
		"--cluster-signing-cert-file=/etc/kubernetes/pki/ca.crt",
		"--cluster-signing-key-file=/etc/kubernetes/pki/ca.key",
		"--controllers=*,bootstrapsigner,tokencleaner",
		"--kubeconfig=/etc/kubernetes/controller-manager.conf",
		"--leader-elect=true",
		"--requestheader-client-ca-file=/etc/kubernetes/pki/front-proxy-ca.crt",
		"--root-ca-file=/etc/kubernetes/pki/ca.crt",
		"--service-account-private-key-file=/etc/kubernetes/pki/sa.key",
		"--service-cluster-ip-range=10.96.0.0/12",
		"--use-service-account-credentials=true",
	}
	sched := []string{
		"--authentication-kubeconfig=/etc/kubernetes/scheduler.conf",
		"--authorization-kubeconfig=/etc/kubernetes/scheduler.conf",
		"--bind-address=127.0.0.1",
		"--kubeconfig=/etc/kubernetes/scheduler.conf",
		"--leader-elect=true",
	}
	for name, tc := range map[string]struct {
		args []string
		cmd  func() *cobra.Command
	}{"controller-manager": {cm, newControllerManagerCommand}, "scheduler": {sched, newSchedulerCommand}} {
		f := tc.cmd().Flags()
		if err := f.Parse(tc.args); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		for flag, want := range map[string]string{
			"authentication-token-webhook-cache-ttl":       "10s",
			"authorization-webhook-cache-authorized-ttl":   "10s",
			"authorization-webhook-cache-unauthorized-ttl": "10s",
			"requestheader-username-headers":               "[x-remote-user]",
			"requestheader-group-headers":                  "[x-remote-group]",
			"requestheader-extra-headers-prefix":           "[x-remote-extra-]",
			"requestheader-uid-headers":                    "[]",
			"requestheader-allowed-names":                  "[]",
		} {
			if got := f.Lookup(flag); got == nil || got.DefValue != want {
				t.Errorf("%s --%s: %v, want default %q", name, flag, got, want)
			}
		}
	}
}
