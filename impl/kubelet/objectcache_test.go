package kubelet

import (
	"context"
	"fmt"
	goruntime "runtime"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

func TestPodObjectRefs(t *testing.T) {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}, Spec: v1.PodSpec{
		ImagePullSecrets: []v1.LocalObjectReference{{Name: "pull"}},
		InitContainers: []v1.Container{{Name: "init", EnvFrom: []v1.EnvFromSource{
			{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "init-env"}}}}}},
		Containers: []v1.Container{{Name: "app",
			EnvFrom: []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "shared"}}}},
			Env: []v1.EnvVar{
				{Name: "A", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "env-secret"}, Key: "k"}}},
				{Name: "B", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "shared"}, Key: "k"}}},
				{Name: "C", Value: "plain"},
			}}},
		Volumes: []v1.Volume{
			{Name: "c", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "shared"}}}},
			{Name: "s", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "vol-secret"}}},
			{Name: "p", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
				{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "kube-root-ca.crt"}}},
				{Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: "proj-secret"}}},
			}}}},
			{Name: "e", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		},
	}}
	want := []objectRef{
		{resourceSecrets, "ns", "pull"}, {resourceSecrets, "ns", "init-env"}, {resourceConfigMaps, "ns", "shared"},
		{resourceSecrets, "ns", "env-secret"}, {resourceSecrets, "ns", "vol-secret"},
		{resourceConfigMaps, "ns", "kube-root-ca.crt"}, {resourceSecrets, "ns", "proj-secret"},
	}
	if got := podObjectRefs(p); !slices.Equal(got, want) {
		t.Errorf("refs\n got %v\nwant %v", got, want)
	}
}

// objectGets counts the GETs of ConfigMaps and Secrets the kubelet sent.
func objectGets(actions []clienttesting.Action) int {
	n := 0
	for _, a := range actions {
		r := a.GetResource().Resource
		if a.GetVerb() == "get" && (r == resourceConfigMaps || r == resourceSecrets) {
			n++
		}
	}
	return n
}

// allSynced reports whether every registered object has a synced watch.
func (m *objectManager) allSynced() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, w := range m.watches {
		if w.shared == nil || !w.shared.synced() {
			return false
		}
	}
	return true
}

