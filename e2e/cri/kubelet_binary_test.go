package cri

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubeproof/kubeproof/e2e/cri/harness"
	"github.com/kubeproof/kubeproof/e2e/cri/images"
)

// TestKubeletBinary: the `kubeproof kubelet --runtime cri
// --container-runtime-endpoint ...` command, run as a process against its
// own containerd (in its own network namespace), registers its node and
// runs a pod the scheduler sends there: Ready through its readiness probe,
// its logs and exec served by that process's kubelet API, its IP released
// when it is deleted. Started with --seccomp-default, it runs a container
// whose pod sets no seccompProfile under containerd's default profile, a
// seccomp filter (/proc/self/status Seccomp: 2), and one whose pod says
// Unconfined with none (0).
func TestKubeletBinary(t *testing.T) {
	ctx := ctxFor(t, 5*time.Minute)
	bin, err := env.BuildKubeproof()
	if err != nil {
		t.Fatal(err)
	}
	n, err := env.AddNode(ctx, harness.NodeOptions{OwnNetNS: true, KubeletBinary: bin, SeccompDefault: true})
	t.Cleanup(func() {
		if n != nil {
			if err := env.RemoveNode(context.Background(), n); err != nil {
				t.Errorf("removing the node: %v", err)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	ns := newNamespace(t)
	p := podSpec("on-binary", "echo hello from the kubelet binary; exec httpd -f -p 80 -h /www")
	p.Spec.TerminationGracePeriodSeconds = ptr(int64(2))
	p.Spec.NodeSelector = map[string]string{v1.LabelHostname: n.Name}
	p.Spec.Containers[0].ReadinessProbe = &v1.Probe{
		ProbeHandler:  v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(80)}},
		PeriodSeconds: 1,
	}
	createPod(t, ns, p)
	got := waitPod(t, ns, p.Name, 60*time.Second, "Running and Ready", isRunningReady)
	if got.Spec.NodeName != n.Name || !inCIDR(got.Status.PodIP, n.PodCIDR) {
		t.Fatalf("pod on %q with IP %s, want node %s and an IP in %s", got.Spec.NodeName, got.Status.PodIP, n.Name, n.PodCIDR)
	}
	if out := mustKubectl(t, "logs", "-n", ns, p.Name); !strings.Contains(out, "hello from the kubelet binary") {
		t.Fatalf("kubectl logs: %q", out)
	}
	if out := mustKubectl(t, "exec", "-n", ns, p.Name, "--", "timeout", "3", "wget", "-qO-", "http://127.0.0.1/"); out != images.IndexHTML {
		t.Fatalf("kubectl exec: %q", out)
	}
	for _, tc := range []struct {
		name    string
		profile *v1.SeccompProfile
		want    string
	}{
		{"seccomp-default", nil, "Seccomp:\t2\n"},
		{"seccomp-unconfined", &v1.SeccompProfile{Type: v1.SeccompProfileTypeUnconfined}, "Seccomp:\t0\n"},
	} {
		sp := podSpec(tc.name, "grep '^Seccomp:' /proc/self/status")
		sp.Spec.NodeSelector = map[string]string{v1.LabelHostname: n.Name}
		if tc.profile != nil {
			sp.Spec.SecurityContext = &v1.PodSecurityContext{SeccompProfile: tc.profile}
		}
		done, logs := runToCompletion(t, ns, sp)
		if done.Status.Phase != v1.PodSucceeded || logs != tc.want {
			t.Errorf("pod %s: phase %s, printed %q, want %q", tc.name, done.Status.Phase, logs, tc.want)
		}
		if err := env.Client.CoreV1().Pods(ns).Delete(ctx, sp.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := env.Client.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitNoPods(t, ns, 60*time.Second)
	if !waitUntil(30*time.Second, func() bool {
		ips, _ := n.AllocatedIPs()
		return !slices.Contains(ips, got.Status.PodIP)
	}) {
		t.Fatalf("IP %s still held after the pod was deleted", got.Status.PodIP)
	}
}
