package registry

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Pod defaults of the v1 API.
const (
	defaultTerminationGracePeriodSeconds = int64(corev1.DefaultTerminationGracePeriodSeconds)
	defaultVolumeMode                    = int32(0644)
	defaultTokenExpirationSeconds        = int64(3600)
)

// defaultPod applies what upstream's SetDefaults_Pod does on top of the pod
// spec defaults: requests from limits and service links, which apply to
// pods only, never to pod templates. The pod-level resources are defaulted
// later, in preparePodForCreate and on update (defaultPodLevelResources).
func defaultPod(p *corev1.Pod) {
	defaultPodSpec(&p.Spec)
	// A pod's negative grace period is 1 (upstream's Pod conversion since
	// 1.27, PR 115606; defaulting in 1.37); a template keeps its own.
	if t := p.Spec.TerminationGracePeriodSeconds; t != nil && *t < 0 {
		one := int64(1)
		p.Spec.TerminationGracePeriodSeconds = &one
	}
	for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range cs {
			defaultRequestsFromLimits(&cs[i].Resources)
		}
	}
	// No resizePolicy is defaulted: upstream stopped in 1.33 (PR 128920;
	// an unset policy means NotRequired to the kubelet), so a resize may
	// add a request without the policy list changing with it.
	if p.Spec.PriorityClassName == "" {
		// What the Priority admission plugin gives a pod that names no
		// priority class when no class is the global default.
		if p.Spec.Priority == nil {
			zero := int32(0)
			p.Spec.Priority = &zero
		}
		if p.Spec.PreemptionPolicy == nil {
			policy := corev1.PreemptLowerPriority
			p.Spec.PreemptionPolicy = &policy
		}
	}
	if p.Spec.EnableServiceLinks == nil {
		enable := corev1.DefaultEnableServiceLinks
		p.Spec.EnableServiceLinks = &enable
	}
	if p.Spec.HostNetwork {
		defaultHostNetworkPorts(p.Spec.InitContainers)
		defaultHostNetworkPorts(p.Spec.Containers)
	}
	defaultPodStatus(&p.Status)
}

// defaultPodStatus keeps the singular and plural IP fields consistent, as
// the v1 conversion does, and rounds the status's resource lists up to
// milli precision as upstream's defaulter does every ResourceList of a pod
// (the pod's and each container status's allocated resources and
// resources).
func defaultPodStatus(s *corev1.PodStatus) {
	roundResourceList(s.AllocatedResources)
	roundRequirements(s.Resources)
	for _, statuses := range [][]corev1.ContainerStatus{s.InitContainerStatuses, s.ContainerStatuses, s.EphemeralContainerStatuses} {
		for i := range statuses {
			roundResourceList(statuses[i].AllocatedResources)
			roundRequirements(statuses[i].Resources)
		}
	}
	if s.PodIP != "" && len(s.PodIPs) == 0 {
		s.PodIPs = []corev1.PodIP{{IP: s.PodIP}}
	}
	if s.PodIP == "" && len(s.PodIPs) > 0 {
		s.PodIP = s.PodIPs[0].IP
	}
	if s.HostIP != "" && len(s.HostIPs) == 0 {
		s.HostIPs = []corev1.HostIP{{IP: s.HostIP}}
	}
	if s.HostIP == "" && len(s.HostIPs) > 0 {
		s.HostIP = s.HostIPs[0].IP
	}
}

// defaultPodTemplateSpec defaults the pod spec of a workload template.
func defaultPodTemplateSpec(t *corev1.PodTemplateSpec) {
	defaultPodSpec(&t.Spec)
}

// defaultPodSpec is upstream's SetDefaults_PodSpec plus the defaults of
// everything nested in a pod spec (containers, ports, probes, volumes,
// field references, resource lists).
func defaultPodSpec(s *corev1.PodSpec) {
	if s.DNSPolicy == "" {
		s.DNSPolicy = corev1.DNSClusterFirst
	}
	if s.RestartPolicy == "" {
		s.RestartPolicy = corev1.RestartPolicyAlways
	}
	if s.SecurityContext == nil {
		s.SecurityContext = &corev1.PodSecurityContext{}
	}
	if s.TerminationGracePeriodSeconds == nil {
		period := defaultTerminationGracePeriodSeconds
		s.TerminationGracePeriodSeconds = &period
	}
	if s.SchedulerName == "" {
		s.SchedulerName = corev1.DefaultSchedulerName
	}
	// The deprecated serviceAccount field mirrors serviceAccountName.
	if s.ServiceAccountName == "" {
		s.ServiceAccountName = s.DeprecatedServiceAccount
	}
	s.DeprecatedServiceAccount = s.ServiceAccountName
	for i := range s.InitContainers {
		defaultContainer(&s.InitContainers[i])
	}
	for i := range s.Containers {
		defaultContainer(&s.Containers[i])
	}
	for i := range s.EphemeralContainers {
		c := (*corev1.Container)(&s.EphemeralContainers[i].EphemeralContainerCommon)
		defaultContainer(c)
	}
	for i := range s.Volumes {
		defaultVolume(&s.Volumes[i])
	}
	roundResourceList(s.Overhead)
	roundRequirements(s.Resources)
}

