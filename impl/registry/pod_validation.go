package registry

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-helpers/node/util/sysctl"
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

// validatePod validates everything of a pod but its metadata, relaxed by
// opts (zero on create; podValidationOptionsFor the stored pod on update).
func validatePod(p *corev1.Pod, opts podValidationOptions) field.ErrorList {
	return validatePodSpec(&p.Spec, field.NewPath("spec"), &p.ObjectMeta, opts)
}

// validatePodTemplateSpec validates a workload's pod template, relaxed by
// opts (zero on create; podValidationOptionsFor the stored template's spec
// on update).
func validatePodTemplateSpec(t *corev1.PodTemplateSpec, path *field.Path, opts podValidationOptions) field.ErrorList {
	errs := metav1validation.ValidateLabels(t.Labels, path.Child("metadata", "labels"))
	errs = append(errs, apivalidation.ValidateAnnotations(t.Annotations, path.Child("metadata", "annotations"))...)
	errs = append(errs, validatePodSpec(&t.Spec, path.Child("spec"), nil, opts)...)
	if len(t.Spec.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(path.Child("spec", "ephemeralContainers"), "ephemeral containers not allowed in pod template"))
	}
	return errs
}

// validatePodSpec checks a pod spec. pod, the pod's metadata (nil for a
// template), adds the checks only pods get; opts relax the checks an
// update's old object failed.
func validatePodSpec(s *corev1.PodSpec, path *field.Path, pod *metav1.ObjectMeta, opts podValidationOptions) field.ErrorList {
	var errs field.ErrorList
	isPod := pod != nil
	volumes, vErrs := validateVolumes(s.Volumes, path.Child("volumes"), pod, opts)
	errs = append(errs, vErrs...)
	if isPod {
		errs = append(errs, validateTokensHaveServiceAccount(s, path.Child("volumes"))...)
	}

	names := sets.New[string]()
	errs = append(errs, validateContainerList(s.InitContainers, volumes, names, path.Child("initContainers"), true, s.TerminationGracePeriodSeconds, opts)...)
	if len(s.Containers) == 0 {
		errs = append(errs, field.Required(path.Child("containers"), ""))
	}
	errs = append(errs, validateContainerList(s.Containers, volumes, names, path.Child("containers"), false, s.TerminationGracePeriodSeconds, opts)...)
	errs = append(errs, validateEphemeralContainers(s, volumes, names, path.Child("ephemeralContainers"), opts)...)
	errs = append(errs, validatePodLevelResources(s, path.Child("resources"), opts)...)
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
	if s.RuntimeClassName != nil {
		errs = append(errs, dnsSubdomain(*s.RuntimeClassName, path.Child("runtimeClassName"))...)
	}
	if s.Overhead != nil {
		// Checked as container limits, as upstream; whether a pod may carry
		// an overhead at all is the RuntimeClass admission plugin's call.
		errs = append(errs, validateContainerResources(&corev1.ResourceRequirements{Limits: s.Overhead}, path.Child("overhead"), opts)...)
	}
	// No range check, as upstream: a pod's negative period became 1 at
	// defaulting (defaultPod); a template's stays (upstream only warns).
	if s.TerminationGracePeriodSeconds == nil {
		errs = append(errs, field.Required(path.Child("terminationGracePeriodSeconds"), ""))
	}
	if s.ActiveDeadlineSeconds != nil {
		if v := *s.ActiveDeadlineSeconds; v < 1 || v > math.MaxInt32 {
			errs = append(errs, field.Invalid(path.Child("activeDeadlineSeconds"), v, validation.InclusiveRangeError(1, math.MaxInt32)))
		}
	}
	errs = append(errs, validateTolerations(s.Tolerations, path.Child("tolerations"))...)
	errs = append(errs, validateAffinity(s.Affinity, path.Child("affinity"), opts)...)
	errs = append(errs, validateTopologySpreadConstraints(s.TopologySpreadConstraints, path.Child("topologySpreadConstraints"), opts)...)
	gates := sets.New[string]()
	for i, g := range s.SchedulingGates {
		p := path.Child("schedulingGates").Index(i)
		errs = append(errs, validateLabelKey(g.Name, p)...)
		if gates.Has(g.Name) {
			errs = append(errs, field.Duplicate(p, g.Name))
		}
		gates.Insert(g.Name)
	}
	for i, g := range s.ReadinessGates {
		errs = append(errs, validateLabelKey(string(g.ConditionType), path.Child("readinessGates").Index(i).Child("conditionType"))...)
	}
	// Only the name may be set, and upstream does not require it
	// (validateImagePullSecrets); LocalObjectReference has no other field.
	errs = append(errs, validatePodSecurityContext(s, path.Child("securityContext"), opts)...)
	errs = append(errs, validateProcMountUserNamespace(s, path)...)
	errs = append(errs, validatePodOS(s, path)...)
	errs = append(errs, validateHostUsers(s, path, opts)...)
	errs = append(errs, validateResizePolicies(s, path, opts)...)
	errs = append(errs, validateDNSConfig(s.DNSConfig, s.DNSPolicy, path.Child("dnsConfig"))...)
	for i, ha := range s.HostAliases {
		hp := path.Child("hostAliases").Index(i)
		errs = append(errs, validateLegacyIP(ha.IP, hp.Child("ip"))...)
		for j, h := range ha.Hostnames {
			errs = append(errs, dnsSubdomain(h, hp.Child("hostnames").Index(j))...)
		}
	}
	errs = append(errs, validateFileKeyRefVolumes(s, path)...)
	errs = append(errs, validateHostnameOverride(s, path.Child("hostnameOverride"))...)
	errs = append(errs, validateHostNetworkPorts(s, path, isPod)...)
	errs = append(errs, validateImageWhitespace(s, path, isPod)...)
	return errs
}

