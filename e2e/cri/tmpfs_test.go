package cri

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/e2e/cri/harness"
)

// TestMemoryVolumesAreTmpfs: on containerd, a container sees its emptyDir
// of medium Memory and its secret volume as tmpfs mounts (/proc/mounts),
// sized as upstream's kubelet sizes them: the emptyDir's sizeLimit (8Mi:
// a 16 MiB write fails for want of space), the secret's the pod's memory
// limit (64Mi); a disk emptyDir is not a tmpfs. Once the pod has
// terminated (restartPolicy Never, still in the API), the kubelet has
// unmounted them and removed the volume directories; once it is deleted
// its directory goes.
func TestMemoryVolumesAreTmpfs(t *testing.T) {
	ns := newNamespace(t)
	if _, err := env.Client.CoreV1().Secrets(ns).Create(context.Background(), &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "creds"}, Data: map[string][]byte{"password": []byte("pw")},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	limit := resource.MustParse("8Mi")
	p := podSpec("tmpfs", "while [ ! -e /cache/stop ]; do sleep 1; done")
	p.Spec.RestartPolicy = v1.RestartPolicyNever
	p.Spec.TerminationGracePeriodSeconds = ptr(int64(1))
	p.Spec.Volumes = []v1.Volume{
		{Name: "cache", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory, SizeLimit: &limit}}},
		{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		{Name: "creds", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "creds"}}},
	}
	p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{
		{Name: "cache", MountPath: "/cache"}, {Name: "scratch", MountPath: "/scratch"}, {Name: "creds", MountPath: "/creds"},
	}
	p.Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")}
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

	mounts, err := kubectl(t, "exec", "-n", ns, p.Name, "-c", "main", "--", "cat", "/proc/mounts")
	if err != nil {
		t.Fatalf("reading /proc/mounts in the container: %v", err)
	}
	mountOf := func(path string) []string {
		for line := range strings.SplitSeq(mounts, "\n") {
			if f := strings.Fields(line); len(f) > 3 && f[1] == path {
				return f
			}
		}
		return nil
	}
	for path, size := range map[string]string{"/cache": "size=8192k", "/creds": "size=65536k"} {
		f := mountOf(path)
		if f == nil || f[2] != "tmpfs" || !strings.Contains(","+f[3]+",", ","+size+",") {
			t.Errorf("%s in the container: %v, want a tmpfs with %s", path, f, size)
		}
	}
	if f := mountOf("/scratch"); f == nil || f[2] == "tmpfs" {
		t.Errorf("/scratch in the container: %v, want a mount of the kubelet's disk", f)
	}
	if out, err := kubectl(t, "exec", "-n", ns, p.Name, "-c", "main", "--", "cat", "/creds/password"); err != nil || out != "pw" {
		t.Errorf("/creds/password = %q %v, want pw", out, err)
	}
	if out, err := kubectl(t, "exec", "-n", ns, p.Name, "-c", "main", "--", "sh", "-c",
		"dd if=/dev/zero of=/cache/big bs=1048576 count=16 2>&1; rm -f /cache/big"); err != nil || !strings.Contains(out, "No space left on device") {
		t.Errorf("writing 16 MiB into the 8Mi memory emptyDir: %q %v, want No space left on device", out, err)
	}
	for _, v := range []string{"kubernetes.io~empty-dir/cache", "kubernetes.io~secret/creds"} {
		if !hostMounted(t, filepath.Join(podDir, "volumes", v)) {
			t.Errorf("%s is not a mount point on the host", v)
		}
	}

	if _, err := kubectl(t, "exec", "-n", ns, p.Name, "-c", "main", "--", "touch", "/cache/stop"); err != nil {
		t.Fatal(err)
	}
	waitPod(t, ns, p.Name, 60*time.Second, "Succeeded", phaseIs(v1.PodSucceeded))
	volumes := []string{"kubernetes.io~empty-dir/cache", "kubernetes.io~empty-dir/scratch", "kubernetes.io~secret/creds"}
	left := func() []string {
		out := hostMountsUnder(t, podDir)
		for _, v := range volumes {
			if _, err := os.Lstat(filepath.Join(podDir, "volumes", v)); !os.IsNotExist(err) {
				out = append(out, v)
			}
		}
		return out
	}
	if !waitUntil(30*time.Second, func() bool { return len(left()) == 0 }) {
		t.Errorf("mounts and volumes left of the terminated pod: %v", left())
	}
	if cur, err := env.Client.CoreV1().Pods(ns).Get(context.Background(), p.Name, metav1.GetOptions{}); err != nil || cur.Status.Phase != v1.PodSucceeded {
		t.Errorf("pod after its volumes were torn down: %v, want still in the API", err)
	}

	if err := env.Client.CoreV1().Pods(ns).Delete(context.Background(), p.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitNoPods(t, ns, 60*time.Second)
	if !waitUntil(60*time.Second, func() bool {
		_, err := os.Stat(podDir)
		return os.IsNotExist(err)
	}) {
		t.Errorf("pod directory left after the pod was deleted")
	}
}
