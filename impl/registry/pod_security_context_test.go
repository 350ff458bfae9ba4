package registry

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestSecurityContextValidationAsUpstream: the pod's security context is
// checked as upstream's validatePodSpecSecurityContext and a container's
// as its ValidateSecurityContext (with their messages and paths).
func TestSecurityContextValidationAsUpstream(t *testing.T) {
	r := find(t, coreV1, "pods")
	const sc = "spec.securityContext"
	const csc = "spec.containers[0].securityContext"
	container := func(s *corev1.PodSpec) *corev1.SecurityContext {
		s.Containers[0].SecurityContext = &corev1.SecurityContext{}
		return s.Containers[0].SecurityContext
	}
	cases := []struct {
		name    string
		mutate  func(s *corev1.PodSpec)
		want    []string
		details []string
	}{
		{"fsGroup and supplemental groups", func(s *corev1.PodSpec) {
			s.SecurityContext.FSGroup = ptr(int64(-1))
			s.SecurityContext.SupplementalGroups = []int64{1000, -2}
		}, []string{invalid + " " + sc + ".fsGroup", invalid + " " + sc + ".supplementalGroups[1]"}, nil},
		{"shareProcessNamespace with hostPID", func(s *corev1.PodSpec) {
			s.ShareProcessNamespace, s.HostPID = ptr(true), true
		}, []string{invalid + " " + sc + ".shareProcessNamespace"},
			[]string{sc + ".shareProcessNamespace: Invalid value: true: ShareProcessNamespace and HostPID cannot both be enabled"}},
		{"sysctl names", func(s *corev1.PodSpec) {
			s.SecurityContext.Sysctls = []corev1.Sysctl{{Name: "kernel.shm_rmid_forced", Value: "1"}, {}, {Name: "Kernel.X"}, {Name: "kernel.shm_rmid_forced"}, {Name: "net/ipv4/ip_local_port_range", Value: "1024 65535"}}
		}, []string{required + " " + sc + ".sysctls[1].name", invalid + " " + sc + ".sysctls[2].name", duplicate + " " + sc + ".sysctls[3].name"},
			[]string{sc + `.sysctls[2].name: Invalid value: "Kernel.X": must have at most 253 characters and match regex ^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$`}},
		{"namespaced sysctls beside host namespaces", func(s *corev1.PodSpec) {
			s.HostNetwork, s.HostIPC = true, true
			s.SecurityContext.Sysctls = []corev1.Sysctl{{Name: "net.ipv4.ip_forward", Value: "1"}, {Name: "kernel.shm_rmid_forced", Value: "1"}, {Name: "kernel.domainname", Value: "x"}}
		}, []string{invalid + " " + sc + ".sysctls[0].name", invalid + " " + sc + ".sysctls[1].name"},
			[]string{sc + `.sysctls[0].name: Invalid value: "net.ipv4.ip_forward": may not be specified when 'hostNetwork' is true`,
				sc + `.sysctls[1].name: Invalid value: "kernel.shm_rmid_forced": may not be specified when 'hostIPC' is true`}},
		{"fsGroupChangePolicy and supplementalGroupsPolicy", func(s *corev1.PodSpec) {
			s.SecurityContext.FSGroupChangePolicy = ptr(corev1.PodFSGroupChangePolicy("Sometimes"))
			s.SecurityContext.SupplementalGroupsPolicy = ptr(corev1.SupplementalGroupsPolicy("Loose"))
		}, []string{notSupported + " " + sc + ".fsGroupChangePolicy", notSupported + " " + sc + ".supplementalGroupsPolicy"}, nil},
		{"seLinuxChangePolicy MountOption without SELinuxMount", func(s *corev1.PodSpec) {
			s.SecurityContext.SELinuxChangePolicy = ptr(corev1.SELinuxChangePolicyMountOption)
		}, []string{notSupported + " " + sc + ".seLinuxChangePolicy"},
			[]string{sc + `.seLinuxChangePolicy: Unsupported value: "MountOption": supported values: "Recursive"`}},
		{"seLinuxChangePolicy Recursive", func(s *corev1.PodSpec) {
			s.SecurityContext.SELinuxChangePolicy = ptr(corev1.SELinuxChangePolicyRecursive)
		}, nil, nil},
		{"pod seccomp without type", func(s *corev1.PodSpec) {
			s.SecurityContext.SeccompProfile = &corev1.SeccompProfile{}
		}, []string{required + " " + sc + ".seccompProfile.type"},
			[]string{sc + ".seccompProfile.type: Required value: type is required when seccompProfile is set"}},
		{"pod seccomp Localhost", func(s *corev1.PodSpec) {
			s.SecurityContext.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost}
		}, []string{required + " " + sc + ".seccompProfile.localhostProfile"},
			[]string{sc + ".seccompProfile.localhostProfile: Required value: must be set when seccomp type is Localhost"}},
		{"container seccomp Localhost path", func(s *corev1.PodSpec) {
			container(s).SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr("../escape.json")}
		}, []string{invalid + " " + csc + ".seccompProfile.localhostProfile"}, nil},
		{"container seccomp profile without Localhost", func(s *corev1.PodSpec) {
			container(s).SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault, LocalhostProfile: ptr("p.json")}
		}, []string{invalid + " " + csc + ".seccompProfile.localhostProfile"}, nil},
		{"pod AppArmor padded", func(s *corev1.PodSpec) {
			s.SecurityContext.AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptr(" k8s-deny ")}
		}, []string{invalid + " " + sc + ".appArmorProfile.localhostProfile"},
			[]string{sc + `.appArmorProfile.localhostProfile: Invalid value: " k8s-deny ": must not be padded with whitespace`}},
		{"container AppArmor without type", func(s *corev1.PodSpec) {
			container(s).AppArmorProfile = &corev1.AppArmorProfile{}
		}, []string{required + " " + csc + ".appArmorProfile.type"},
			[]string{csc + ".appArmorProfile.type: Required value: type is required when appArmorProfile is set"}},
		{"SYS_ADMIN without escalation is allowed", func(s *corev1.PodSpec) {
			c := container(s)
			c.AllowPrivilegeEscalation = ptr(false)
			c.Capabilities = &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}}
		}, nil, nil},
		{"CAP_SYS_ADMIN without escalation", func(s *corev1.PodSpec) {
			c := container(s)
			c.AllowPrivilegeEscalation = ptr(false)
			c.Capabilities = &corev1.Capabilities{Add: []corev1.Capability{"CAP_SYS_ADMIN"}}
		}, []string{invalid + " " + csc}, nil},
		{"procMount unknown", func(s *corev1.PodSpec) {
			container(s).ProcMount = ptr(corev1.ProcMountType("Weird"))
		}, []string{notSupported + " " + csc + ".procMount"}, nil},
		{"procMount Unmasked in the host user namespace", func(s *corev1.PodSpec) {
			container(s).ProcMount = ptr(corev1.UnmaskedProcMount)
		}, []string{invalid + " " + csc + ".procMount"},
			[]string{csc + `.procMount: Invalid value: "Unmasked": ` + "`hostUsers` must be false to use `Unmasked`"}},
		{"procMount Unmasked in a user namespace", func(s *corev1.PodSpec) {
			s.HostUsers = ptr(false)
			container(s).ProcMount = ptr(corev1.UnmaskedProcMount)
		}, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPod("p")
			defaultPod(p)
			tc.mutate(&p.Spec)
			errs := r.Strategy.Validate(context.Background(), p)
			wantErrors(t, errs, tc.want...)
			for _, d := range tc.details {
				wantError(t, errs, d)
			}
		})
	}
}