// validateHostnameOverride checks spec.hostnameOverride (HostnameOverride,
// on by default since 1.35) as upstream's validatePodHostName: not beside
// setHostnameAsFQDN true nor in the host's network, at most 64 characters,
// a DNS-1123 subdomain.
func validateHostnameOverride(s *corev1.PodSpec, p *field.Path) field.ErrorList {
	if s.HostnameOverride == nil {
		return nil
	}
	var errs field.ErrorList
	if s.SetHostnameAsFQDN != nil && *s.SetHostnameAsFQDN {
		errs = append(errs, field.Forbidden(p, "may not be specified when setHostnameAsFQDN is true"))
	}
	if s.HostNetwork {
		errs = append(errs, field.Forbidden(p, "may not be specified when hostNetwork is true"))
	}
	if len(*s.HostnameOverride) > 64 {
		errs = append(errs, field.TooLong(p, "", 64))
	}
	return append(errs, dnsSubdomain(*s.HostnameOverride, p)...)
}

// validateHostNetworkPorts: in the host's network namespace an app
// container's hostPort is its containerPort, as upstream's
// validatePodHostNetworkDeps: a pod's (defaulting made an unset hostPort
// the containerPort); a template's may leave it unset (0), since the pod
// will be defaulted, but any other value must match.
func validateHostNetworkPorts(s *corev1.PodSpec, path *field.Path, isPod bool) field.ErrorList {
	if !s.HostNetwork {
		return nil
	}
	var errs field.ErrorList
	for i, c := range s.Containers {
		for j, port := range c.Ports {
			if hp, cp := port.HostPort, port.ContainerPort; (isPod || hp != 0) && hp != cp {
				errs = append(errs, field.Invalid(path.Child("containers").Index(i).Child("ports").Index(j).Child("hostPort"),
					hp, "must match `containerPort` when `hostNetwork` is true"))
			}
		}
	}
	return errs
}

