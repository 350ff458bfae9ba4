package cri

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// runToCompletion creates a Never-restarting pod running script and waits
// until it has ended; it returns the pod and its log.
func runToCompletion(t *testing.T, ns string, p *v1.Pod) (*v1.Pod, string) {
	t.Helper()
	p.Spec.RestartPolicy = v1.RestartPolicyNever
	createPod(t, ns, p)
	done := waitPod(t, ns, p.Name, 60*time.Second, "finished", func(p *v1.Pod) bool {
		return p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed
	})
	return done, mustKubectl(t, "logs", "-n", ns, p.Name)
}

// TestSecurityContextOnRealContainers: a pod's and its container's
// securityContext reach runc through CRI: runAsUser/runAsGroup/fsGroup
// set the process's ids, fsGroup owns the pod's volumes,
// readOnlyRootFilesystem makes / read-only,
// dropping ALL capabilities takes CAP_CHOWN from root, and
// allowPrivilegeEscalation=false sets no_new_privs.
func TestSecurityContextOnRealContainers(t *testing.T) {
	ns := newNamespace(t)
	t.Run("runAsUser", func(t *testing.T) {
		p := podSpec("uid", "id -u; id -g; id -G")
		p.Spec.SecurityContext = &v1.PodSecurityContext{RunAsUser: ptr(int64(1000)), RunAsGroup: ptr(int64(3000)), FSGroup: ptr(int64(2000))}
		done, logs := runToCompletion(t, ns, p)
		if done.Status.Phase != v1.PodSucceeded || logs != "1000\n3000\n3000 2000\n" {
			t.Fatalf("phase %s, id -u/-g/-G printed %q (want 1000, 3000, \"3000 2000\")", done.Status.Phase, logs)
		}
	})
	t.Run("fsGroup volume ownership", func(t *testing.T) {
		// As upstream's kubelet: the pod's volumes get group fsGroup, with
		// setgid directories, group read/write added for the emptyDir and
		// group read for the secret's files, so user 1000 (group 2000 a
		// supplemental one) writes the one and reads the other (mode 0600
		// root:root otherwise), and its files are of group 2000 (the
		// secret's k is a link into ..data: stat -L).
		if _, err := env.Client.CoreV1().Secrets(ns).Create(context.Background(), &v1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "owned"}, Data: map[string][]byte{"k": []byte("v")},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		p := podSpec("fsgroup", "stat -c '%g %a' /data; touch /data/f && stat -c '%g' /data/f; cat /sec/k; echo; stat -L -c '%g %a' /sec/k")
		p.Spec.SecurityContext = &v1.PodSecurityContext{RunAsUser: ptr(int64(1000)), FSGroup: ptr(int64(2000))}
		p.Spec.Volumes = []v1.Volume{
			{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
			{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "owned", DefaultMode: ptr(int32(0o600))}}},
		}
		p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}, {Name: "sec", MountPath: "/sec"}}
		done, logs := runToCompletion(t, ns, p)
		if want := "2000 2777\n2000\nv\n2000 640\n"; done.Status.Phase != v1.PodSucceeded || logs != want {
			t.Fatalf("phase %s, printed %q, want %q", done.Status.Phase, logs, want)
		}
	})
	t.Run("readOnlyRootFilesystem", func(t *testing.T) {
		p := podSpec("readonly", "if touch /probe 2>/dev/null; then echo writable; else echo read-only; fi")
		p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{ReadOnlyRootFilesystem: ptr(true)}
		if _, logs := runToCompletion(t, ns, p); logs != "read-only\n" {
			t.Fatalf("write to / with readOnlyRootFilesystem: %q", logs)
		}
		p = podSpec("writable", "if touch /probe 2>/dev/null; then echo writable; else echo read-only; fi")
		if _, logs := runToCompletion(t, ns, p); logs != "writable\n" {
			t.Fatalf("write to / without readOnlyRootFilesystem: %q", logs)
		}
	})
	t.Run("drop ALL capabilities", func(t *testing.T) {
		script := "touch /f; if chown 1000 /f 2>/dev/null; then echo chowned; else echo refused; fi; grep NoNewPrivs /proc/self/status"
		p := podSpec("nocaps", script)
		p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{
			Capabilities: &v1.Capabilities{Drop: []v1.Capability{"ALL"}}, AllowPrivilegeEscalation: ptr(false),
		}
		if _, logs := runToCompletion(t, ns, p); !strings.HasPrefix(logs, "refused\n") || !strings.Contains(logs, "NoNewPrivs:\t1") {
			t.Fatalf("chown without capabilities, no_new_privs: %q", logs)
		}
		p = podSpec("caps", script)
		if _, logs := runToCompletion(t, ns, p); !strings.HasPrefix(logs, "chowned\n") || !strings.Contains(logs, "NoNewPrivs:\t0") {
			t.Fatalf("chown with the default capabilities: %q", logs)
		}
	})
}

// TestRunAsNonRootRefusesRootImage: the busybox image sets no user, so it
// runs as root; with runAsNonRoot and no runAsUser the kubelet refuses to
// create the container: CreateContainerConfigError with upstream's message,
// and no container exists in containerd.
func TestRunAsNonRootRefusesRootImage(t *testing.T) {
	ns := newNamespace(t)
	p := podSpec("nonroot", "id -u")
	p.Spec.SecurityContext = &v1.PodSecurityContext{RunAsNonRoot: ptr(true)}
	created := createPod(t, ns, p)
	got := waitPod(t, ns, p.Name, 60*time.Second, "CreateContainerConfigError", func(p *v1.Pod) bool {
		cs := containerStatus(p, "main")
		return cs != nil && cs.State.Waiting != nil && cs.State.Waiting.Reason == "CreateContainerConfigError"
	})
	want := `container has runAsNonRoot and image will run as root (pod: "nonroot_` + ns + `(` + string(created.UID) + `)", container: main)`
	if msg := containerStatus(got, "main").State.Waiting.Message; msg != want {
		t.Fatalf("message %q, want %q", msg, want)
	}
	if cs := containersOf(t, ns); len(cs) != 0 {
		t.Fatalf("%d containers created for a refused container", len(cs))
	}
	// With a non-root runAsUser the same pod runs.
	p = podSpec("nonroot-uid", "id -u")
	p.Spec.SecurityContext = &v1.PodSecurityContext{RunAsNonRoot: ptr(true), RunAsUser: ptr(int64(1000))}
	if done, logs := runToCompletion(t, ns, p); done.Status.Phase != v1.PodSucceeded || logs != "1000\n" {
		t.Fatalf("runAsNonRoot with runAsUser 1000: phase %s, logs %q", done.Status.Phase, logs)
	}
}
