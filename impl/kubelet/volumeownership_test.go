package kubelet

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
)

// needRoot skips a test that chowns files unless the test runs as root
// (as CI does).
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("changing file ownership needs root")
	}
}

// statOf is a path's lstat: owner, group and permission bits (with setgid).
func statOf(t *testing.T, path string) (uid, gid, perm uint32) {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		t.Fatalf("lstat %s: %v", path, err)
	}
	return st.Uid, st.Gid, st.Mode & 0o7777
}

// volumePod is a pod with an emptyDir, a configMap (one item with its own
// mode, one in a subdirectory), a secret with defaultMode 0600, a
// downwardAPI and a projected volume with a service account token, and a
// hostPath volume at hostDir; its containers all run as user 1000.
func volumePod(h *harness, name, hostDir string, psc *v1.PodSecurityContext) *v1.Pod {
	return h.pod(name, func(p *v1.Pod) {
		p.Spec.SecurityContext = psc
		p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{RunAsUser: ptr.To(int64(1000))}
		p.Spec.Volumes = []v1.Volume{
			{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
			{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "site"},
				Items: []v1.KeyToPath{{Key: "index", Path: "html/index.html"}, {Key: "key", Path: "key", Mode: ptr.To(int32(0o400))}}}}},
			{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "creds", DefaultMode: ptr.To(int32(0o600))}}},
			{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
				{Path: "name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}}},
			{Name: "api", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{DefaultMode: ptr.To(int32(0o644)), Sources: []v1.VolumeProjection{
				{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}},
				{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
			}}}},
			{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: hostDir}}},
		}
	})
}