// validateImageWhitespace: a pod's container images (init and app, and
// ephemeral ones, which only pods have) have no leading or trailing
// whitespace, as upstream's validateContainerOnlyForPod; a template's are
// not checked (kept for compatibility: " " is a placeholder some set).
func validateImageWhitespace(s *corev1.PodSpec, path *field.Path, isPod bool) field.ErrorList {
	var errs field.ErrorList
	check := func(image string, p containerPath) {
		if len(image) != len(strings.TrimSpace(image)) {
			errs = append(errs, field.Invalid(p.Child("image"), image, "must not have leading or trailing whitespace"))
		}
	}
	if isPod {
		for i := range s.Containers {
			check(s.Containers[i].Image, containerPath{path, "containers", i})
		}
		for i := range s.InitContainers {
			check(s.InitContainers[i].Image, containerPath{path, "initContainers", i})
		}
	}
	for i := range s.EphemeralContainers {
		check(s.EphemeralContainers[i].Image, containerPath{path, "ephemeralContainers", i})
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

// Limits of a pod's DNS configuration (from libc's resolver).
const (
	maxDNSNameservers     = 3
	maxDNSSearchPaths     = 32
	maxDNSSearchListChars = 2048
)

// validateDNSConfig checks spec.dnsConfig as upstream's validatePodDNSConfig:
// dnsPolicy None needs a dnsConfig with a nameserver (nothing else is
// checked without one); nameservers are legacy IPs, at most 3; at most 32
// searches of at most 2048 characters joined by spaces, each (but ".") a
// DNS subdomain that may hold underscores once a trailing dot is dropped
// (RelaxedDNSSearchValidation, GA since 1.34); options need a name.
func validateDNSConfig(c *corev1.PodDNSConfig, policy corev1.DNSPolicy, path *field.Path) field.ErrorList {
	if policy == corev1.DNSNone {
		if c == nil {
			return field.ErrorList{field.Required(path, "must provide `dnsConfig` when `dnsPolicy` is None")}
		}
		if len(c.Nameservers) == 0 {
			return field.ErrorList{field.Required(path.Child("nameservers"), "must provide at least one DNS nameserver when `dnsPolicy` is None")}
		}
	}
	if c == nil {
		return nil
	}
	var errs field.ErrorList
	if len(c.Nameservers) > maxDNSNameservers {
		errs = append(errs, field.Invalid(path.Child("nameservers"), c.Nameservers, fmt.Sprintf("must not have more than %d nameservers", maxDNSNameservers)))
	}
	for i, ns := range c.Nameservers {
		errs = append(errs, validateLegacyIP(ns, path.Child("nameservers").Index(i))...)
	}
	if len(c.Searches) > maxDNSSearchPaths {
		errs = append(errs, field.Invalid(path.Child("searches"), c.Searches, fmt.Sprintf("must not have more than %d search paths", maxDNSSearchPaths)))
	}
	if len(strings.Join(c.Searches, " ")) > maxDNSSearchListChars {
		errs = append(errs, field.Invalid(path.Child("searches"), c.Searches, fmt.Sprintf("must not have more than %d characters (including spaces) in the search list", maxDNSSearchListChars)))
	}
	for i, search := range c.Searches {
		if search == "." {
			continue
		}
		search = strings.TrimSuffix(search, ".")
		for _, msg := range validation.IsDNS1123SubdomainWithUnderscore(search) {
			errs = append(errs, field.Invalid(path.Child("searches").Index(i), search, msg))
		}
	}
	for i, o := range c.Options {
		if o.Name == "" {
			errs = append(errs, field.Required(path.Child("options").Index(i), "must not be empty"))
		}
	}
	return errs
}

// validateLegacyIP checks an IP of a field that predates strict IP
// validation (dnsConfig nameservers, hostAliases) as upstream 1.37's
// validatePodDNSConfig and ValidateHostAliases: IsValidIPForLegacyField with
// StrictIPCIDRValidation on (KEP-4858, beta and on by default since 1.36),
// so leading zeros and IPv4-mapped IPv6 are refused while a non-canonical
// IPv6 address is accepted (with a warning, podSpecAndMetaWarnings). Upstream
// passes no old IPs for these fields: they are immutable in a pod, and
// its ratcheting for immutable fields was not implemented.
func validateLegacyIP(ip string, path *field.Path) field.ErrorList {
	return validation.IsValidIPForLegacyField(path, ip, true, nil)
}

// validatePodSecurityContext checks spec.securityContext as upstream's
// validatePodSpecSecurityContext. Upstream validates its internal type,
// which holds shareProcessNamespace and the host namespaces too, so their
// errors name spec.securityContext.shareProcessNamespace as upstream's do.
func validatePodSecurityContext(s *corev1.PodSpec, p *field.Path, opts podValidationOptions) field.ErrorList {
	sc := s.SecurityContext
	if sc == nil {
		return nil
	}
	var errs field.ErrorList
	if sc.FSGroup != nil {
		for _, msg := range validation.IsValidGroupID(*sc.FSGroup) {
			errs = append(errs, field.Invalid(p.Child("fsGroup"), *sc.FSGroup, msg))
		}
	}
	errs = append(errs, validateIDs(sc.RunAsUser, sc.RunAsGroup, p)...)
	for i, gid := range sc.SupplementalGroups {
		for _, msg := range validation.IsValidGroupID(gid) {
			errs = append(errs, field.Invalid(p.Child("supplementalGroups").Index(i), gid, msg))
		}
	}
	if s.ShareProcessNamespace != nil && *s.ShareProcessNamespace && s.HostPID {
		errs = append(errs, field.Invalid(p.Child("shareProcessNamespace"), true, "ShareProcessNamespace and HostPID cannot both be enabled"))
	}
	if len(sc.Sysctls) > 0 {
		errs = append(errs, validateSysctls(s, p.Child("sysctls"), opts)...)
	}
	if fp := sc.FSGroupChangePolicy; fp != nil {
		switch *fp {
		case corev1.FSGroupChangeAlways, corev1.FSGroupChangeOnRootMismatch:
		default:
			errs = append(errs, field.NotSupported(p.Child("fsGroupChangePolicy"), *fp, []string{string(corev1.FSGroupChangeAlways), string(corev1.FSGroupChangeOnRootMismatch)}))
		}
	}
	// Each of these checks nothing when its field is unset (the paths
	// are made only when there is something to check).
	if sc.SeccompProfile != nil {
		errs = append(errs, validateSeccompProfile(sc.SeccompProfile, p.Child("seccompProfile"))...)
	}
	if sc.WindowsOptions != nil {
		errs = append(errs, validateWindowsOptions(sc.WindowsOptions, p.Child("windowsOptions"))...)
	}
	if sc.AppArmorProfile != nil {
		errs = append(errs, validateAppArmorProfile(sc.AppArmorProfile, p.Child("appArmorProfile"))...)
	}
	if gp := sc.SupplementalGroupsPolicy; gp != nil {
		switch *gp {
		case corev1.SupplementalGroupsPolicyMerge, corev1.SupplementalGroupsPolicyStrict:
		default:
			errs = append(errs, field.NotSupported(p.Child("supplementalGroupsPolicy"), *gp, []string{string(corev1.SupplementalGroupsPolicyMerge), string(corev1.SupplementalGroupsPolicyStrict)}))
		}
	}
	if cp := sc.SELinuxChangePolicy; cp != nil {
		// SELinuxChangePolicy is on (beta since 1.33) but SELinuxMount is
		// not: only Recursive, unless the stored object had a policy.
		valid := []string{string(corev1.SELinuxChangePolicyRecursive)}
		if opts.allowAnySELinuxChangePolicy {
			valid = []string{string(corev1.SELinuxChangePolicyMountOption), string(corev1.SELinuxChangePolicyRecursive)}
		}
		if !containsString(valid, string(*cp)) {
			errs = append(errs, field.NotSupported(p.Child("seLinuxChangePolicy"), *cp, valid))
		}
	}
	return errs
}

// Sysctl names, as upstream's IsValidSysctlName: dot- or slash-separated
// segments, at most 253 characters.
const (
	sysctlSegmentFmt      = "[a-z0-9]([-_a-z0-9]*[a-z0-9])?"
	sysctlContainSlashFmt = "(" + sysctlSegmentFmt + "[\\./])*" + sysctlSegmentFmt
	sysctlMaxLength       = 253
)

var sysctlContainSlashRegexp = regexp.MustCompile("^" + sysctlContainSlashFmt + "$")

// validateSysctls checks spec.securityContext.sysctls as upstream's
// validateSysctls: a name is required, valid and not repeated, and a
// network (IPC) sysctl is refused in the host's network (IPC) namespace
// unless the stored object already had such a sysctl.
func validateSysctls(s *corev1.PodSpec, p *field.Path, opts podValidationOptions) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, sc := range s.SecurityContext.Sysctls {
		np := p.Index(i).Child("name")
		switch {
		case sc.Name == "":
			errs = append(errs, field.Required(np, ""))
		case len(sc.Name) > sysctlMaxLength || !sysctlContainSlashRegexp.MatchString(sc.Name):
			errs = append(errs, field.Invalid(np, sc.Name, fmt.Sprintf("must have at most %d characters and match regex %s", sysctlMaxLength, sysctlContainSlashRegexp)))
		case names.Has(sc.Name):
			errs = append(errs, field.Duplicate(np, sc.Name))
		}
		if !opts.allowNamespacedSysctlsForHostNetAndHostIPC {
			if err := validateHostSysctl(sc.Name, s, np); err != nil {
				errs = append(errs, err)
			}
		}
		names.Insert(sc.Name)
	}
	return errs
}

// validateHostSysctl is upstream's ValidateHostSysctl: a sysctl of the
// network or IPC namespace may not be set for a pod sharing the host's.
func validateHostSysctl(name string, s *corev1.PodSpec, p *field.Path) *field.Error {
	ns, _, _ := sysctl.GetNamespace(name)
	switch {
	case s.HostNetwork && ns == sysctl.NetNamespace:
		return field.Invalid(p, name, "may not be specified when 'hostNetwork' is true")
	case s.HostIPC && ns == sysctl.IPCNamespace:
		return field.Invalid(p, name, "may not be specified when 'hostIPC' is true")
	}
	return nil
}

// validateProcMountUserNamespace: an Unmasked /proc needs the pod in its
// own user namespace (hostUsers false), as upstream's ValidateSecurityContext
// for every container, init and ephemeral ones included.
func validateProcMountUserNamespace(s *corev1.PodSpec, path *field.Path) field.ErrorList {
	if s.HostUsers != nil && !*s.HostUsers {
		return nil
	}
	var errs field.ErrorList
	visitContainerSecurityContexts(s, path, func(sc *corev1.SecurityContext, p containerPath) {
		if sc != nil && sc.ProcMount != nil && *sc.ProcMount == corev1.UnmaskedProcMount {
			errs = append(errs, field.Invalid(p.Child("securityContext", "procMount"), sc.ProcMount, "`hostUsers` must be false to use `Unmasked`"))
		}
	})
	return errs
}

// validatePodOS checks spec.os as upstream's validateOS and, for a valid
// name, what the OS rules out (validateLinux, validateWindows): Windows
// options on Linux; on Windows the Linux-only settings of the pod's and
// each container's security context and the host namespaces.
func validatePodOS(s *corev1.PodSpec, path *field.Path) field.ErrorList {
	if s.OS == nil {
		return nil
	}
	switch s.OS.Name {
	case "":
		return field.ErrorList{field.Required(path.Child("os", "name"), "")}
	case corev1.Linux:
		return validateLinuxPod(s, path)
	case corev1.Windows:
		return validateWindowsPod(s, path)
	}
	return field.ErrorList{field.NotSupported(path.Child("os"), s.OS.Name, []string{string(corev1.Linux), string(corev1.Windows)})}
}

// visitContainerSecurityContexts calls f with each container's security
// context (init, app, then ephemeral containers) and the container's path.
func visitContainerSecurityContexts(s *corev1.PodSpec, path *field.Path, f func(sc *corev1.SecurityContext, p containerPath)) {
	visitContainers(s, path, func(_ string, sc *corev1.SecurityContext, p containerPath) { f(sc, p) })
}

// visitContainers calls f with each container's name, security context
// and path (init, app, then ephemeral containers, as upstream's
// VisitContainersWithPath).
func visitContainers(s *corev1.PodSpec, path *field.Path, f func(name string, sc *corev1.SecurityContext, p containerPath)) {
	for i := range s.InitContainers {
		f(s.InitContainers[i].Name, s.InitContainers[i].SecurityContext, containerPath{path, "initContainers", i})
	}
	for i := range s.Containers {
		f(s.Containers[i].Name, s.Containers[i].SecurityContext, containerPath{path, "containers", i})
	}
	for i := range s.EphemeralContainers {
		f(s.EphemeralContainers[i].Name, s.EphemeralContainers[i].SecurityContext, containerPath{path, "ephemeralContainers", i})
	}
}

// containerPath is a container's path (spec.containers[2]) made only when
// an error names it: the pod checks visit every container several times
// on each create and almost never report anything, and building the path
// up front cost two allocations per container per visit.
type containerPath struct {
	spec  *field.Path
	list  string // initContainers, containers or ephemeralContainers
	index int
}

// Path is the container's path.
func (c containerPath) Path() *field.Path { return c.spec.Child(c.list).Index(c.index) }

// Child is the path of a field of the container.
func (c containerPath) Child(name string, moreNames ...string) *field.Path {
	return c.Path().Child(name, moreNames...)
}

func validateLinuxPod(s *corev1.PodSpec, path *field.Path) field.ErrorList {
	const msg = "windows options cannot be set for a linux pod"
	var errs field.ErrorList
	if s.SecurityContext != nil && s.SecurityContext.WindowsOptions != nil {
		errs = append(errs, field.Forbidden(path.Child("securityContext", "windowsOptions"), msg))
	}
	visitContainerSecurityContexts(s, path, func(sc *corev1.SecurityContext, p containerPath) {
		if sc != nil && sc.WindowsOptions != nil {
			errs = append(errs, field.Forbidden(p.Child("securityContext", "windowsOptions"), msg))
		}
	})
	return errs
}

func validateWindowsPod(s *corev1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	forbid := func(set bool, p *field.Path) {
		if set {
			errs = append(errs, field.Forbidden(p, "cannot be set for a windows pod"))
		}
	}
	if sc := s.SecurityContext; sc != nil {
		scp := path.Child("securityContext")
		forbid(sc.AppArmorProfile != nil, scp.Child("appArmorProfile"))
		forbid(sc.SELinuxOptions != nil, scp.Child("seLinuxOptions"))
		forbid(sc.SeccompProfile != nil, scp.Child("seccompProfile"))
		forbid(sc.FSGroup != nil, scp.Child("fsGroup"))
		forbid(sc.FSGroupChangePolicy != nil, scp.Child("fsGroupChangePolicy"))
		forbid(len(sc.Sysctls) > 0, scp.Child("sysctls"))
		forbid(sc.RunAsUser != nil, scp.Child("runAsUser"))
		forbid(sc.RunAsGroup != nil, scp.Child("runAsGroup"))
		forbid(sc.SupplementalGroups != nil, scp.Child("supplementalGroups"))
		forbid(sc.SupplementalGroupsPolicy != nil, scp.Child("supplementalGroupsPolicy"))
		forbid(sc.SELinuxChangePolicy != nil, scp.Child("seLinuxChangePolicy"))
	}
	// Upstream keeps these in its internal security context but names
	// them on the spec.
	forbid(s.HostUsers != nil, path.Child("hostUsers"))
	forbid(s.HostPID, path.Child("hostPID"))
	forbid(s.HostIPC, path.Child("hostIPC"))
	forbid(s.ShareProcessNamespace != nil, path.Child("shareProcessNamespace"))
	visitContainerSecurityContexts(s, path, func(sc *corev1.SecurityContext, p containerPath) {
		if sc == nil {
			return
		}
		scp := p.Child("securityContext")
		forbid(sc.AppArmorProfile != nil, scp.Child("appArmorProfile"))
		forbid(sc.SELinuxOptions != nil, scp.Child("seLinuxOptions"))
		forbid(sc.SeccompProfile != nil, scp.Child("seccompProfile"))
		forbid(sc.Capabilities != nil, scp.Child("capabilities"))
		forbid(sc.ReadOnlyRootFilesystem != nil, scp.Child("readOnlyRootFilesystem"))
		forbid(sc.Privileged != nil, scp.Child("privileged"))
		forbid(sc.AllowPrivilegeEscalation != nil, scp.Child("allowPrivilegeEscalation"))
		forbid(sc.ProcMount != nil, scp.Child("procMount"))
		forbid(sc.RunAsUser != nil, scp.Child("runAsUser"))
		forbid(sc.RunAsGroup != nil, scp.Child("runAsGroup"))
	})
	return errs
}

// validateHostUsers: a pod in its own user namespace (hostUsers false) may
// not share the host's PID or IPC namespace nor (UserNamespacesHostNetworkSupport
// being alpha, off) its network, nor have volumeDevices, as upstream's
// validateHostUsers, which names the first two "HostPID" and "HostIPC".
// The stored object's own such settings stay allowed on update.
func validateHostUsers(s *corev1.PodSpec, path *field.Path, opts podValidationOptions) field.ErrorList {
	if s.HostUsers == nil || *s.HostUsers {
		return nil
	}
	const msg = "when `hostUsers` is false"
	var errs field.ErrorList
	if s.HostNetwork && !opts.allowUserNamespacesHostNetwork {
		errs = append(errs, field.Forbidden(path.Child("hostNetwork"), msg))
	}
	if s.HostPID {
		errs = append(errs, field.Forbidden(path.Child("HostPID"), msg))
	}
	if s.HostIPC {
		errs = append(errs, field.Forbidden(path.Child("HostIPC"), msg))
	}
	if !opts.allowUserNamespacesWithVolumeDevices {
		for _, list := range []struct {
			name string
			cs   []corev1.Container
		}{{"initContainers", s.InitContainers}, {"containers", s.Containers}} {
			for i := range list.cs {
				if len(list.cs[i].VolumeDevices) > 0 {
					errs = append(errs, field.Forbidden(path.Child(list.name).Index(i).Child("volumeDevices"), msg))
				}
			}
		}
		for i := range s.EphemeralContainers {
			if len(s.EphemeralContainers[i].VolumeDevices) > 0 {
				errs = append(errs, field.Forbidden(path.Child("ephemeralContainers").Index(i).Child("volumeDevices"), msg))
			}
		}
	}
	return errs
}

// validateResizePolicies checks the init and app containers' resizePolicy
// as upstream's validateResizePolicy (errors other than Duplicate name the
// list, as upstream's do): cpu or memory, once each; NotRequired or
// RestartContainer, only NotRequired in a pod that never restarts. A
// non-sidecar init container may not ask for RestartContainer (unless the
// stored object already did). Sidecars may have a resize policy
// (InPlacePodVerticalScaling is GA). Ephemeral containers may have none
// (validateEphemeralContainers).
func validateResizePolicies(s *corev1.PodSpec, path *field.Path, opts podValidationOptions) field.ErrorList {
	var errs field.ErrorList
	check := func(c *corev1.Container, p containerPath) {
		if len(c.ResizePolicy) == 0 {
			return
		}
		lp := p.Child("resizePolicy")
		seen := sets.New[corev1.ResourceName]()
		for i, rp := range c.ResizePolicy {
			if seen.Has(rp.ResourceName) {
				errs = append(errs, field.Duplicate(lp.Index(i), rp.ResourceName))
			}
			seen.Insert(rp.ResourceName)
			switch rp.ResourceName {
			case corev1.ResourceCPU, corev1.ResourceMemory:
			case "":
				errs = append(errs, field.Required(lp, ""))
			default:
				errs = append(errs, field.NotSupported(lp, rp.ResourceName, []string{string(corev1.ResourceCPU), string(corev1.ResourceMemory)}))
			}
			switch rp.RestartPolicy {
			case corev1.NotRequired, corev1.RestartContainer:
			case "":
				errs = append(errs, field.Required(lp, ""))
			default:
				errs = append(errs, field.NotSupported(lp, rp.RestartPolicy, []string{string(corev1.NotRequired), string(corev1.RestartContainer)}))
			}
			if s.RestartPolicy == corev1.RestartPolicyNever && rp.RestartPolicy != corev1.NotRequired {
				errs = append(errs, field.Invalid(lp, rp.RestartPolicy, "must be 'NotRequired' when pod `restartPolicy` is 'Never'"))
			}
		}
	}
	for i := range s.InitContainers {
		c := &s.InitContainers[i]
		p := containerPath{path, "initContainers", i}
		check(c, p)
		if isSidecar(c) || opts.allowRestartContainerResizeForNonSidecarInit {
			continue
		}
		for j, rp := range c.ResizePolicy {
			if rp.RestartPolicy == corev1.RestartContainer {
				errs = append(errs, field.Invalid(p.Child("resizePolicy").Index(j).Child("restartPolicy"), rp.RestartPolicy, "must not be set to 'RestartContainer' for non-sidecar initContainers"))
			}
		}
	}
	for i := range s.Containers {
		check(&s.Containers[i], containerPath{path, "containers", i})
	}
	return errs
}

// validatePodAnnotations checks a pod's annotations as upstream's
// ValidatePodSpecificAnnotations (the tolerations annotation excepted): a
// mirror pod names its node; pod-deletion-cost is a canonical int32 (unless
// the stored pod's was not); the seccomp and AppArmor annotations hold
// valid profiles, the latter for a container the pod has.
func validatePodAnnotations(p *corev1.Pod, allowInvalidDeletionCost bool) field.ErrorList {
	a := p.Annotations
	if len(a) == 0 {
		return nil
	}
	path := func() *field.Path { return field.NewPath("metadata", "annotations") }
	var errs field.ErrorList
	if v, mirror := a[corev1.MirrorPodAnnotationKey]; mirror && p.Spec.NodeName == "" {
		errs = append(errs, field.Invalid(path().Key(corev1.MirrorPodAnnotationKey), v, "must set spec.nodeName if mirror pod annotation is set"))
	}
	if !allowInvalidDeletionCost && !validDeletionCost(a) {
		errs = append(errs, field.Invalid(path().Key(corev1.PodDeletionCost), a[corev1.PodDeletionCost], "must be a 32bit integer"))
	}
	if !hasProfileAnnotation(a) {
		return errs
	}
	for _, k := range slices.Sorted(maps.Keys(a)) {
		v := a[k]
		if k == corev1.SeccompPodAnnotationKey || strings.HasPrefix(k, corev1.SeccompContainerAnnotationKeyPrefix) {
			errs = append(errs, validateSeccompAnnotation(v, path().Child(k))...)
		}
		if name, ok := strings.CutPrefix(k, corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix); ok {
			if !podHasContainer(&p.Spec, name) {
				errs = append(errs, field.Invalid(path().Key(k), name, "container not found"))
			}
			if v != "" && v != corev1.DeprecatedAppArmorBetaProfileRuntimeDefault && v != corev1.DeprecatedAppArmorBetaProfileNameUnconfined &&
				!strings.HasPrefix(v, corev1.DeprecatedAppArmorBetaProfileNamePrefix) {
				errs = append(errs, field.Invalid(path().Key(k), v, fmt.Sprintf("invalid AppArmor profile name: %q", v)))
			}
		}
	}
	return errs
}

// hasProfileAnnotation: a has a seccomp or AppArmor annotation (which
// validatePodAnnotations checks in key order; most pods have none).
func hasProfileAnnotation(a map[string]string) bool {
	for k := range a {
		if k == corev1.SeccompPodAnnotationKey || strings.HasPrefix(k, corev1.SeccompContainerAnnotationKeyPrefix) ||
			strings.HasPrefix(k, corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix) {
			return true
		}
	}
	return false
}

// validDeletionCost: no pod-deletion-cost, or one upstream's
// GetDeletionCostFromPodAnnotations reads (no "+", no leading zero, int32).
func validDeletionCost(a map[string]string) bool {
	v, ok := a[corev1.PodDeletionCost]
	if !ok {
		return true
	}
	if v == "" || !(v[0] == '-' || v == "0" || (v[0] >= '1' && v[0] <= '9')) {
		return false
	}
	_, err := strconv.ParseInt(v, 10, 32)
	return err == nil
}

// validateSeccompAnnotation is upstream's ValidateSeccompProfile of an
// annotation value.
func validateSeccompAnnotation(v string, p *field.Path) field.ErrorList {
	switch {
	case v == corev1.SeccompProfileRuntimeDefault, v == corev1.DeprecatedSeccompProfileDockerDefault, v == corev1.SeccompProfileNameUnconfined:
		return nil
	case strings.HasPrefix(v, corev1.SeccompLocalhostProfileNamePrefix):
		return validateLocalDescendingPath(strings.TrimPrefix(v, corev1.SeccompLocalhostProfileNamePrefix), p)
	}
	return field.ErrorList{field.Invalid(p, v, "must be a valid seccomp profile")}
}

func podHasContainer(s *corev1.PodSpec, name string) bool {
	for _, cs := range [][]corev1.Container{s.InitContainers, s.Containers} {
		for i := range cs {
			if cs[i].Name == name {
				return true
			}
		}
	}
	for i := range s.EphemeralContainers {
		if s.EphemeralContainers[i].Name == name {
			return true
		}
	}
	return false
}

// validatePodAnnotationUpdates: AppArmor and mirror pod annotations may be
// neither added, removed nor changed by an update (upstream's
// ValidatePodSpecificAnnotationUpdates).
func validatePodAnnotationUpdates(p, old *corev1.Pod) field.ErrorList {
	path := field.NewPath("metadata", "annotations")
	guarded := func(k string) bool {
		return k == corev1.MirrorPodAnnotationKey || strings.HasPrefix(k, corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix)
	}
	var errs field.ErrorList
	for _, k := range slices.Sorted(maps.Keys(old.Annotations)) {
		if v, ok := p.Annotations[k]; (ok && v == old.Annotations[k]) || !guarded(k) {
			continue
		}
		if k == corev1.MirrorPodAnnotationKey {
			errs = append(errs, field.Forbidden(path.Key(k), "may not remove or update mirror pod annotation"))
		} else {
			errs = append(errs, field.Forbidden(path.Key(k), "may not remove or update AppArmor annotations"))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(p.Annotations)) {
		if _, ok := old.Annotations[k]; ok || !guarded(k) {
			continue
		}
		if k == corev1.MirrorPodAnnotationKey {
			errs = append(errs, field.Forbidden(path.Key(k), "may not add mirror pod annotation"))
		} else {
			errs = append(errs, field.Forbidden(path.Key(k), "may not add AppArmor annotations"))
		}
	}
	return errs
}

// validatePodCreateAsUpstream holds the create-only checks of upstream's
// ValidatePodCreate: a pod still gated may not name a node, and seccomp
// and AppArmor annotations beside the fields must say the same.
func validatePodCreateAsUpstream(p *corev1.Pod) field.ErrorList {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	if p.Spec.NodeName != "" && len(p.Spec.SchedulingGates) != 0 {
		errs = append(errs, field.Forbidden(spec.Child("nodeName"), "cannot be set until all schedulingGates have been cleared"))
	}
	a := p.Annotations
	var podSeccomp *corev1.SeccompProfile
	var podAppArmor *corev1.AppArmorProfile
	if sc := p.Spec.SecurityContext; sc != nil {
		podSeccomp, podAppArmor = sc.SeccompProfile, sc.AppArmorProfile
	}
	if v, ok := a[corev1.SeccompPodAnnotationKey]; ok && podSeccomp != nil {
		errs = append(errs, seccompAnnotationMatches(v, podSeccomp, spec.Child("securityContext", "seccompProfile"))...)
	}
	windows := p.Spec.OS != nil && p.Spec.OS.Name == corev1.Windows
	visitContainers(&p.Spec, spec, func(name string, sc *corev1.SecurityContext, cp containerPath) {
		if sc != nil && sc.SeccompProfile != nil {
			if v, ok := a[corev1.SeccompContainerAnnotationKeyPrefix+name]; ok {
				errs = append(errs, seccompAnnotationMatches(v, sc.SeccompProfile, cp.Child("securityContext", "seccompProfile"))...)
			}
		}
		if windows {
			return
		}
		profile := podAppArmor
		if sc != nil && sc.AppArmorProfile != nil {
			profile = sc.AppArmorProfile
		}
		if v, ok := a[corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix+name]; ok && profile != nil {
			errs = append(errs, appArmorAnnotationMatches(v, profile, cp.Child("securityContext", "appArmorProfile"))...)
		}
	})
	return errs
}

// seccompAnnotationMatches is upstream's validateSeccompAnnotationsAndFieldsMatch.
func seccompAnnotationMatches(v string, sp *corev1.SeccompProfile, p *field.Path) field.ErrorList {
	typeMismatch := field.ErrorList{field.Forbidden(p.Child("type"), "seccomp type in annotation and field must match")}
	switch sp.Type {
	case corev1.SeccompProfileTypeUnconfined:
		if v != corev1.SeccompProfileNameUnconfined {
			return typeMismatch
		}
	case corev1.SeccompProfileTypeRuntimeDefault:
		if v != corev1.SeccompProfileRuntimeDefault && v != corev1.DeprecatedSeccompProfileDockerDefault {
			return typeMismatch
		}
	case corev1.SeccompProfileTypeLocalhost:
		if !strings.HasPrefix(v, corev1.SeccompLocalhostProfileNamePrefix) {
			return typeMismatch
		}
		if sp.LocalhostProfile == nil || strings.TrimPrefix(v, corev1.SeccompLocalhostProfileNamePrefix) != *sp.LocalhostProfile {
			return field.ErrorList{field.Forbidden(p.Child("localhostProfile"), "seccomp profile in annotation and field must match")}
		}
	}
	return nil
}

// appArmorAnnotationMatches is the check of upstream's
// validateAppArmorAnnotationsAndFieldsMatchOnCreate for one container.
func appArmorAnnotationMatches(v string, ap *corev1.AppArmorProfile, p *field.Path) field.ErrorList {
	typeMismatch := field.ErrorList{field.Forbidden(p.Child("type"), "apparmor type in annotation and field must match")}
	switch ap.Type {
	case corev1.AppArmorProfileTypeUnconfined:
		if v != corev1.DeprecatedAppArmorBetaProfileNameUnconfined {
			return typeMismatch
		}
	case corev1.AppArmorProfileTypeRuntimeDefault:
		if v != corev1.DeprecatedAppArmorBetaProfileRuntimeDefault {
			return typeMismatch
		}
	case corev1.AppArmorProfileTypeLocalhost:
		if !strings.HasPrefix(v, corev1.DeprecatedAppArmorBetaProfileNamePrefix) {
			return typeMismatch
		}
		if ap.LocalhostProfile == nil || strings.TrimPrefix(v, corev1.DeprecatedAppArmorBetaProfileNamePrefix) != *ap.LocalhostProfile {
			return field.ErrorList{field.Forbidden(p.Child("localhostProfile"), "apparmor profile in annotation and field must match")}
		}
	}
	return nil
}
