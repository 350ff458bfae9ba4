package admission

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
)

// Service account defaults (kube-apiserver's ServiceAccount plugin).
const (
	// DefaultServiceAccountName is the service account a pod that names
	// none runs as; the service account controller creates it in every
	// namespace.
	DefaultServiceAccountName = "default"
	// ServiceAccountTokenMountPath is where the token, CA and namespace
	// files are mounted in every container.
	ServiceAccountTokenMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"
	// serviceAccountVolumePrefix starts the name of the projected volume.
	serviceAccountVolumePrefix = "kube-api-access-"
	// RootCAConfigMapName is the ConfigMap of each namespace holding the
	// cluster's CA bundle (key ca.crt), published by the root CA publisher.
	RootCAConfigMapName = "kube-root-ca.crt"
	// mirrorPodAnnotation marks a static pod's mirror.
	mirrorPodAnnotation = "kubernetes.io/config.mirror"
	// tokenExpirationSeconds is the projected token's requested lifetime
	// (kube-apiserver's 1 h plus 7 s, which marks the tokens it extends).
	tokenExpirationSeconds = int64(3607)
)

// ServiceAccountGetter reads a service account; a missing one is NotFound.
// fresh asks for a quorum read.
type ServiceAccountGetter func(ctx context.Context, namespace, name string, fresh bool) (*corev1.ServiceAccount, error)

// ServiceAccount gives every new pod a service account ("default" when it
// names none), rejects pods whose service account does not exist, copies
// the account's imagePullSecrets, and mounts the API credentials — a
// projected kube-api-access-<random> volume with a bound token, the
// cluster CA and the namespace — at ServiceAccountTokenMountPath in every
// container unless automountServiceAccountToken is false (pod first, then
// service account). Mirror pods may not reference service accounts or
// secrets.
type ServiceAccount struct {
	Get ServiceAccountGetter
	// suffix makes the random part of the volume name (tests fix it).
	suffix func() string
	// retryWait is the pause between quorum reads of a "default" service
	// account not found yet (100-200 ms, as kube-apiserver; tests shorten it).
	retryWait func() time.Duration
}

// defaultAccountAttempts is how many quorum reads wait for the service
// account controller to create "default" in a new namespace.
const defaultAccountAttempts = 10

func newServiceAccount(d *deps) (any, error) {
	c, err := d.cache(saResource, func() runtime.Object { return &corev1.ServiceAccountList{} })
	if err != nil {
		return nil, err
	}
	return &ServiceAccount{Get: func(ctx context.Context, namespace, name string, fresh bool) (*corev1.ServiceAccount, error) {
		o, err := c.get(ctx, namespace, name, fresh, &corev1.ServiceAccount{})
		if err != nil {
			return nil, err
		}
		return o.(*corev1.ServiceAccount), nil
	}}, nil
}

// Admit implements Mutator.
func (p *ServiceAccount) Admit(ctx context.Context, a *Attributes) error {
	pod := podOf(a)
	if pod == nil || a.Operation != Create {
		return nil
	}
	if _, mirror := pod.Annotations[mirrorPodAnnotation]; mirror {
		return p.Validate(ctx, a)
	}
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = DefaultServiceAccountName
		// The deprecated alias, which pod defaulting (already run) keeps
		// equal, as kube-apiserver's v1 conversion does on every read.
		pod.Spec.DeprecatedServiceAccount = DefaultServiceAccountName
	}
	sa, err := p.lookup(ctx, a.Namespace, pod.Spec.ServiceAccountName)
	if err != nil {
		return forbidden(a, fmt.Errorf("error looking up service account %s/%s: %w", a.Namespace, pod.Spec.ServiceAccountName, err))
	}
	suffix := rand.String(5)
	if p.suffix != nil {
		suffix = p.suffix()
	}
	applyServiceAccount(pod, sa, serviceAccountVolumePrefix+suffix)
	return nil
}

// lookup reads the service account from the cache, then with a quorum
// read: one created just before the pod may not be cached yet. "default"
// is read up to ten times, 100-200 ms apart, as the service account
// controller creates it shortly after the namespace.
func (p *ServiceAccount) lookup(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	sa, err := p.Get(ctx, namespace, name, false)
	if !apierrors.IsNotFound(err) {
		return sa, err
	}
	attempts := 1
	if name == DefaultServiceAccountName {
		attempts = defaultAccountAttempts
	}
	wait := p.retryWait
	if wait == nil {
		wait = func() time.Duration { return time.Duration(100+rand.Intn(100)) * time.Millisecond }
	}
	for i := 0; i < attempts; i++ {
		if i > 0 {
			t := time.NewTimer(wait())
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			case <-t.C:
			}
		}
		sa, err = p.Get(ctx, namespace, name, true)
		if !apierrors.IsNotFound(err) {
			return sa, err
		}
	}
	return nil, apierrors.NewNotFound(corev1.Resource("serviceaccount"), name)
}

