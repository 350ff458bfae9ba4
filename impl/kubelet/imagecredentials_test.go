package kubelet

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// imageCredentialsHarness: a registry that wants robot/right, and pull
// secrets "a" and "same" with those credentials (distinct secrets of the
// same contents) and "wrong" with others.
func imageCredentialsHarness(t *testing.T, root string, more ...func(*Config)) (*harness, *record.FakeRecorder) {
	rec := record.NewFakeRecorder(1000)
	h := newHarness(t, func(c *Config) {
		c.RootDir, c.Recorder = root, rec
		for _, f := range more {
			f(c)
		}
	})
	h.rt.RequireCredentials("registry.example.com", "robot", "right")
	for _, s := range []*v1.Secret{
		pullSecret("a", "registry.example.com", "robot", "right"),
		pullSecret("same", "registry.example.com", "robot", "right"),
		pullSecret("wrong", "registry.example.com", "robot", "guess"),
	} {
		s.UID = types.UID("uid-" + s.Name)
		if _, err := h.client.CoreV1().Secrets("default").Create(h.ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return h, rec
}

// TestPresentImageVerified: as upstream's kubelet with
// KubeletEnsureSecretPulledImages (on by default since 1.35) and the
// default NeverVerifyPreloadedImages policy, an image the kubelet pulled
// with a pod's pull secret is not used by pods without the credentials:
// IfNotPresent pulls again with the pod's own credentials (and fails
// without the right ones), Never fails as if the image were absent; pods
// with that secret, or another of the same contents, use it.
func TestPresentImageVerified(t *testing.T) {
	h, rec := imageCredentialsHarness(t, t.TempDir())
	const image = "registry.example.com/team/app:1.0"
	pod := func(name string, policy v1.PullPolicy, secrets ...string) *v1.Pod {
		return h.create(h.pod(name, func(p *v1.Pod) {
			p.Spec.Containers[0].Image, p.Spec.Containers[0].ImagePullPolicy = image, policy
			for _, s := range secrets {
				p.Spec.ImagePullSecrets = append(p.Spec.ImagePullSecrets, v1.LocalObjectReference{Name: s})
			}
		}))
	}
	pulls := func() int { return len(h.rt.PullAuths(image)) }

	if cs := cstatus(h.sync(pod("first", v1.PullIfNotPresent, "a")), "app"); cs.State.Running == nil || pulls() != 1 {
		t.Fatalf("first pod: %+v after %d pulls", cs.State, pulls())
	}
	drain(rec)

	// Without the secret: pulled again anonymously, and refused.
	cs := cstatus(h.sync(pod("anonymous", v1.PullIfNotPresent)), "app")
	if w := cs.State.Waiting; w == nil || w.Reason != "ErrImagePull" || pulls() != 2 || h.rt.PullAuths(image)[1] != nil {
		t.Fatalf("pod without the secret: %+v after %d pulls", cs.State, pulls())
	}
	wantEvents(t, drain(rec), `Normal Pulling Pulling image "`+image+`"`, "Warning Failed Error: ErrImagePull")

	// With wrong credentials: pulled again with them, and refused.
	cs = cstatus(h.sync(pod("wrong", v1.PullIfNotPresent, "wrong")), "app")
	if w := cs.State.Waiting; w == nil || w.Reason != "ErrImagePull" || pulls() != 3 || h.rt.PullAuths(image)[2].Password != "guess" {
		t.Fatalf("pod with other credentials: %+v after %d pulls", cs.State, pulls())
	}
	drain(rec)

	// Never: as if the image were absent.
	cs = cstatus(h.sync(pod("never", v1.PullNever, "wrong")), "app")
	if w := cs.State.Waiting; w == nil || w.Reason != "ErrImageNeverPull" || w.Message != `Container image "`+image+`" is not present with pull policy of Never` || pulls() != 3 {
		t.Fatalf("Never pod with other credentials: %+v after %d pulls", cs.State, pulls())
	}
	wantEvents(t, drain(rec), `Warning ErrImageNeverPull Container image "`+image+`" is not present with pull policy of Never`, "Warning Failed Error: ErrImageNeverPull")

	// The secret that pulled it, and another of the same contents: used
	// without a pull, Never too.
	for _, p := range []*v1.Pod{pod("again", v1.PullIfNotPresent, "wrong", "a"), pod("same", v1.PullIfNotPresent, "same"), pod("never-same", v1.PullNever, "same")} {
		if cs := cstatus(h.sync(p), "app"); cs.State.Running == nil || pulls() != 3 {
			t.Fatalf("pod %s: %+v after %d pulls", p.Name, cs.State, pulls())
		}
		wantEvents(t, drain(rec), `Normal Pulled Container image "`+image+`" already present on machine and can be accessed by the pod`)
	}
}

// TestPresentImageRecordsSurviveRestart: the records are kept under the
// root directory: a kubelet started again on it still verifies the image
// (upstream's <root>/image_manager).
func TestPresentImageRecordsSurviveRestart(t *testing.T) {
	root := t.TempDir()
	h, _ := imageCredentialsHarness(t, root)
	const image = "registry.example.com/team/app:1.0"
	pod := func(name string, secrets ...string) *v1.Pod {
		return h.create(h.pod(name, func(p *v1.Pod) {
			p.Spec.Containers[0].Image = image
			for _, s := range secrets {
				p.Spec.ImagePullSecrets = append(p.Spec.ImagePullSecrets, v1.LocalObjectReference{Name: s})
			}
		}))
	}
	if cs := cstatus(h.sync(pod("first", "a")), "app"); cs.State.Running == nil {
		t.Fatalf("first pod: %+v", cs.State)
	}
	h.k = h.newKubelet(func(c *Config) { c.RootDir = root })
	cs := cstatus(h.sync(pod("anonymous")), "app")
	if w := cs.State.Waiting; w == nil || w.Reason != "ErrImagePull" || len(h.rt.PullAuths(image)) != 2 {
		t.Fatalf("pod without the secret after a restart: %+v after %d pulls", cs.State, len(h.rt.PullAuths(image)))
	}
}

// TestPreloadedAndPublicImagesShared: an image the kubelet did not pull
// (preloaded) is used by any pod, even of a registry that wants
// credentials, and so is one the kubelet pulled without a pod's
// credentials.
func TestPreloadedAndPublicImagesShared(t *testing.T) {
	h, rec := imageCredentialsHarness(t, t.TempDir())
	const preloaded = "registry.example.com/base:1"
	if _, err := h.rt.PullImageWithAuth(h.ctx, &runtimeapi.ImageSpec{Image: preloaded}, &runtimeapi.AuthConfig{Username: "robot", Password: "right"}); err != nil {
		t.Fatal(err)
	}
	for i, image := range []string{preloaded, "quay.example/public:2"} {
		p := h.create(h.pod("p"+string(rune('0'+i)), func(p *v1.Pod) {
			p.Spec.Containers[0].Image, p.Spec.Containers[0].ImagePullPolicy = image, v1.PullIfNotPresent
		}))
		if cs := cstatus(h.sync(p), "app"); cs.State.Running == nil {
			t.Fatalf("%s: %+v", image, cs.State)
		}
		drain(rec)
		q := h.create(h.pod("q"+string(rune('0'+i)), func(p *v1.Pod) {
			p.Spec.Containers[0].Image, p.Spec.Containers[0].ImagePullPolicy = image, v1.PullIfNotPresent
			p.Spec.ImagePullSecrets = []v1.LocalObjectReference{{Name: "wrong"}}
		}))
		if cs := cstatus(h.sync(q), "app"); cs.State.Running == nil {
			t.Fatalf("%s, second pod: %+v", image, cs.State)
		}
		wantEvents(t, drain(rec), `Normal Pulled Container image "`+image+`" already present on machine and can be accessed by the pod`)
	}
	if n := len(h.rt.PullAuths("quay.example/public:2")); n != 1 {
		t.Fatalf("%d pulls of the public image, want 1", n)
	}
}
