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

// TestWindowsOptionsValidationAsUpstream: windowsOptions of the pod and of
// containers are checked as upstream's validateWindowsSecurityContextOptions.
func TestWindowsOptionsValidationAsUpstream(t *testing.T) {
	r := find(t, coreV1, "pods")
	const wo = "spec.securityContext.windowsOptions"
	cases := []struct {
		name    string
		opts    corev1.WindowsSecurityContextOptions
		want    []string
		details []string
	}{
		{"valid", corev1.WindowsSecurityContextOptions{GMSACredentialSpecName: ptr("webapp-gmsa"), GMSACredentialSpec: ptr("{}"), RunAsUserName: ptr(`NT AUTHORITY\NETWORK SERVICE`)}, nil, nil},
		{"DNS domain", corev1.WindowsSecurityContextOptions{RunAsUserName: ptr(`corp.example.com\svc-web`)}, nil, nil},
		{"credential spec name", corev1.WindowsSecurityContextOptions{GMSACredentialSpecName: ptr("Web_App")}, []string{invalid + " " + wo + ".gmsaCredentialSpecName"}, nil},
		{"empty credential spec", corev1.WindowsSecurityContextOptions{GMSACredentialSpec: ptr("")}, []string{invalid + " " + wo + ".gmsaCredentialSpec"},
			[]string{wo + `.gmsaCredentialSpec: Invalid value: "": gmsaCredentialSpec cannot be an empty string`}},
		{"two backslashes", corev1.WindowsSecurityContextOptions{RunAsUserName: ptr(`a\b\c`)}, []string{invalid + " " + wo + ".runAsUserName"},
			[]string{wo + `.runAsUserName: Invalid value: "a\\b\\c": runAsUserName cannot contain more than one backslash`}},
		{"bad user", corev1.WindowsSecurityContextOptions{RunAsUserName: ptr(`.corp\a@b`)}, []string{invalid + " " + wo + ".runAsUserName", invalid + " " + wo + ".runAsUserName"},
			[]string{wo + `.runAsUserName: Invalid value: ".corp\\a@b": runAsUserName's Domain doesn't match the NetBios nor the DNS format`,
				wo + `.runAsUserName: Invalid value: ".corp\\a@b": runAsUserName's User cannot contain the following characters: "/\:;|=,+*?<>@[]`}},
		{"only dots", corev1.WindowsSecurityContextOptions{RunAsUserName: ptr(`...`)}, []string{invalid + " " + wo + ".runAsUserName"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPod("p")
			defaultPod(p)
			p.Spec.OS = &corev1.PodOS{Name: corev1.Windows}
			p.Spec.SecurityContext.WindowsOptions = &tc.opts
			errs := r.Strategy.Validate(context.Background(), p)
			wantErrors(t, errs, tc.want...)
			for _, d := range tc.details {
				wantError(t, errs, d)
			}
		})
	}
	p := newPod("p")
	defaultPod(p)
	p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{RunAsUserName: ptr("")}}
	wantErrors(t, r.Strategy.Validate(context.Background(), p), invalid+" spec.containers[0].securityContext.windowsOptions.runAsUserName")
}
