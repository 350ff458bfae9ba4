package kubelet_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/kubeproof/kubeproof/impl/cluster"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

// TestNodeRunsPodWithItsRuntimeClassHandler: in a `kubeproof up` cluster,
// a simulated kubelet running as system:node:node-1 (Node authorizer)
// reads a pod's RuntimeClass through a watch of the class by name, which
// syncs, and runs the pod's sandbox with the class's handler; the watch
// ends with the pod.
func TestNodeRunsPodWithItsRuntimeClassHandler(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := cluster.Start(ctx, cluster.Config{DataDir: filepath.Join(t.TempDir(), "cluster"), BindAddress: "127.0.0.1:0", WatchCache: true, UnsafeNoFsync: true,
		ControllerManager: true, Scheduler: true, Nodes: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Stop() }()
	admin, err := kubernetes.NewForConfig(c.AdminConfig)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.NodeV1().RuntimeClasses().Create(ctx, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "gvisor"}, Handler: "runsc"},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "sandboxed", Namespace: "default"}, Spec: corev1.PodSpec{
		RuntimeClassName: ptr.To("gvisor"),
		Containers:       []corev1.Container{{Name: "app", Image: "nginx"}},
	}}
	created, err := admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	k := c.Kubelet("node-1")
	if k == nil {
		t.Fatal("no kubelet node-1")
	}
	// The RuntimeClass and the projected kube-root-ca.crt of the service
	// account token volume.
	deadline := time.Now().Add(time.Minute)
	for {
		p, err := admin.CoreV1().Pods("default").Get(ctx, "sandboxed", metav1.GetOptions{})
		running, synced := k.ObjectWatches()
		if err == nil && p.Status.Phase == corev1.PodRunning && running == 2 && synced == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod %v %v; %d object watches running, %d synced, want 2 and 2", p.Status.Phase, err, running, synced)
		}
		time.Sleep(20 * time.Millisecond)
	}
	sandboxes, err := k.Runtime().ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{runtime.LabelPodUID: string(created.UID)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(sandboxes) != 1 || sandboxes[0].RuntimeHandler != "runsc" {
		t.Fatalf("sandboxes of the pod: %v", sandboxes)
	}
	if err := admin.CoreV1().Pods("default").Delete(ctx, "sandboxed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		running, _ := k.ObjectWatches()
		if running == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d object watches still running after the pod went", running)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