// applyServiceAccount is the pure mutation of a pod by its service account.
func applyServiceAccount(pod *corev1.Pod, sa *corev1.ServiceAccount, volumeName string) {
	if len(pod.Spec.ImagePullSecrets) == 0 && len(sa.ImagePullSecrets) != 0 {
		pod.Spec.ImagePullSecrets = append([]corev1.LocalObjectReference(nil), sa.ImagePullSecrets...)
	}
	if !automount(pod, sa) {
		return
	}
	existing := ""
	for _, v := range pod.Spec.Volumes {
		if strings.HasPrefix(v.Name, serviceAccountVolumePrefix) {
			existing = v.Name
			break
		}
	}
	if existing != "" {
		volumeName = existing
	}
	mount := corev1.VolumeMount{Name: volumeName, ReadOnly: true, MountPath: ServiceAccountTokenMountPath}
	needed := false
	mountIn := func(cs []corev1.Container) {
		for i := range cs {
			if !mountsAt(&cs[i], ServiceAccountTokenMountPath) {
				cs[i].VolumeMounts = append(cs[i].VolumeMounts, mount)
				needed = true
			}
		}
	}
	mountIn(pod.Spec.InitContainers)
	mountIn(pod.Spec.Containers)
	if needed && existing == "" {
		pod.Spec.Volumes = append(pod.Spec.Volumes, apiAccessVolume(volumeName))
	}
}

func mountsAt(c *corev1.Container, path string) bool {
	for _, m := range c.VolumeMounts {
		if m.MountPath == path {
			return true
		}
	}
	return false
}

// automount: the pod's setting wins, then the service account's; on by
// default.
func automount(pod *corev1.Pod, sa *corev1.ServiceAccount) bool {
	if pod.Spec.AutomountServiceAccountToken != nil {
		return *pod.Spec.AutomountServiceAccountToken
	}
	if sa.AutomountServiceAccountToken != nil {
		return *sa.AutomountServiceAccountToken
	}
	return true
}

// apiAccessVolume is the projected volume with the pod's bound token, the
// cluster CA and its namespace.
func apiAccessVolume(name string) corev1.Volume {
	mode := int32(0o644)
	expiration := tokenExpirationSeconds
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		DefaultMode: &mode,
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &expiration}},
			{ConfigMap: &corev1.ConfigMapProjection{
				LocalObjectReference: corev1.LocalObjectReference{Name: RootCAConfigMapName},
				Items:                []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
			}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{
				Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"},
			}}}},
		},
	}}}
}

// Validate implements Validator: a new pod's service account exists, and
// mirror pods reference no service account and no secret.
func (p *ServiceAccount) Validate(ctx context.Context, a *Attributes) error {
	pod := podOf(a)
	if pod == nil || a.Operation != Create {
		return nil
	}
	if _, mirror := pod.Annotations[mirrorPodAnnotation]; mirror {
		if err := mirrorPodReferences(pod); err != nil {
			return forbidden(a, err)
		}
		return nil
	}
	if pod.Spec.ServiceAccountName == "" {
		return nil
	}
	if _, err := p.lookup(ctx, a.Namespace, pod.Spec.ServiceAccountName); err != nil {
		return forbidden(a, fmt.Errorf("error looking up service account %s/%s: %w", a.Namespace, pod.Spec.ServiceAccountName, err))
	}
	return nil
}

// mirrorPodReferences: what a static pod's mirror may not use, since the
// kubelet that created it was not authorized for it.
func mirrorPodReferences(pod *corev1.Pod) error {
	if pod.Spec.ServiceAccountName != "" {
		return errors.New("a mirror pod may not reference service accounts")
	}
	for _, v := range pod.Spec.Volumes {
		if v.Secret != nil {
			return errors.New("a mirror pod may not reference secrets")
		}
		if v.Projected != nil {
			for _, src := range v.Projected.Sources {
				if src.Secret != nil {
					return errors.New("a mirror pod may not reference secrets")
				}
				if src.ServiceAccountToken != nil {
					return errors.New("a mirror pod may not use ServiceAccountToken volume projections")
				}
			}
		}
	}
	var err error
	check := func(c *corev1.Container) {
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && err == nil {
				err = errors.New("a mirror pod may not reference secrets")
			}
		}
		for _, e := range c.EnvFrom {
			if e.SecretRef != nil && err == nil {
				err = errors.New("a mirror pod may not reference secrets")
			}
		}
	}
	for i := range pod.Spec.InitContainers {
		check(&pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		check(&pod.Spec.Containers[i])
	}
	return err
}
