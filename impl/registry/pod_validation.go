package registry

import (
	"fmt"
	"math"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Valid values of enumerated pod fields.
var (
	restartPolicies       = []string{string(corev1.RestartPolicyAlways), string(corev1.RestartPolicyOnFailure), string(corev1.RestartPolicyNever)}
	dnsPolicies           = []string{string(corev1.DNSClusterFirstWithHostNet), string(corev1.DNSClusterFirst), string(corev1.DNSDefault), string(corev1.DNSNone)}
	pullPolicies          = []string{string(corev1.PullAlways), string(corev1.PullIfNotPresent), string(corev1.PullNever)}
	portProtocols         = []string{string(corev1.ProtocolTCP), string(corev1.ProtocolUDP), string(corev1.ProtocolSCTP)}
	terminationMsgPolices = []string{string(corev1.TerminationMessageReadFile), string(corev1.TerminationMessageFallbackToLogsOnError)}
	tolerationOperators   = []string{string(corev1.TolerationOpEqual), string(corev1.TolerationOpExists)}
)

// validatePod validates everything of a pod but its metadata.
func validatePod(p *corev1.Pod) field.ErrorList {
	return validatePodSpec(&p.Spec, field.NewPath("spec"), true)
}

// validatePodTemplateSpec validates a workload's pod template.
func validatePodTemplateSpec(t *corev1.PodTemplateSpec, path *field.Path) field.ErrorList {
	errs := metav1validation.ValidateLabels(t.Labels, path.Child("metadata", "labels"))
	errs = append(errs, apivalidation.ValidateAnnotations(t.Annotations, path.Child("metadata", "annotations"))...)
	errs = append(errs, validatePodSpec(&t.Spec, path.Child("spec"), false)...)
	if len(t.Spec.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(path.Child("spec", "ephemeralContainers"), "ephemeral containers not allowed in pod template"))
	}
	return errs
}

