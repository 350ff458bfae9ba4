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
	for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range cs {
			defaultRequestsFromLimits(&cs[i].Resources)
		}
	}
	for i := range p.Spec.Containers {
		defaultResizePolicy(&p.Spec.Containers[i])
	}
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

// defaultResizePolicy: app containers that request cpu or memory may be
// resized in place without a restart unless they say otherwise.
func defaultResizePolicy(c *corev1.Container) {
	if c.Resources.Requests == nil {
		return
	}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if _, ok := c.Resources.Requests[name]; !ok {
			continue
		}
		specified := false
		for _, p := range c.ResizePolicy {
			specified = specified || p.ResourceName == name
		}
		if !specified {
			c.ResizePolicy = append(c.ResizePolicy, corev1.ContainerResizePolicy{ResourceName: name, RestartPolicy: corev1.NotRequired})
		}
	}
}

// defaultPodStatus keeps the singular and plural IP fields consistent, as
// the v1 conversion does.
func defaultPodStatus(s *corev1.PodStatus) {
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
	if s.Overhead != nil {
		roundResourceList(s.Overhead)
	}
	if s.Resources != nil {
		roundResourceList(s.Resources.Limits)
		roundResourceList(s.Resources.Requests)
	}
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

// defaultProbe is SetDefaults_Probe plus its handler's defaults.
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

// defaultVolume: a volume without a source is an emptyDir; projected and
// file-backed sources get mode 0644; an image volume's pull policy is
// defaulted from its reference as a container's (SetDefaults_Volume).
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
	switch {
	case src.Secret != nil:
		mode(&src.Secret.DefaultMode)
	case src.ConfigMap != nil:
		mode(&src.ConfigMap.DefaultMode)
	case src.DownwardAPI != nil:
		mode(&src.DownwardAPI.DefaultMode)
		for i := range src.DownwardAPI.Items {
			defaultFieldRef(src.DownwardAPI.Items[i].FieldRef)
		}
	case src.Projected != nil:
		mode(&src.Projected.DefaultMode)
		for i := range src.Projected.Sources {
			ps := &src.Projected.Sources[i]
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
	case src.Image != nil:
		if src.Image.PullPolicy == "" {
			src.Image.PullPolicy = defaultPullPolicy(src.Image.Reference)
		}
	case src.HostPath != nil:
		if src.HostPath.Type == nil {
			unset := corev1.HostPathUnset
			src.HostPath.Type = &unset
		}
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

// roundResourceList rounds quantities up to milli precision, as
// SetDefaults_ResourceList does.
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
