package kubelet_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeproof/kubeproof/impl/cluster"
)

// TestNodeWatchesItsPodsObjects: in a `kubeproof up` cluster, a simulated
// kubelet running as system:node:node-1 (Node authorizer) watches each
// ConfigMap and Secret its pod uses by name, and those watches sync — the
// Node authorizer allows list/watch with a metadata.name field selector
// of an object the node's pod references.
func TestNodeWatchesItsPodsObjects(t *testing.T) {
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
	if _, err := admin.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "site"},
		Data: map[string]string{"index": "v1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds"},
		Data: map[string][]byte{"password": []byte("pw")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "app", Image: "nginx",
			VolumeMounts: []corev1.VolumeMount{{Name: "cfg", MountPath: "/etc/site"}},
			Env: []corev1.EnvVar{{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "password"}}}}}},
		Volumes: []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "site"}}}}},
	}}
	if _, err := admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	k := c.Kubelet("node-1")
	if k == nil {
		t.Fatal("no kubelet node-1")
	}
	// site, creds and the projected kube-root-ca.crt of the service
	// account token volume.
	deadline := time.Now().Add(time.Minute)
	for {
		p, err := admin.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
		running, synced := k.ObjectWatches()
		if err == nil && p.Status.Phase == corev1.PodRunning && running == 3 && synced == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod %v %v; %d object watches running, %d synced, want 3 and 3", p.Status.Phase, err, running, synced)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := admin.CoreV1().Pods("default").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
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