// validatePodSpec checks a pod spec. isPod adds the checks only pods (not
// templates) get.
func validatePodSpec(s *corev1.PodSpec, path *field.Path, isPod bool) field.ErrorList {
	var errs field.ErrorList
	volumes, vErrs := validateVolumes(s.Volumes, path.Child("volumes"))
	errs = append(errs, vErrs...)

	names := sets.New[string]()
	errs = append(errs, validateContainerList(s.InitContainers, volumes, names, path.Child("initContainers"), true)...)
	if len(s.Containers) == 0 {
		errs = append(errs, field.Required(path.Child("containers"), ""))
	}
	errs = append(errs, validateContainerList(s.Containers, volumes, names, path.Child("containers"), false)...)
	for i := range s.EphemeralContainers {
		c := (*corev1.Container)(&s.EphemeralContainers[i].EphemeralContainerCommon)
		p := path.Child("ephemeralContainers").Index(i)
		errs = append(errs, validateContainerName(c.Name, names, p.Child("name"))...)
		if c.Image == "" {
			errs = append(errs, field.Required(p.Child("image"), ""))
		}
	}
	errs = append(errs, validateHostPortConflicts(s, path)...)

	switch s.RestartPolicy {
	case corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever:
	case "":
		errs = append(errs, field.Required(path.Child("restartPolicy"), ""))
	default:
		errs = append(errs, field.NotSupported(path.Child("restartPolicy"), s.RestartPolicy, restartPolicies))
	}
	switch s.DNSPolicy {
	case corev1.DNSClusterFirstWithHostNet, corev1.DNSClusterFirst, corev1.DNSDefault, corev1.DNSNone:
	case "":
		errs = append(errs, field.Required(path.Child("dnsPolicy"), ""))
	default:
		errs = append(errs, field.NotSupported(path.Child("dnsPolicy"), s.DNSPolicy, dnsPolicies))
	}
	if s.DNSPolicy == corev1.DNSNone && (s.DNSConfig == nil || len(s.DNSConfig.Nameservers) == 0) {
		errs = append(errs, field.Required(path.Child("dnsConfig", "nameservers"), "must provide at least one DNS nameserver when `dnsPolicy` is None"))
	}
	errs = append(errs, metav1validation.ValidateLabels(s.NodeSelector, path.Child("nodeSelector"))...)
	if s.NodeName != "" {
		errs = append(errs, dnsSubdomain(s.NodeName, path.Child("nodeName"))...)
	}
	if s.ServiceAccountName != "" {
		errs = append(errs, dnsSubdomain(s.ServiceAccountName, path.Child("serviceAccountName"))...)
	}
	if s.Hostname != "" {
		errs = append(errs, dnsLabel(s.Hostname, path.Child("hostname"))...)
	}
	if s.Subdomain != "" {
		errs = append(errs, dnsLabel(s.Subdomain, path.Child("subdomain"))...)
	}
	if s.PriorityClassName != "" {
		errs = append(errs, dnsSubdomain(s.PriorityClassName, path.Child("priorityClassName"))...)
	}
	if s.PreemptionPolicy != nil {
		errs = append(errs, validatePreemptionPolicy(*s.PreemptionPolicy, path.Child("preemptionPolicy"))...)
	}
	if s.TerminationGracePeriodSeconds != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(*s.TerminationGracePeriodSeconds, path.Child("terminationGracePeriodSeconds"))...)
	}
	if s.ActiveDeadlineSeconds != nil {
		if v := *s.ActiveDeadlineSeconds; v < 1 || v > math.MaxInt32 {
			errs = append(errs, field.Invalid(path.Child("activeDeadlineSeconds"), v, validation.InclusiveRangeError(1, math.MaxInt32)))
		}
	}
	errs = append(errs, validateTolerations(s.Tolerations, path.Child("tolerations"))...)
	errs = append(errs, validateAffinity(s.Affinity, path.Child("affinity"))...)
	errs = append(errs, validateTopologySpreadConstraints(s.TopologySpreadConstraints, path.Child("topologySpreadConstraints"))...)
	gates := sets.New[string]()
	for i, g := range s.SchedulingGates {
		p := path.Child("schedulingGates").Index(i).Child("name")
		errs = append(errs, validateLabelKey(g.Name, p)...)
		if gates.Has(g.Name) {
			errs = append(errs, field.Duplicate(p, g.Name))
		}
		gates.Insert(g.Name)
	}
	for i, g := range s.ReadinessGates {
		errs = append(errs, validateLabelKey(string(g.ConditionType), path.Child("readinessGates").Index(i).Child("conditionType"))...)
	}
	for i, r := range s.ImagePullSecrets {
		if r.Name == "" {
			errs = append(errs, field.Required(path.Child("imagePullSecrets").Index(i).Child("name"), ""))
		}
	}
	if sc := s.SecurityContext; sc != nil {
		errs = append(errs, validateIDs(sc.RunAsUser, sc.RunAsGroup, path.Child("securityContext"))...)
	}
	if s.HostNetwork && isPod {
		for i, c := range s.Containers {
			for j, port := range c.Ports {
				if port.HostPort != port.ContainerPort {
					errs = append(errs, field.Invalid(path.Child("containers").Index(i).Child("ports").Index(j).Child("containerPort"),
						port.ContainerPort, "must match `hostPort` when `hostNetwork` is true"))
				}
			}
		}
	}
	return errs
}

func dnsSubdomain(v string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(v) {
		errs = append(errs, field.Invalid(p, v, msg))
	}
	return errs
}

func dnsLabel(v string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(v) {
		errs = append(errs, field.Invalid(p, v, msg))
	}
	return errs
}

