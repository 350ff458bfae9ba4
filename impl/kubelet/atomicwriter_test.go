package kubelet

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// tsDirName is the name of a data directory, as upstream's atomic writer
// makes them: ..<UTC time>.<random>.
var tsDirName = regexp.MustCompile(`^\.\.\d{4}_\d{2}_\d{2}_\d{2}_\d{2}_\d{2}\.\d+$`)

// configMapHarness is a harness whose kubelet keeps volumes under a temp
// directory, with the ConfigMap site holding data.
func configMapHarness(t *testing.T, data map[string]string) *harness {
	t.Helper()
	root := t.TempDir()
	h := newHarness(t, func(c *Config) { c.RootDir = root })
	if _, err := h.client.CoreV1().ConfigMaps("default").Create(h.ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "site", Namespace: "default"},
		Data: data}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return h
}

// setSite replaces the ConfigMap site's data.
func setSite(t *testing.T, h *harness, data map[string]string) {
	t.Helper()
	cm, err := h.client.CoreV1().ConfigMaps("default").Get(h.ctx, "site", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data = data
	if _, err := h.client.CoreV1().ConfigMaps("default").Update(h.ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// volumeEntries lists dir's entries: name -> symlink target, or "" for a
// file or directory.
func volumeEntries(t *testing.T, dir string) map[string]string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range ents {
		out[e.Name()] = ""
		if e.Type()&os.ModeSymlink != 0 {
			target, err := os.Readlink(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			out[e.Name()] = target
		}
	}
	return out
}

// dataDirOf checks the layout of an atomic-writer volume: ..data a
// symlink to one timestamped data directory, mode 0755, and no other
// hidden entries; it returns the data directory's name.
func dataDirOf(t *testing.T, dir string) string {
	t.Helper()
	ents := volumeEntries(t, dir)
	ts, ok := ents["..data"]
	if !ok || ts == "" {
		t.Fatalf("%s: no ..data symlink: %v", dir, ents)
	}
	if !tsDirName.MatchString(ts) {
		t.Fatalf("..data -> %q, want a timestamped directory", ts)
	}
	for name, target := range ents {
		if strings.HasPrefix(name, "..") && name != "..data" && name != ts {
			t.Errorf("%s: stray hidden entry %s (-> %q)", dir, name, target)
		}
	}
	if _, ok := ents[ts]; !ok {
		t.Fatalf("..data -> %s, which is not in %s: %v", ts, dir, ents)
	}
	if _, _, perm := statOf(t, filepath.Join(dir, ts)); perm != 0o755 {
		t.Errorf("data directory mode %#o, want 0755", perm)
	}
	return ts
}

func readString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestAtomicWriterLayoutAndUpdates: a configMap volume is written as
// upstream's atomic writer: the files in a hidden timestamped directory,
// ..data a symlink to it, each top-level path a symlink into ..data. An
// update (a key changed, one removed, one added) writes a new directory
// and swaps ..data; the old directory and the removed key's link go. A
// refresh with nothing changed writes nothing.
func TestAtomicWriterLayoutAndUpdates(t *testing.T) {
	h := configMapHarness(t, map[string]string{"a": "1", "b": "2", "index": "<h1>hi</h1>"})
	p := h.create(h.pod("atomic", func(p *v1.Pod) {
		p.Spec.Volumes = []v1.Volume{{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
			LocalObjectReference: v1.LocalObjectReference{Name: "site"}}}}}
		p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "cfg", MountPath: "/etc/cfg"}}
	}))
	if got := h.sync(p); got.Status.Phase != v1.PodRunning {
		t.Fatalf("phase %s: %+v", got.Status.Phase, cstatus(got, "app"))
	}
	dir := h.k.volumeDir(p.UID, "kubernetes.io~configmap", "cfg")
	ts1 := dataDirOf(t, dir)
	want := map[string]string{"..data": ts1, ts1: "", "a": "..data/a", "b": "..data/b", "index": "..data/index"}
	if got := volumeEntries(t, dir); !equalMaps(got, want) {
		t.Fatalf("volume entries %v, want %v", got, want)
	}
	for name, content := range map[string]string{"a": "1", "b": "2", "index": "<h1>hi</h1>"} {
		if got := readString(t, filepath.Join(dir, name)); got != content {
			t.Errorf("%s = %q, want %q", name, got, content)
		}
		if _, _, perm := statOf(t, filepath.Join(dir, ts1, name)); perm != 0o644 {
			t.Errorf("%s: mode %#o, want 0644", name, perm)
		}
	}

	// Nothing changed: nothing is written.
	h.step(h.k.cfg.SyncFrequency + time.Second)
	h.sync(p)
	if ts := dataDirOf(t, dir); ts != ts1 {
		t.Fatalf("an unchanged payload was written again: ..data -> %s, was %s", ts, ts1)
	}
	// A user-visible link that went is made again (kubernetes#121472).
	if err := os.Remove(filepath.Join(dir, "a")); err != nil {
		t.Fatal(err)
	}
	h.step(h.k.cfg.SyncFrequency + time.Second)
	h.sync(p)
	if ts := dataDirOf(t, dir); ts != ts1 {
		t.Fatalf("re-making a link wrote the payload: ..data -> %s, was %s", ts, ts1)
	}
	if got := readString(t, filepath.Join(dir, "a")); got != "1" {
		t.Fatalf("a = %q after its link was re-made", got)
	}

	// a changed, b removed, c added.
	setSite(t, h, map[string]string{"a": "one", "c": "3", "index": "<h1>hi</h1>"})
	h.step(h.k.cfg.SyncFrequency + time.Second)
	h.sync(p)
	ts2 := dataDirOf(t, dir)
	if ts2 == ts1 {
		t.Fatalf("changed payload not written: ..data -> %s", ts2)
	}
	want = map[string]string{"..data": ts2, ts2: "", "a": "..data/a", "c": "..data/c", "index": "..data/index"}
	if got := volumeEntries(t, dir); !equalMaps(got, want) {
		t.Fatalf("volume entries after the update %v, want %v (old data directory and b's link gone)", got, want)
	}
	for name, content := range map[string]string{"a": "one", "c": "3", "index": "<h1>hi</h1>"} {
		if got := readString(t, filepath.Join(dir, name)); got != content {
			t.Errorf("after the update %s = %q, want %q", name, got, content)
		}
	}
	id := strings.TrimPrefix(cstatus(h.get(p), "app").ContainerID, "sim://")
	if out, _, code, err := h.rt.ExecSync(h.ctx, id, []string{"cat", "/etc/cfg/a"}, time.Second); err != nil || code != 0 || string(out) != "one" {
		t.Errorf("cat /etc/cfg/a in the container = %q %d %v, want the update", out, code, err)
	}
	if _, _, code, _ := h.rt.ExecSync(h.ctx, id, []string{"test", "-e", "/etc/cfg/b"}, time.Second); code == 0 {
		t.Errorf("/etc/cfg/b still there after its key was removed")
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestAtomicWriterNestedPaths: items in subdirectories are reached
// through the link of their top-level directory (html -> ..data/html),
// whose real directory is 0755; a top-level directory no longer in the
// payload loses its link, one still used keeps it.
func TestAtomicWriterNestedPaths(t *testing.T) {
	h := configMapHarness(t, map[string]string{"index": "<h1>hi</h1>", "style": "p{}", "key": "k"})
	p := h.create(h.pod("nested", func(p *v1.Pod) {
		p.Spec.Volumes = []v1.Volume{{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
			LocalObjectReference: v1.LocalObjectReference{Name: "site"},
			Items: []v1.KeyToPath{{Key: "index", Path: "html/index.html"}, {Key: "style", Path: "css/main/style.css"},
				{Key: "key", Path: "key", Mode: ptr.To(int32(0o400))}}}}}}
	}))
	h.sync(p)
	dir := h.k.volumeDir(p.UID, "kubernetes.io~configmap", "cfg")
	ts := dataDirOf(t, dir)
	want := map[string]string{"..data": ts, ts: "", "html": "..data/html", "css": "..data/css", "key": "..data/key"}
	if got := volumeEntries(t, dir); !equalMaps(got, want) {
		t.Fatalf("volume entries %v, want %v", got, want)
	}
	if got := readString(t, filepath.Join(dir, "css/main/style.css")); got != "p{}" {
		t.Errorf("css/main/style.css = %q", got)
	}
	for _, tc := range []struct {
		rel  string
		perm uint32
	}{{"html", 0o755}, {"css/main", 0o755}, {"html/index.html", 0o644}, {"key", 0o400}} {
		if _, _, perm := statOf(t, filepath.Join(dir, ts, tc.rel)); perm != tc.perm {
			t.Errorf("%s: mode %#o, want %#o", tc.rel, perm, tc.perm)
		}
	}
	// A ConfigMap without style: css goes; html stays.
	setSite(t, h, map[string]string{"index": "<h1>new</h1>", "key": "k"})
	pod := h.get(p)
	pod.Spec.Volumes[0].ConfigMap.Items = pod.Spec.Volumes[0].ConfigMap.Items[:1]
	pod.Spec.Volumes[0].ConfigMap.Items = append(pod.Spec.Volumes[0].ConfigMap.Items, v1.KeyToPath{Key: "key", Path: "key", Mode: ptr.To(int32(0o400))})
	if err := h.k.setUpVolumes(h.ctx, h.k.pods[p.UID], pod, true); err != nil {
		t.Fatal(err)
	}
	ts2 := dataDirOf(t, dir)
	want = map[string]string{"..data": ts2, ts2: "", "html": "..data/html", "key": "..data/key"}
	if got := volumeEntries(t, dir); !equalMaps(got, want) {
		t.Fatalf("volume entries after css went %v, want %v", got, want)
	}
	if got := readString(t, filepath.Join(dir, "html/index.html")); got != "<h1>new</h1>" {
		t.Errorf("html/index.html = %q", got)
	}
}

