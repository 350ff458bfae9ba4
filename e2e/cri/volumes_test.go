package cri

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestVolumes: an emptyDir is shared by two containers of a pod; configMap
// and secret volumes show their keys as files with the right content,
// written as upstream's atomic writer (each key a link into ..data, a
// link to a timestamped directory). A changed ConfigMap reaches the
// running container's volume mount, but not its subPath mount of one
// key, which keeps the content the container started with (upstream's
// subPath semantics).
func TestVolumes(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	if _, err := env.Client.CoreV1().ConfigMaps(ns).Create(ctx, &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"greeting": "hello configmap", "mode": "fast"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Client.CoreV1().Secrets(ns).Create(ctx, &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "creds"}, Data: map[string][]byte{"password": []byte("s3cr3t")},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := podSpec("volumes", "echo from-writer > /shared/note; exec sleep 3600")
	p.Spec.TerminationGracePeriodSeconds = ptr(int64(1))
	p.Spec.Volumes = []v1.Volume{
		{Name: "shared", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		{Name: "settings", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "settings"}}}},
		{Name: "creds", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "creds"}}},
	}
	p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "shared", MountPath: "/shared"}}
	p.Spec.Containers = append(p.Spec.Containers, v1.Container{
		Name: "reader", Image: busybox, Command: []string{"sh", "-c", "exec sleep 3600"},
		VolumeMounts: []v1.VolumeMount{
			{Name: "shared", MountPath: "/from-writer"},
			{Name: "settings", MountPath: "/etc/settings"},
			{Name: "creds", MountPath: "/etc/creds", ReadOnly: true},
			{Name: "settings", MountPath: "/etc/greeting", SubPath: "greeting"},
		},
	})
	createPod(t, ns, p)
	waitPod(t, ns, p.Name, 60*time.Second, "Running", isRunning)
	for cmd, want := range map[string]string{
		"cat /from-writer/note":                   "from-writer\n",
		"cat /etc/settings/greeting":              "hello configmap",
		"cat /etc/settings/mode":                  "fast",
		"cat /etc/creds/password":                 "s3cr3t",
		"echo x > /etc/creds/x || echo read-only": "read-only\n",
		"cat /etc/greeting":                       "hello configmap",
		"readlink /etc/settings/greeting":         "..data/greeting\n",
		"readlink /etc/settings/..data | grep -cE '^[.][.][0-9]{4}(_[0-9]{2}){5}[.][0-9]+$'": "1\n",
	} {
		var got string
		if !waitUntil(10*time.Second, func() bool {
			got, _ = kubectl(t, "exec", "-n", ns, p.Name, "-c", "reader", "--", "sh", "-c", cmd+" 2>/dev/null")
			return got == want
		}) {
			t.Errorf("%s in the reader container: %q, want %q", cmd, got, want)
		}
	}
	cm, err := env.Client.CoreV1().ConfigMaps(ns).Get(ctx, "settings", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["greeting"] = "hello again"
	if _, err := env.Client.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The kubelet rewrites the volume at its next sync period (20 s).
	var got string
	if !waitUntil(90*time.Second, func() bool {
		got, _ = kubectl(t, "exec", "-n", ns, p.Name, "-c", "reader", "--", "cat", "/etc/settings/greeting")
		return got == "hello again"
	}) {
		t.Fatalf("the updated ConfigMap in the running container: %q", got)
	}
	if got, _ = kubectl(t, "exec", "-n", ns, p.Name, "-c", "reader", "--", "cat", "/etc/greeting"); got != "hello configmap" {
		t.Errorf("the subPath mount after the update: %q, want the content the container started with", got)
	}
}