// validateVolumes checks names (unique DNS-1123 labels) and that each
// volume has exactly one source; it returns the volumes by name.
func validateVolumes(volumes []corev1.Volume, path *field.Path) (map[string]corev1.VolumeSource, field.ErrorList) {
	var errs field.ErrorList
	byName := map[string]corev1.VolumeSource{}
	for i, v := range volumes {
		p := path.Index(i)
		if v.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else {
			errs = append(errs, dnsLabel(v.Name, p.Child("name"))...)
		}
		if _, dup := byName[v.Name]; dup && v.Name != "" {
			errs = append(errs, field.Duplicate(p.Child("name"), v.Name))
		}
		byName[v.Name] = v.VolumeSource
		switch n := countVolumeSources(&v.VolumeSource); {
		case n == 0:
			errs = append(errs, field.Required(p, "must specify a volume type"))
		case n > 1:
			errs = append(errs, field.Forbidden(p, "may not specify more than 1 volume type"))
		}
		src := v.VolumeSource
		checkMode := func(mode *int32, mp *field.Path) {
			if mode != nil && (*mode < 0 || *mode > 0777) {
				errs = append(errs, field.Invalid(mp, *mode, "must be a number between 0 and 0777 (octal), both inclusive"))
			}
		}
		switch {
		case src.ConfigMap != nil:
			if src.ConfigMap.Name == "" {
				errs = append(errs, field.Required(p.Child("configMap", "name"), ""))
			}
			checkMode(src.ConfigMap.DefaultMode, p.Child("configMap", "defaultMode"))
		case src.Secret != nil:
			if src.Secret.SecretName == "" {
				errs = append(errs, field.Required(p.Child("secret", "secretName"), ""))
			}
			checkMode(src.Secret.DefaultMode, p.Child("secret", "defaultMode"))
		case src.HostPath != nil:
			if src.HostPath.Path == "" {
				errs = append(errs, field.Required(p.Child("hostPath", "path"), ""))
			}
		case src.PersistentVolumeClaim != nil:
			if src.PersistentVolumeClaim.ClaimName == "" {
				errs = append(errs, field.Required(p.Child("persistentVolumeClaim", "claimName"), ""))
			}
		case src.Projected != nil:
			checkMode(src.Projected.DefaultMode, p.Child("projected", "defaultMode"))
		case src.DownwardAPI != nil:
			checkMode(src.DownwardAPI.DefaultMode, p.Child("downwardAPI", "defaultMode"))
		}
	}
	return byName, errs
}

// countVolumeSources counts the non-nil sources of a volume.
func countVolumeSources(s *corev1.VolumeSource) int {
	n := 0
	for _, set := range []bool{
		s.HostPath != nil, s.EmptyDir != nil, s.GCEPersistentDisk != nil, s.AWSElasticBlockStore != nil,
		s.GitRepo != nil, s.Secret != nil, s.NFS != nil, s.ISCSI != nil, s.Glusterfs != nil,
		s.PersistentVolumeClaim != nil, s.RBD != nil, s.FlexVolume != nil, s.Cinder != nil,
		s.CephFS != nil, s.Flocker != nil, s.DownwardAPI != nil, s.FC != nil, s.AzureFile != nil,
		s.ConfigMap != nil, s.VsphereVolume != nil, s.Quobyte != nil, s.AzureDisk != nil,
		s.PhotonPersistentDisk != nil, s.Projected != nil, s.PortworxVolume != nil, s.ScaleIO != nil,
		s.StorageOS != nil, s.CSI != nil, s.Ephemeral != nil, s.Image != nil,
	} {
		if set {
			n++
		}
	}
	return n
}

// validateContainerName checks a container name and records it in names;
// names are unique across init, app and ephemeral containers.
func validateContainerName(name string, names sets.Set[string], p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if name == "" {
		errs = append(errs, field.Required(p, ""))
	} else {
		errs = append(errs, dnsLabel(name, p)...)
	}
	if names.Has(name) {
		errs = append(errs, field.Duplicate(p, name))
	}
	names.Insert(name)
	return errs
}

func validateContainerList(cs []corev1.Container, volumes map[string]corev1.VolumeSource, names sets.Set[string], path *field.Path, init bool) field.ErrorList {
	var errs field.ErrorList
	for i := range cs {
		c := &cs[i]
		p := path.Index(i)
		errs = append(errs, validateContainerName(c.Name, names, p.Child("name"))...)
		errs = append(errs, validateContainer(c, volumes, p, init)...)
	}
	return errs
}