// TestAtomicWriterReaderNeverSeesAMix: while a ConfigMap whose two keys
// always hold the same value is updated many times, a reader that resolves
// ..data once reads the same value from both files (or finds that data
// directory already removed), and a file read through its link is always
// a whole value, never empty or cut.
func TestAtomicWriterReaderNeverSeesAMix(t *testing.T) {
	val := func(i int) string { return strings.Repeat(string(rune('a'+i%26)), 64<<10) }
	h := configMapHarness(t, map[string]string{"x": val(0), "y": val(0)})
	p := h.pod("mix", func(p *v1.Pod) {
		p.Spec.Volumes = []v1.Volume{{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
			LocalObjectReference: v1.LocalObjectReference{Name: "site"}}}}}
	})
	rec := &podRecord{}
	if err := h.k.setUpVolumes(h.ctx, rec, p, true); err != nil {
		t.Fatal(err)
	}
	dir := h.k.volumeDir(p.UID, "kubernetes.io~configmap", "cfg")
	done := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var problems []string
	report := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		if len(problems) < 5 {
			problems = append(problems, s)
		}
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			ts, err := os.Readlink(filepath.Join(dir, "..data"))
			if err != nil {
				report("readlink ..data: " + err.Error())
				return
			}
			x, errX := os.ReadFile(filepath.Join(dir, ts, "x"))
			y, errY := os.ReadFile(filepath.Join(dir, ts, "y"))
			switch {
			case errors.Is(errX, os.ErrNotExist) || errors.Is(errY, os.ErrNotExist):
				// That data directory was replaced and removed meanwhile.
			case errX != nil || errY != nil:
				report("read: " + errors.Join(errX, errY).Error())
			case string(x) != string(y):
				report("x and y of one data directory differ")
			}
			if b, err := os.ReadFile(filepath.Join(dir, "x")); err == nil && (len(b) != 64<<10 || strings.Count(string(b), string(b[:1])) != len(b)) {
				report("x read through its link is not a whole value")
			}
		}
	}()
	for i := 1; i <= 100; i++ {
		setSite(t, h, map[string]string{"x": val(i), "y": val(i)})
		if err := h.k.setUpVolumes(h.ctx, rec, p, true); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	wg.Wait()
	if len(problems) > 0 {
		t.Fatalf("the reader saw: %q", problems)
	}
	if got := readString(t, filepath.Join(dir, "y")); got != val(100) {
		t.Fatalf("y is not the last update")
	}
	dataDirOf(t, dir) // one data directory left
}

