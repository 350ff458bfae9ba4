package admission

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Pod Security Standards levels.
const (
	levelPrivileged = "privileged"
	levelBaseline   = "baseline"
	levelRestricted = "restricted"
)

// violation is one failed check: a short reason and its detail.
type violation struct{ reason, detail string }

// checkFunc evaluates one control on a pod's metadata and spec.
type checkFunc func(meta *podMeta, spec *corev1.PodSpec) *violation

// securityCheck is one Pod Security Standards control, as kube-apiserver's
// pod-security-admission registers it: an ID, the lowest level that
// enforces it, and its definitions by policy version.
type securityCheck struct {
	id       string
	level    string // baseline or restricted
	versions []versionedCheck
}

// versionedCheck is a control's definition from policy version v1.<since>
// until the control's next definition.
type versionedCheck struct {
	since int
	check checkFunc
	// overrides are the baseline controls (by ID) this restricted
	// definition replaces at the restricted level.
	overrides []string
}

// podMeta is what checks read of a pod's metadata.
type podMeta struct{ annotations map[string]string }

// securityChecks are the baseline and restricted controls in the order
// their violations are reported (kube-apiserver's: baseline then
// restricted, each sorted by check ID), with the policy versions at which
// their definitions change (pod-security-admission's policy/check_*.go).
var securityChecks = []securityCheck{
	{"appArmorProfile", levelBaseline, []versionedCheck{{since: 0, check: checkAppArmor}}},
	{"capabilities_baseline", levelBaseline, []versionedCheck{{since: 0, check: checkBaselineCapabilities}}},
	{"hostNamespaces", levelBaseline, []versionedCheck{{since: 0, check: checkHostNamespaces}}},
	{"hostPathVolumes", levelBaseline, []versionedCheck{{since: 0, check: checkHostPathVolumes}}},
	{"hostPorts", levelBaseline, []versionedCheck{{since: 0, check: checkHostPorts}}},
	// Probe and lifecycle handler hosts are forbidden from v1.34.
	{"hostProbesAndHostLifecycle", levelBaseline, []versionedCheck{{since: 34, check: checkProbeHost}}},
	{"privileged", levelBaseline, []versionedCheck{{since: 0, check: checkPrivileged}}},
	// From v1.35 a pod in its own user namespace may unmask /proc at the
	// baseline level (restricted still forbids it: procMount_restricted).
	{"procMount", levelBaseline, []versionedCheck{{since: 0, check: checkProcMount}, {since: 35, check: checkProcMountUserNamespaced}}},
	// container_engine_t is allowed from v1.31.
	{"seLinuxOptions", levelBaseline, []versionedCheck{{since: 0, check: checkSELinux(selinuxTypesV1Dot0)}, {since: 31, check: checkSELinux(selinuxTypesV1Dot31)}}},
	// Up to v1.18 the seccomp annotations are checked, from v1.19 the fields.
	{"seccompProfile_baseline", levelBaseline, []versionedCheck{{since: 0, check: checkSeccompAnnotations}, {since: 19, check: checkBaselineSeccomp}}},
	// The safe sysctls grow with the policy version.
	{"sysctls", levelBaseline, []versionedCheck{
		{since: 0, check: checkSysctls(sysctlsV1Dot0)}, {since: 27, check: checkSysctls(sysctlsV1Dot27)},
		{since: 29, check: checkSysctls(sysctlsV1Dot29)}, {since: 32, check: checkSysctls(sysctlsV1Dot32)},
		{since: 37, check: checkSysctls(sysctlsV1Dot37)}}},
	{"windowsHostProcess", levelBaseline, []versionedCheck{{since: 0, check: checkHostProcess}}},

	// From v1.25 Windows pods are exempt from allowPrivilegeEscalation,
	// capabilities and seccomp.
	{"allowPrivilegeEscalation", levelRestricted, []versionedCheck{
		{since: 8, check: checkPrivilegeEscalation(false)}, {since: 25, check: checkPrivilegeEscalation(true)}}},
	{"capabilities_restricted", levelRestricted, []versionedCheck{
		{since: 22, check: checkRestrictedCapabilities(false), overrides: []string{"capabilities_baseline"}},
		{since: 25, check: checkRestrictedCapabilities(true), overrides: []string{"capabilities_baseline"}}}},
	{"procMount_restricted", levelRestricted, []versionedCheck{{since: 35, check: checkProcMount, overrides: []string{"procMount"}}}},
	{"restrictedVolumes", levelRestricted, []versionedCheck{{since: 0, check: checkVolumeTypes, overrides: []string{"hostPathVolumes"}}}},
	// From v1.35 pods in their own user namespace (hostUsers: false) may
	// run as root there.
	{"runAsNonRoot", levelRestricted, []versionedCheck{{since: 0, check: checkRunAsNonRoot(false)}, {since: 35, check: checkRunAsNonRoot(true)}}},
	{"runAsUser", levelRestricted, []versionedCheck{{since: 23, check: checkRunAsUser(false)}, {since: 35, check: checkRunAsUser(true)}}},
	{"seccompProfile_restricted", levelRestricted, []versionedCheck{
		{since: 19, check: checkRestrictedSeccomp(false), overrides: []string{"seccompProfile_baseline"}},
		{since: 25, check: checkRestrictedSeccomp(true), overrides: []string{"seccompProfile_baseline"}}}},
}