func validateContainer(c *corev1.Container, volumes map[string]corev1.VolumeSource, p *field.Path, init bool) field.ErrorList {
	var errs field.ErrorList
	if c.Image == "" {
		errs = append(errs, field.Required(p.Child("image"), ""))
	} else if len(c.Image) != len(strings.TrimSpace(c.Image)) {
		errs = append(errs, field.Invalid(p.Child("image"), c.Image, "must not have leading or trailing whitespace"))
	}
	switch c.ImagePullPolicy {
	case corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
	case "":
		errs = append(errs, field.Required(p.Child("imagePullPolicy"), ""))
	default:
		errs = append(errs, field.NotSupported(p.Child("imagePullPolicy"), c.ImagePullPolicy, pullPolicies))
	}
	switch c.TerminationMessagePolicy {
	case corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError:
	case "":
		errs = append(errs, field.Required(p.Child("terminationMessagePolicy"), "must be 'File' or 'FallbackToLogsOnError'"))
	default:
		errs = append(errs, field.NotSupported(p.Child("terminationMessagePolicy"), c.TerminationMessagePolicy, terminationMsgPolices))
	}
	errs = append(errs, validatePorts(c.Ports, p.Child("ports"))...)
	errs = append(errs, validateEnv(c.Env, p.Child("env"))...)
	for i, from := range c.EnvFrom {
		fp := p.Child("envFrom").Index(i)
		n := 0
		if from.ConfigMapRef != nil {
			n++
			if from.ConfigMapRef.Name == "" {
				errs = append(errs, field.Required(fp.Child("configMapRef", "name"), ""))
			}
		}
		if from.SecretRef != nil {
			n++
			if from.SecretRef.Name == "" {
				errs = append(errs, field.Required(fp.Child("secretRef", "name"), ""))
			}
		}
		if n != 1 {
			errs = append(errs, field.Invalid(fp, "", "must specify one of: `configMapRef` or `secretRef`"))
		}
	}
	errs = append(errs, validateVolumeMounts(c.VolumeMounts, volumes, p.Child("volumeMounts"))...)
	errs = append(errs, validateResources(&c.Resources, p.Child("resources"))...)
	errs = append(errs, validateProbe(c.ReadinessProbe, p.Child("readinessProbe"))...)
	errs = append(errs, validateProbe(c.StartupProbe, p.Child("startupProbe"))...)
	errs = append(errs, validateProbe(c.LivenessProbe, p.Child("livenessProbe"))...)
	if c.LivenessProbe != nil && c.LivenessProbe.SuccessThreshold != 1 {
		errs = append(errs, field.Invalid(p.Child("livenessProbe", "successThreshold"), c.LivenessProbe.SuccessThreshold, "must be 1"))
	}
	if c.StartupProbe != nil && c.StartupProbe.SuccessThreshold != 1 {
		errs = append(errs, field.Invalid(p.Child("startupProbe", "successThreshold"), c.StartupProbe.SuccessThreshold, "must be 1"))
	}
	if c.RestartPolicy != nil {
		if !init {
			errs = append(errs, field.Forbidden(p.Child("restartPolicy"), "may not be set for non-init containers"))
		} else if *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
			errs = append(errs, field.NotSupported(p.Child("restartPolicy"), *c.RestartPolicy, []string{string(corev1.ContainerRestartPolicyAlways)}))
		}
	}
	sidecar := init && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
	if init && !sidecar {
		for _, probe := range []struct {
			set  bool
			name string
		}{{c.LivenessProbe != nil, "livenessProbe"}, {c.ReadinessProbe != nil, "readinessProbe"}, {c.StartupProbe != nil, "startupProbe"}} {
			if probe.set {
				errs = append(errs, field.Forbidden(p.Child(probe.name), "may not be set for init containers without restartPolicy=Always"))
			}
		}
		if c.Lifecycle != nil {
			errs = append(errs, field.Forbidden(p.Child("lifecycle"), "may not be set for init containers without restartPolicy=Always"))
		}
	}
	if sc := c.SecurityContext; sc != nil {
		errs = append(errs, validateIDs(sc.RunAsUser, sc.RunAsGroup, p.Child("securityContext"))...)
	}
	if lc := c.Lifecycle; lc != nil {
		errs = append(errs, validateLifecycleHandler(lc.PostStart, p.Child("lifecycle", "postStart"))...)
		errs = append(errs, validateLifecycleHandler(lc.PreStop, p.Child("lifecycle", "preStop"))...)
	}
	return errs
}