// TestAtomicWriterRefusesInvalidPaths: payload paths are validated as
// upstream's atomic writer does (the API server's validation refuses them
// too; the kubelet does not rely on it).
func TestAtomicWriterRefusesInvalidPaths(t *testing.T) {
	for _, tc := range []struct{ path, msg string }{
		{"..data/x", "invalid path: must not start with '..': ..data/x"},
		{"..x", "invalid path: must not start with '..': ..x"},
		{"a/../../x", "invalid path: must not contain '..': a/../../x"},
		{"/etc/passwd", "invalid path: must be relative path: /etc/passwd"},
		{strings.Repeat("n", 256), "invalid path: filenames must be less than or equal to 255 characters"},
	} {
		t.Run(tc.path[:min(len(tc.path), 10)], func(t *testing.T) {
			root := t.TempDir()
			h := newHarness(t, func(c *Config) { c.RootDir = root })
			p := h.pod("bad", func(p *v1.Pod) {
				p.Spec.Volumes = []v1.Volume{{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
					{Path: "name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}},
					{Path: tc.path, FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}}}}
			})
			err := h.k.setUpVolumes(h.ctx, &podRecord{}, p, true)
			if want := `MountVolume.SetUp failed for volume "info" : ` + tc.msg; err == nil || err.Error() != want {
				t.Fatalf("error %v, want %s", err, want)
			}
			dir := h.k.volumeDir(p.UID, "kubernetes.io~downward-api", "info")
			if ents := volumeEntries(t, dir); len(ents) != 0 {
				t.Fatalf("an invalid payload wrote %v", ents)
			}
		})
	}
	// A path that is not clean is written cleaned.
	root := t.TempDir()
	h := newHarness(t, func(c *Config) { c.RootDir = root })
	p := h.pod("unclean", func(p *v1.Pod) {
		p.Spec.Volumes = []v1.Volume{{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
			{Path: "a//b/./name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}}}}
	})
	if err := h.k.setUpVolumes(h.ctx, &podRecord{}, p, true); err != nil {
		t.Fatal(err)
	}
	dir := h.k.volumeDir(p.UID, "kubernetes.io~downward-api", "info")
	ts := dataDirOf(t, dir)
	if got := readString(t, filepath.Join(dir, ts, "a/b/name")); got != "unclean" {
		t.Fatalf("a/b/name = %q", got)
	}
	if got := volumeEntries(t, dir); got["a"] != "..data/a" {
		t.Fatalf("entries %v", got)
	}
}

// TestAtomicWriterEmptyPayload: an optional ConfigMap that does not exist
// gives an empty volume, still written as a data directory (upstream
// writes an empty payload too).
func TestAtomicWriterEmptyPayload(t *testing.T) {
	root := t.TempDir()
	h := newHarness(t, func(c *Config) { c.RootDir = root })
	p := h.pod("empty", func(p *v1.Pod) {
		p.Spec.Volumes = []v1.Volume{{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
			LocalObjectReference: v1.LocalObjectReference{Name: "absent"}, Optional: ptr.To(true)}}}}
	})
	if err := h.k.setUpVolumes(h.ctx, &podRecord{}, p, true); err != nil {
		t.Fatal(err)
	}
	dir := h.k.volumeDir(p.UID, "kubernetes.io~configmap", "cfg")
	ts := dataDirOf(t, dir)
	if got := volumeEntries(t, dir); len(got) != 2 {
		t.Fatalf("entries %v, want ..data and its directory", got)
	}
	if ents, err := os.ReadDir(filepath.Join(dir, ts)); err != nil || len(ents) != 0 {
		t.Fatalf("data directory %v %v, want empty", ents, err)
	}
}

// TestSubPathOfAtomicWriterVolume: a subPath mount of a configMap volume
// is resolved through the volume's symlinks into its data directory, as
// upstream's kubelet does, and so receives no updates: the container
// keeps the content it started with, while the whole volume's mount sees
// the change; a container started after the change gets the new content.
// A subPath naming a directory of items is passed resolved.
func TestSubPathOfAtomicWriterVolume(t *testing.T) {
	h := configMapHarness(t, map[string]string{"a": "1", "index": "<h1>hi</h1>"})
	p := h.create(h.pod("subpath", func(p *v1.Pod) {
		p.Spec.Volumes = []v1.Volume{{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
			LocalObjectReference: v1.LocalObjectReference{Name: "site"},
			Items:                []v1.KeyToPath{{Key: "a", Path: "a"}, {Key: "index", Path: "html/index.html"}}}}}}
		p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{
			{Name: "cfg", MountPath: "/etc/cfg"},
			{Name: "cfg", MountPath: "/etc/a", SubPath: "a"},
			{Name: "cfg", MountPath: "/srv/html", SubPath: "html"},
		}
	}))
	if got := h.sync(p); got.Status.Phase != v1.PodRunning {
		t.Fatalf("phase %s: %+v", got.Status.Phase, cstatus(got, "app"))
	}
	cat := func(id, path string) string {
		t.Helper()
		out, _, code, err := h.rt.ExecSync(h.ctx, id, []string{"cat", path}, time.Second)
		if err != nil || code != 0 {
			return "<error>"
		}
		return string(out)
	}
	id := strings.TrimPrefix(cstatus(h.get(p), "app").ContainerID, "sim://")
	for path, want := range map[string]string{"/etc/cfg/a": "1", "/etc/a": "1", "/srv/html/index.html": "<h1>hi</h1>"} {
		if got := cat(id, path); got != want {
			t.Errorf("cat %s = %q, want %q", path, got, want)
		}
	}
	dir := h.k.volumeDir(p.UID, "kubernetes.io~configmap", "cfg")
	ts := dataDirOf(t, dir)
	mounts, err := h.k.mounts(h.get(p), &p.Spec.Containers[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, ts, "html"); mounts[2].HostPath != want {
		t.Errorf("subPath html mounted from %s, want %s (resolved into the data directory)", mounts[2].HostPath, want)
	}
	if fi, err := os.Lstat(mounts[1].HostPath); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("subPath a mounted from %s: %v %v, want a regular file, not a link", mounts[1].HostPath, fi, err)
	}

	setSite(t, h, map[string]string{"a": "one", "index": "<h1>new</h1>"})
	h.step(h.k.cfg.SyncFrequency + time.Second)
	h.sync(p)
	if got := cat(id, "/etc/cfg/a"); got != "one" {
		t.Fatalf("the volume's mount after the update: %q", got)
	}
	if got := cat(id, "/etc/a"); got != "1" {
		t.Errorf("the subPath mount after the update: %q, want the content the container started with", got)
	}
	// A container started now gets the current content.
	mounts, err = h.k.mounts(h.get(p), &p.Spec.Containers[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := readString(t, mounts[1].HostPath); got != "one" {
		t.Errorf("a new container's subPath a: %q, want the update", got)
	}
}

// TestAtomicWriterKeepsTokenNotDue: a projected volume whose ConfigMap
// changes while its token is not yet due is written anew with the same
// token, its owner (the containers' user) and mode (0600) kept, and no new
// token requested.
func TestAtomicWriterKeepsTokenNotDue(t *testing.T) {
	needRoot(t)
	h := newVolumeHarness(t)
	p := h.create(h.pod("keep", func(p *v1.Pod) {
		p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{RunAsUser: ptr.To(int64(1000))}
		p.Spec.Volumes = []v1.Volume{{Name: "api", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
			{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}},
			{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "site"}, Items: []v1.KeyToPath{{Key: "key", Path: "key"}}}},
		}}}}}
	}))
	if got := h.sync(p); got.Status.Phase != v1.PodRunning {
		t.Fatalf("phase %s: %+v", got.Status.Phase, cstatus(got, "app"))
	}
	dir := h.k.volumeDir(p.UID, "kubernetes.io~projected", "api")
	ts1 := dataDirOf(t, dir)
	setSite(t, h, map[string]string{"index": "<h1>hi</h1>", "key": "changed"})
	h.step(h.k.cfg.SyncFrequency + time.Second)
	h.sync(p)
	ts2 := dataDirOf(t, dir)
	if ts2 == ts1 {
		t.Fatal("the changed ConfigMap was not written")
	}
	if got := readString(t, filepath.Join(dir, "key")); got != "changed" {
		t.Fatalf("key = %q", got)
	}
	if got := readString(t, filepath.Join(dir, "token")); got != "token-for-keep" {
		t.Fatalf("token = %q after the write, want the one not yet due", got)
	}
	if uid, _, perm := statOf(t, filepath.Join(dir, ts2, "token")); uid != 1000 || perm != 0o600 {
		t.Errorf("the kept token: uid %d mode %#o, want uid 1000 mode 0600", uid, perm)
	}
	n := 0
	for _, a := range h.client.Actions() {
		if a.GetVerb() == "create" && a.GetSubresource() == "token" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d token requests, want 1", n)
	}
}

