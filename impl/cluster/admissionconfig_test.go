package cluster

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// warningRecorder keeps the warnings a client was sent.
type warningRecorder struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warningRecorder) HandleWarningHeader(_ int, _ string, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, msg)
}

func (w *warningRecorder) list() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.msgs)
}

// TestAdmissionControlConfigFileRefused: a bad
// --admission-control-config-file stops the API server before it starts,
// with kube-apiserver's words.
func TestAdmissionControlConfigFileRefused(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "admission.yaml")
	if err := os.WriteFile(bad, []byte(`apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodSecurity
  configuration:
    apiVersion: pod-security.admission.config.k8s.io/v1
    kind: PodSecurityConfiguration
    defaults: {enforce: strict}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	relative := filepath.Join(dir, "webhooks.yaml")
	if err := os.WriteFile(relative, []byte(`apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: ValidatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: webhooks.kubeconfig
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{
		bad:                             `failed to initialize admission: failed to initialize admission plugin "PodSecurity": PodSecurity configuration error: Enforce.Level: must be one of privileged, baseline, restricted`,
		relative:                        `failed to initialize admission: couldn't init admission plugin "ValidatingAdmissionWebhook": kubeConfigFile: Invalid value: "webhooks.kubeconfig": must be an absolute file path`,
		filepath.Join(dir, "none.yaml"): `failed to initialize admission: failed to read plugin config: unable to read admission control configuration from "` + filepath.Join(dir, "none.yaml") + `"`,
	} {
		c, err := buildChain(AuthOptions{AdmissionControlConfigFile: file})
		if err == nil {
			c.close()
			t.Fatalf("%s: no error", file)
		}
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q, want %q", err, want)
		}
	}
}

// TestAdmissionControlConfigFilePodSecurity: a cluster started with an
// AdmissionConfiguration whose PodSecurity defaults enforce baseline
// refuses a privileged pod in an unlabelled namespace, and admits it in a
// namespace the configuration exempts (labelling which restricted warns
// that the label is ignored).
func TestAdmissionControlConfigFilePodSecurity(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "psa.yaml"), []byte(`apiVersion: pod-security.admission.config.k8s.io/v1
kind: PodSecurityConfiguration
defaults:
  enforce: baseline
exemptions:
  namespaces: [tools, tools2]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "admission.yaml")
	if err := os.WriteFile(file, []byte("apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: PodSecurity\n  path: psa.yaml\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, cs, stop := startForTest(t, Config{DataDir: t.TempDir(), BindAddress: "127.0.0.1:0", WatchCache: true, UnsafeNoFsync: true,
		Auth: AuthOptions{AdmissionControlConfigFile: file}})
	defer func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	}()
	privileged := func() *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "priv"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "c", Image: "busybox", SecurityContext: &corev1.SecurityContext{Privileged: new(true)}}}}}
	}
	_, err := cs.CoreV1().Pods("default").Create(ctx, privileged(), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `violates PodSecurity "baseline:latest": privileged`) {
		t.Fatalf("privileged pod in an unlabelled namespace: %v", err)
	}
	warnings := &warningRecorder{}
	wcfg := rest.CopyConfig(c.AdminConfig)
	wcfg.WarningHandler = warnings
	wcs, err := kubernetes.NewForConfig(wcfg)
	if err != nil {
		t.Fatal(err)
	}
	ns, err := wcs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tools"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ns.Labels = map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}
	if _, err := wcs.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if want := `namespace "tools" is exempt from Pod Security, and the policy (enforce=restricted:latest) will be ignored`; !slices.Contains(warnings.list(), want) {
		t.Fatalf("warnings %q, want %q", warnings.list(), want)
	}
	// Created labelled, as kube-apiserver's create warns too.
	if _, err := wcs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tools2",
		Labels: map[string]string{"pod-security.kubernetes.io/warn": "restricted"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if want := `namespace "tools2" is exempt from Pod Security, and the policy (warn=restricted:latest) will be ignored`; !slices.Contains(warnings.list(), want) {
		t.Fatalf("warnings %q, want %q", warnings.list(), want)
	}
	if _, err := cs.CoreV1().Pods("tools").Create(ctx, privileged(), metav1.CreateOptions{}); err != nil {
		t.Fatalf("privileged pod in the exempt namespace: %v", err)
	}
}