// validateLifecycleHandler: a hook has exactly one handler.
func validateLifecycleHandler(h *corev1.LifecycleHandler, path *field.Path) field.ErrorList {
	if h == nil {
		return nil
	}
	var errs field.ErrorList
	n := 0
	if h.Exec != nil {
		n++
		if len(h.Exec.Command) == 0 {
			errs = append(errs, field.Required(path.Child("exec", "command"), ""))
		}
	}
	if h.HTTPGet != nil {
		n++
		errs = append(errs, validatePortNumOrName(h.HTTPGet.Port, path.Child("httpGet", "port"))...)
	}
	if h.TCPSocket != nil {
		n++
		errs = append(errs, validatePortNumOrName(h.TCPSocket.Port, path.Child("tcpSocket", "port"))...)
	}
	if h.Sleep != nil {
		n++
		if h.Sleep.Seconds < 0 {
			errs = append(errs, field.Invalid(path.Child("sleep", "seconds"), h.Sleep.Seconds, isNegativeErrorMsg))
		}
	}
	switch {
	case n == 0:
		errs = append(errs, field.Required(path, "must specify a handler type"))
	case n > 1:
		errs = append(errs, field.Forbidden(path, "may not specify more than 1 handler type"))
	}
	return errs
}

func validateIDs(user, group *int64, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if user != nil {
		for _, msg := range validation.IsValidUserID(*user) {
			errs = append(errs, field.Invalid(p.Child("runAsUser"), *user, msg))
		}
	}
	if group != nil {
		for _, msg := range validation.IsValidGroupID(*group) {
			errs = append(errs, field.Invalid(p.Child("runAsGroup"), *group, msg))
		}
	}
	return errs
}

func validatePorts(ports []corev1.ContainerPort, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, port := range ports {
		p := path.Index(i)
		if port.Name != "" {
			for _, msg := range validation.IsValidPortName(port.Name) {
				errs = append(errs, field.Invalid(p.Child("name"), port.Name, msg))
			}
			if names.Has(port.Name) {
				errs = append(errs, field.Duplicate(p.Child("name"), port.Name))
			}
			names.Insert(port.Name)
		}
		if port.ContainerPort == 0 {
			errs = append(errs, field.Required(p.Child("containerPort"), ""))
		} else {
			for _, msg := range validation.IsValidPortNum(int(port.ContainerPort)) {
				errs = append(errs, field.Invalid(p.Child("containerPort"), port.ContainerPort, msg))
			}
		}
		if port.HostPort != 0 {
			for _, msg := range validation.IsValidPortNum(int(port.HostPort)) {
				errs = append(errs, field.Invalid(p.Child("hostPort"), port.HostPort, msg))
			}
		}
		switch port.Protocol {
		case corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
		case "":
			errs = append(errs, field.Required(p.Child("protocol"), ""))
		default:
			errs = append(errs, field.NotSupported(p.Child("protocol"), port.Protocol, portProtocols))
		}
	}
	return errs
}

// validateHostPortConflicts rejects two containers asking for the same
// host port and protocol.
func validateHostPortConflicts(s *corev1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	type key struct {
		ip       string
		port     int32
		protocol corev1.Protocol
	}
	seen := map[key]bool{}
	for i, c := range s.Containers {
		for j, port := range c.Ports {
			if port.HostPort == 0 {
				continue
			}
			k := key{port.HostIP, port.HostPort, port.Protocol}
			if seen[k] {
				errs = append(errs, field.Duplicate(path.Child("containers").Index(i).Child("ports").Index(j).Child("hostPort"),
					fmt.Sprintf("%s/%d", port.Protocol, port.HostPort)))
			}
			seen[k] = true
		}
	}
	return errs
}

