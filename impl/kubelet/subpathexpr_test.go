package kubelet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// TestSubPathExprExpandedFromEnv: a volumeMount's subPathExpr is expanded
// with the container's environment ($(VAR), $$ a literal $), as upstream's
// makeMounts (ExpandContainerVolumeMounts), and then mounted as a subPath:
// the missing directory is created with the volume's mode and the
// container sees only it. An expansion that is absolute or has a ".."
// element, or names a variable the container does not have (or has
// empty), fails the container with CreateContainerConfigError and
// upstream's messages.
func TestSubPathExprExpandedFromEnv(t *testing.T) {
	root := t.TempDir()
	h := newHarness(t, func(c *Config) { c.RootDir = root })
	podName := &v1.EnvVar{Name: "POD_NAME", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}
	withMount := func(name, expr string, env ...v1.EnvVar) *v1.Pod {
		return h.create(h.pod(name, func(p *v1.Pod) {
			p.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
			p.Spec.Containers[0].Env = append([]v1.EnvVar{*podName}, env...)
			p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "scratch", MountPath: "/data", SubPathExpr: expr}}
		}))
	}

	p := withMount("subexpr", "logs/$(POD_NAME)$$x")
	if got := h.sync(p); got.Status.Phase != v1.PodRunning {
		t.Fatalf("phase %s: %+v", got.Status.Phase, cstatus(got, "app"))
	}
	vol := h.k.volumeDir(p.UID, "kubernetes.io~empty-dir", "scratch")
	sub := filepath.Join(vol, "logs", "subexpr$x")
	for _, d := range []string{filepath.Join(vol, "logs"), sub} {
		if _, _, perm := statOf(t, d); perm != 0o777 {
			t.Errorf("%s: mode %#o, want the emptyDir's 0777", d, perm)
		}
	}
	if err := os.WriteFile(filepath.Join(sub, "hello"), []byte("hi"), 0o644); err != nil {
		t.Fatal(err)
	}
	id := strings.TrimPrefix(cstatus(h.get(p), "app").ContainerID, "sim://")
	if out, _, code, err := h.rt.ExecSync(h.ctx, id, []string{"cat", "/data/hello"}, time.Second); err != nil || code != 0 || string(out) != "hi" {
		t.Errorf("cat /data/hello = %q %d %v, want the subdirectory's file", out, code, err)
	}

	for _, tc := range []struct {
		name, expr string
		env        []v1.EnvVar
		want       string
	}{
		{"subexpr-abs", "$(DIR)", []v1.EnvVar{{Name: "DIR", Value: "/etc"}}, "error SubPath `/etc` must not be an absolute path"},
		{"subexpr-up", "a/$(DIR)", []v1.EnvVar{{Name: "DIR", Value: "../../x"}}, "unable to provision SubPath `a/../../x`: must not contain '..'"},
		{"subexpr-missing", "$(NOPE)/$(EMPTY)/$(NOPE)", []v1.EnvVar{{Name: "EMPTY"}}, "missing value for EMPTY, NOPE"},
	} {
		p := withMount(tc.name, tc.expr, tc.env...)
		got := h.sync(p)
		cs := cstatus(got, "app")
		if got.Status.Phase != v1.PodPending || cs.State.Waiting == nil || cs.State.Waiting.Reason != "CreateContainerConfigError" ||
			cs.State.Waiting.Message != tc.want {
			t.Errorf("%s: %s %+v, want CreateContainerConfigError %q", tc.expr, got.Status.Phase, cs.State, tc.want)
		}
	}
}

// TestSubPathSymlinkOutOfVolumeRefused: a subPath of an emptyDir that a
// container made a symlink out of the volume is refused as upstream's
// PrepareSafeSubpath refuses it (the message without host paths:
// "failed to prepare subPath for volumeMount ... of container ...",
// CreateContainerConfigError); one whose symlink stays inside the volume
// is mounted from where it leads.
func TestSubPathSymlinkOutOfVolumeRefused(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	h := newHarness(t, func(c *Config) { c.RootDir = root })
	p := h.pod("subpathlink", func(p *v1.Pod) {
		p.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	})
	vol := h.k.volumeDir(p.UID, "kubernetes.io~empty-dir", "scratch")
	if err := os.MkdirAll(filepath.Join(vol, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"out": outside, "in": "real"} {
		if err := os.Symlink(target, filepath.Join(vol, name)); err != nil {
			t.Fatal(err)
		}
	}
	c := p.Spec.Containers[0]
	c.VolumeMounts = []v1.VolumeMount{{Name: "scratch", MountPath: "/data", SubPath: "in"}}
	mounts, err := h.k.mounts(p, &c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(vol, "real"); mounts[0].HostPath != want {
		t.Errorf("subPath in mounted from %s, want %s", mounts[0].HostPath, want)
	}
	for subPath, want := range map[string]string{
		"out":   `failed to prepare subPath for volumeMount "scratch" of container "app"`,
		"out/x": `failed to create subPath directory for volumeMount "scratch" of container "app"`,
	} {
		name := "subpathlink-" + strings.ReplaceAll(subPath, "/", "-")
		p := h.pod(name, func(p *v1.Pod) {
			p.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
			p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "scratch", MountPath: "/data", SubPath: subPath}}
		})
		// The link a container of the pod made before this one starts.
		vol := h.k.volumeDir(p.UID, "kubernetes.io~empty-dir", "scratch")
		if err := os.MkdirAll(vol, 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, filepath.Join(vol, "out")); err != nil {
			t.Fatal(err)
		}
		p = h.create(p)
		got := h.sync(p)
		cs := cstatus(got, "app")
		if got.Status.Phase != v1.PodPending || cs.State.Waiting == nil || cs.State.Waiting.Reason != "CreateContainerConfigError" ||
			cs.State.Waiting.Message != want {
			t.Errorf("subPath %s: %s %+v, want CreateContainerConfigError %q", subPath, got.Status.Phase, cs.State, want)
		}
	}
	if ents, err := os.ReadDir(outside); err != nil || len(ents) != 0 {
		t.Errorf("made outside the volume: %v %v", ents, err)
	}
}