// newVolumeHarness is a harness whose kubelet keeps volumes under a temp
// directory, with the ConfigMap and Secret of volumePod and tokens.
func newVolumeHarness(t *testing.T) *harness {
	root := t.TempDir()
	h := newHarness(t, func(c *Config) { c.RootDir = root })
	h.client.PrependReactor("create", "serviceaccounts", func(a clienttesting.Action) (bool, runtime.Object, error) {
		ca := a.(clienttesting.CreateAction)
		if ca.GetSubresource() != "token" {
			return false, nil, nil
		}
		tr := ca.GetObject().(*authenticationv1.TokenRequest).DeepCopy()
		tr.Status.Token = "token-for-" + tr.Spec.BoundObjectRef.Name
		return true, tr, nil
	})
	if _, err := h.client.CoreV1().ConfigMaps("default").Create(h.ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "site", Namespace: "default"},
		Data: map[string]string{"index": "<h1>hi</h1>", "key": "k"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.client.CoreV1().Secrets("default").Create(h.ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "default"},
		Data: map[string][]byte{"password": []byte("pw")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return h
}

// TestFSGroupVolumeOwnership: with the pod's fsGroup, every file and
// directory of its emptyDir, configMap, secret, downwardAPI and projected
// volumes has that group, group read/write added for the emptyDir and
// group read for the others, and setgid and group search on directories,
// as upstream's SetVolumeOwnership; files keep their mode's other bits
// (item mode, defaultMode); the projected token is owned by the user all
// containers run as, mode 0600 + group read; a hostPath volume is left
// alone. fsGroupChangePolicy OnRootMismatch changes nothing for these
// volume types (upstream's plugins pass no policy).
func TestFSGroupVolumeOwnership(t *testing.T) {
	needRoot(t)
	h := newVolumeHarness(t)
	hostDir := t.TempDir()
	hostUID, hostGID, hostPerm := statOf(t, hostDir)
	onRoot := v1.FSGroupChangeOnRootMismatch
	p := h.create(volumePod(h, "owned", hostDir, &v1.PodSecurityContext{FSGroup: ptr.To(int64(2000)), FSGroupChangePolicy: &onRoot}))
	if got := h.sync(p); got.Status.Phase != v1.PodRunning {
		t.Fatalf("phase %s: %+v", got.Status.Phase, cstatus(got, "app"))
	}
	vol := func(plugin, name string, rel ...string) string {
		return filepath.Join(append([]string{h.k.volumeDir(p.UID, plugin, name)}, rel...)...)
	}
	for _, tc := range []struct {
		path      string
		uid, perm uint32
	}{
		{vol("kubernetes.io~empty-dir", "scratch"), 0, 0o2777},
		{vol("kubernetes.io~configmap", "cfg"), 0, 0o2777},
		// The data directory of the atomic writer and what is in it (the
		// user-visible paths are symlinks into ..data).
		{vol("kubernetes.io~configmap", "cfg", "..data") + "/.", 0, 0o2755},
		{vol("kubernetes.io~configmap", "cfg", "..data", "html"), 0, 0o2755},
		{vol("kubernetes.io~secret", "sec"), 0, 0o3777},
		{vol("kubernetes.io~projected", "api"), 0, 0o3777},
		{vol("kubernetes.io~configmap", "cfg", "..data", "html", "index.html"), 0, 0o644},
		{vol("kubernetes.io~configmap", "cfg", "..data", "key"), 0, 0o440},
		{vol("kubernetes.io~secret", "sec", "..data", "password"), 0, 0o640},
		{vol("kubernetes.io~downward-api", "info", "..data", "name"), 0, 0o644},
		{vol("kubernetes.io~projected", "api", "..data", "token"), 1000, 0o640},
		{vol("kubernetes.io~projected", "api", "..data", "namespace"), 0, 0o644},
	} {
		if uid, gid, perm := statOf(t, tc.path); uid != tc.uid || gid != 2000 || perm != tc.perm {
			t.Errorf("%s: uid %d gid %d mode %#o, want uid %d gid 2000 mode %#o", tc.path, uid, gid, perm, tc.uid, tc.perm)
		}
	}
	if uid, gid, perm := statOf(t, hostDir); uid != hostUID || gid != hostGID || perm != hostPerm {
		t.Errorf("hostPath volume changed: uid %d gid %d mode %#o", uid, gid, perm)
	}

	// A changed ConfigMap is written at the next refresh, and the whole
	// volume walked again: a file added since (by hand here) gets the group.
	stray := vol("kubernetes.io~configmap", "cfg", "stray")
	if err := os.WriteFile(stray, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	cm, err := h.client.CoreV1().ConfigMaps("default").Get(h.ctx, "site", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["index"] = "<h1>changed</h1>"
	if _, err := h.client.CoreV1().ConfigMaps("default").Update(h.ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.step(h.k.cfg.SyncFrequency + 1)
	h.sync(p)
	if b, err := os.ReadFile(vol("kubernetes.io~configmap", "cfg", "html", "index.html")); err != nil || string(b) != "<h1>changed</h1>" {
		t.Fatalf("configMap not refreshed: %q %v", b, err)
	}
	// The new data directory was given the group before it was published.
	for _, tc := range []struct {
		path string
		perm uint32
	}{
		{vol("kubernetes.io~configmap", "cfg", "..data") + "/.", 0o2755},
		{vol("kubernetes.io~configmap", "cfg", "..data", "html", "index.html"), 0o644},
		{vol("kubernetes.io~configmap", "cfg", "..data", "key"), 0o440},
	} {
		if _, gid, perm := statOf(t, tc.path); gid != 2000 || perm != tc.perm {
			t.Errorf("after the update %s: gid %d mode %#o, want gid 2000 mode %#o", tc.path, gid, perm, tc.perm)
		}
	}
	if _, gid, perm := statOf(t, stray); gid != 2000 || perm != 0o640 {
		t.Errorf("file added before a write of the volume: gid %d mode %#o, want gid 2000 mode 0640", gid, perm)
	}
}

// TestVolumeFileModesWithoutFSGroup: without fsGroup nothing changes
// group, files get their item's mode or the volume's defaultMode, the
// token is owned by the containers' user, mode 0600 (upstream's projected
// plugin narrows it when that user is known), and volume directories have
// upstream's modes, so that containers of any user can use them.
func TestVolumeFileModesWithoutFSGroup(t *testing.T) {
	needRoot(t)
	h := newVolumeHarness(t)
	p := h.create(volumePod(h, "plain", t.TempDir(), nil))
	if got := h.sync(p); got.Status.Phase != v1.PodRunning {
		t.Fatalf("phase %s: %+v", got.Status.Phase, cstatus(got, "app"))
	}
	for _, tc := range []struct {
		path      string
		uid, perm uint32
	}{
		{filepath.Join(h.k.volumeDir(p.UID, "kubernetes.io~configmap", "cfg"), "..data", "key"), 0, 0o400},
		{filepath.Join(h.k.volumeDir(p.UID, "kubernetes.io~secret", "sec"), "..data", "password"), 0, 0o600},
		{filepath.Join(h.k.volumeDir(p.UID, "kubernetes.io~configmap", "cfg"), "..data", "html", "index.html"), 0, 0o644},
		{filepath.Join(h.k.volumeDir(p.UID, "kubernetes.io~projected", "api"), "..data", "token"), 1000, 0o600},
		// Volume directories as upstream's: an emptyDir (and the emptyDir
		// a configMap volume is set up in) 0777, a secret's, downwardAPI
		// or projected volume's (a tmpfs there) 1777, the atomic writer's
		// data directory and directories of items 0755.
		{h.k.volumeDir(p.UID, "kubernetes.io~empty-dir", "scratch"), 0, 0o777},
		{h.k.volumeDir(p.UID, "kubernetes.io~configmap", "cfg"), 0, 0o777},
		{filepath.Join(h.k.volumeDir(p.UID, "kubernetes.io~configmap", "cfg"), "..data") + "/.", 0, 0o755},
		{filepath.Join(h.k.volumeDir(p.UID, "kubernetes.io~configmap", "cfg"), "..data", "html"), 0, 0o755},
		{h.k.volumeDir(p.UID, "kubernetes.io~downward-api", "info"), 0, 0o1777},
		{h.k.volumeDir(p.UID, "kubernetes.io~secret", "sec"), 0, 0o1777},
		{h.k.volumeDir(p.UID, "kubernetes.io~projected", "api"), 0, 0o1777},
	} {
		if uid, gid, perm := statOf(t, tc.path); uid != tc.uid || gid != 0 || perm != tc.perm {
			t.Errorf("%s: uid %d gid %d mode %#o, want uid %d gid 0 mode %#o", tc.path, uid, gid, perm, tc.uid, tc.perm)
		}
	}
}

// TestPodFSUser: the token's owner is the runAsUser of every container
// (init, app, ephemeral; its own or the pod's) when all have the same one.
func TestPodFSUser(t *testing.T) {
	sc := func(u int64) *v1.SecurityContext { return &v1.SecurityContext{RunAsUser: ptr.To(u)} }
	for _, tc := range []struct {
		name string
		pod  *v1.PodSecurityContext
		init *v1.SecurityContext
		app  []*v1.SecurityContext
		want *int64
	}{
		{name: "none", app: []*v1.SecurityContext{nil}},
		{name: "pod's", pod: &v1.PodSecurityContext{RunAsUser: ptr.To(int64(7))}, app: []*v1.SecurityContext{nil, nil}, want: ptr.To(int64(7))},
		{name: "containers agree", app: []*v1.SecurityContext{sc(8), sc(8)}, want: ptr.To(int64(8))},
		{name: "containers differ", app: []*v1.SecurityContext{sc(8), sc(9)}},
		{name: "one unset", app: []*v1.SecurityContext{sc(8), nil}},
		{name: "container overrides pod", pod: &v1.PodSecurityContext{RunAsUser: ptr.To(int64(7))}, app: []*v1.SecurityContext{sc(8), nil}},
		{name: "init differs", init: sc(9), app: []*v1.SecurityContext{sc(8)}},
		{name: "init agrees", init: sc(8), app: []*v1.SecurityContext{sc(8)}, want: ptr.To(int64(8))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{SecurityContext: tc.pod}}
			if tc.init != nil {
				pod.Spec.InitContainers = []v1.Container{{Name: "init", SecurityContext: tc.init}}
			}
			for _, c := range tc.app {
				pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{SecurityContext: c})
			}
			got := podFSUser(pod)
			if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
				t.Fatalf("podFSUser = %v, want %v", ptr.Deref(got, -1), ptr.Deref(tc.want, -1))
			}
		})
	}
}

// TestSlowVolumeOwnershipIsReported: an ownership walk still going after
// 30 s records upstream's VolumePermissionChangeInProgress warning on the
// pod, then one with the files done every 60 s.
func TestSlowVolumeOwnershipIsReported(t *testing.T) {
	needRoot(t)
	root := t.TempDir()
	events := record.NewFakeRecorder(100)
	h := newHarness(t, func(c *Config) { c.RootDir, c.Recorder = root, events })
	p := h.pod("slow", func(p *v1.Pod) {
		p.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: ptr.To(int64(2000))}
		p.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	})
	const first = "Warning VolumePermissionChangeInProgress Setting volume ownership for uid-slow/volumes/kubernetes.io~empty-dir/scratch is taking longer than expected, consider using OnRootMismatch - https://kubernetes.io/docs/tasks/configure-pod-container/security-context/#configure-volume-permission-and-ownership-change-policy-for-pods"
	const progress = "Warning VolumePermissionChangeInProgress Setting volume ownership for uid-slow/volumes/kubernetes.io~empty-dir/scratch, processed 0 files."
	await := func(want string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			select {
			case got := <-events.Events:
				if got != want {
					t.Fatalf("event %q, want %q", got, want)
				}
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
		t.Fatalf("no event %q", want)
	}
	calls := 0
	ownershipFileHook = func() {
		calls++
		if calls > 1 {
			return
		}
		// The walk is slow: the first report comes at 30 s, progress
		// every 60 s.
		for !h.clock.HasWaiters() {
			time.Sleep(time.Millisecond)
		}
		h.step(ownershipFirstReport)
		await(first)
		for !h.clock.HasWaiters() { // the monitor's ticker
			time.Sleep(time.Millisecond)
		}
		h.step(ownershipProgressPeriod)
		await(progress)
	}
	defer func() { ownershipFileHook = nil }()
	if err := h.k.setUpVolumes(h.ctx, &podRecord{}, p, true); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Fatalf("%d files walked, want the emptyDir alone", calls)
	}
	select {
	case got := <-events.Events:
		t.Fatalf("event after the walk ended: %q", got)
	default:
	}
}