func validateEnv(env []corev1.EnvVar, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, e := range env {
		p := path.Index(i)
		if e.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else {
			for _, msg := range validation.IsRelaxedEnvVarName(e.Name) {
				errs = append(errs, field.Invalid(p.Child("name"), e.Name, msg))
			}
		}
		if from := e.ValueFrom; from != nil {
			n := 0
			if from.FieldRef != nil {
				n++
				if from.FieldRef.FieldPath == "" {
					errs = append(errs, field.Required(p.Child("valueFrom", "fieldRef", "fieldPath"), ""))
				}
			}
			if from.ResourceFieldRef != nil {
				n++
				if from.ResourceFieldRef.Resource == "" {
					errs = append(errs, field.Required(p.Child("valueFrom", "resourceFieldRef", "resource"), ""))
				}
			}
			if from.ConfigMapKeyRef != nil {
				n++
				if from.ConfigMapKeyRef.Key == "" {
					errs = append(errs, field.Required(p.Child("valueFrom", "configMapKeyRef", "key"), ""))
				}
			}
			if from.SecretKeyRef != nil {
				n++
				if from.SecretKeyRef.Key == "" {
					errs = append(errs, field.Required(p.Child("valueFrom", "secretKeyRef", "key"), ""))
				}
			}
			if from.FileKeyRef != nil {
				n++
			}
			switch {
			case n == 0:
				errs = append(errs, field.Invalid(p.Child("valueFrom"), "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"))
			case n > 1:
				errs = append(errs, field.Invalid(p.Child("valueFrom"), "", "may not have more than one field specified at a time"))
			}
			if e.Value != "" {
				errs = append(errs, field.Invalid(p.Child("valueFrom"), "", "may not be specified when `value` is not empty"))
			}
		}
	}
	return errs
}

func validateVolumeMounts(mounts []corev1.VolumeMount, volumes map[string]corev1.VolumeSource, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	paths := sets.New[string]()
	for i, m := range mounts {
		p := path.Index(i)
		if m.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else if _, ok := volumes[m.Name]; !ok {
			errs = append(errs, field.NotFound(p.Child("name"), m.Name))
		}
		if m.MountPath == "" {
			errs = append(errs, field.Required(p.Child("mountPath"), ""))
		} else if paths.Has(m.MountPath) {
			errs = append(errs, field.Invalid(p.Child("mountPath"), m.MountPath, "must be unique"))
		}
		paths.Insert(m.MountPath)
		if m.SubPath != "" && (strings.HasPrefix(m.SubPath, "/") || containsDotDot(m.SubPath)) {
			errs = append(errs, field.Invalid(p.Child("subPath"), m.SubPath, "must be a relative path without '..'"))
		}
	}
	return errs
}

func containsDotDot(p string) bool {
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return true
		}
	}
	return false
}

// validateResources checks resource names, non-negative quantities and
// that no request exceeds its limit.
func validateResources(r *corev1.ResourceRequirements, path *field.Path) field.ErrorList {
	errs := validateResourceList(r.Limits, path.Child("limits"), validateContainerResourceName)
	errs = append(errs, validateResourceList(r.Requests, path.Child("requests"), validateContainerResourceName)...)
	for name, req := range r.Requests {
		limit, ok := r.Limits[name]
		if ok && req.Cmp(limit) > 0 {
			errs = append(errs, field.Invalid(path.Child("requests").Key(string(name)), req.String(),
				fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit.String())))
		}
		if isExtendedResource(name) {
			// Extended resources cannot be overcommitted.
			if !ok {
				errs = append(errs, field.Forbidden(path.Child("limits"), "Limit must be set for non overcommitable resources"))
			} else if req.Cmp(limit) != 0 {
				errs = append(errs, field.Invalid(path.Child("requests").Key(string(name)), req.String(),
					fmt.Sprintf("must be equal to %s limit of %s", name, limit.String())))
			}
		}
	}
	return errs
}

