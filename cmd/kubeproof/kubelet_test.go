package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeproof/kubeproof/impl/cluster"
)

// TestKubeletWebhookAuthorization: `kubeproof kubelet --authorization-mode
// Webhook` asks the API server about every kubelet API request, as
// kubelet's webhook modes do: system:masters is served, another user of
// the client CA gets 403, no credentials 403 as system:anonymous (or 401
// with --anonymous-auth=false); an unknown mode is refused.
func TestKubeletWebhookAuthorization(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	c, err := cluster.Start(ctx, cluster.Config{DataDir: dir, BindAddress: "127.0.0.1:0", WatchCache: true, UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	}()

	root := newRootCommand()
	root.SetArgs([]string{"kubelet", "--authorization-mode", "Magic", "--kubeconfig", c.AdminKubeconfig, "--node-name", "x"})
	root.SetOut(new(discard))
	root.SetErr(new(discard))
	if err := root.ExecuteContext(ctx); err == nil {
		t.Fatal("--authorization-mode Magic accepted")
	}

	admin, err := tls.LoadX509KeyPair(filepath.Join(dir, "pki", "admin.crt"), filepath.Join(dir, "pki", "admin.key"))
	if err != nil {
		t.Skipf("admin key pair not in pki/: %v", err)
	}
	kp, err := c.CA.IssueClient("mallory", nil)
	if err != nil {
		t.Fatal(err)
	}
	mallory, err := kp.TLSCertificate()
	if err != nil {
		t.Fatal(err)
	}
	for _, anonymous := range []bool{true, false} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		kctx, kcancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		node := fmt.Sprintf("webhook-%v", anonymous)
		go func() {
			root := newRootCommand()
			root.SetArgs([]string{"kubelet", "--kubeconfig", c.AdminKubeconfig, "--node-name", node, "--address", "127.0.0.1",
				"--port", fmt.Sprint(port), "--client-ca-file", filepath.Join(dir, "pki", "ca.crt"), "--authorization-mode", "Webhook",
				"--authentication-token-webhook", fmt.Sprintf("--anonymous-auth=%v", anonymous),
				"--root-dir", filepath.Join(dir, node), "--pod-logs-dir", filepath.Join(dir, node, "logs"), "--cert-dir", filepath.Join(dir, node, "pki")})
			root.SetOut(new(discard))
			root.SetErr(new(discard))
			done <- root.ExecuteContext(kctx)
		}()
		get := func(certs []tls.Certificate) int {
			tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true, Certificates: certs}} //nolint:gosec // self-signed kubelet serving cert
			defer tr.CloseIdleConnections()
			deadline := time.Now().Add(30 * time.Second)
			for {
				resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Get(fmt.Sprintf("https://127.0.0.1:%d/healthz", port))
				if err == nil {
					resp.Body.Close()
					return resp.StatusCode
				}
				if time.Now().After(deadline) {
					t.Fatalf("kubelet API: %v", err)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
		if code := get([]tls.Certificate{admin}); code != http.StatusOK {
			t.Errorf("anonymous-auth=%v: system:masters got %d, want 200", anonymous, code)
		}
		if code := get([]tls.Certificate{mallory}); code != http.StatusForbidden {
			t.Errorf("anonymous-auth=%v: mallory got %d, want 403", anonymous, code)
		}
		want := http.StatusForbidden
		if !anonymous {
			want = http.StatusUnauthorized
		}
		if code := get(nil); code != want {
			t.Errorf("anonymous-auth=%v: no credentials got %d, want %d", anonymous, code, want)
		}
		// Without --tls-cert-file the self-signed serving certificate is
		// --cert-dir's kubelet.crt, as upstream's.
		if _, err := tls.LoadX509KeyPair(filepath.Join(dir, node, "pki", "kubelet.crt"), filepath.Join(dir, node, "pki", "kubelet.key")); err != nil {
			t.Errorf("--cert-dir's self-signed serving certificate: %v", err)
		}
		kcancel()
		if err := <-done; err != nil {
			t.Errorf("kubelet: %v", err)
		}
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// unreachableKubeconfig is the path of a kubeconfig naming an API server
// nobody serves (127.0.0.1:1): the kubelet flag tests' kubelets refuse
// their flags before contacting it.
func unreachableKubeconfig(t *testing.T) string {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	const kc = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:1"}
users:
- name: u
  user: {token: t}
contexts:
- name: c
  context: {cluster: c, user: u}
current-context: c
`
	if err := os.WriteFile(kubeconfig, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return kubeconfig
}

// runKubelet runs `kubeproof kubelet` as node x without its API, with
// kubeconfig and args, for at most a minute, and returns its error.
func runKubelet(kubeconfig string, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	root := newRootCommand()
	root.SetArgs(append([]string{"kubelet", "--kubeconfig", kubeconfig, "--node-name", "x", "--enable-server=false"}, args...))
	root.SetOut(new(discard))
	root.SetErr(new(discard))
	return root.ExecuteContext(ctx)
}

// TestKubeletSingleProcessOOMKillFlag: `kubeproof kubelet
// --single-process-oom-kill=false` reaches the kubelet's config, which
// refuses it on a cgroup v1 node (a simulated node is one) with upstream's
// validation message, before contacting the API server.
func TestKubeletSingleProcessOOMKillFlag(t *testing.T) {
	kubeconfig := unreachableKubeconfig(t)
	err := runKubelet(kubeconfig, "--single-process-oom-kill=false")
	if err == nil || !strings.Contains(err.Error(), "singleProcessOOMKill must not be explicitly set to false when using cgroup v1") {
		t.Fatalf("kubelet --single-process-oom-kill=false on a simulated node: %v; want upstream's cgroup v1 error", err)
	}
}

// TestKubeletImagePullVerificationFlags: `kubeproof kubelet
// --image-pull-credentials-verification-policy` and
// `--preloaded-images-verification-allowlist` reach the kubelet's config,
// which refuses what upstream's validation refuses, with its messages,
// before contacting the API server.
func TestKubeletImagePullVerificationFlags(t *testing.T) {
	kubeconfig := unreachableKubeconfig(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{args: []string{"--image-pull-credentials-verification-policy", "Sometimes"},
			want: `invalid configuration: option "Sometimes" specified for imagePullCredentialsVerificationPolicy. Valid options are "NeverVerify", "NeverVerifyPreloadedImages", "NeverVerifyAllowlistedImages" or "AlwaysVerify"`},
		{args: []string{"--preloaded-images-verification-allowlist", "registry.example.com/app"},
			want: "invalid configuration: can't set `preloadedImagesVerificationAllowlist` if `imagePullCredentialsVertificationPolicy` is not \"NeverVerifyAllowlistedImages\""},
		{args: []string{"--image-pull-credentials-verification-policy", "NeverVerifyAllowlistedImages", "--preloaded-images-verification-allowlist", "registry.example.com/team/*,nginx"},
			want: "invalid configuration: invalid image pattern in `preloadedImagesVerificationAllowlist`: neither tag nor digest is accepted in an image reference: nginx"},
	} {
		err := runKubelet(kubeconfig, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("kubelet %q: %v; want %q", tc.args, err, tc.want)
		}
	}
}

// TestKubeletMemorySwapFlags: `kubeproof kubelet --memory-swap-behavior`
// and `--swap-capacity` reach the kubelet's config, which refuses what
// upstream's kubelet refuses, with its messages, before contacting the
// API server: LimitedSwap on a cgroup v1 node (a simulated node is one),
// an unknown behaviour, a node with swap without --fail-swap-on=false;
// and a negative or malformed capacity.
func TestKubeletMemorySwapFlags(t *testing.T) {
	kubeconfig := unreachableKubeconfig(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{args: []string{"--memory-swap-behavior", "LimitedSwap", "--swap-capacity", "4Gi", "--fail-swap-on=false"},
			want: "swap feature is enabled and LimitedSwap but it is only supported with cgroupv2"},
		{args: []string{"--swap-capacity", "4Gi"},
			want: "running with swap on is not supported, please disable swap or set --fail-swap-on flag to false"},
		{args: []string{"--memory-swap-behavior", "UnlimitedSwap"},
			want: `invalid configuration: memorySwap.swapBehavior "UnlimitedSwap" must be one of: "", "LimitedSwap" or "NoSwap"`},
		{args: []string{"--swap-capacity", "-1Gi"}, want: "swap capacity -1Gi must not be negative"},
		{args: []string{"--swap-capacity", "lots"}, want: "--swap-capacity: quantities must match"},
	} {
		err := runKubelet(kubeconfig, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("kubelet %q: %v; want %q", tc.args, err, tc.want)
		}
	}
}

// TestKubeletSwapCapacityPublished: a simulated node of `kubeproof
// kubelet --swap-capacity 2Gi --fail-swap-on=false` publishes it as its
// status.nodeInfo.swap.capacity, as upstream's kubelet its machine's swap.
func TestKubeletSwapCapacityPublished(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	c, err := cluster.Start(ctx, cluster.Config{DataDir: dir, BindAddress: "127.0.0.1:0", WatchCache: true, UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	}()
	kctx, kcancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		root := newRootCommand()
		root.SetArgs([]string{"kubelet", "--kubeconfig", c.AdminKubeconfig, "--node-name", "swappy", "--enable-server=false", "--swap-capacity", "2Gi", "--fail-swap-on=false",
			"--root-dir", filepath.Join(dir, "swappy"), "--pod-logs-dir", filepath.Join(dir, "swappy", "logs")})
		root.SetOut(new(discard))
		root.SetErr(new(discard))
		done <- root.ExecuteContext(kctx)
	}()
	client, err := kubernetes.NewForConfig(c.AdminConfig)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		node, err := client.CoreV1().Nodes().Get(ctx, "swappy", metav1.GetOptions{})
		if err == nil {
			if s := node.Status.NodeInfo.Swap; s == nil || s.Capacity == nil || *s.Capacity != 2<<30 {
				t.Errorf("nodeInfo.swap = %+v, want capacity %d", s, 2<<30)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node swappy not registered: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	kcancel()
	if err := <-done; err != nil {
		t.Errorf("kubelet: %v", err)
	}
}

// TestMeminfoBytes: fields of /proc/meminfo are KiB, returned in bytes;
// a missing field or a malformed value is an error.
func TestMeminfoBytes(t *testing.T) {
	const meminfo = "MemTotal:       16318504 kB\nMemFree:         1234567 kB\nSwapCached:            0 kB\nSwapTotal:       4194300 kB\nSwapFree:        4194300 kB\nBogus:   x kB\n"
	for _, tc := range []struct {
		field   string
		want    int64
		wantErr string
	}{
		{field: "MemTotal", want: 16318504 * 1024},
		{field: "SwapTotal", want: 4194300 * 1024},
		{field: "Swap", wantErr: "Swap not found"},
		{field: "Bogus", wantErr: "invalid syntax"},
	} {
		got, err := meminfoBytes(strings.NewReader(meminfo), tc.field)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("meminfoBytes(%s) error %v, want %q", tc.field, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("meminfoBytes(%s) = %d, %v; want %d", tc.field, got, err, tc.want)
		}
	}
	if _, err := readMeminfo(filepath.Join(t.TempDir(), "missing"), "SwapTotal"); err == nil || !strings.Contains(err.Error(), "reading SwapTotal of") {
		t.Errorf("readMeminfo of a missing file: %v", err)
	}
}

// TestKubeletImageCredentialProviderFlags: `kubeproof kubelet
// --image-credential-provider-config` and
// `--image-credential-provider-bin-dir` register the plugins as upstream's
// kubelet does, refusing with its messages, before contacting the API
// server, a missing directory, an invalid configuration and a plugin
// that is not there.
func TestKubeletImageCredentialProviderFlags(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := unreachableKubeconfig(t)
	const provider = `apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
- name: example-creds
  matchImages: ["*.example.com"]
  defaultCacheDuration: %s
  apiVersion: credentialprovider.kubelet.k8s.io/v1
`
	bin := filepath.Join(dir, "bin")
	good, bad := filepath.Join(dir, "good.yaml"), filepath.Join(dir, "bad.yaml")
	for path, data := range map[string]string{good: fmt.Sprintf(provider, "1m"), bad: fmt.Sprintf(provider, "-1m")} {
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{args: []string{"--image-credential-provider-config", good},
			want: "registering image credential provider plugins: plugin binary directory  did not exist"},
		{args: []string{"--image-credential-provider-bin-dir", bin},
			want: "registering image credential provider plugins: credential provider config path is empty"},
		{args: []string{"--image-credential-provider-config", bad, "--image-credential-provider-bin-dir", bin},
			want: `registering image credential provider plugins: failed to validate credential provider config: providers.defaultCacheDuration: Invalid value: "-1m0s": must be greater than or equal to 0`},
		{args: []string{"--image-credential-provider-config", good, "--image-credential-provider-bin-dir", bin},
			want: "registering image credential provider plugins: plugin binary executable " + filepath.Join(bin, "example-creds") + " did not exist"},
	} {
		err := runKubelet(kubeconfig, tc.args...)
		if err == nil || err.Error() != tc.want {
			t.Errorf("kubelet %q: %v; want %q", tc.args, err, tc.want)
		}
	}
}

// TestKubeletSimFlagsRefusedWithCRI: a flag of the simulated runtime
// (--sim-missing-images, --sim-runtime-handlers, any --sim-*) given with
// --runtime cri stops the kubelet at start with an error naming it,
// before the CRI endpoint is dialled; it was silently ignored.
func TestKubeletSimFlagsRefusedWithCRI(t *testing.T) {
	kubeconfig := unreachableKubeconfig(t)
	endpoint := "unix://" + filepath.Join(t.TempDir(), "no-such.sock")
	for _, tc := range []struct{ flag, value string }{
		{"sim-missing-images", "nosuch/*"},
		{"sim-runtime-handlers", "runc"},
		{"sim-runtime-handlers", ""},
		{"sim-annotation", "sim.kubeproof.io/readiness=fail"},
		{"sim-available", "memory.available=50Mi"},
	} {
		err := runKubelet(kubeconfig, "--runtime", "cri", "--cri-endpoint", endpoint, "--"+tc.flag+"="+tc.value)
		want := "--" + tc.flag + ": a flag of the simulated runtime, only with --runtime sim"
		if err == nil || err.Error() != want {
			t.Errorf("kubelet --runtime cri --%s=%s: %v; want %q", tc.flag, tc.value, err, want)
		}
	}
}

// TestKubeletSeccompDefaultFlag: `kubeproof kubelet` has upstream's
// --seccomp-default, a boolean defaulting to false (containers without a
// seccompProfile run Unconfined); impl/kubelet's TestSeccompDefault checks
// what Config.SeccompDefault, which it sets, does to containers.
func TestKubeletSeccompDefaultFlag(t *testing.T) {
	root := newRootCommand()
	cmd, _, err := root.Find([]string{"kubelet"})
	if err != nil {
		t.Fatal(err)
	}
	f := cmd.Flags().Lookup("seccomp-default")
	if f == nil || f.Value.Type() != "bool" || f.DefValue != "false" {
		t.Fatalf("kubelet --seccomp-default: %+v, want a boolean flag defaulting to false", f)
	}
	if err := cmd.Flags().Parse([]string{"--seccomp-default"}); err != nil || f.Value.String() != "true" {
		t.Fatalf("--seccomp-default parsed %v: %v", f.Value, err)
	}
}