// TestObjectManagerServesPodsFromWatches: once the watches of a pod's
// ConfigMaps and Secrets have synced, volume refreshes and container env
// read them without a GET; updates still reach the volume at the next
// refresh; a missing object is "not found" and an optional one is skipped,
// as with GETs; a watch stops when the last pod using its object goes.
func TestObjectManagerServesPodsFromWatches(t *testing.T) {
	before := goruntime.NumGoroutine()
	root := t.TempDir()
	h := newHarness(t, func(c *Config) { c.RootDir = root })
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	h.k.objects.start(ctx)
	stopped := false
	defer func() {
		if !stopped {
			h.k.objects.stop()
		}
	}()

	if _, err := h.client.CoreV1().ConfigMaps("default").Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "site", Namespace: "default"},
		Data: map[string]string{"index": "v1", "mode": "fast"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.client.CoreV1().Secrets("default").Create(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "default"},
		Data: map[string][]byte{"password": []byte("pw")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	withSite := func(p *v1.Pod) {
		p.Spec.Volumes = []v1.Volume{
			{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "site"}}}},
			{Name: "extra", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "absent"}, Optional: ptr.To(true)}}},
		}
		p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "cfg", MountPath: "/etc/site"}}
		p.Spec.Containers[0].Env = []v1.EnvVar{
			{Name: "PASSWORD", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "creds"}, Key: "password"}}},
			{Name: "MODE", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "site"}, Key: "mode"}}},
		}
	}
	p := h.create(h.pod("web", withSite))
	got := h.sync(p)
	if got.Status.Phase != v1.PodRunning {
		t.Fatalf("phase %s: %+v", got.Status.Phase, cstatus(got, "app"))
	}
	if n := h.k.objects.watching(); n != 3 {
		t.Fatalf("%d watches running, want 3 (site, absent, creds)", n)
	}
	eventually(t, "watches synced", h.k.objects.allSynced)

	// A second pod on the same objects shares the watches; it starts
	// without a GET.
	gets := objectGets(h.client.Actions())
	q := h.create(h.pod("api", withSite))
	got = h.sync(q)
	if got.Status.Phase != v1.PodRunning {
		t.Fatalf("second pod phase %s: %+v", got.Status.Phase, cstatus(got, "app"))
	}
	id := strings.TrimPrefix(cstatus(got, "app").ContainerID, "sim://")
	if out, _, _, _ := h.rt.ExecSync(ctx, id, []string{"env"}, time.Second); !strings.Contains(string(out), "PASSWORD=pw") || !strings.Contains(string(out), "MODE=fast") {
		t.Errorf("env from the watched objects: %q", out)
	}
	if n := h.k.objects.watching(); n != 3 {
		t.Fatalf("%d watches running after a second pod, want 3", n)
	}

	// The ConfigMap changes: the watch brings it, the next refresh writes it.
	cm, _ := h.client.CoreV1().ConfigMaps("default").Get(ctx, "site", metav1.GetOptions{})
	gets++ // the test's own
	cm.Data["index"] = "v2"
	if _, err := h.client.CoreV1().ConfigMaps("default").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the update in the watch's store", func() bool {
		c, err := h.k.objects.configMap(ctx, "default", "site")
		return err == nil && c.Data["index"] == "v2"
	})
	for i := 0; i < 3; i++ {
		h.step(DefaultSyncFrequency)
		h.sync(p)
		h.sync(q)
	}
	for _, pod := range []*v1.Pod{p, q} {
		cid := strings.TrimPrefix(cstatus(h.get(pod), "app").ContainerID, "sim://")
		if out, _, _, _ := h.rt.ExecSync(ctx, cid, []string{"cat", "/etc/site/index"}, time.Second); string(out) != "v2" {
			t.Errorf("%s after the ConfigMap changed: %q", pod.Name, out)
		}
	}
	if n := objectGets(h.client.Actions()); n != gets {
		t.Errorf("%d ConfigMap/Secret GETs during refreshes, want none", n-gets)
	}

	// A ConfigMap no one created: not found from the synced store.
	r := h.create(h.pod("broken", func(p *v1.Pod) {
		p.Spec.Volumes = []v1.Volume{{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "missing"}}}}}
	}))
	if _, err := h.k.objects.configMap(ctx, "default", "missing"); err == nil {
		t.Fatal("missing ConfigMap found")
	}
	eventually(t, "the watch of missing synced", h.k.objects.allSynced)
	if _, err := h.k.syncPod(h.ctx, r.UID); err == nil || err.Error() != `MountVolume.SetUp failed for volume "cfg" : configmap "missing" not found` {
		t.Fatalf("sync error = %v", err)
	}

	// Pods go: shared watches stay until the last user is gone. A pod
	// that has finished (Succeeded or Failed) needs no watches either.
	h.k.HandlePodDeleted(r)
	finished := h.get(p).DeepCopy()
	finished.Status.Phase = v1.PodSucceeded
	h.k.HandlePod(finished)
	if n := h.k.objects.watching(); n != 3 {
		t.Errorf("%d watches after the first pod finished, want 3", n)
	}
	if _, ok := h.k.objects.pods[p.UID]; ok {
		t.Errorf("a Succeeded pod is still registered")
	}
	h.k.HandlePodDeleted(p)
	h.k.HandlePodDeleted(q)
	if n := h.k.objects.watching(); n != 0 {
		t.Errorf("%d watches after every pod went, want 0", n)
	}
	// Unregistered objects are read with a GET.
	gets = objectGets(h.client.Actions())
	if c, err := h.k.objects.configMap(ctx, "default", "site"); err != nil || c.Data["index"] != "v2" {
		t.Errorf("unregistered read: %v %v", c, err)
	}
	if objectGets(h.client.Actions()) != gets+1 {
		t.Errorf("an unregistered object was not read with a GET")
	}
	h.k.objects.stop()
	stopped = true
	eventually(t, "watch goroutines to end", func() bool { return goruntime.NumGoroutine() <= before })
}

// TestObjectManagerStopEndsWatches: stop (the end of Run) ends every
// watch; reads then GET.
func TestObjectManagerStopEndsWatches(t *testing.T) {
	before := goruntime.NumGoroutine()
	h := newHarness(t, nil)
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	h.k.objects.start(ctx)
	p := h.pod("web", func(p *v1.Pod) {
		p.Spec.Containers[0].EnvFrom = []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}}
	})
	h.k.HandlePod(p)
	if _, err := h.k.objects.configMap(ctx, "default", "cfg"); err == nil {
		t.Fatal("ConfigMap cfg found before it exists")
	}
	if n := h.k.objects.watching(); n != 1 {
		t.Fatalf("%d watches, want 1", n)
	}
	h.k.objects.stop()
	if n := h.k.objects.watching(); n != 0 {
		t.Fatalf("%d watches after stop, want 0", n)
	}
	eventually(t, "watch goroutines to end", func() bool { return goruntime.NumGoroutine() <= before })
	gets := objectGets(h.client.Actions())
	if _, err := h.k.objects.configMap(ctx, "default", "cfg"); err == nil {
		t.Fatal("ConfigMap cfg found")
	}
	if objectGets(h.client.Actions()) != gets+1 {
		t.Errorf("a read after stop was not a GET")
	}
}

