// Package security turns a pod's and a container's securityContext into
// the CRI security settings of the sandbox and of each container, as the
// kubelet does (upstream's kuberuntime security context conversion): the
// pod-level context is merged into the container-level one (the container
// wins), namespaces follow hostNetwork/hostPID/hostIPC and
// shareProcessNamespace, /proc paths are masked unless procMount is
// Unmasked, and seccomp/AppArmor profiles become CRI SecurityProfiles.
//
// Everything here is a pure function of the pod spec (and the image user
// the runtime reports), so it is table-tested alone.
package security

import (
	"fmt"
	"math"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Default /proc paths the runtime masks and mounts read-only in every
// container whose procMount is not Unmasked (the same lists as the kubelet
// and the OCI runtimes' defaults).
var (
	defaultMaskedPaths = []string{
		"/proc/asound", "/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
		"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",
		"/sys/firmware", "/sys/devices/virtual/powercap",
	}
	defaultReadonlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
)

// EffectiveSecurityContext is the container's securityContext with the
// pod-level fields it does not set filled in from the pod (runAsUser,
// runAsGroup, runAsNonRoot, seLinuxOptions, seccompProfile,
// appArmorProfile). It returns nil if neither sets anything. The result
// never aliases the pod.
func EffectiveSecurityContext(pod *v1.Pod, c *v1.Container) *v1.SecurityContext {
	var sc *v1.SecurityContext
	if c.SecurityContext != nil {
		sc = c.SecurityContext.DeepCopy()
	}
	psc := pod.Spec.SecurityContext
	if psc == nil {
		return sc
	}
	if sc == nil {
		sc = &v1.SecurityContext{}
	}
	if sc.RunAsUser == nil && psc.RunAsUser != nil {
		sc.RunAsUser = ptr(*psc.RunAsUser)
	}
	if sc.RunAsGroup == nil && psc.RunAsGroup != nil {
		sc.RunAsGroup = ptr(*psc.RunAsGroup)
	}
	if sc.RunAsNonRoot == nil && psc.RunAsNonRoot != nil {
		sc.RunAsNonRoot = ptr(*psc.RunAsNonRoot)
	}
	if sc.SELinuxOptions == nil && psc.SELinuxOptions != nil {
		sc.SELinuxOptions = psc.SELinuxOptions.DeepCopy()
	}
	if sc.SeccompProfile == nil && psc.SeccompProfile != nil {
		sc.SeccompProfile = psc.SeccompProfile.DeepCopy()
	}
	if sc.AppArmorProfile == nil && psc.AppArmorProfile != nil {
		sc.AppArmorProfile = psc.AppArmorProfile.DeepCopy()
	}
	return sc
}

// PodName formats a pod as the kubelet does in messages:
// "name_namespace(uid)".
func PodName(pod *v1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}

// VerifyRunAsNonRoot refuses a container whose effective securityContext
// has runAsNonRoot=true but which would run as root: runAsUser 0, or no
// runAsUser and an image user of uid 0 (uid), or a non-numeric image user
// (username) that cannot be checked. The kubelet reports the error as the
// container's CreateContainerConfigError; the messages are upstream's.
func VerifyRunAsNonRoot(pod *v1.Pod, c *v1.Container, uid *int64, username string) error {
	sc := EffectiveSecurityContext(pod, c)
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		return nil
	}
	if sc.RunAsUser != nil {
		if *sc.RunAsUser == 0 {
			return fmt.Errorf("container's runAsUser breaks non-root policy (pod: %q, container: %s)", PodName(pod), c.Name)
		}
		return nil
	}
	switch {
	case uid == nil && username != "":
		return fmt.Errorf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root (pod: %q, container: %s)", username, PodName(pod), c.Name)
	case uid != nil && *uid == 0:
		return fmt.Errorf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", PodName(pod), c.Name)
	case uid != nil && (*uid < 0 || *uid > math.MaxInt32):
		return fmt.Errorf("container has runAsNonRoot and image has an invalid user id (%d). (Must be 1-(%d)): must be between 0 and 2147483647, inclusive (pod: %q, container: %s)", *uid, math.MaxInt32, PodName(pod), c.Name)
	}
	return nil
}

