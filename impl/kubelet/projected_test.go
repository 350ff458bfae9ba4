package kubelet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

// A projected volume merges configMap, secret, downwardAPI and
// serviceAccountToken sources into one directory; the token comes from the
// TokenRequest API, bound to the pod.
func TestProjectedVolume(t *testing.T) {
	root := t.TempDir()
	h := newHarness(t, func(c *Config) { c.RootDir = root })
	var requests []*authenticationv1.TokenRequest
	h.client.PrependReactor("create", "serviceaccounts", func(a clienttesting.Action) (bool, runtime.Object, error) {
		ca := a.(clienttesting.CreateAction)
		if ca.GetSubresource() != "token" {
			return false, nil, nil
		}
		tr := ca.GetObject().(*authenticationv1.TokenRequest).DeepCopy()
		requests = append(requests, tr)
		tr.Status.Token = "token-for-" + tr.Spec.BoundObjectRef.Name
		return true, tr, nil
	})
	ctx := h.ctx
	if _, err := h.client.CoreV1().ConfigMaps("default").Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ca", Namespace: "default"},
		Data: map[string]string{"ca.crt": "CERT"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.client.CoreV1().Secrets("default").Create(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "default"},
		Data: map[string][]byte{"user": []byte("admin")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := h.create(h.pod("proj", func(p *v1.Pod) {
		p.Spec.ServiceAccountName = "builder"
		p.Spec.Volumes = []v1.Volume{{Name: "all", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
			{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", Audience: "vault", ExpirationSeconds: ptr.To(int64(600))}},
			{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "ca"}}},
			{Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: "creds"}, Items: []v1.KeyToPath{{Key: "user", Path: "creds/user"}}}},
			{Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: "absent"}, Optional: ptr.To(true)}},
			{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
		}}}}}
		p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "all", MountPath: "/var/run/secrets/all"}}
	}))
	got := h.sync(p)
	if got.Status.Phase != v1.PodRunning {
		t.Fatalf("phase %s: %+v", got.Status.Phase, cstatus(got, "app"))
	}
	id := strings.TrimPrefix(cstatus(got, "app").ContainerID, "sim://")
	for path, want := range map[string]string{
		"token": "token-for-proj", "ca.crt": "CERT", "creds/user": "admin", "namespace": "default",
	} {
		out, _, code, err := h.rt.ExecSync(ctx, id, []string{"cat", "/var/run/secrets/all/" + path}, time.Second)
		if err != nil || code != 0 || string(out) != want {
			t.Errorf("cat %s = %q %d %v, want %q", path, out, code, err, want)
		}
	}
	if len(requests) != 1 {
		t.Fatalf("%d token requests", len(requests))
	}
	spec := requests[0].Spec
	if *spec.ExpirationSeconds != 600 || len(spec.Audiences) != 1 || spec.Audiences[0] != "vault" ||
		spec.BoundObjectRef.Kind != "Pod" || spec.BoundObjectRef.UID != p.UID {
		t.Errorf("token request %+v", spec)
	}
	if got := h.client.Actions(); !hasTokenRequestFor(got, "builder") {
		t.Errorf("no token request for service account builder")
	}

	// A changed ConfigMap reaches the running pod at the next sync period;
	// the token (600 s) is reused until 80% of its lifetime has passed.
	cm, _ := h.client.CoreV1().ConfigMaps("default").Get(ctx, "ca", metav1.GetOptions{})
	cm.Data["ca.crt"] = "NEW CERT"
	if _, err := h.client.CoreV1().ConfigMaps("default").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.step(DefaultSyncFrequency)
	h.sync(p)
	if out, _, _, _ := h.rt.ExecSync(ctx, id, []string{"cat", "/var/run/secrets/all/ca.crt"}, time.Second); string(out) != "NEW CERT" {
		t.Errorf("after the ConfigMap changed: %q", out)
	}
	if len(requests) != 1 {
		t.Errorf("token re-requested before 80%% of its lifetime: %d requests", len(requests))
	}
	if out, _, _, _ := h.rt.ExecSync(ctx, id, []string{"cat", "/var/run/secrets/all/token"}, time.Second); string(out) != "token-for-proj" {
		t.Errorf("the token not yet due was not kept: %q", out)
	}
	h.step(480 * time.Second)
	h.sync(p)
	if len(requests) != 2 {
		t.Errorf("token not refreshed at 80%% of its lifetime: %d requests", len(requests))
	}
	// A token file that is gone is fetched anew at the next refresh,
	// though not yet due.
	if err := os.Remove(filepath.Join(h.k.volumeDir(p.UID, "kubernetes.io~projected", "all"), "token")); err != nil {
		t.Fatal(err)
	}
	h.step(DefaultSyncFrequency)
	h.sync(p)
	if len(requests) != 3 {
		t.Errorf("a removed token file was not fetched anew: %d requests", len(requests))
	}
	if out, _, _, _ := h.rt.ExecSync(ctx, id, []string{"cat", "/var/run/secrets/all/token"}, time.Second); string(out) != "token-for-proj" {
		t.Errorf("token after the file was removed: %q", out)
	}
}

func hasTokenRequestFor(actions []clienttesting.Action, sa string) bool {
	for _, a := range actions {
		if ca, ok := a.(clienttesting.CreateAction); ok && ca.GetSubresource() == "token" && ca.GetResource().Resource == "serviceaccounts" {
			if na, ok := a.(clienttesting.CreateActionImpl); ok && na.Name == sa {
				return true
			}
		}
	}
	return false
}

// A required source that is missing holds the pod in ContainerCreating.
func TestProjectedVolumeMissingSource(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.RootDir = t.TempDir() })
	p := h.create(h.pod("projmiss", func(p *v1.Pod) {
		p.Spec.Volumes = []v1.Volume{{Name: "all", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
			{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "nope"}}},
		}}}}}
	}))
	h.k.HandlePod(h.get(p))
	if _, err := h.k.syncPod(h.ctx, p.UID); err == nil || err.Error() != `MountVolume.SetUp failed for volume "all" : configmap "nope" not found` {
		t.Fatalf("sync error = %v", err)
	}
	if cs := cstatus(h.get(p), "app"); cs.State.Waiting == nil || cs.State.Waiting.Reason != "ContainerCreating" {
		t.Fatalf("status %+v", cs.State)
	}

	// Every failing source is named, as upstream's aggregate error.
	two := h.create(h.pod("projmiss2", func(p *v1.Pod) {
		p.Spec.Volumes = []v1.Volume{{Name: "all", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
			{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "nope"}}},
			{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{Path: "name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}},
			{Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: "gone"}}},
		}}}}}
	}))
	h.k.HandlePod(h.get(two))
	if _, err := h.k.syncPod(h.ctx, two.UID); err == nil || err.Error() != `MountVolume.SetUp failed for volume "all" : [configmap "nope" not found, secret "gone" not found]` {
		t.Fatalf("sync error with two missing sources = %v", err)
	}
}