// maxPolicyMinor is the newest policy version any control's definition
// starts at: "latest", and any newer version, evaluate as v1.<maxPolicyMinor>
// (kube-apiserver's checkRegistry.maxVersion).
var maxPolicyMinor = func() int {
	m := 0
	for _, c := range securityChecks {
		m = max(m, c.versions[len(c.versions)-1].since)
	}
	return m
}()

// policyChecks holds, by policy minor version (0..maxPolicyMinor), the
// definitions the baseline and the restricted level evaluate, in report
// order.
var policyChecks = func() (out struct{ baseline, restricted [][]checkFunc }) {
	for minor := 0; minor <= maxPolicyMinor; minor++ {
		overridden := map[string]bool{}
		for _, c := range securityChecks {
			if v := c.at(minor); v != nil && c.level == levelRestricted {
				for _, id := range v.overrides {
					overridden[id] = true
				}
			}
		}
		var baseline, restricted []checkFunc
		for _, c := range securityChecks {
			v := c.at(minor)
			if v == nil {
				continue
			}
			if c.level == levelBaseline {
				baseline = append(baseline, v.check)
				if overridden[c.id] {
					continue
				}
			}
			restricted = append(restricted, v.check)
		}
		out.baseline = append(out.baseline, baseline)
		out.restricted = append(out.restricted, restricted)
	}
	return out
}()

// at is c's definition at policy version v1.<minor>, or nil before its
// first one.
func (c *securityCheck) at(minor int) *versionedCheck {
	var v *versionedCheck
	for i := range c.versions {
		if c.versions[i].since <= minor {
			v = &c.versions[i]
		}
	}
	return v
}

// evaluatePodSecurity returns spec's violations of policy (its level at
// its version).
func evaluatePodSecurity(policy podSecurityPolicy, meta *podMeta, spec *corev1.PodSpec) []violation {
	var checks []checkFunc
	switch policy.level {
	case levelBaseline:
		checks = policyChecks.baseline[policy.minor()]
	case levelRestricted:
		checks = policyChecks.restricted[policy.minor()]
	default:
		return nil
	}
	var out []violation
	for _, check := range checks {
		if v := check(meta, spec); v != nil {
			out = append(out, *v)
		}
	}
	return out
}

// containersOf lists every container's name and common fields.
func containersOf(spec *corev1.PodSpec) []*corev1.Container {
	var out []*corev1.Container
	eachContainer(spec, func(c *corev1.Container, _ *field.Path) { out = append(out, c) })
	return out
}

// quoted renders names as `"a", "b"`.
func quoted(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = `"` + n + `"`
	}
	return strings.Join(q, ", ")
}

// containerNoun is `container "a"` or `containers "a", "b"`.
func containerNoun(names []string) string {
	if len(names) == 1 {
		return "container " + quoted(names)
	}
	return "containers " + quoted(names)
}