func validateProbe(p *corev1.Probe, path *field.Path) field.ErrorList {
	if p == nil {
		return nil
	}
	var errs field.ErrorList
	n := 0
	if p.Exec != nil {
		n++
	}
	if p.HTTPGet != nil {
		n++
		errs = append(errs, validatePortNumOrName(p.HTTPGet.Port, path.Child("httpGet", "port"))...)
		if s := p.HTTPGet.Scheme; s != corev1.URISchemeHTTP && s != corev1.URISchemeHTTPS {
			errs = append(errs, field.NotSupported(path.Child("httpGet", "scheme"), s, []string{string(corev1.URISchemeHTTP), string(corev1.URISchemeHTTPS)}))
		}
	}
	if p.TCPSocket != nil {
		n++
		errs = append(errs, validatePortNumOrName(p.TCPSocket.Port, path.Child("tcpSocket", "port"))...)
	}
	if p.GRPC != nil {
		n++
		for _, msg := range validation.IsValidPortNum(int(p.GRPC.Port)) {
			errs = append(errs, field.Invalid(path.Child("grpc", "port"), p.GRPC.Port, msg))
		}
	}
	switch {
	case n == 0:
		errs = append(errs, field.Required(path, "must specify a handler type"))
	case n > 1:
		errs = append(errs, field.Forbidden(path, "may not specify more than 1 handler type"))
	}
	for _, f := range []struct {
		v    int32
		name string
	}{{p.InitialDelaySeconds, "initialDelaySeconds"}, {p.TimeoutSeconds, "timeoutSeconds"}, {p.PeriodSeconds, "periodSeconds"},
		{p.SuccessThreshold, "successThreshold"}, {p.FailureThreshold, "failureThreshold"}} {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(f.v), path.Child(f.name))...)
	}
	if p.TerminationGracePeriodSeconds != nil && *p.TerminationGracePeriodSeconds <= 0 {
		errs = append(errs, field.Invalid(path.Child("terminationGracePeriodSeconds"), *p.TerminationGracePeriodSeconds, "must be greater than 0"))
	}
	return errs
}

func validateTolerations(ts []corev1.Toleration, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range ts {
		p := path.Index(i)
		if t.Key != "" {
			errs = append(errs, validateLabelKey(t.Key, p.Child("key"))...)
		}
		if t.Key == "" && t.Operator != corev1.TolerationOpExists {
			errs = append(errs, field.Invalid(p.Child("operator"), t.Operator, "operator must be Exists when `key` is empty, which means \"match all values and all keys\""))
		}
		if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
			errs = append(errs, field.Invalid(p.Child("effect"), t.Effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
		}
		switch t.Operator {
		case corev1.TolerationOpEqual, "":
			for _, msg := range validation.IsValidLabelValue(t.Value) {
				errs = append(errs, field.Invalid(p.Child("operator"), t.Value, msg))
			}
		case corev1.TolerationOpExists:
			if t.Value != "" {
				errs = append(errs, field.Invalid(p.Child("operator"), t, "value must be empty when `operator` is 'Exists'"))
			}
		default:
			errs = append(errs, field.NotSupported(p.Child("operator"), t.Operator, tolerationOperators))
		}
		if t.Effect != "" {
			switch t.Effect {
			case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
			default:
				errs = append(errs, field.NotSupported(p.Child("effect"), t.Effect, taintEffects))
			}
		}
	}
	return errs
}

// isExtendedResource reports whether name is a domain-prefixed resource
// outside kubernetes.io (e.g. example.com/gpu).
func isExtendedResource(name corev1.ResourceName) bool {
	n := string(name)
	return strings.Contains(n, "/") && !strings.Contains(n, corev1.ResourceDefaultNamespacePrefix)
}

// validatePortNumOrName checks a port given as number or IANA name.
func validatePortNumOrName(port intstr.IntOrString, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if port.Type == intstr.Int {
		for _, msg := range validation.IsValidPortNum(port.IntValue()) {
			errs = append(errs, field.Invalid(p, port.IntValue(), msg))
		}
		return errs
	}
	for _, msg := range validation.IsValidPortName(port.StrVal) {
		errs = append(errs, field.Invalid(p, port.StrVal, msg))
	}
	return errs
}