// TestSecurityContextUpdateOptionsAsUpstream: an update keeps what the
// stored object already had (upstream's AllowNamespacedSysctlsForHostNetAndHostIPC
// and AllowOnlyRecursiveSELinuxChangePolicy), no more.
func TestSecurityContextUpdateOptionsAsUpstream(t *testing.T) {
	p := newPod("p")
	defaultPod(p)
	p.Spec.HostNetwork = true
	p.Spec.SecurityContext.Sysctls = []corev1.Sysctl{{Name: "net.ipv4.ip_forward", Value: "1"}}
	p.Spec.SecurityContext.SELinuxChangePolicy = ptr(corev1.SELinuxChangePolicyMountOption)
	if errs := validatePod(p, podValidationOptions{}); len(errs) != 2 {
		t.Fatalf("create: got %v, want the sysctl and the policy refused", errs)
	}
	if errs := validatePod(p, podValidationOptionsFor(&p.Spec)); len(errs) != 0 {
		t.Fatalf("update of a stored pod that had them: %v", errs)
	}
	clean := newPod("p")
	defaultPod(clean)
	if errs := validatePod(p, podValidationOptionsFor(&clean.Spec)); len(errs) != 2 {
		t.Fatalf("update adding them: got %v, want both refused", errs)
	}
}

// TestHostUsersValidationAsUpstream: a pod with hostUsers false may not
// use the host's network, PID or IPC namespace nor volumeDevices, as
// upstream's validateHostUsers (with its "HostPID"/"HostIPC" paths); an
// update keeps what the stored pod had.
func TestHostUsersValidationAsUpstream(t *testing.T) {
	p := newPod("p")
	defaultPod(p)
	p.Spec.HostUsers = ptr(false)
	if errs := validatePod(p, podValidationOptions{}); len(errs) != 0 {
		t.Fatalf("user namespace alone: %v", errs)
	}
	p.Spec.HostNetwork, p.Spec.HostPID, p.Spec.HostIPC = true, true, true
	p.Spec.Volumes = []corev1.Volume{{Name: "blk", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}}}
	p.Spec.Containers[0].VolumeDevices = []corev1.VolumeDevice{{Name: "blk", DevicePath: "/dev/xvda"}}
	defaultPod(p)
	errs := validatePod(p, podValidationOptions{})
	wantErrors(t, errs, forbidden+" spec.hostNetwork", forbidden+" spec.HostPID", forbidden+" spec.HostIPC", forbidden+" spec.containers[0].volumeDevices")
	wantError(t, errs, "spec.HostPID: Forbidden: when `hostUsers` is false")
	errs = validatePod(p, podValidationOptionsFor(&p.Spec))
	wantErrors(t, errs, forbidden+" spec.HostPID", forbidden+" spec.HostIPC")
}
