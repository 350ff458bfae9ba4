package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// upCredentialPlugin is a credential provider executable: it appends
// each request to $CALLS and answers credentials for the registry.
const upCredentialPlugin = `#!/bin/sh
{ cat; echo; } >> "$CALLS"
printf '{"apiVersion":"credentialprovider.kubelet.k8s.io/v1","kind":"CredentialProviderResponse","cacheKeyType":"Registry","cacheDuration":"1h","auth":{"*.example.com":{"username":"robot","password":"right"}}}'
`

// TestUpKubeletFlags: `kubeproof up` takes `kubeproof kubelet`'s
// --image-credential-provider-config and --image-credential-provider-bin-dir
// (every simulated node registers the plugins, as a kubelet does: the
// node asks the plugin for the credentials of an image it matches before
// pulling it, and the simulated runtime pulls with them) and its swap
// flags --swap-capacity (published as status.nodeInfo.swap.capacity),
// --fail-swap-on (a node with swap refused unless false, with upstream's
// message), --memory-swap-behavior (LimitedSwap refused on the
// simulated nodes' cgroup v1, as upstream), --cpu-cfs-quota (its effect:
// impl/cluster TestNodeCPUCFSQuota) and --seccomp-default (its effect:
// impl/cluster TestNodeSeccompDefault); a credential provider
// configuration the kubelet refuses is refused before anything starts.
func TestUpKubeletFlags(t *testing.T) {
	for _, name := range []string{"up", "kubelet"} {
		cmd, _, err := newRootCommand().Find([]string{name})
		if err != nil {
			t.Fatal(err)
		}
		for _, flag := range []string{"image-credential-provider-config", "image-credential-provider-bin-dir", "swap-capacity", "fail-swap-on", "memory-swap-behavior", "cpu-cfs-quota", "seccomp-default"} {
			if cmd.Flags().Lookup(flag) == nil {
				t.Errorf("kubeproof %s has no --%s", name, flag)
			}
		}
	}
	dir := t.TempDir()
	bin, calls, config := filepath.Join(dir, "bin"), filepath.Join(dir, "calls"), filepath.Join(dir, "config.yaml")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "example-creds"), []byte(upCredentialPlugin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(config, []byte(`apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
- name: example-creds
  matchImages: ["*.example.com"]
  defaultCacheDuration: 1m
  apiVersion: credentialprovider.kubelet.k8s.io/v1
  env:
  - {name: CALLS, value: `+calls+`}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	refused := func(want string, args ...string) {
		t.Helper()
		root := newRootCommand()
		root.SetArgs(append([]string{"up", "--data-dir", t.TempDir(), "--port", "0", "--nodes", "1", "--no-scheduler", "--no-controller-manager"}, args...))
		root.SetOut(io.Discard)
		root.SetErr(io.Discard)
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // ends an up that started
		defer cancel()
		if err := root.ExecuteContext(ctx); err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("up %q: %v, want an error with %q", args, err, want)
		}
	}
	refused("registering image credential provider plugins: plugin binary directory "+filepath.Join(dir, "nosuch")+" did not exist",
		"--image-credential-provider-config", config, "--image-credential-provider-bin-dir", filepath.Join(dir, "nosuch"))
	if testing.Short() {
		t.Skip("runs kubeproof up")
	}
	refused("running with swap on is not supported, please disable swap or set --fail-swap-on flag to false", "--swap-capacity", "1Gi")
	refused("swap feature is enabled and LimitedSwap but it is only supported with cgroupv2", "--memory-swap-behavior", "LimitedSwap")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs := runUp(t, ctx, "--nodes", "1", "--no-scheduler", "--no-controller-manager",
		"--swap-capacity", "1Gi", "--fail-swap-on=false", "--memory-swap-behavior", "NoSwap",
		"--image-credential-provider-config", config, "--image-credential-provider-bin-dir", bin)
	waitFor(t, time.Minute, "node-1 registered with its swap", func() bool {
		n, err := cs.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
		if err != nil || n.Status.NodeInfo.Swap == nil || n.Status.NodeInfo.Swap.Capacity == nil {
			return false
		}
		if got, want := *n.Status.NodeInfo.Swap.Capacity, int64(1<<30); got != want {
			t.Fatalf("node-1 swap capacity %d, want %d", got, want)
		}
		return true
	})
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "private", Namespace: "default"}, Spec: v1.PodSpec{
		NodeName: "node-1", Containers: []v1.Container{{Name: "app", Image: "registry.example.com/team/app:1.0"}}}}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the pod running", func() bool {
		p, err := cs.CoreV1().Pods("default").Get(ctx, "private", metav1.GetOptions{})
		return err == nil && p.Status.Phase == v1.PodRunning
	})
	b, err := os.ReadFile(calls)
	if want := `"image":"registry.example.com/team/app"`; err != nil || !strings.Contains(string(b), want) {
		t.Fatalf("plugin asked %q (%v), want a request with %s", b, err, want)
	}
}