// TestAtomicWriterReplacesInPlaceFiles: a volume written in place (by a
// kubeproof before the atomic writer) is taken over at its next write:
// its top-level files and directories become links into ..data.
func TestAtomicWriterReplacesInPlaceFiles(t *testing.T) {
	h := configMapHarness(t, map[string]string{"a": "new", "index": "<h1>new</h1>"})
	p := h.pod("inplace", func(p *v1.Pod) {
		p.Spec.Volumes = []v1.Volume{{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
			LocalObjectReference: v1.LocalObjectReference{Name: "site"},
			Items:                []v1.KeyToPath{{Key: "a", Path: "a"}, {Key: "index", Path: "html/index.html"}}}}}}
	})
	dir := h.k.volumeDir(p.UID, "kubernetes.io~configmap", "cfg")
	if err := os.MkdirAll(filepath.Join(dir, "html"), 0o755); err != nil {
		t.Fatal(err)
	}
	for rel, content := range map[string]string{"a": "old", "html/index.html": "<h1>old</h1>"} {
		if err := os.WriteFile(filepath.Join(dir, rel), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.k.setUpVolumes(h.ctx, &podRecord{}, p, true); err != nil {
		t.Fatal(err)
	}
	ts := dataDirOf(t, dir)
	want := map[string]string{"..data": ts, ts: "", "a": "..data/a", "html": "..data/html"}
	if got := volumeEntries(t, dir); !equalMaps(got, want) {
		t.Fatalf("volume entries %v, want %v", got, want)
	}
	if got := readString(t, filepath.Join(dir, "html/index.html")); got != "<h1>new</h1>" {
		t.Fatalf("html/index.html = %q", got)
	}
}

// TestSubPathMissingInAtomicWriterVolume: a subPath the volume does not
// have is created as a directory in the volume, as upstream's kubelet
// does, and mounted from there; one with a ".." element or absolute is
// refused with upstream's makeMounts errors (the API server refuses them
// too).
func TestSubPathMissingInAtomicWriterVolume(t *testing.T) {
	h := configMapHarness(t, map[string]string{"a": "1"})
	p := h.create(h.pod("subpathmissing", func(p *v1.Pod) {
		p.Spec.Volumes = []v1.Volume{{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
			LocalObjectReference: v1.LocalObjectReference{Name: "site"}}}}}
		p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{
			{Name: "cfg", MountPath: "/etc/absent", SubPath: "absent/dir"},
		}
	}))
	if got := h.sync(p); got.Status.Phase != v1.PodRunning {
		t.Fatalf("phase %s: %+v", got.Status.Phase, cstatus(got, "app"))
	}
	dir := h.k.volumeDir(p.UID, "kubernetes.io~configmap", "cfg")
	mounts, err := h.k.mounts(h.get(p), &p.Spec.Containers[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "absent", "dir"); mounts[0].HostPath != want {
		t.Errorf("missing subPath mounted from %s, want %s", mounts[0].HostPath, want)
	}
	if fi, err := os.Stat(mounts[0].HostPath); err != nil || !fi.IsDir() {
		t.Errorf("missing subPath not created as a directory: %v %v", fi, err)
	}
	for subPath, want := range map[string]string{
		"../../a": "unable to provision SubPath `../../a`: must not contain '..'",
		"a/..":    "unable to provision SubPath `a/..`: must not contain '..'",
		"/a":      "error SubPath `/a` must not be an absolute path",
	} {
		c := p.Spec.Containers[0]
		c.VolumeMounts = []v1.VolumeMount{{Name: "cfg", MountPath: "/etc/up", SubPath: subPath}}
		if _, err := h.k.mounts(h.get(p), &c, nil); err == nil || err.Error() != want {
			t.Errorf("subPath %s: error %v, want %s", subPath, err, want)
		}
	}
}

