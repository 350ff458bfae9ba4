package kubelet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/credentialprovider"
)

// credentialPlugin is a credential provider executable: it appends each
// request to $CALLS and answers with the file $RESPONSE.
const credentialPlugin = `#!/bin/sh
{ cat; echo; } >> "$CALLS"
cat "$RESPONSE"
`

// TestImageCredentialProviderPlugin: with --image-credential-provider-config
// and --image-credential-provider-bin-dir (upstream's exec plugins), a pod
// without pull secrets pulls with the plugin's credentials for the image's
// repository; the answer is reused for its cacheDuration (Registry: for
// every image of the registry) by the injected clock, then asked again; a
// pod's pull secrets are tried before the plugin's credentials, as
// upstream's keyring orders them; and an image pulled with the plugin's
// credentials, being the node's, is used by any pod without a pull
// (KubeletEnsureSecretPulledImages' NodePodsAccessible).
func TestImageCredentialProviderPlugin(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "example-creds"), []byte(credentialPlugin), 0o755); err != nil {
		t.Fatal(err)
	}
	calls, response, config := filepath.Join(dir, "calls"), filepath.Join(dir, "response"), filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(response, []byte(`{"apiVersion":"credentialprovider.kubelet.k8s.io/v1","kind":"CredentialProviderResponse",
"cacheKeyType":"Registry","cacheDuration":"1h","auth":{"*.example.com":{"username":"robot","password":"right"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(config, []byte(`apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
- name: example-creds
  matchImages: ["*.example.com"]
  defaultCacheDuration: 10m
  apiVersion: credentialprovider.kubelet.k8s.io/v1
  env:
  - {name: CALLS, value: `+calls+`}
  - {name: RESPONSE, value: `+response+`}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	providers, err := credentialprovider.Register(config, bin, func() time.Time { return now }, nil)
	if err != nil {
		t.Fatal(err)
	}
	h, rec := imageCredentialsHarness(t, t.TempDir(), func(c *Config) { c.ImageCredentialProviders = providers })
	asked := func() []string {
		b, _ := os.ReadFile(calls)
		return strings.Fields(string(b))
	}
	pod := func(name, image string, policy v1.PullPolicy, secrets ...string) *v1.Pod {
		return h.create(h.pod(name, func(p *v1.Pod) {
			p.Spec.Containers[0].Image, p.Spec.Containers[0].ImagePullPolicy = image, policy
			for _, s := range secrets {
				p.Spec.ImagePullSecrets = append(p.Spec.ImagePullSecrets, v1.LocalObjectReference{Name: s})
			}
		}))
	}
	const image = "registry.example.com/team/app:1.0"

	if cs := cstatus(h.sync(pod("first", image, v1.PullAlways)), "app"); cs.State.Running == nil {
		t.Fatalf("pod without pull secrets: %+v", cs.State)
	}
	auths := h.rt.PullAuths(image)
	if len(auths) != 1 || auths[0] == nil || auths[0].Username != "robot" || auths[0].Password != "right" {
		t.Fatalf("pulled with %+v, want the plugin's robot/right", auths)
	}
	want := `{"kind":"CredentialProviderRequest","apiVersion":"credentialprovider.kubelet.k8s.io/v1","image":"registry.example.com/team/app"}`
	if got := asked(); len(got) != 1 || got[0] != want {
		t.Fatalf("plugin asked %q, want %q", got, want)
	}

	// Cached for the registry for the response's hour.
	other := "registry.example.com/team/other:2"
	if cs := cstatus(h.sync(pod("second", other, v1.PullAlways)), "app"); cs.State.Running == nil || len(asked()) != 1 {
		t.Fatalf("another image of the registry: %+v after %d plugin runs, want the cached answer", cs.State, len(asked()))
	}
	now = now.Add(time.Hour + time.Second)
	if cs := cstatus(h.sync(pod("third", image, v1.PullAlways)), "app"); cs.State.Running == nil || len(asked()) != 2 {
		t.Fatalf("after the hour: %+v after %d plugin runs, want the plugin asked again", cs.State, len(asked()))
	}

	// The pod's secret first, then the plugin's credentials.
	if cs := cstatus(h.sync(pod("secret", image, v1.PullAlways, "wrong")), "app"); cs.State.Running == nil {
		t.Fatalf("pod with a wrong secret: %+v", cs.State)
	}
	auths = h.rt.PullAuths(image)
	if n := len(auths); n != 4 || auths[2].Password != "guess" || auths[3].Password != "right" {
		t.Fatalf("pulls %+v: want the secret's guess, then the plugin's right", auths)
	}

	// Pulled with the node's credentials: any pod may use the image.
	drain(rec)
	if cs := cstatus(h.sync(pod("present", other, v1.PullNever)), "app"); cs.State.Running == nil {
		t.Fatalf("Never pod of an image pulled with the plugin's credentials: %+v", cs.State)
	}
	wantEvents(t, drain(rec), `Normal Pulled Container image "`+other+`" already present on machine and can be accessed by the pod`)
	if n := len(h.rt.PullAuths(other)); n != 1 {
		t.Fatalf("%d pulls of %s, want 1", n, other)
	}
}
