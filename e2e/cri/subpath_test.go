package cri

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/e2e/cri/harness"
)

// TestSubPathBindMounted: a container mounting a subPath of an emptyDir
// sees the directory's contents (written by an init container into the
// whole volume), given to containerd as the kubelet's bind mount at
// <root>/pods/<uid>/volume-subpaths/<volume>/<container>/<index>, as
// upstream's kubelet; once the pod is deleted the bind mount is gone and
// so is the pod directory.
func TestSubPathBindMounted(t *testing.T) {
	ns := newNamespace(t)
	p := podSpec("subpath", "exec sleep 3600")
	p.Spec.TerminationGracePeriodSeconds = ptr(int64(1))
	p.Spec.Volumes = []v1.Volume{{Name: "work", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	p.Spec.InitContainers = []v1.Container{{
		Name: "fill", Image: busybox, Command: []string{"sh", "-c", "mkdir -p /vol/sub && echo from-init > /vol/sub/note && echo top > /vol/top"},
		VolumeMounts: []v1.VolumeMount{{Name: "work", MountPath: "/vol"}},
	}}
	p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "work", MountPath: "/data", SubPath: "sub"}}
	createPod(t, ns, p)
	got := waitPod(t, ns, p.Name, 90*time.Second, "Running", isRunning)
	var n *harness.Node
	for _, cand := range env.Nodes {
		if cand.Name == got.Spec.NodeName {
			n = cand
		}
	}
	if n == nil {
		t.Fatalf("pod on node %q, not one of the suite's nodes", got.Spec.NodeName)
	}
	podDir := filepath.Join(n.Dir, "kubelet", "pods", string(got.UID))
	target := filepath.Join(podDir, "volume-subpaths", "work", "main", "0")

	for cmd, want := range map[string]string{
		"cat /data/note":                    "from-init\n",
		"test -e /data/top || echo no-top":  "no-top\n",
		"echo more > /data/more; echo done": "done\n",
	} {
		if out, err := kubectl(t, "exec", "-n", ns, p.Name, "-c", "main", "--", "sh", "-c", cmd); err != nil || out != want {
			t.Errorf("%s in the container: %q %v, want %q", cmd, out, err, want)
		}
	}
	if !hostMounted(t, target) {
		t.Errorf("%s is not a mount point on the host: the subPath was not bind-mounted", target)
	}
	if b, err := os.ReadFile(filepath.Join(n.Dir, "kubelet", "pods", string(got.UID), "volumes", "kubernetes.io~empty-dir", "work", "sub", "more")); err != nil || string(b) != "more\n" {
		t.Errorf("what the container wrote is not in the volume's subdirectory: %q %v", b, err)
	}

	if err := env.Client.CoreV1().Pods(ns).Delete(context.Background(), p.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitNoPods(t, ns, 60*time.Second)
	if !waitUntil(60*time.Second, func() bool {
		_, err := os.Stat(podDir)
		return os.IsNotExist(err) && len(hostMountsUnder(t, podDir)) == 0
	}) {
		_, err := os.Stat(podDir)
		t.Errorf("after the pod was deleted: pod directory %v, mounts under it %v; want both gone", err, hostMountsUnder(t, podDir))
	}
}

// hostMountsUnder lists the mount points at or under dir in this
// process's mount namespace (the kubelet's and containerd's).
func hostMountsUnder(t *testing.T, dir string) []string {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && (fields[4] == dir || strings.HasPrefix(fields[4], dir+"/")) {
			out = append(out, fields[4])
		}
	}
	return out
}

func hostMounted(t *testing.T, path string) bool {
	t.Helper()
	for _, m := range hostMountsUnder(t, path) {
		if m == path {
			return true
		}
	}
	return false
}