func pluralNoun(singular, plural string, names []string) string {
	if len(names) == 1 {
		return singular + " " + quoted(names)
	}
	return plural + " " + quoted(names)
}

func badContainers(spec *corev1.PodSpec, bad func(c *corev1.Container) bool) []string {
	var names []string
	for _, c := range containersOf(spec) {
		if bad(c) {
			names = append(names, c.Name)
		}
	}
	return names
}

func isWindows(spec *corev1.PodSpec) bool {
	return spec.OS != nil && spec.OS.Name == corev1.Windows
}

func checkHostProcess(_ *podMeta, spec *corev1.PodSpec) *violation {
	podSets := spec.SecurityContext != nil && spec.SecurityContext.WindowsOptions != nil &&
		spec.SecurityContext.WindowsOptions.HostProcess != nil && *spec.SecurityContext.WindowsOptions.HostProcess
	names := badContainers(spec, func(c *corev1.Container) bool {
		sc := c.SecurityContext
		return sc != nil && sc.WindowsOptions != nil && sc.WindowsOptions.HostProcess != nil && *sc.WindowsOptions.HostProcess
	})
	var who []string
	if podSets {
		who = append(who, "pod")
	}
	if len(names) > 0 {
		who = append(who, containerNoun(names))
	}
	if len(who) == 0 {
		return nil
	}
	return &violation{"hostProcess", strings.Join(who, " and ") + " must not set securityContext.windowsOptions.hostProcess=true"}
}

func checkHostNamespaces(_ *podMeta, spec *corev1.PodSpec) *violation {
	var set []string
	if spec.HostNetwork {
		set = append(set, "hostNetwork=true")
	}
	if spec.HostPID {
		set = append(set, "hostPID=true")
	}
	if spec.HostIPC {
		set = append(set, "hostIPC=true")
	}
	if len(set) == 0 {
		return nil
	}
	return &violation{"host namespaces", strings.Join(set, ", ")}
}

func checkPrivileged(_ *podMeta, spec *corev1.PodSpec) *violation {
	names := badContainers(spec, func(c *corev1.Container) bool {
		return c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged
	})
	if len(names) == 0 {
		return nil
	}
	return &violation{"privileged", containerNoun(names) + " must not set securityContext.privileged=true"}
}

// baselineCapabilities may be added at the baseline level.
var baselineCapabilities = map[corev1.Capability]bool{
	"AUDIT_WRITE": true, "CHOWN": true, "DAC_OVERRIDE": true, "FOWNER": true, "FSETID": true, "KILL": true, "MKNOD": true,
	"NET_BIND_SERVICE": true, "SETFCAP": true, "SETGID": true, "SETPCAP": true, "SETUID": true, "SYS_CHROOT": true,
}

func capabilitiesAdded(spec *corev1.PodSpec, allowed func(corev1.Capability) bool) ([]string, []string) {
	var names []string
	caps := map[string]bool{}
	for _, c := range containersOf(spec) {
		if c.SecurityContext == nil || c.SecurityContext.Capabilities == nil {
			continue
		}
		bad := false
		for _, cp := range c.SecurityContext.Capabilities.Add {
			if !allowed(cp) {
				bad = true
				caps[string(cp)] = true
			}
		}
		if bad {
			names = append(names, c.Name)
		}
	}
	list := make([]string, 0, len(caps))
	for cp := range caps {
		list = append(list, cp)
	}
	sort.Strings(list)
	return names, list
}

func checkBaselineCapabilities(_ *podMeta, spec *corev1.PodSpec) *violation {
	names, caps := capabilitiesAdded(spec, func(c corev1.Capability) bool { return baselineCapabilities[c] })
	if len(names) == 0 {
		return nil
	}
	return &violation{"non-default capabilities", containerNoun(names) + " must not include " + quoted(caps) + " in securityContext.capabilities.add"}
}

