package cluster

import (
	"io/fs"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSimulatedNodesKeepTheirOwnPullRecords: each simulated kubelet keeps
// its image pull records in its own memory, as each real kubelet keeps
// them in its own root directory: none are written under the root
// directory the simulated nodes share (where every node read the others'
// records at start and one node's image GC removed another's files).
func TestSimulatedNodesKeepTheirOwnPullRecords(t *testing.T) {
	c, cs, _ := startForTest(t, Config{DataDir: t.TempDir(), BindAddress: "127.0.0.1:0", WatchCache: true, UnsafeNoFsync: true, Nodes: 2})
	ctx := t.Context()
	for _, node := range []string{"node-1", "node-2"} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "on-" + node},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}
		if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(time.Minute)
	for _, node := range []string{"node-1", "node-2"} {
		for {
			p, err := cs.CoreV1().Pods("default").Get(ctx, "on-"+node, metav1.GetOptions{})
			if err == nil && p.Status.Phase == corev1.PodRunning {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("pod on %s not Running: %v %+v", node, err, p)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	root, _ := c.KubeletRootDir()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == "image_manager" {
			t.Errorf("pull records written to the shared root directory: %s", path)
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