// TestSubPathMissingCreatedWithVolumeMode: a missing subPath is created
// with the volume directory's mode whatever the kubelet's umask, its
// sticky bit included (a secret volume's 1777), every directory made, as
// upstream's SafeMakeDir fchmods each directory it creates.
func TestSubPathMissingCreatedWithVolumeMode(t *testing.T) {
	h := newVolumeHarness(t)
	p := h.create(h.pod("subpathmode", func(p *v1.Pod) {
		p.Spec.Volumes = []v1.Volume{
			{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "site"}}}},
			{Name: "creds", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "creds"}}},
		}
		p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{
			{Name: "cfg", MountPath: "/etc/absent", SubPath: "absent/dir"},
			{Name: "creds", MountPath: "/etc/creds", SubPath: "absent/dir"},
		}
	}))
	if got := h.sync(p); got.Status.Phase != v1.PodRunning {
		t.Fatalf("phase %s: %+v", got.Status.Phase, cstatus(got, "app"))
	}
	for _, tc := range []struct {
		dir  string
		perm uint32
	}{
		{h.k.volumeDir(p.UID, "kubernetes.io~configmap", "cfg"), 0o777},
		{h.k.volumeDir(p.UID, "kubernetes.io~secret", "creds"), 0o1777},
	} {
		if _, _, perm := statOf(t, tc.dir); perm != tc.perm {
			t.Fatalf("%s: mode %#o, want %#o", tc.dir, perm, tc.perm)
		}
		for _, rel := range []string{"absent", "absent/dir"} {
			if _, _, perm := statOf(t, filepath.Join(tc.dir, rel)); perm != tc.perm {
				t.Errorf("%s: mode %#o, want the volume's %#o", filepath.Join(tc.dir, rel), perm, tc.perm)
			}
		}
	}
}

