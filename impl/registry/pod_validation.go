package registry

import (
	"math"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Valid values of enumerated pod fields.
var (
	restartPolicies            = []string{string(corev1.RestartPolicyAlways), string(corev1.RestartPolicyOnFailure), string(corev1.RestartPolicyNever)}
	dnsPolicies                = []string{string(corev1.DNSClusterFirstWithHostNet), string(corev1.DNSClusterFirst), string(corev1.DNSDefault), string(corev1.DNSNone)}
	pullPolicies               = []string{string(corev1.PullAlways), string(corev1.PullIfNotPresent), string(corev1.PullNever)}
	portProtocols              = []string{string(corev1.ProtocolTCP), string(corev1.ProtocolUDP), string(corev1.ProtocolSCTP)}
	terminationMessagePolicies = []string{string(corev1.TerminationMessageReadFile), string(corev1.TerminationMessageFallbackToLogsOnError)}
	tolerationOperators        = []string{string(corev1.TolerationOpEqual), string(corev1.TolerationOpExists)}
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