func checkHostPathVolumes(_ *podMeta, spec *corev1.PodSpec) *violation {
	var names []string
	for _, v := range spec.Volumes {
		if v.HostPath != nil {
			names = append(names, v.Name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	return &violation{"hostPath volumes", pluralNoun("volume", "volumes", names)}
}

func checkHostPorts(_ *podMeta, spec *corev1.PodSpec) *violation {
	var names []string
	ports := map[int32]bool{}
	for _, c := range containersOf(spec) {
		bad := false
		for _, p := range c.Ports {
			if p.HostPort != 0 {
				bad = true
				ports[p.HostPort] = true
			}
		}
		if bad {
			names = append(names, c.Name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	list := make([]int, 0, len(ports))
	for p := range ports {
		list = append(list, int(p))
	}
	sort.Ints(list)
	strs := make([]string, len(list))
	for i, p := range list {
		strs[i] = fmt.Sprint(p)
	}
	return &violation{"hostPort", containerNoun(names) + " " + pluralize("uses", "use", len(names)) + " " +
		pluralize("hostPort", "hostPorts", len(list)) + " " + strings.Join(strs, ", ")}
}

func checkAppArmor(meta *podMeta, spec *corev1.PodSpec) *violation {
	badType := func(p *corev1.AppArmorProfile) bool {
		return p != nil && p.Type != corev1.AppArmorProfileTypeRuntimeDefault && p.Type != corev1.AppArmorProfileTypeLocalhost
	}
	types := map[string]bool{}
	podBad := spec.SecurityContext != nil && badType(spec.SecurityContext.AppArmorProfile)
	if podBad {
		types[string(spec.SecurityContext.AppArmorProfile.Type)] = true
	}
	names := badContainers(spec, func(c *corev1.Container) bool {
		if c.SecurityContext != nil && badType(c.SecurityContext.AppArmorProfile) {
			types[string(c.SecurityContext.AppArmorProfile.Type)] = true
			return true
		}
		return false
	})
	var annotations []string
	for k, v := range meta.annotations {
		if strings.HasPrefix(k, appArmorAnnotationPrefix) && v != "" && v != "runtime/default" && !strings.HasPrefix(v, "localhost/") {
			annotations = append(annotations, fmt.Sprintf("%s=%q", k, v))
		}
	}
	setters := settersOf(podBad, names)
	if len(annotations) > 0 {
		setters = append(setters, pluralize("annotation", "annotations", len(annotations)))
	}
	if len(setters) == 0 {
		return nil
	}
	values := sortedKeys(types)
	sort.Strings(annotations)
	values = append(values, annotations...)
	return &violation{pluralize("forbidden AppArmor profile", "forbidden AppArmor profiles", len(values)),
		strings.Join(setters, " and ") + " must not set AppArmor profile type to " + quoted(values)}
}

// checkSELinux forbids SELinux users, roles and types other than allowed.
func checkSELinux(allowed map[string]bool) checkFunc {
	return func(_ *podMeta, spec *corev1.PodSpec) *violation { return seLinuxViolation(allowed, spec) }
}

func seLinuxViolation(allowed map[string]bool, spec *corev1.PodSpec) *violation {
	types := map[string]bool{}
	var user, role bool
	bad := func(o *corev1.SELinuxOptions) bool {
		if o == nil {
			return false
		}
		b := false
		if !allowed[o.Type] {
			types[o.Type], b = true, true
		}
		if o.User != "" {
			user, b = true, true
		}
		if o.Role != "" {
			role, b = true, true
		}
		return b
	}
	podBad := spec.SecurityContext != nil && bad(spec.SecurityContext.SELinuxOptions)
	names := badContainers(spec, func(c *corev1.Container) bool {
		return c.SecurityContext != nil && bad(c.SecurityContext.SELinuxOptions)
	})
	setters := settersOf(podBad, names)
	if len(setters) == 0 {
		return nil
	}
	var problems []string
	if len(types) > 0 {
		problems = append(problems, pluralize("type", "types", len(types))+" "+quoted(sortedKeys(types)))
	}
	if user {
		problems = append(problems, "user may not be set")
	}
	if role {
		problems = append(problems, "role may not be set")
	}
	return &violation{"seLinuxOptions", strings.Join(setters, " and ") + " set forbidden securityContext.seLinuxOptions: " + strings.Join(problems, "; ")}
}

func checkProcMount(_ *podMeta, spec *corev1.PodSpec) *violation {
	types := map[string]bool{}
	names := badContainers(spec, func(c *corev1.Container) bool {
		if c.SecurityContext != nil && c.SecurityContext.ProcMount != nil && *c.SecurityContext.ProcMount != corev1.DefaultProcMount {
			types[string(*c.SecurityContext.ProcMount)] = true
			return true
		}
		return false
	})
	if len(names) == 0 {
		return nil
	}
	return &violation{"procMount", containerNoun(names) + " must not set securityContext.procMount to " + quoted(sortedKeys(types))}
}

// checkProcMountUserNamespaced is baseline's procMount from v1.35: a pod
// in its own user namespace may set any.
func checkProcMountUserNamespaced(meta *podMeta, spec *corev1.PodSpec) *violation {
	if userNamespaced(spec) {
		return nil
	}
	return checkProcMount(meta, spec)
}

func validSeccomp(p *corev1.SeccompProfile) bool {
	return p.Type == corev1.SeccompProfileTypeRuntimeDefault || p.Type == corev1.SeccompProfileTypeLocalhost
}

// checkBaselineSeccomp is baseline's seccomp control from v1.19: the pod's
// and the containers' seccompProfile, where set, must be RuntimeDefault or
// Localhost.
func checkBaselineSeccomp(_ *podMeta, spec *corev1.PodSpec) *violation {
	values := map[string]bool{}
	podBad := false
	if sc := spec.SecurityContext; sc != nil && sc.SeccompProfile != nil && !validSeccomp(sc.SeccompProfile) {
		podBad = true
		values[string(sc.SeccompProfile.Type)] = true
	}
	names := badContainers(spec, func(c *corev1.Container) bool {
		if sc := c.SecurityContext; sc != nil && sc.SeccompProfile != nil && !validSeccomp(sc.SeccompProfile) {
			values[string(sc.SeccompProfile.Type)] = true
			return true
		}
		return false
	})
	setters := settersOf(podBad, names)
	if len(setters) == 0 {
		return nil
	}
	return &violation{"seccompProfile", strings.Join(setters, " and ") + " must not set securityContext.seccompProfile.type to " + quoted(sortedKeys(values))}
}

// The seccomp annotations policy versions before v1.19 check.
const (
	seccompPodAnnotation             = "seccomp.security.alpha.kubernetes.io/pod"
	seccompContainerAnnotationPrefix = "container.seccomp.security.alpha.kubernetes.io/"
)

// checkSeccompAnnotations is baseline's seccomp control up to v1.18: the
// pod's and each container's seccomp annotation, where set, must be
// runtime/default, docker/default or localhost/<profile>.
func checkSeccompAnnotations(meta *podMeta, spec *corev1.PodSpec) *violation {
	var bad []string
	valid := func(v string) bool {
		return v == "runtime/default" || v == "docker/default" || strings.HasPrefix(v, "localhost/")
	}
	if v, ok := meta.annotations[seccompPodAnnotation]; ok && !valid(v) {
		bad = append(bad, fmt.Sprintf("%s=%q", seccompPodAnnotation, v))
	}
	for _, c := range containersOf(spec) {
		k := seccompContainerAnnotationPrefix + c.Name
		if v, ok := meta.annotations[k]; ok && !valid(v) {
			bad = append(bad, fmt.Sprintf("%s=%q", k, v))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	sort.Strings(bad)
	bad = slices.Compact(bad)
	return &violation{"seccompProfile", "forbidden " + pluralize("annotation", "annotations", len(bad)) + " " + strings.Join(bad, ", ")}
}

// The namespaced sysctls baseline allows, by the policy version that
// first allows them.
var (
	sysctlsV1Dot0 = setOf("kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
		"net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range")
	sysctlsV1Dot27 = withKeys(sysctlsV1Dot0, "net.ipv4.ip_local_reserved_ports")
	sysctlsV1Dot29 = withKeys(sysctlsV1Dot27, "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout",
		"net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes")
	sysctlsV1Dot32 = withKeys(sysctlsV1Dot29, "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem")
	sysctlsV1Dot37 = withKeys(sysctlsV1Dot32, "net.ipv4.tcp_slow_start_after_idle", "net.ipv4.tcp_notsent_lowat")
)

func setOf(keys ...string) map[string]bool { return withKeys(nil, keys...) }

// withKeys is a copy of set with keys added.
func withKeys(set map[string]bool, keys ...string) map[string]bool {
	out := maps.Clone(set)
	if out == nil {
		out = map[string]bool{}
	}
	for _, k := range keys {
		out[k] = true
	}
	return out
}

// checkSysctls forbids the pod's sysctls that safe does not hold.
func checkSysctls(safe map[string]bool) checkFunc {
	return func(_ *podMeta, spec *corev1.PodSpec) *violation {
		if spec.SecurityContext == nil {
			return nil
		}
		var bad []string
		for _, s := range spec.SecurityContext.Sysctls {
			if !safe[s.Name] {
				bad = append(bad, s.Name)
			}
		}
		if len(bad) == 0 {
			return nil
		}
		return &violation{"forbidden sysctls", strings.Join(bad, ", ")}
	}
}

func checkProbeHost(_ *podMeta, spec *corev1.PodSpec) *violation {
	hosts := map[string]bool{}
	names := map[string]bool{}
	for _, c := range containersOf(spec) {
		for _, h := range handlerHosts(c) {
			if h != "" {
				hosts[h] = true
				names[c.Name] = true
			}
		}
	}
	if len(names) == 0 {
		return nil
	}
	return &violation{"probe or lifecycle host", containerNoun(sortedKeys(names)) + " " + pluralize("uses", "use", len(names)) + " " +
		pluralize("probe or lifecycle host", "probe or lifecycle hosts", len(hosts)) + " " + quoted(sortedKeys(hosts))}
}

func handlerHosts(c *corev1.Container) []string {
	var out []string
	for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		if p == nil {
			continue
		}
		if p.HTTPGet != nil {
			out = append(out, p.HTTPGet.Host)
		}
		if p.TCPSocket != nil {
			out = append(out, p.TCPSocket.Host)
		}
	}
	if c.Lifecycle != nil {
		for _, h := range []*corev1.LifecycleHandler{c.Lifecycle.PostStart, c.Lifecycle.PreStop} {
			if h == nil {
				continue
			}
			if h.HTTPGet != nil {
				out = append(out, h.HTTPGet.Host)
			}
			if h.TCPSocket != nil {
				out = append(out, h.TCPSocket.Host)
			}
		}
	}
	return out
}

// restrictedVolumeType names the type of a volume restricted forbids, or "".
func restrictedVolumeType(v *corev1.Volume) string {
	s := v.VolumeSource
	switch {
	case s.ConfigMap != nil, s.CSI != nil, s.DownwardAPI != nil, s.EmptyDir != nil, s.Ephemeral != nil,
		s.PersistentVolumeClaim != nil, s.Projected != nil, s.Secret != nil, s.Image != nil:
		return ""
	case s.HostPath != nil:
		return "hostPath"
	case s.GCEPersistentDisk != nil:
		return "gcePersistentDisk"
	case s.AWSElasticBlockStore != nil:
		return "awsElasticBlockStore"
	case s.GitRepo != nil:
		return "gitRepo"
	case s.NFS != nil:
		return "nfs"
	case s.ISCSI != nil:
		return "iscsi"
	case s.Glusterfs != nil:
		return "glusterfs"
	case s.RBD != nil:
		return "rbd"
	case s.FlexVolume != nil:
		return "flexVolume"
	case s.Cinder != nil:
		return "cinder"
	case s.CephFS != nil:
		return "cephfs"
	case s.Flocker != nil:
		return "flocker"
	case s.FC != nil:
		return "fc"
	case s.AzureFile != nil:
		return "azureFile"
	case s.VsphereVolume != nil:
		return "vsphereVolume"
	case s.Quobyte != nil:
		return "quobyte"
	case s.AzureDisk != nil:
		return "azureDisk"
	case s.PhotonPersistentDisk != nil:
		return "photonPersistentDisk"
	case s.PortworxVolume != nil:
		return "portworxVolume"
	case s.ScaleIO != nil:
		return "scaleIO"
	case s.StorageOS != nil:
		return "storageos"
	}
	return "unknown"
}

func checkVolumeTypes(_ *podMeta, spec *corev1.PodSpec) *violation {
	var names []string
	types := map[string]bool{}
	for i := range spec.Volumes {
		if t := restrictedVolumeType(&spec.Volumes[i]); t != "" {
			names = append(names, spec.Volumes[i].Name)
			types[t] = true
		}
	}
	if len(names) == 0 {
		return nil
	}
	return &violation{"restricted volume types", pluralNoun("volume", "volumes", names) + " " + pluralize("uses", "use", len(names)) +
		" restricted volume " + pluralize("type", "types", len(types)) + " " + quoted(sortedKeys(types))}
}

// checkPrivilegeEscalation requires allowPrivilegeEscalation=false of
// every container (of Linux pods only when windowsExempt).
func checkPrivilegeEscalation(windowsExempt bool) checkFunc {
	return func(_ *podMeta, spec *corev1.PodSpec) *violation {
		if windowsExempt && isWindows(spec) {
			return nil
		}
		return privilegeEscalationViolation(spec)
	}
}

func privilegeEscalationViolation(spec *corev1.PodSpec) *violation {
	names := badContainers(spec, func(c *corev1.Container) bool {
		return c.SecurityContext == nil || c.SecurityContext.AllowPrivilegeEscalation == nil || *c.SecurityContext.AllowPrivilegeEscalation
	})
	if len(names) == 0 {
		return nil
	}
	return &violation{"allowPrivilegeEscalation != false", containerNoun(names) + " must set securityContext.allowPrivilegeEscalation=false"}
}

// checkRunAsNonRoot requires runAsNonRoot=true of the pod or every
// container; relaxed, not of pods in their own user namespace.
func checkRunAsNonRoot(relaxed bool) checkFunc {
	return func(_ *podMeta, spec *corev1.PodSpec) *violation {
		if relaxed && userNamespaced(spec) {
			return nil
		}
		return runAsNonRootViolation(spec)
	}
}

func runAsNonRootViolation(spec *corev1.PodSpec) *violation {
	podFalse, podTrue := false, false
	if sc := spec.SecurityContext; sc != nil && sc.RunAsNonRoot != nil {
		podFalse, podTrue = !*sc.RunAsNonRoot, *sc.RunAsNonRoot
	}
	var explicitFalse, unset []string
	for _, c := range containersOf(spec) {
		sc := c.SecurityContext
		switch {
		case sc != nil && sc.RunAsNonRoot != nil:
			if !*sc.RunAsNonRoot {
				explicitFalse = append(explicitFalse, c.Name)
			}
		case !podTrue:
			unset = append(unset, c.Name)
		}
	}
	if setters := settersOf(podFalse, explicitFalse); len(setters) > 0 {
		return &violation{"runAsNonRoot != true", strings.Join(setters, " and ") + " must not set securityContext.runAsNonRoot=false"}
	}
	if len(unset) > 0 {
		return &violation{"runAsNonRoot != true", "pod or " + containerNoun(unset) + " must set securityContext.runAsNonRoot=true"}
	}
	return nil
}

// checkRunAsUser forbids runAsUser=0; relaxed, not to pods in their own
// user namespace.
func checkRunAsUser(relaxed bool) checkFunc {
	return func(_ *podMeta, spec *corev1.PodSpec) *violation {
		if relaxed && userNamespaced(spec) {
			return nil
		}
		return runAsUserViolation(spec)
	}
}

func runAsUserViolation(spec *corev1.PodSpec) *violation {
	podBad := spec.SecurityContext != nil && spec.SecurityContext.RunAsUser != nil && *spec.SecurityContext.RunAsUser == 0
	names := badContainers(spec, func(c *corev1.Container) bool {
		return c.SecurityContext != nil && c.SecurityContext.RunAsUser != nil && *c.SecurityContext.RunAsUser == 0
	})
	setters := settersOf(podBad, names)
	if len(setters) == 0 {
		return nil
	}
	return &violation{"runAsUser=0", strings.Join(setters, " and ") + " must not set runAsUser=0"}
}

// checkRestrictedSeccomp requires a RuntimeDefault or Localhost seccomp
// profile of the pod or every container (of Linux pods only when
// windowsExempt).
func checkRestrictedSeccomp(windowsExempt bool) checkFunc {
	return func(_ *podMeta, spec *corev1.PodSpec) *violation {
		if windowsExempt && isWindows(spec) {
			return nil
		}
		return restrictedSeccompViolation(spec)
	}
}

func restrictedSeccompViolation(spec *corev1.PodSpec) *violation {
	valid := validSeccomp
	values := map[string]bool{}
	podBad, podSet := false, false
	if sc := spec.SecurityContext; sc != nil && sc.SeccompProfile != nil {
		if valid(sc.SeccompProfile) {
			podSet = true
		} else {
			podBad = true
			values[string(sc.SeccompProfile.Type)] = true
		}
	}
	var wrong, unset []string
	for _, c := range containersOf(spec) {
		sc := c.SecurityContext
		switch {
		case sc != nil && sc.SeccompProfile != nil:
			if !valid(sc.SeccompProfile) {
				wrong = append(wrong, c.Name)
				values[string(sc.SeccompProfile.Type)] = true
			}
		case !podSet:
			unset = append(unset, c.Name)
		}
	}
	if setters := settersOf(podBad, wrong); len(setters) > 0 {
		return &violation{"seccompProfile", strings.Join(setters, " and ") + " must not set securityContext.seccompProfile.type to " + quoted(sortedKeys(values))}
	}
	if len(unset) > 0 {
		return &violation{"seccompProfile", "pod or " + containerNoun(unset) + ` must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"`}
	}
	return nil
}

// checkRestrictedCapabilities requires every container to drop ALL and
// add nothing but NET_BIND_SERVICE (of Linux pods only when
// windowsExempt).
func checkRestrictedCapabilities(windowsExempt bool) checkFunc {
	return func(_ *podMeta, spec *corev1.PodSpec) *violation {
		if windowsExempt && isWindows(spec) {
			return nil
		}
		return restrictedCapabilitiesViolation(spec)
	}
}

func restrictedCapabilitiesViolation(spec *corev1.PodSpec) *violation {
	noDropAll := badContainers(spec, func(c *corev1.Container) bool {
		if c.SecurityContext == nil || c.SecurityContext.Capabilities == nil {
			return true
		}
		for _, d := range c.SecurityContext.Capabilities.Drop {
			if d == "ALL" {
				return false
			}
		}
		return true
	})
	added, caps := capabilitiesAdded(spec, func(c corev1.Capability) bool { return c == "NET_BIND_SERVICE" })
	var parts []string
	if len(noDropAll) > 0 {
		parts = append(parts, containerNoun(noDropAll)+` must set securityContext.capabilities.drop=["ALL"]`)
	}
	if len(added) > 0 {
		parts = append(parts, containerNoun(added)+" must not include "+quoted(caps)+" in securityContext.capabilities.add")
	}
	if len(parts) == 0 {
		return nil
	}
	return &violation{"unrestricted capabilities", strings.Join(parts, "; ")}
}

// settersOf names who set a forbidden value: "pod", `container "a"`,
// `containers "a", "b"`.
func settersOf(pod bool, containers []string) []string {
	var out []string
	if pod {
		out = append(out, "pod")
	}
	if len(containers) > 0 {
		out = append(out, containerNoun(containers))
	}
	return out
}

func pluralize(singular, plural string, n int) string {
	if n == 1 {
		return singular
	}
	return plural
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// userNamespaced pods (hostUsers: false) run as root only inside their own
// user namespace: from policy v1.35 the runAsNonRoot and runAsUser
// controls do not apply to them, nor baseline's procMount.
func userNamespaced(spec *corev1.PodSpec) bool {
	return spec.HostUsers != nil && !*spec.HostUsers
}

const appArmorAnnotationPrefix = "container.apparmor.security.beta.kubernetes.io/"

// The SELinux types baseline allows, by policy version.
var (
	selinuxTypesV1Dot0  = setOf("", "container_t", "container_init_t", "container_kvm_t")
	selinuxTypesV1Dot31 = withKeys(selinuxTypesV1Dot0, "container_engine_t")
)
