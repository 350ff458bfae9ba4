package cluster

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestNodeSysctlAdmission: a simulated node of `kubeproof up` admits as
// upstream's kubelet with default flags: a pod setting an unsafe sysctl
// (net.core.somaxconn) ends Failed, reason SysctlForbidden, with
// upstream's message; one setting a safe sysctl runs.
func TestNodeSysctlAdmission(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, cs, stop := startForTest(t, Config{DataDir: t.TempDir(), BindAddress: "127.0.0.1:0", WatchCache: true, UnsafeNoFsync: true, Nodes: 1})
	defer func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	}()
	for name, sysctl := range map[string]string{"unsafe": "net.core.somaxconn", "safe": "net.ipv4.ip_unprivileged_port_start"} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{
			NodeName:        "node-1",
			SecurityContext: &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: sysctl, Value: "1024"}}},
			Containers:      []corev1.Container{{Name: "app", Image: "nginx"}}}}
		if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]corev1.PodPhase{"unsafe": corev1.PodFailed, "safe": corev1.PodRunning}
	for name, phase := range want {
		for {
			p, err := cs.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if p.Status.Phase == phase {
				if name == "unsafe" && (p.Status.Reason != "SysctlForbidden" ||
					p.Status.Message != `Pod was rejected: forbidden sysctl: "net.core.somaxconn" not allowlisted`) {
					t.Errorf("unsafe: %q %q", p.Status.Reason, p.Status.Message)
				}
				break
			}
			if p.Status.Phase != "" && p.Status.Phase != corev1.PodPending {
				t.Fatalf("%s: %s %q %q, want %s", name, p.Status.Phase, p.Status.Reason, p.Status.Message, phase)
			}
			select {
			case <-ctx.Done():
				t.Fatalf("%s: still %s %q, want %s", name, p.Status.Phase, p.Status.Reason, phase)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
}
