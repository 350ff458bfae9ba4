package kubelet_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeproof/kubeproof/impl/cluster"
)

// TestNodeStatusPatchedThroughTheAPI: in a `kubeproof up` cluster, a node
// whose conditions were turned Unknown (as the node lifecycle controller
// does to a node it stopped hearing from) is corrected by its kubelet at
// its next status update, and the kubelet's status writes reach the API
// server as strategic merge patches of nodes/NAME/status (with
// $setElementOrder/conditions) that it accepts, never as updates.
func TestNodeStatusPatchedThroughTheAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Request
  resources: [{group: "", resources: ["nodes/status"]}]
- level: None
`), 0o600); err != nil {
		t.Fatal(err)
	}
	auditLog := filepath.Join(dir, "audit.log")
	c, err := cluster.Start(ctx, cluster.Config{DataDir: filepath.Join(dir, "cluster"), BindAddress: "127.0.0.1:0", WatchCache: true, UnsafeNoFsync: true,
		Nodes: 1, Auth: cluster.AuthOptions{AuditPolicyFile: policy, AuditLogPath: auditLog}})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = c.Stop()
		}
	}()
	admin, err := kubernetes.NewForConfig(c.AdminConfig)
	if err != nil {
		t.Fatal(err)
	}
	nodes := admin.CoreV1().Nodes()
	// waitReady polls until the only node reports Ready=True.
	waitReady := func(what string) *corev1.Node {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for {
			l, err := nodes.List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(l.Items) == 1 && nodeReady(&l.Items[0]) == corev1.ConditionTrue {
				return &l.Items[0]
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: no Ready node after a minute: %+v", what, l.Items)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	n := waitReady("registered")
	for i := range n.Status.Conditions {
		n.Status.Conditions[i].Status = corev1.ConditionUnknown
		n.Status.Conditions[i].Reason = "NodeStatusUnknown"
		n.Status.Conditions[i].Message = "Kubelet stopped posting node status."
	}
	if _, err := nodes.UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitReady("after the conditions were turned Unknown")
	stopped = true
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}

	data, err := os.ReadFile(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	user := cluster.NodeUserPrefix + n.Name
	var patches, corrections int
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var ev struct {
			Verb           string
			User           struct{ Username string }
			ObjectRef      *struct{ Resource, Subresource, Name string }
			ResponseStatus *struct{ Code int }
			RequestObject  map[string]any
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		if ev.User.Username != user || ev.ObjectRef == nil || ev.ObjectRef.Subresource != "status" {
			continue
		}
		if ev.Verb != "patch" {
			t.Errorf("%s wrote its status with %s, want patch", user, ev.Verb)
			continue
		}
		if ev.ResponseStatus == nil || ev.ResponseStatus.Code != 200 {
			t.Errorf("status patch answered %+v: %s", ev.ResponseStatus, line)
			continue
		}
		patches++
		status, _ := ev.RequestObject["status"].(map[string]any)
		if _, ok := status["$setElementOrder/conditions"]; ok && strings.Contains(line, `"reason":"KubeletReady"`) {
			corrections++
		}
	}
	if patches == 0 || corrections == 0 {
		t.Errorf("%d status patches by %s, %d of them correcting the conditions; audit log:\n%s", patches, user, corrections, data)
	}
}

func nodeReady(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}