// TestAtomicWriterPathWithNUL: a payload path holding a NUL byte (the API
// server's validation lets one through) fails the write as upstream's
// (open: invalid argument) and publishes nothing; the raw system calls
// of the writer do not write the path cut at the NUL.
func TestAtomicWriterPathWithNUL(t *testing.T) {
	root := t.TempDir()
	h := newHarness(t, func(c *Config) { c.RootDir = root })
	p := h.pod("nul", func(p *v1.Pod) {
		p.Spec.Volumes = []v1.Volume{{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
			{Path: "a\x00b", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}}}}
	})
	err := h.k.setUpVolumes(h.ctx, &podRecord{}, p, true)
	if err == nil || !strings.Contains(err.Error(), "invalid argument") {
		t.Fatalf("error %v, want invalid argument", err)
	}
	dir := h.k.volumeDir(p.UID, "kubernetes.io~downward-api", "info")
	if ents := volumeEntries(t, dir); len(ents) != 0 {
		t.Fatalf("a path with a NUL wrote %v", ents)
	}
}

// TestAtomicWriterDataDirectoryGone: a volume whose data directory is
// gone (..data dangling) is written anew without an error, as upstream's
// writer (nothing of the old directory to remove).
func TestAtomicWriterDataDirectoryGone(t *testing.T) {
	h := configMapHarness(t, map[string]string{"a": "1"})
	p := h.pod("gone", func(p *v1.Pod) {
		p.Spec.Volumes = []v1.Volume{{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
			LocalObjectReference: v1.LocalObjectReference{Name: "site"}}}}}
	})
	if err := h.k.setUpVolumes(h.ctx, &podRecord{}, p, true); err != nil {
		t.Fatal(err)
	}
	dir := h.k.volumeDir(p.UID, "kubernetes.io~configmap", "cfg")
	if err := os.RemoveAll(filepath.Join(dir, dataDirOf(t, dir))); err != nil {
		t.Fatal(err)
	}
	if err := h.k.setUpVolumes(h.ctx, &podRecord{}, p, true); err != nil {
		t.Fatalf("writing a volume whose data directory is gone: %v", err)
	}
	ts := dataDirOf(t, dir)
	if got := volumeEntries(t, dir); !equalMaps(got, map[string]string{"..data": ts, ts: "", "a": "..data/a"}) {
		t.Fatalf("entries %v", got)
	}
	if got := readString(t, filepath.Join(dir, "a")); got != "1" {
		t.Fatalf("a = %q", got)
	}
}
