package main

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestUpAllowedUnsafeSysctls: `kubeproof up --allowed-unsafe-sysctls`
// is `kubeproof kubelet`'s flag for every simulated node: a pattern the
// kubelet refuses stops up before anything serves, with the kubelet's
// message, and a pod setting an allowed unsafe sysctl runs on a node.
func TestUpAllowedUnsafeSysctls(t *testing.T) {
	up, _, err := newRootCommand().Find([]string{"up"})
	if err != nil {
		t.Fatal(err)
	}
	kl, _, err := newRootCommand().Find([]string{"kubelet"})
	if err != nil {
		t.Fatal(err)
	}
	f := up.Flags().Lookup("allowed-unsafe-sysctls")
	if f == nil {
		t.Fatal("kubeproof up has no --allowed-unsafe-sysctls")
	}
	if want := kl.Flags().Lookup("allowed-unsafe-sysctls").Usage; f.Usage != want {
		t.Errorf("up --allowed-unsafe-sysctls help %q, want kubelet's %q", f.Usage, want)
	}
	if testing.Short() {
		t.Skip("runs kubeproof up")
	}
	root := newRootCommand()
	root.SetArgs([]string{"up", "--data-dir", t.TempDir(), "--port", "0", "--nodes", "1", "--no-scheduler", "--no-controller-manager",
		"--allowed-unsafe-sysctls", "net.*,vm.*"})
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := root.ExecuteContext(ctx); err == nil || !strings.Contains(err.Error(), `the sysctls "vm." are not known to be namespaced`) {
		t.Fatalf("up --allowed-unsafe-sysctls net.*,vm.*: %v, want the kubelet's refusal", err)
	}

	ctx2, cancel2 := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel2()
	cs := runUp(t, ctx2, "--nodes", "1", "--no-scheduler", "--no-controller-manager", "--allowed-unsafe-sysctls", "net.core.somaxconn")
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "unsafe", Namespace: "default"}, Spec: v1.PodSpec{
		NodeName:        "node-1",
		SecurityContext: &v1.PodSecurityContext{Sysctls: []v1.Sysctl{{Name: "net.core.somaxconn", Value: "1024"}}},
		Containers:      []v1.Container{{Name: "app", Image: "registry.example.com/app:1.0"}}}}
	if _, err := cs.CoreV1().Pods("default").Create(ctx2, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the pod running", func() bool {
		p, err := cs.CoreV1().Pods("default").Get(ctx2, "unsafe", metav1.GetOptions{})
		if err == nil && p.Status.Phase == v1.PodFailed {
			t.Fatalf("pod failed: %s: %s", p.Status.Reason, p.Status.Message)
		}
		return err == nil && p.Status.Phase == v1.PodRunning
	})
}
