package kubelet

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
)

func TestVolumesAreMaterializedAndMounted(t *testing.T) {
	root := t.TempDir()
	events := record.NewFakeRecorder(100)
	h := newHarness(t, func(c *Config) { c.RootDir, c.Recorder = root, events })
	p := h.create(h.pod("vols", func(p *v1.Pod) {
		p.Labels = map[string]string{"tier": "web"}
		p.Spec.Volumes = []v1.Volume{
			{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "site"},
				Items: []v1.KeyToPath{{Key: "index", Path: "html/index.html"}}}}},
			{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "creds"}}},
			{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
			{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
				{Path: "labels-tier", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels['tier']"}}}}}},
		}
		p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{
			{Name: "cfg", MountPath: "/usr/share/nginx"}, {Name: "sec", MountPath: "/etc/creds"},
			{Name: "scratch", MountPath: "/tmp/scratch"}, {Name: "info", MountPath: "/etc/podinfo"},
		}
	}))
	h.k.HandlePod(h.get(p))
	// Every volume is tried, each failing one reported on its own (one
	// FailedMount each), as upstream's volume manager mounts them.
	cfgErr, secErr := `MountVolume.SetUp failed for volume "cfg" : configmap "site" not found`, `MountVolume.SetUp failed for volume "sec" : secret "creds" not found`
	if _, err := h.k.syncPod(h.ctx, p.UID); err == nil || err.Error() != cfgErr+"\n"+secErr {
		t.Fatalf("sync error = %v", err)
	}
	if got := drain(events); !slices.Equal(got, []string{"Warning FailedMount " + cfgErr, "Warning FailedMount " + secErr}) {
		t.Fatalf("events %q, want one FailedMount per failing volume", got)
	}
	if b, err := os.ReadFile(filepath.Join(h.k.volumeDir(p.UID, "kubernetes.io~downward-api", "info"), "labels-tier")); err != nil || string(b) != "web" {
		t.Fatalf("the downwardAPI volume after two others failed: %q, %v", b, err)
	}
	got := h.get(p)
	cs := cstatus(got, "app")
	if cs.State.Waiting == nil || cs.State.Waiting.Reason != "ContainerCreating" || got.Status.Phase != v1.PodPending {
		t.Fatalf("without its ConfigMap the pod should wait in ContainerCreating: %+v", cs.State)
	}
	if sb, _ := h.rt.Counts(); sb != 0 {
		t.Fatalf("sandbox created before volumes could be set up")
	}
	ctx := h.ctx
	if _, err := h.client.CoreV1().ConfigMaps("default").Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "site", Namespace: "default"},
		Data: map[string]string{"index": "<h1>hi</h1>"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.client.CoreV1().Secrets("default").Create(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "default"},
		Data: map[string][]byte{"password": []byte("pw")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got = h.sync(p)
	if got.Status.Phase != v1.PodRunning {
		t.Fatalf("phase %s: %+v", got.Status.Phase, cstatus(got, "app"))
	}
	id := strings.TrimPrefix(cstatus(got, "app").ContainerID, "sim://")
	for path, want := range map[string]string{
		"/usr/share/nginx/html/index.html": "<h1>hi</h1>", "/etc/creds/password": "pw", "/etc/podinfo/labels-tier": "web",
	} {
		out, _, code, err := h.rt.ExecSync(ctx, id, []string{"cat", path}, time.Second)
		if err != nil || code != 0 || string(out) != want {
			t.Errorf("cat %s = %q %d %v, want %q", path, out, code, err, want)
		}
	}
	if _, _, code, _ := h.rt.ExecSync(ctx, id, []string{"test", "-e", "/tmp/scratch"}, time.Second); code != 0 {
		t.Errorf("emptyDir not mounted")
	}
	// Once the pod is gone, its directory goes too.
	if err := h.client.CoreV1().Pods("default").Delete(ctx, "vols", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.sync(p)
	if _, err := os.Stat(h.k.podDir(p.UID)); !os.IsNotExist(err) {
		t.Fatalf("pod directory left behind: %v", err)
	}
}

func TestFileHolds(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		file, want string
		holds      bool
	}{
		{"same", "token-abc", true},
		{"same-size", "token-abd", false},
		{"longer", "token-abcd", false},
		{"shorter", "token-ab", false},
		{"empty", "", true},
	} {
		p := write(tc.file, map[string]string{"same": "token-abc", "same-size": "token-abc", "longer": "token-abc", "shorter": "token-abc", "empty": ""}[tc.file])
		if got := fileHolds(p, []byte(tc.want)); got != tc.holds {
			t.Errorf("%s: fileHolds(%q) = %v, want %v", tc.file, tc.want, got, tc.holds)
		}
	}
	if fileHolds(filepath.Join(dir, "missing"), nil) {
		t.Error("a missing file holds nothing, not an empty content")
	}
	if fileHolds(dir, nil) || fileHolds(dir, []byte("x")) {
		t.Error("a directory holds no content")
	}
	big := strings.Repeat("0123456789", 10_000)
	if p := write("big", big); !fileHolds(p, []byte(big)) || fileHolds(p, []byte(big[1:])) || fileHolds(p, []byte(big+"x")) {
		t.Error("a 100 kB file compares wrongly")
	}
}

// TestAPIDataVolumesMountedReadOnly: configMap, secret, downwardAPI and
// projected volumes are mounted read-only whatever the volumeMount says,
// as upstream's makeMounts mounts a volume whose plugin's attributes say
// ReadOnly (each of the four); emptyDir and hostPath as the mount says.
func TestAPIDataVolumesMountedReadOnly(t *testing.T) {
	h := newHarness(t, nil)
	info := []v1.DownwardAPIVolumeFile{{Path: "name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}
	p := h.pod("ro", func(p *v1.Pod) {
		p.Spec.Volumes = []v1.Volume{
			{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "site"}}}},
			{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "creds"}}},
			{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: info}}},
			{Name: "proj", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{{DownwardAPI: &v1.DownwardAPIProjection{Items: info}}}}}},
			{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
			{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: t.TempDir()}}},
		}
		for _, v := range p.Spec.Volumes {
			p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, v1.VolumeMount{Name: v.Name, MountPath: "/" + v.Name})
		}
	})
	mounts, err := h.k.mounts(p, &p.Spec.Containers[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"/cfg": true, "/sec": true, "/info": true, "/proj": true, "/scratch": false, "/host": false}
	for _, m := range mounts {
		if m.Readonly != want[m.ContainerPath] {
			t.Errorf("%s: read-only %v, want %v", m.ContainerPath, m.Readonly, want[m.ContainerPath])
		}
	}
}
