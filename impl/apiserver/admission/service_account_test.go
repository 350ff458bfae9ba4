package admission

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func saPlugin(sas ...*corev1.ServiceAccount) (*ServiceAccount, *int) {
	fresh := new(int)
	return &ServiceAccount{
		Get: func(_ context.Context, ns, name string, isFresh bool) (*corev1.ServiceAccount, error) {
			if isFresh {
				*fresh++
			}
			for _, sa := range sas {
				if sa.Namespace == ns && sa.Name == name {
					return sa, nil
				}
			}
			return nil, apierrors.NewNotFound(corev1.Resource("serviceaccounts"), name)
		},
		suffix:    func() string { return "abcde" },
		retryWait: func() time.Duration { return 0 },
	}, fresh
}

func sa(name string) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
}

func TestServiceAccountDefaultsAndMounts(t *testing.T) {
	withSecrets := sa("builder")
	withSecrets.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry"}}
	p, _ := saPlugin(sa("default"), withSecrets)
	ctx := context.Background()

	pod := newPod("p", corev1.Container{Name: "a", Image: "x"})
	pod.Spec.InitContainers = []corev1.Container{{Name: "i", Image: "x"}}
	a := podCreate(pod)
	if err := p.Admit(ctx, a); err != nil {
		t.Fatal(err)
	}
	if pod.Spec.ServiceAccountName != "default" {
		t.Fatalf("service account %q", pod.Spec.ServiceAccountName)
	}
	// kube-apiserver's v1 pods always carry the deprecated alias too.
	if pod.Spec.DeprecatedServiceAccount != "default" {
		t.Fatalf("deprecated serviceAccount %q, want the defaulted name", pod.Spec.DeprecatedServiceAccount)
	}
	if len(pod.Spec.Volumes) != 1 || pod.Spec.Volumes[0].Name != "kube-api-access-abcde" {
		t.Fatalf("volumes %+v", pod.Spec.Volumes)
	}
	src := pod.Spec.Volumes[0].Projected
	if src == nil || len(src.Sources) != 3 || src.Sources[0].ServiceAccountToken.Path != "token" ||
		*src.Sources[0].ServiceAccountToken.ExpirationSeconds != 3607 ||
		src.Sources[1].ConfigMap.Name != "kube-root-ca.crt" || src.Sources[1].ConfigMap.Items[0].Key != "ca.crt" ||
		src.Sources[2].DownwardAPI.Items[0].FieldRef.FieldPath != "metadata.namespace" || *src.DefaultMode != 0o644 {
		t.Fatalf("projected volume %+v", src)
	}
	for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
		if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != ServiceAccountTokenMountPath || !c.VolumeMounts[0].ReadOnly || c.VolumeMounts[0].Name != "kube-api-access-abcde" {
			t.Fatalf("container %s mounts %+v", c.Name, c.VolumeMounts)
		}
	}
	if err := p.Validate(ctx, a); err != nil {
		t.Fatal(err)
	}

	// imagePullSecrets come from the service account when the pod has none.
	pod2 := newPod("p2")
	pod2.Spec.ServiceAccountName = "builder"
	if err := p.Admit(ctx, podCreate(pod2)); err != nil {
		t.Fatal(err)
	}
	if len(pod2.Spec.ImagePullSecrets) != 1 || pod2.Spec.ImagePullSecrets[0].Name != "registry" {
		t.Fatalf("pull secrets %+v", pod2.Spec.ImagePullSecrets)
	}

	// A container that already mounts something at the path keeps it.
	pod3 := newPod("p3", corev1.Container{Name: "a", Image: "x", VolumeMounts: []corev1.VolumeMount{{Name: "mine", MountPath: ServiceAccountTokenMountPath}}})
	pod3.Spec.Volumes = []corev1.Volume{{Name: "mine"}}
	if err := p.Admit(ctx, podCreate(pod3)); err != nil {
		t.Fatal(err)
	}
	if len(pod3.Spec.Volumes) != 1 || len(pod3.Spec.Containers[0].VolumeMounts) != 1 {
		t.Fatalf("pod with own mount changed: %+v", pod3.Spec)
	}
}

func TestServiceAccountAutomountOptOut(t *testing.T) {
	off := sa("quiet")
	no := false
	off.AutomountServiceAccountToken = &no
	p, _ := saPlugin(sa("default"), off)
	yes := true
	tests := []struct {
		name      string
		account   string
		podSays   *bool
		wantMount bool
	}{
		{"default mounts", "", nil, true},
		{"service account opts out", "quiet", nil, false},
		{"pod overrides service account", "quiet", &yes, true},
		{"pod opts out", "", &no, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := newPod("p")
			pod.Spec.ServiceAccountName, pod.Spec.AutomountServiceAccountToken = tt.account, tt.podSays
			if err := p.Admit(context.Background(), podCreate(pod)); err != nil {
				t.Fatal(err)
			}
			if got := len(pod.Spec.Volumes) == 1; got != tt.wantMount {
				t.Fatalf("mounted %v, want %v", got, tt.wantMount)
			}
		})
	}
}

func TestServiceAccountMissing(t *testing.T) {
	p, fresh := saPlugin()
	err := p.Admit(context.Background(), podCreate(newPod("p")))
	wantForbidden(t, err, `pods "p" is forbidden: error looking up service account ns/default: serviceaccount "default" not found`)
	if *fresh != 10 {
		t.Fatalf("a missing default service account is read again 10 times, got %d", *fresh)
	}
	*fresh = 0
	named := newPod("p")
	named.Spec.ServiceAccountName = "builder"
	wantForbidden(t, p.Admit(context.Background(), podCreate(named)), `error looking up service account ns/builder: serviceaccount "builder" not found`)
	if *fresh != 1 {
		t.Fatalf("a miss must be confirmed with one quorum read, got %d", *fresh)
	}
	// A generated name is reported by its prefix, as Kubernetes does.
	pod := newPod("")
	pod.GenerateName = "web-"
	wantForbidden(t, p.Admit(context.Background(), podCreate(pod)), `pods "web-" is forbidden`)
}

func TestServiceAccountMirrorPods(t *testing.T) {
	p, _ := saPlugin(sa("default"))
	tests := []struct {
		name   string
		mutate func(*corev1.Pod)
		want   string
	}{
		{"plain mirror pod", func(*corev1.Pod) {}, ""},
		{"service account", func(p *corev1.Pod) { p.Spec.ServiceAccountName = "default" }, "a mirror pod may not reference service accounts"},
		{"secret volume", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}}}
		}, "a mirror pod may not reference secrets"},
		{"secret env", func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "k"}}}}
		}, "a mirror pod may not reference secrets"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := newPod("m")
			pod.Annotations = map[string]string{mirrorPodAnnotation: "x"}
			tt.mutate(pod)
			err := p.Admit(context.Background(), podCreate(pod))
			wantForbidden(t, err, tt.want)
			if tt.want == "" && (pod.Spec.ServiceAccountName != "" || len(pod.Spec.Volumes) != 0) {
				t.Fatalf("mirror pod mutated: %+v", pod.Spec)
			}
		})
	}
}

func TestServiceAccountIgnoresUpdates(t *testing.T) {
	p, _ := saPlugin()
	a := podCreate(newPod("p"))
	a.Operation = Update
	if err := p.Admit(context.Background(), a); err != nil || strings.Contains(a.Object.(*corev1.Pod).Spec.ServiceAccountName, "default") {
		t.Fatalf("update: %v", err)
	}
}