// NamespaceOptions are the pod's Linux namespaces: the node's network, PID
// and IPC namespaces for hostNetwork, hostPID and hostIPC; one PID
// namespace for the pod with shareProcessNamespace; otherwise a network and
// IPC namespace per pod and a PID namespace per container.
func NamespaceOptions(pod *v1.Pod) *runtimeapi.NamespaceOption {
	ns := &runtimeapi.NamespaceOption{
		Network: runtimeapi.NamespaceMode_POD,
		Pid:     runtimeapi.NamespaceMode_CONTAINER,
		Ipc:     runtimeapi.NamespaceMode_POD,
	}
	if pod.Spec.HostNetwork {
		ns.Network = runtimeapi.NamespaceMode_NODE
	}
	if pod.Spec.HostIPC {
		ns.Ipc = runtimeapi.NamespaceMode_NODE
	}
	switch {
	case pod.Spec.HostPID:
		ns.Pid = runtimeapi.NamespaceMode_NODE
	case pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace:
		ns.Pid = runtimeapi.NamespaceMode_POD
	}
	return ns
}

// HasPrivilegedContainer reports whether any container of the pod (init,
// app or ephemeral) is privileged; the sandbox is then privileged too.
func HasPrivilegedContainer(pod *v1.Pod) bool {
	priv := func(sc *v1.SecurityContext) bool {
		return sc != nil && sc.Privileged != nil && *sc.Privileged
	}
	for i := range pod.Spec.InitContainers {
		if priv(pod.Spec.InitContainers[i].SecurityContext) {
			return true
		}
	}
	for i := range pod.Spec.Containers {
		if priv(pod.Spec.Containers[i].SecurityContext) {
			return true
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if priv(pod.Spec.EphemeralContainers[i].SecurityContext) {
			return true
		}
	}
	return false
}

// Sandbox is the sandbox's Linux security context and sysctls: privileged
// if any container is, the pod's runAsUser/runAsGroup, its namespaces,
// fsGroup and supplementalGroups as supplemental groups, seLinuxOptions,
// and the RuntimeDefault seccomp profile (the pause process always runs
// under it, as upstream, so that least-privileged pod profiles work).
func Sandbox(pod *v1.Pod) (*runtimeapi.LinuxSandboxSecurityContext, map[string]string) {
	sc := &runtimeapi.LinuxSandboxSecurityContext{
		Privileged:       HasPrivilegedContainer(pod),
		NamespaceOptions: NamespaceOptions(pod),
		Seccomp:          &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
	}
	sysctls := map[string]string{}
	psc := pod.Spec.SecurityContext
	if psc == nil {
		return sc, sysctls
	}
	for _, s := range psc.Sysctls {
		sysctls[s.Name] = s.Value
	}
	if psc.RunAsUser != nil {
		sc.RunAsUser = &runtimeapi.Int64Value{Value: *psc.RunAsUser}
	}
	if psc.RunAsGroup != nil {
		sc.RunAsGroup = &runtimeapi.Int64Value{Value: *psc.RunAsGroup}
	}
	sc.SupplementalGroups = podGroups(psc)
	sc.SupplementalGroupsPolicy = groupsPolicy(psc)
	sc.SelinuxOptions = seLinux(psc.SELinuxOptions)
	return sc, sysctls
}

// podGroups are the pod's fsGroup followed by its supplementalGroups.
func podGroups(psc *v1.PodSecurityContext) []int64 {
	var groups []int64
	if psc.FSGroup != nil {
		groups = append(groups, *psc.FSGroup)
	}
	groups = append(groups, psc.SupplementalGroups...)
	return groups
}

func groupsPolicy(psc *v1.PodSecurityContext) runtimeapi.SupplementalGroupsPolicy {
	if psc.SupplementalGroupsPolicy != nil && *psc.SupplementalGroupsPolicy == v1.SupplementalGroupsPolicyStrict {
		return runtimeapi.SupplementalGroupsPolicy_Strict
	}
	return runtimeapi.SupplementalGroupsPolicy_Merge
}

func seLinux(o *v1.SELinuxOptions) *runtimeapi.SELinuxOption {
	if o == nil {
		return nil
	}
	return &runtimeapi.SELinuxOption{User: o.User, Role: o.Role, Type: o.Type, Level: o.Level}
}

// ImageUser is the user an image runs as, as the runtime reports it: a
// numeric uid, or a user name the runtime could not resolve to one.
type ImageUser struct {
	UID      *int64
	Username string
}

// Options are the node-wide settings the conversion needs.
type Options struct {
	// SeccompProfileRoot is the directory Localhost seccomp profiles are
	// relative to (the kubelet's root directory + "/seccomp").
	SeccompProfileRoot string
	// SeccompDefault makes RuntimeDefault the profile of containers that
	// set none (the kubelet's seccompDefault; default false: Unconfined).
	SeccompDefault bool
}

// Container is a container's Linux security context: the effective
// (merged) securityContext's user, group, privileges, root filesystem,
// capabilities and SELinux options; the image's user when no runAsUser is
// set; the pod's namespaces and groups; no_new_privs when
// allowPrivilegeEscalation is false; seccomp and AppArmor profiles; and the
// masked and read-only /proc paths of the container's procMount.
func Container(pod *v1.Pod, c *v1.Container, image ImageUser, opts Options) *runtimeapi.LinuxContainerSecurityContext {
	esc := EffectiveSecurityContext(pod, c)
	if esc == nil {
		esc = &v1.SecurityContext{}
	}
	out := &runtimeapi.LinuxContainerSecurityContext{
		Capabilities:     capabilities(esc.Capabilities),
		SelinuxOptions:   seLinux(esc.SELinuxOptions),
		NamespaceOptions: NamespaceOptions(pod),
		NoNewPrivs:       esc.AllowPrivilegeEscalation != nil && !*esc.AllowPrivilegeEscalation,
		MaskedPaths:      maskedPaths(esc.ProcMount),
		ReadonlyPaths:    readonlyPaths(esc.ProcMount),
		Seccomp:          seccomp(esc.SeccompProfile, opts),
	}
	out.Apparmor, out.ApparmorProfile = appArmor(esc.AppArmorProfile)
	if esc.Privileged != nil {
		out.Privileged = *esc.Privileged
	}
	if esc.ReadOnlyRootFilesystem != nil {
		out.ReadonlyRootfs = *esc.ReadOnlyRootFilesystem
	}
	if esc.RunAsUser != nil {
		out.RunAsUser = &runtimeapi.Int64Value{Value: *esc.RunAsUser}
	} else {
		if image.UID != nil {
			out.RunAsUser = &runtimeapi.Int64Value{Value: *image.UID}
		}
		out.RunAsUsername = image.Username
	}
	if esc.RunAsGroup != nil {
		out.RunAsGroup = &runtimeapi.Int64Value{Value: *esc.RunAsGroup}
	}
	if psc := pod.Spec.SecurityContext; psc != nil {
		out.SupplementalGroups = podGroups(psc)
		out.SupplementalGroupsPolicy = groupsPolicy(psc)
	}
	return out
}

func capabilities(c *v1.Capabilities) *runtimeapi.Capability {
	if c == nil {
		return nil
	}
	out := &runtimeapi.Capability{}
	for _, a := range c.Add {
		out.AddCapabilities = append(out.AddCapabilities, string(a))
	}
	for _, d := range c.Drop {
		out.DropCapabilities = append(out.DropCapabilities, string(d))
	}
	return out
}

func maskedPaths(pm *v1.ProcMountType) []string {
	if pm != nil && *pm == v1.UnmaskedProcMount {
		return []string{}
	}
	return append([]string(nil), defaultMaskedPaths...)
}

func readonlyPaths(pm *v1.ProcMountType) []string {
	if pm != nil && *pm == v1.UnmaskedProcMount {
		return []string{}
	}
	return append([]string(nil), defaultReadonlyPaths...)
}

// seccomp converts a seccompProfile; with none, containers run Unconfined
// unless the node defaults to RuntimeDefault.
func seccomp(p *v1.SeccompProfile, opts Options) *runtimeapi.SecurityProfile {
	if p == nil {
		if opts.SeccompDefault {
			return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}
		}
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}
	}
	switch p.Type {
	case v1.SeccompProfileTypeRuntimeDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}
	case v1.SeccompProfileTypeLocalhost:
		ref := ""
		if p.LocalhostProfile != nil {
			ref = filepath.Join(opts.SeccompProfileRoot, *p.LocalhostProfile)
		}
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: ref}
	default:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}
	}
}

// appArmor converts an appArmorProfile to the CRI profile and its
// deprecated string form ("runtime/default", "unconfined",
// "localhost/<name>"); nil leaves the runtime's default.
func appArmor(p *v1.AppArmorProfile) (*runtimeapi.SecurityProfile, string) {
	if p == nil {
		return nil, ""
	}
	switch p.Type {
	case v1.AppArmorProfileTypeRuntimeDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}, "runtime/default"
	case v1.AppArmorProfileTypeUnconfined:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, "unconfined"
	case v1.AppArmorProfileTypeLocalhost:
		name := ""
		if p.LocalhostProfile != nil {
			name = *p.LocalhostProfile
		}
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: name}, "localhost/" + name
	}
	return nil, ""
}

func ptr[T any](v T) *T { return &v }