// defaultContainer is SetDefaults_Container and the defaults of the
// container's ports, probes, lifecycle handlers, env and resources.
func defaultContainer(c *corev1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = defaultPullPolicy(c.Image)
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = corev1.ProtocolTCP
		}
	}
	for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		defaultProbe(p)
	}
	if c.Lifecycle != nil {
		for _, h := range []*corev1.LifecycleHandler{c.Lifecycle.PostStart, c.Lifecycle.PreStop} {
			if h != nil {
				defaultHTTPGet(h.HTTPGet)
			}
		}
	}
	for i := range c.Env {
		from := c.Env[i].ValueFrom
		if from == nil {
			continue
		}
		if from.FieldRef != nil && from.FieldRef.APIVersion == "" {
			from.FieldRef.APIVersion = "v1"
		}
		// FileKeySelector.Optional's +default=false.
		if from.FileKeyRef != nil && from.FileKeyRef.Optional == nil {
			optional := false
			from.FileKeyRef.Optional = &optional
		}
	}
	roundResourceList(c.Resources.Limits)
	roundResourceList(c.Resources.Requests)
}

// defaultPullPolicy is the pull policy of an image reference that names
// none (containers' and image volumes'): Always when it is tagged latest
// (or has neither tag nor digest), IfNotPresent otherwise.
func defaultPullPolicy(image string) corev1.PullPolicy {
	if imageTag(image) == "latest" {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

// imageTag returns the tag of an image reference: "latest" when the
// reference has neither tag nor digest, "" when it has only a digest.
func imageTag(image string) string {
	if image == "" {
		return ""
	}
	ref, _, hasDigest := strings.Cut(image, "@")
	lastSlash := strings.LastIndex(ref, "/")
	name := ref[lastSlash+1:]
	if i := strings.LastIndex(name, ":"); i >= 0 {
		return name[i+1:]
	}
	if hasDigest {
		return ""
	}
	return "latest"
}

// defaultProbe is SetDefaults_Probe plus its handler's defaults (an HTTP
// GET's path and scheme, a gRPC check's service "").
func defaultProbe(p *corev1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	defaultHTTPGet(p.HTTPGet)
	// GRPCAction.Service's +default="".
	if p.GRPC != nil && p.GRPC.Service == nil {
		service := ""
		p.GRPC.Service = &service
	}
}

// defaultHTTPGet is SetDefaults_HTTPGetAction.
func defaultHTTPGet(h *corev1.HTTPGetAction) {
	if h == nil {
		return
	}
	if h.Path == "" {
		h.Path = "/"
	}
	if h.Scheme == "" {
		h.Scheme = corev1.URISchemeHTTP
	}
}

// defaultVolume: a volume without a source is an emptyDir; then each
// source it sets gets its defaults, as upstream's generated defaulter
// (SetDefaults_Volume, the SetDefaults_* of the sources and their +default
// markers): projected and file-backed sources mode 0644, a projected token
// an hour, an image volume's pull policy from its reference as a
// container's, a hostPath type "", an iSCSI interface "default", RBD pool
// "rbd", user "admin" and keyring "/etc/ceph/keyring", an azureDisk caching
// mode ReadWrite, kind Shared, fsType ext4 and readOnly false, a ScaleIO
// storage mode ThinProvisioned and fsType xfs, and an ephemeral volume's
// claim template volume mode Filesystem.
func defaultVolume(v *corev1.Volume) {
	src := &v.VolumeSource
	if *src == (corev1.VolumeSource{}) {
		src.EmptyDir = &corev1.EmptyDirVolumeSource{}
	}
	mode := func(m **int32) {
		if *m == nil {
			d := defaultVolumeMode
			*m = &d
		}
	}
	if h := src.HostPath; h != nil && h.Type == nil {
		unset := corev1.HostPathUnset
		h.Type = &unset
	}
	if src.Secret != nil {
		mode(&src.Secret.DefaultMode)
	}
	if i := src.ISCSI; i != nil && i.ISCSIInterface == "" {
		i.ISCSIInterface = "default"
	}
	if r := src.RBD; r != nil {
		defaultString(&r.RBDPool, "rbd")
		defaultString(&r.RadosUser, "admin")
		defaultString(&r.Keyring, "/etc/ceph/keyring")
	}
	if d := src.DownwardAPI; d != nil {
		mode(&d.DefaultMode)
		for i := range d.Items {
			defaultFieldRef(d.Items[i].FieldRef)
		}
	}
	if src.ConfigMap != nil {
		mode(&src.ConfigMap.DefaultMode)
	}
	if a := src.AzureDisk; a != nil {
		defaultAzureDisk(a)
	}
	if pr := src.Projected; pr != nil {
		mode(&pr.DefaultMode)
		for i := range pr.Sources {
			ps := &pr.Sources[i]
			if ps.ServiceAccountToken != nil && ps.ServiceAccountToken.ExpirationSeconds == nil {
				exp := defaultTokenExpirationSeconds
				ps.ServiceAccountToken.ExpirationSeconds = &exp
			}
			if ps.DownwardAPI != nil {
				for j := range ps.DownwardAPI.Items {
					defaultFieldRef(ps.DownwardAPI.Items[j].FieldRef)
				}
			}
		}
	}
	if sio := src.ScaleIO; sio != nil {
		defaultString(&sio.StorageMode, "ThinProvisioned")
		defaultString(&sio.FSType, "xfs")
	}
	if e := src.Ephemeral; e != nil && e.VolumeClaimTemplate != nil {
		spec := &e.VolumeClaimTemplate.Spec
		if spec.VolumeMode == nil {
			fs := corev1.PersistentVolumeFilesystem
			spec.VolumeMode = &fs
		}
		roundResourceList(spec.Resources.Limits)
		roundResourceList(spec.Resources.Requests)
	}
	if img := src.Image; img != nil && img.PullPolicy == "" {
		img.PullPolicy = defaultPullPolicy(img.Reference)
	}
}

// defaultAzureDisk is SetDefaults_AzureDiskVolumeSource.
func defaultAzureDisk(a *corev1.AzureDiskVolumeSource) {
	if a.CachingMode == nil {
		m := corev1.AzureDataDiskCachingReadWrite
		a.CachingMode = &m
	}
	if a.Kind == nil {
		k := corev1.AzureSharedBlobDisk
		a.Kind = &k
	}
	if a.FSType == nil {
		fs := "ext4"
		a.FSType = &fs
	}
	if a.ReadOnly == nil {
		ro := false
		a.ReadOnly = &ro
	}
}

// defaultString sets an empty *s to d.
func defaultString(s *string, d string) {
	if *s == "" {
		*s = d
	}
}

// defaultFieldRef is SetDefaults_ObjectFieldSelector.
func defaultFieldRef(f *corev1.ObjectFieldSelector) {
	if f != nil && f.APIVersion == "" {
		f.APIVersion = "v1"
	}
}

// defaultRequestsFromLimits sets a missing request to its limit.
func defaultRequestsFromLimits(r *corev1.ResourceRequirements) {
	if r.Limits == nil {
		return
	}
	if r.Requests == nil {
		r.Requests = corev1.ResourceList{}
	}
	for name, q := range r.Limits {
		if _, ok := r.Requests[name]; !ok {
			r.Requests[name] = q.DeepCopy()
		}
	}
}

// roundRequirements rounds r's limits and requests (roundResourceList).
func roundRequirements(r *corev1.ResourceRequirements) {
	if r != nil {
		roundResourceList(r.Limits)
		roundResourceList(r.Requests)
	}
}

// roundResourceList rounds quantities up to milli precision, as
// SetDefaults_ResourceList does: a sub-milli value ("0.5m" cpu) is stored,
// and validated, as the next milli ("1m"); upstream rounds rather than
// refuses (its TODO #18538), at decoding, so before admission and
// validation, on create and update alike.
func roundResourceList(l corev1.ResourceList) {
	for name, q := range l {
		q.RoundUp(-3)
		l[name] = q
	}
}

// defaultHostNetworkPorts makes hostPort equal containerPort for pods in the
// host network namespace.
func defaultHostNetworkPorts(cs []corev1.Container) {
	for i := range cs {
		for j := range cs[i].Ports {
			if cs[i].Ports[j].HostPort == 0 {
				cs[i].Ports[j].HostPort = cs[i].Ports[j].ContainerPort
			}
		}
	}
}
