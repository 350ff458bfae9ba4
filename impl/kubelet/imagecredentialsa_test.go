package kubelet

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/credentialprovider"
	"github.com/kubeproof/kubeproof/impl/kubelet/pullrecords"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/credentials"
)

// tokenCredentialPlugin is a credential provider executable in service
// account token mode: it appends each request to $CALLS and answers the
// registry's password only when the request carries a service account
// token (another one otherwise).
const tokenCredentialPlugin = `#!/bin/sh
req=$(cat)
printf '%s\n' "$req" >> "$CALLS"
case "$req" in
*'"serviceAccountToken":"'*) pass=right ;;
*) pass=no-token ;;
esac
printf '{"apiVersion":"credentialprovider.kubelet.k8s.io/v1","kind":"CredentialProviderResponse","cacheKeyType":"Registry","cacheDuration":"1h","auth":{"*.example.com":{"username":"robot","password":"%s"}}}' "$pass"
`

// TestImageCredentialProviderServiceAccountToken: a credential provider
// plugin with tokenAttributes (upstream's service account token mode) is
// asked with a token of the pulling pod's service account (the
// configured audience, bound to the pod) and the service account's
// annotations the configuration names; the image it pulls is recorded as
// that service account's, so that under the default policy a pod of
// another service account pulls it again (with its own token) while a pod
// of the same one uses it; a pod whose service account lacks a required
// annotation gets no credentials from the plugin.
func TestImageCredentialProviderServiceAccountToken(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "sa-creds"), []byte(tokenCredentialPlugin), 0o755); err != nil {
		t.Fatal(err)
	}
	calls, config := filepath.Join(dir, "calls"), filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(config, []byte(`apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
- name: sa-creds
  matchImages: ["*.example.com"]
  defaultCacheDuration: 10m
  apiVersion: credentialprovider.kubelet.k8s.io/v1
  tokenAttributes:
    serviceAccountTokenAudience: registry.example.com
    requireServiceAccount: true
    requiredServiceAccountAnnotationKeys: ["example.com/registry-role"]
    optionalServiceAccountAnnotationKeys: ["example.com/team"]
    cacheType: ServiceAccount
  env:
  - {name: CALLS, value: `+calls+`}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	providers, err := credentialprovider.Register(config, bin, func() time.Time { return now }, nil)
	if err != nil {
		t.Fatal(err)
	}
	h, rec := imageCredentialsHarness(t, t.TempDir(), func(c *Config) { c.ImageCredentialProviders = providers })
	var requests []*authenticationv1.TokenRequest
	h.client.PrependReactor("create", "serviceaccounts", func(a clienttesting.Action) (bool, runtime.Object, error) {
		ca := a.(clienttesting.CreateAction)
		if ca.GetSubresource() != "token" {
			return false, nil, nil
		}
		tr := ca.GetObject().(*authenticationv1.TokenRequest).DeepCopy()
		requests = append(requests, tr.DeepCopy())
		secs := int64(3600)
		tr.Spec.ExpirationSeconds = &secs
		tr.Status = authenticationv1.TokenRequestStatus{Token: "sa-token-" + tr.Spec.BoundObjectRef.Name, ExpirationTimestamp: metav1.NewTime(now.Add(time.Hour))}
		return true, tr, nil
	})
	for _, sa := range []*v1.ServiceAccount{
		{ObjectMeta: metav1.ObjectMeta{Name: "puller", UID: "uid-puller", Annotations: map[string]string{"example.com/registry-role": "reader", "example.com/team": "web", "unrelated": "x"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "builder", UID: "uid-builder", Annotations: map[string]string{"example.com/registry-role": "writer"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "plain", UID: "uid-plain"}},
	} {
		if _, err := h.client.CoreV1().ServiceAccounts("default").Create(h.ctx, sa, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	asked := func() []string {
		b, _ := os.ReadFile(calls)
		return strings.Fields(string(b))
	}
	const image = "registry.example.com/team/app:1.0"
	pod := func(name, sa string, policy v1.PullPolicy) *v1.Pod {
		return h.create(h.pod(name, func(p *v1.Pod) {
			p.Spec.Containers[0].Image, p.Spec.Containers[0].ImagePullPolicy = image, policy
			p.Spec.ServiceAccountName = sa
		}))
	}
	pulls := func() int { return len(h.rt.PullAuths(image)) }

	first := pod("first", "puller", v1.PullIfNotPresent)
	if cs := cstatus(h.sync(first), "app"); cs.State.Running == nil {
		t.Fatalf("pod of service account puller: %+v", cs.State)
	}
	if auths := h.rt.PullAuths(image); len(auths) != 1 || auths[0] == nil || auths[0].Password != "right" {
		t.Fatalf("pulled with %+v, want the plugin's answer for a token", auths)
	}
	want := `{"kind":"CredentialProviderRequest","apiVersion":"credentialprovider.kubelet.k8s.io/v1","image":"registry.example.com/team/app","serviceAccountToken":"sa-token-first","serviceAccountAnnotations":{"example.com/registry-role":"reader","example.com/team":"web"}}`
	if got := asked(); len(got) != 1 || got[0] != want {
		t.Fatalf("plugin asked %q, want %q", got, want)
	}
	wantReq := authenticationv1.TokenRequest{ObjectMeta: metav1.ObjectMeta{UID: "uid-puller"}, Spec: authenticationv1.TokenRequestSpec{
		Audiences: []string{"registry.example.com"}, BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "first", UID: first.UID}}}
	if len(requests) != 1 || !reflect.DeepEqual(*requests[0], wantReq) {
		t.Fatalf("token requests %+v, want %+v", requests, wantReq)
	}
	ref, err := h.rt.ImageStatus(h.ctx, &runtimeapi.ImageSpec{Image: image})
	if err != nil || ref == "" {
		t.Fatalf("image ref %q, %v", ref, err)
	}
	wantCreds := pullrecords.Credentials{KubernetesServiceAccounts: []pullrecords.ServiceAccount{{UID: "uid-puller", Namespace: "default", Name: "puller"}}}
	if r := h.k.pulls.Record(ref); r == nil || !reflect.DeepEqual(r.CredentialMapping["registry.example.com/team/app"], wantCreds) {
		t.Fatalf("pull record %+v, want the service account puller", r)
	}

	// Another service account: the image is not its to use, it pulls
	// again with its own token (the plugin asked again: the cached answer
	// is puller's).
	if cs := cstatus(h.sync(pod("second", "builder", v1.PullIfNotPresent)), "app"); cs.State.Running == nil || pulls() != 2 || len(asked()) != 2 {
		t.Fatalf("pod of service account builder: %+v after %d pulls and %d plugin runs, want a pull and a run", cs.State, pulls(), len(asked()))
	}
	if got := asked()[1]; !strings.Contains(got, `"serviceAccountToken":"sa-token-second"`) || !strings.Contains(got, `"serviceAccountAnnotations":{"example.com/registry-role":"writer"}`) {
		t.Fatalf("second request %s", got)
	}
	wantCreds.KubernetesServiceAccounts = append([]pullrecords.ServiceAccount{{UID: "uid-builder", Namespace: "default", Name: "builder"}}, wantCreds.KubernetesServiceAccounts...)
	if r := h.k.pulls.Record(ref); !reflect.DeepEqual(r.CredentialMapping["registry.example.com/team/app"], wantCreds) {
		t.Fatalf("pull record %+v, want both service accounts", r.CredentialMapping)
	}

	// The same service account as the first: the image is used, without a
	// pull, and the plugin's cached answer serves (a token of its own).
	drain(rec)
	if cs := cstatus(h.sync(pod("third", "puller", v1.PullNever)), "app"); cs.State.Running == nil || pulls() != 2 || len(asked()) != 2 {
		t.Fatalf("Never pod of service account puller: %+v after %d pulls and %d plugin runs", cs.State, pulls(), len(asked()))
	}
	wantEvents(t, drain(rec), `Normal Pulled Container image "`+image+`" already present on machine and can be accessed by the pod`)

	// A service account without the required annotation: the plugin is
	// not asked; a Never pod may not use the image, as if it were absent.
	if cs := cstatus(h.sync(pod("fourth", "plain", v1.PullNever)), "app"); cs.State.Waiting == nil || cs.State.Waiting.Reason != "ErrImageNeverPull" || len(asked()) != 2 {
		t.Fatalf("Never pod of service account plain: %+v after %d plugin runs", cs.State, len(asked()))
	}
}

// TestImageCredentialProviderTokenDroppedWithPod: the service account
// token a credential provider plugin was given for a pod is dropped once
// the pod is removed from the kubelet, as upstream's kubelet drops a
// pod's tokens from its token manager (DeleteServiceAccountToken): while
// the pod is there its token is reused, after it the same pod's ask
// requests a new one; another pod's token stays.
func TestImageCredentialProviderTokenDroppedWithPod(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "sa-creds"), []byte(tokenCredentialPlugin), 0o755); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(config, []byte(`apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
- name: sa-creds
  matchImages: ["*.example.com"]
  defaultCacheDuration: 10m
  apiVersion: credentialprovider.kubelet.k8s.io/v1
  tokenAttributes:
    serviceAccountTokenAudience: registry.example.com
    requireServiceAccount: true
    cacheType: ServiceAccount
  env:
  - {name: CALLS, value: `+filepath.Join(dir, "calls")+`}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	providers, err := credentialprovider.Register(config, bin, func() time.Time { return now }, nil)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := imageCredentialsHarness(t, t.TempDir(), func(c *Config) { c.ImageCredentialProviders = providers })
	requests := map[string]int{} // by bound pod
	h.client.PrependReactor("create", "serviceaccounts", func(a clienttesting.Action) (bool, runtime.Object, error) {
		ca := a.(clienttesting.CreateAction)
		if ca.GetSubresource() != "token" {
			return false, nil, nil
		}
		tr := ca.GetObject().(*authenticationv1.TokenRequest).DeepCopy()
		requests[tr.Spec.BoundObjectRef.Name]++
		secs := int64(3600)
		tr.Spec.ExpirationSeconds = &secs
		tr.Status = authenticationv1.TokenRequestStatus{Token: "sa-token-" + tr.Spec.BoundObjectRef.Name, ExpirationTimestamp: metav1.NewTime(now.Add(time.Hour))}
		return true, tr, nil
	})
	if _, err := h.client.CoreV1().ServiceAccounts("default").Create(h.ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "puller", UID: "uid-puller"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const image = "registry.example.com/team/app:1.0"
	pods := map[string]*v1.Pod{}
	for _, name := range []string{"gone", "stays"} {
		pods[name] = h.create(h.pod(name, func(p *v1.Pod) {
			p.Spec.Containers[0].Image, p.Spec.ServiceAccountName = image, "puller"
		}))
		if cs := cstatus(h.sync(pods[name]), "app"); cs.State.Running == nil {
			t.Fatalf("%s: %+v", name, cs.State)
		}
	}
	ask := func(name string) {
		t.Helper()
		p := pods[name]
		forPod := credentials.Pod{Namespace: p.Namespace, Name: p.Name, UID: string(p.UID), ServiceAccountName: "puller",
			API: serviceAccountAPI{ctx: h.ctx, client: h.client}}
		if got := providers.LookupTracked(forPod, "registry.example.com/team/app"); len(got) != 1 {
			t.Fatalf("%s: credentials %+v", name, got)
		}
	}
	ask("gone")
	ask("stays")
	if requests["gone"] != 1 || requests["stays"] != 1 {
		t.Fatalf("token requests %v while the pods are there, want one each", requests)
	}

	if err := h.client.CoreV1().Pods("default").Delete(h.ctx, "gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.sync(pods["gone"])
	h.k.mu.Lock()
	_, kept := h.k.pods[pods["gone"].UID]
	h.k.mu.Unlock()
	if kept {
		t.Fatal("the deleted pod is still the kubelet's")
	}
	ask("stays")
	ask("gone")
	if requests["gone"] != 2 || requests["stays"] != 1 {
		t.Fatalf("token requests %v after gone was removed, want 2 for gone (its token dropped) and 1 for stays", requests)
	}
}

// TestForgetPodCredentialsAllocs: a pod's removal costs no allocation
// for its credentials, with credential providers or without.
func TestForgetPodCredentialsAllocs(t *testing.T) {
	h := newHarness(t, nil)
	if n := testing.AllocsPerRun(100, func() { h.k.forgetPodCredentials("uid-x") }); n != 0 {
		t.Errorf("without providers: %v allocations", n)
	}
	h2 := newHarness(t, func(c *Config) { c.ImageCredentialProviders = credentialprovider.NewProviders() })
	if n := testing.AllocsPerRun(100, func() { h2.k.forgetPodCredentials("uid-x") }); n != 0 {
		t.Errorf("with providers: %v allocations", n)
	}
}
