package kubelet

import (
	"os"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestAtomicWriterLeavesSubPathDirectory: a directory the kubelet made in
// a configMap volume for a missing subPath is left as it is when the
// ConfigMap later gains a key of that name, as upstream's writer leaves a
// user-visible path that is not a symlink (its createUserVisibleFiles
// makes a link only where readlink finds nothing): the write succeeds, the
// key is in the data directory, and the directory the container mounted
// stays. Only a volume's first write takes over directories (one written
// in place by an older kubeproof: TestAtomicWriterReplacesInPlaceFiles).
func TestAtomicWriterLeavesSubPathDirectory(t *testing.T) {
	h := configMapHarness(t, map[string]string{"a": "1"})
	p := h.create(h.pod("subpathdir", func(p *v1.Pod) {
		p.Spec.Volumes = []v1.Volume{{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
			LocalObjectReference: v1.LocalObjectReference{Name: "site"}}}}}
		p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "cfg", MountPath: "/etc/absent", SubPath: "absent"}}
	}))
	if got := h.sync(p); got.Status.Phase != v1.PodRunning {
		t.Fatalf("phase %s: %+v", got.Status.Phase, cstatus(got, "app"))
	}
	dir := h.k.volumeDir(p.UID, "kubernetes.io~configmap", "cfg")
	if fi, err := os.Lstat(filepath.Join(dir, "absent")); err != nil || !fi.IsDir() {
		t.Fatalf("subPath directory not made: %v %v", fi, err)
	}
	setSite(t, h, map[string]string{"a": "1", "absent": "now"})
	if err := h.k.setUpVolumes(h.ctx, &podRecord{}, h.get(p), true); err != nil {
		t.Fatal(err)
	}
	ts := dataDirOf(t, dir)
	if got := readString(t, filepath.Join(dir, ts, "absent")); got != "now" {
		t.Fatalf("the new key in the data directory: %q", got)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "absent")); err != nil || !fi.IsDir() {
		t.Fatalf("the subPath directory after a key of its name was added: %v %v, want the directory left", fi, err)
	}
	if got := volumeEntries(t, dir); !equalMaps(got, map[string]string{"..data": ts, ts: "", "a": "..data/a", "absent": ""}) {
		t.Fatalf("entries %v", got)
	}
}