// TestObjectWatchesSharedByClient: kubelets sharing a clientset (the
// node-memory agent's simulated nodes) share one watch per object; a
// kubelet with a clientset of its own watches on its own; the watch ends
// with its last user, and stop waits for it.
func TestObjectWatchesSharedByClient(t *testing.T) {
	before := goruntime.NumGoroutine()
	h := newHarness(t, nil)
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	if _, err := h.client.CoreV1().ConfigMaps("default").Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "default"},
		Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	other := h.newKubelet(func(c *Config) { c.NodeName = "node-8" }) // same client
	h2 := newHarness(t, nil)                                         // a client of its own
	if _, err := h2.client.CoreV1().ConfigMaps("default").Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "default"},
		Data: map[string]string{"k": "other"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	withCfg := func(p *v1.Pod) {
		p.Spec.Containers[0].EnvFrom = []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}}
	}
	managers := []*objectManager{h.k.objects, other.objects, h2.k.objects}
	for i, m := range managers {
		m.start(ctx)
		p := h.pod(fmt.Sprintf("web-%d", i), withCfg)
		m.registerPod(p)
		eventually(t, "the watch to sync", func() bool {
			_, _ = m.configMap(ctx, "default", "cfg")
			return m.allSynced()
		})
	}
	key := func(c kubernetes.Interface) (*sharedObjectWatch, int) {
		return objectWatches.lookup(c, objectRef{resourceConfigMaps, "default", "cfg"})
	}
	w1 := h.k.objects.watches[objectRef{resourceConfigMaps, "default", "cfg"}].shared
	w2 := other.objects.watches[objectRef{resourceConfigMaps, "default", "cfg"}].shared
	w3 := h2.k.objects.watches[objectRef{resourceConfigMaps, "default", "cfg"}].shared
	if registered, users := key(h.client); w1 != w2 || w1 != registered || users != 2 {
		t.Errorf("kubelets of one client: watches %p and %p (registry %p, %d users), want one shared by both", w1, w2, registered, users)
	}
	if registered, _ := key(h2.client); w3 == w1 || w3 != registered {
		t.Errorf("a kubelet of another client shares the first client's watch")
	}
	if c, err := h2.k.objects.configMap(ctx, "default", "cfg"); err != nil || c.Data["k"] != "other" {
		t.Errorf("the other client's kubelet read %v %v, want its own API's object", c, err)
	}
	// One user goes: the watch keeps running for the other.
	h.k.objects.stop()
	select {
	case <-w1.done:
		t.Fatal("the shared watch ended while a kubelet still used it")
	default:
	}
	if c, err := other.objects.configMap(ctx, "default", "cfg"); err != nil || c.Data["k"] != "v" {
		t.Errorf("after the first kubelet stopped: %v %v", c, err)
	}
	// The last user goes: stop returns once the watch has ended.
	other.objects.unregisterPod("uid-web-1")
	other.objects.stop()
	select {
	case <-w1.done:
	default:
		t.Error("the shared watch runs on after its last user stopped")
	}
	if registered, _ := key(h.client); registered != nil {
		t.Error("a stopped watch is still registered")
	}
	h2.k.objects.stop()
	eventually(t, "watch goroutines to end", func() bool { return goruntime.NumGoroutine() <= before })
}

// Pods referencing the same objects share one reference list; a pod
// referencing others keeps its own.
func TestObjectManagerSharesEqualReferenceLists(t *testing.T) {
	m := newObjectManager(fake.NewClientset())
	mk := func(uid, cm string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: uid, UID: types.UID(uid)},
			Spec: v1.PodSpec{Volumes: []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: cm}}}}}}}
	}
	m.registerPod(mk("a", "shared-cm"))
	m.registerPod(mk("b", "shared-cm"))
	m.registerPod(mk("c", "own-cm"))
	a, b, c := m.pods["a"], m.pods["b"], m.pods["c"]
	if len(a) != 1 || len(b) != 1 || &a[0] != &b[0] {
		t.Errorf("equal reference lists not shared: %v %v", a, b)
	}
	if len(c) != 1 || c[0].name != "own-cm" || &c[0] == &a[0] {
		t.Errorf("another pod's references: %v", c)
	}
	if m.watches[objectRef{resourceConfigMaps, "ns", "shared-cm"}].pods != 2 {
		t.Errorf("shared-cm referenced by %d pods, want 2", m.watches[objectRef{resourceConfigMaps, "ns", "shared-cm"}].pods)
	}
	m.unregisterPod("a")
	if w := m.watches[objectRef{resourceConfigMaps, "ns", "shared-cm"}]; w == nil || w.pods != 1 || len(m.pods["b"]) != 1 {
		t.Errorf("after one pod left: %v, b's list %v", w, m.pods["b"])
	}
}
