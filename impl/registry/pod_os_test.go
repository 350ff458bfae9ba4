package registry

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestPodOSValidationAsUpstream: spec.os is checked as upstream's
// validateOS, and a Linux or Windows pod may not carry the other OS's
// settings (validateLinux, validateWindows).
func TestPodOSValidationAsUpstream(t *testing.T) {
	r := find(t, coreV1, "pods")
	cases := []struct {
		name    string
		mutate  func(s *corev1.PodSpec)
		want    []string
		details []string
	}{
		{"no name", func(s *corev1.PodSpec) { s.OS = &corev1.PodOS{} }, []string{required + " spec.os.name"}, nil},
		{"unknown", func(s *corev1.PodSpec) { s.OS = &corev1.PodOS{Name: "plan9"} }, []string{notSupported + " spec.os"},
			[]string{`spec.os: Unsupported value: "plan9": supported values: "linux", "windows"`}},
		{"linux with windows options", func(s *corev1.PodSpec) {
			s.OS = &corev1.PodOS{Name: corev1.Linux}
			s.SecurityContext.WindowsOptions = &corev1.WindowsSecurityContextOptions{}
			s.Containers[0].SecurityContext = &corev1.SecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{}}
		}, []string{forbidden + " spec.securityContext.windowsOptions", forbidden + " spec.containers[0].securityContext.windowsOptions"},
			[]string{"spec.securityContext.windowsOptions: Forbidden: windows options cannot be set for a linux pod"}},
		{"linux settings", func(s *corev1.PodSpec) {
			s.OS = &corev1.PodOS{Name: corev1.Linux}
			s.HostPID = true
			s.SecurityContext.RunAsUser = ptr(int64(1000))
		}, nil, nil},
		{"windows with linux settings", func(s *corev1.PodSpec) {
			s.OS = &corev1.PodOS{Name: corev1.Windows}
			s.HostPID, s.HostIPC, s.HostUsers, s.ShareProcessNamespace = true, true, ptr(true), ptr(false)
			s.SecurityContext.RunAsUser = ptr(int64(1000))
			s.SecurityContext.Sysctls = []corev1.Sysctl{{Name: "kernel.domainname", Value: "example"}}
			s.InitContainers = []corev1.Container{{Name: "init", Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent,
				TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				SecurityContext:          &corev1.SecurityContext{Privileged: ptr(false), ReadOnlyRootFilesystem: ptr(true)}}}
		}, []string{forbidden + " spec.hostPID", forbidden + " spec.hostIPC", forbidden + " spec.hostUsers", forbidden + " spec.shareProcessNamespace",
			forbidden + " spec.securityContext.runAsUser", forbidden + " spec.securityContext.sysctls",
			forbidden + " spec.initContainers[0].securityContext.privileged", forbidden + " spec.initContainers[0].securityContext.readOnlyRootFilesystem"},
			[]string{"spec.hostPID: Forbidden: cannot be set for a windows pod"}},
		{"windows settings", func(s *corev1.PodSpec) {
			s.OS = &corev1.PodOS{Name: corev1.Windows}
			s.SecurityContext.WindowsOptions = &corev1.WindowsSecurityContextOptions{RunAsUserName: ptr("ContainerUser")}
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
