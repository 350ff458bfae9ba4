package controllermanager

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeproof/kubeproof/impl/controller/serviceaccount"
	"github.com/kubeproof/kubeproof/impl/intern"
)

// The controller manager's shared informers hold every pod, node,
// ReplicaSet and Deployment of the cluster, so objects are trimmed before
// they enter the caches (an informer transform, as kube-controller-manager
// strips managedFields):
//
//   - every object loses metadata.managedFields, which no controller reads;
//     a write built from a cached object sends none, and the API server
//     keeps the stored ones (an update without managedFields does not
//     reset them);
//   - a pod also loses what no controller here reads of its spec: volumes
//     but their secret references, and of its containers everything but
//     name, image, resources, restartPolicy (quota usage, BestEffort scope
//     and sidecar detection read those), ports (the endpoints controller
//     resolves a service's named target ports through them) and secret
//     references in env and envFrom. The secret references (with
//     imagePullSecrets) are what the legacy service account token cleaner
//     reads to know which token secrets pods still use, as upstream's
//     reads them from its pod informer: a volume naming a secret stays
//     whole, a projected one keeps only its secret sources, and an env
//     entry keeps only its name and secretKeyRef. What controllers read of a pod's
//     spec — nodeName, tolerations, priority and priorityClassName,
//     activeDeadlineSeconds, overhead, pod-level resources, schedulerName,
//     and hostname and subdomain (an endpoint address's hostname) — stays,
//     and so do its
//     whole metadata (labels, annotations such as
//     controller.kubernetes.io/pod-deletion-cost, owner references,
//     finalizers) and its whole status: the node lifecycle and disruption
//     controllers write a cached pod's status back through pods/status,
//     which takes the status (and labels and annotations) from the request
//     but keeps the stored spec.
//
// Cached objects are read-only (every controller copies before it
// changes one), so a trimmed pod is never sent as a spec, and pods share
// their repeated values (labels, resources, tolerations, names; see
// impl/intern) through the table of the manager's informers.

// cacheTransform returns the controller manager's informer transform,
// interning pods' repeated values in table.
func cacheTransform(table *intern.Table) cache.TransformFunc {
	return func(obj any) (any, error) {
		obj, err := trimForCache(obj)
		if p, ok := obj.(*corev1.Pod); ok {
			table.Pod(p)
		}
		return obj, err
	}
}

// trimForCache trims obj as described above. It changes obj in place: an
// informer hands its transform a freshly decoded object no one else holds.
// Tombstones pass through unchanged.
func trimForCache(obj any) (any, error) {
	switch o := obj.(type) {
	case cache.DeletedFinalStateUnknown:
		return obj, nil
	case *corev1.Pod:
		o.ManagedFields = nil
		trimPodSpec(&o.Spec)
	case metav1.Object:
		o.SetManagedFields(nil)
	}
	return obj, nil
}

// trimPodSpec keeps the fields of a pod's spec the controllers read.
func trimPodSpec(s *corev1.PodSpec) {
	*s = corev1.PodSpec{
		InitContainers:                trimContainers(s.InitContainers),
		Containers:                    trimContainers(s.Containers),
		EphemeralContainers:           trimEphemeralContainers(s.EphemeralContainers),
		RestartPolicy:                 s.RestartPolicy,
		TerminationGracePeriodSeconds: s.TerminationGracePeriodSeconds,
		ActiveDeadlineSeconds:         s.ActiveDeadlineSeconds,
		NodeSelector:                  s.NodeSelector,
		ServiceAccountName:            s.ServiceAccountName,
		NodeName:                      s.NodeName,
		Hostname:                      s.Hostname,
		Subdomain:                     s.Subdomain,
		HostNetwork:                   s.HostNetwork,
		Affinity:                      s.Affinity,
		SchedulerName:                 s.SchedulerName,
		Tolerations:                   s.Tolerations,
		PriorityClassName:             s.PriorityClassName,
		Priority:                      s.Priority,
		ReadinessGates:                s.ReadinessGates,
		RuntimeClassName:              s.RuntimeClassName,
		PreemptionPolicy:              s.PreemptionPolicy,
		Overhead:                      s.Overhead,
		SchedulingGates:               s.SchedulingGates,
		Resources:                     s.Resources,
		ImagePullSecrets:              s.ImagePullSecrets,
		Volumes:                       trimVolumes(s.Volumes),
	}
}

// trimVolumes keeps the volumes that name a secret (PodSecretNames reads
// them), projected ones with only their secret sources.
func trimVolumes(vs []corev1.Volume) []corev1.Volume {
	var out []corev1.Volume
	for i := range vs {
		v := &vs[i].VolumeSource
		switch {
		case v.Projected != nil:
			var srcs []corev1.VolumeProjection
			for _, src := range v.Projected.Sources {
				if src.Secret != nil {
					srcs = append(srcs, corev1.VolumeProjection{Secret: src.Secret})
				}
			}
			if srcs != nil {
				out = append(out, corev1.Volume{Name: vs[i].Name, VolumeSource: corev1.VolumeSource{
					Projected: &corev1.ProjectedVolumeSource{Sources: srcs, DefaultMode: v.Projected.DefaultMode}}})
			}
		case volumeNamesSecret(v):
			out = append(out, vs[i])
		}
	}
	return out
}

// volumeNamesSecret reports whether v names a secret.
func volumeNamesSecret(v *corev1.VolumeSource) bool {
	names := false
	serviceaccount.VolumeSecretNames(v, func(string) { names = true })
	return names
}

// trimEnv keeps the env entries read from a secret, with only their name
// and secretKeyRef.
func trimEnv(env []corev1.EnvVar) []corev1.EnvVar {
	var out []corev1.EnvVar
	for _, e := range env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			out = append(out, corev1.EnvVar{Name: e.Name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: e.ValueFrom.SecretKeyRef}})
		}
	}
	return out
}

// trimEnvFrom keeps the envFrom entries read from a secret.
func trimEnvFrom(envFrom []corev1.EnvFromSource) []corev1.EnvFromSource {
	var out []corev1.EnvFromSource
	for _, e := range envFrom {
		if e.SecretRef != nil {
			out = append(out, e)
		}
	}
	return out
}

// trimContainers keeps what quota usage, sidecar detection and the
// endpoints controller read.
func trimContainers(cs []corev1.Container) []corev1.Container {
	if len(cs) == 0 {
		return nil
	}
	out := make([]corev1.Container, len(cs))
	for i := range cs {
		out[i] = corev1.Container{Name: cs[i].Name, Image: cs[i].Image, Resources: cs[i].Resources, RestartPolicy: cs[i].RestartPolicy, Ports: cs[i].Ports,
			Env: trimEnv(cs[i].Env), EnvFrom: trimEnvFrom(cs[i].EnvFrom)}
	}
	return out
}

func trimEphemeralContainers(cs []corev1.EphemeralContainer) []corev1.EphemeralContainer {
	if len(cs) == 0 {
		return nil
	}
	out := make([]corev1.EphemeralContainer, len(cs))
	for i := range cs {
		c := &cs[i].EphemeralContainerCommon
		out[i] = corev1.EphemeralContainer{
			EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: c.Name, Image: c.Image, Resources: c.Resources,
				Env: trimEnv(c.Env), EnvFrom: trimEnvFrom(c.EnvFrom)},
			TargetContainerName: cs[i].TargetContainerName,
		}
	}
	return out
}
