package security

import (
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func pod(psc *v1.PodSecurityContext, csc *v1.SecurityContext) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u1"},
		Spec: v1.PodSpec{
			SecurityContext: psc,
			Containers:      []v1.Container{{Name: "app", Image: "busybox", SecurityContext: csc}},
		},
	}
}

func i64(v int64) *int64 { return &v }

func TestEffectiveSecurityContextContainerWins(t *testing.T) {
	p := pod(&v1.PodSecurityContext{
		RunAsUser: i64(1000), RunAsGroup: i64(2000), RunAsNonRoot: ptr(true),
		SeccompProfile:  &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault},
		AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeUnconfined},
		SELinuxOptions:  &v1.SELinuxOptions{Level: "s0:c1"},
	}, &v1.SecurityContext{RunAsUser: i64(3000), RunAsNonRoot: ptr(false), ReadOnlyRootFilesystem: ptr(true)})
	got := EffectiveSecurityContext(p, &p.Spec.Containers[0])
	want := &v1.SecurityContext{
		RunAsUser: i64(3000), RunAsGroup: i64(2000), RunAsNonRoot: ptr(false), ReadOnlyRootFilesystem: ptr(true),
		SeccompProfile:  &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault},
		AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeUnconfined},
		SELinuxOptions:  &v1.SELinuxOptions{Level: "s0:c1"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("effective context\n got %+v\nwant %+v", got, want)
	}
	got.SELinuxOptions.Level = "changed"
	if p.Spec.SecurityContext.SELinuxOptions.Level != "s0:c1" {
		t.Fatal("effective context aliases the pod's")
	}
	if EffectiveSecurityContext(pod(nil, nil), &v1.Container{}) != nil {
		t.Fatal("no context anywhere should be nil")
	}
}

func TestVerifyRunAsNonRoot(t *testing.T) {
	root, user := i64(0), i64(1000)
	for _, tc := range []struct {
		name     string
		psc      *v1.PodSecurityContext
		csc      *v1.SecurityContext
		uid      *int64
		username string
		wantErr  string
	}{
		{name: "not required", uid: root},
		{name: "required off", csc: &v1.SecurityContext{RunAsNonRoot: ptr(false)}, uid: root},
		{name: "image root", csc: &v1.SecurityContext{RunAsNonRoot: ptr(true)}, uid: root,
			wantErr: `container has runAsNonRoot and image will run as root (pod: "web_ns(u1)", container: app)`},
		{name: "pod-level required, image root", psc: &v1.PodSecurityContext{RunAsNonRoot: ptr(true)}, uid: root,
			wantErr: "image will run as root"},
		{name: "container overrides pod", psc: &v1.PodSecurityContext{RunAsNonRoot: ptr(true)}, csc: &v1.SecurityContext{RunAsNonRoot: ptr(false)}, uid: root},
		{name: "image non-root", csc: &v1.SecurityContext{RunAsNonRoot: ptr(true)}, uid: user},
		{name: "runAsUser non-root beats root image", psc: &v1.PodSecurityContext{RunAsUser: i64(1000)}, csc: &v1.SecurityContext{RunAsNonRoot: ptr(true)}, uid: root},
		{name: "runAsUser 0", csc: &v1.SecurityContext{RunAsNonRoot: ptr(true), RunAsUser: i64(0)}, uid: user,
			wantErr: `container's runAsUser breaks non-root policy (pod: "web_ns(u1)", container: app)`},
		{name: "named image user", csc: &v1.SecurityContext{RunAsNonRoot: ptr(true)}, username: "nginx",
			wantErr: "container has runAsNonRoot and image has non-numeric user (nginx), cannot verify user is non-root"},
		{name: "invalid uid", csc: &v1.SecurityContext{RunAsNonRoot: ptr(true)}, uid: i64(1 << 40),
			wantErr: "image has an invalid user id (1099511627776)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pod(tc.psc, tc.csc)
			err := VerifyRunAsNonRoot(p, &p.Spec.Containers[0], tc.uid, tc.username)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestNamespaceOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec v1.PodSpec
		want *runtimeapi.NamespaceOption
	}{
		{"default", v1.PodSpec{}, &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_CONTAINER, Ipc: runtimeapi.NamespaceMode_POD}},
		{"host network", v1.PodSpec{HostNetwork: true}, &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE, Pid: runtimeapi.NamespaceMode_CONTAINER, Ipc: runtimeapi.NamespaceMode_POD}},
		{"host pid and ipc", v1.PodSpec{HostPID: true, HostIPC: true}, &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_NODE, Ipc: runtimeapi.NamespaceMode_NODE}},
		{"shared process namespace", v1.PodSpec{ShareProcessNamespace: ptr(true)}, &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_POD, Ipc: runtimeapi.NamespaceMode_POD}},
		{"host pid wins over sharing", v1.PodSpec{HostPID: true, ShareProcessNamespace: ptr(true)}, &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_NODE, Ipc: runtimeapi.NamespaceMode_POD}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := NamespaceOptions(&v1.Pod{Spec: tc.spec}); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v want %v", got, tc.want)
			}
		})
	}
}

func TestSandbox(t *testing.T) {
	p := pod(&v1.PodSecurityContext{
		RunAsUser: i64(1000), RunAsGroup: i64(3000), FSGroup: i64(2000), SupplementalGroups: []int64{4000, 5000},
		Sysctls: []v1.Sysctl{{Name: "net.ipv4.ip_unprivileged_port_start", Value: "0"}},
	}, nil)
	p.Spec.HostIPC = true
	p.Spec.InitContainers = []v1.Container{{Name: "init", SecurityContext: &v1.SecurityContext{Privileged: ptr(true)}}}
	sc, sysctls := Sandbox(p)
	want := &runtimeapi.LinuxSandboxSecurityContext{
		Privileged:         true,
		RunAsUser:          &runtimeapi.Int64Value{Value: 1000},
		RunAsGroup:         &runtimeapi.Int64Value{Value: 3000},
		SupplementalGroups: []int64{2000, 4000, 5000},
		NamespaceOptions:   &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_CONTAINER, Ipc: runtimeapi.NamespaceMode_NODE},
		Seccomp:            &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
	}
	if !reflect.DeepEqual(sc, want) {
		t.Fatalf("sandbox context\n got %v\nwant %v", sc, want)
	}
	if !reflect.DeepEqual(sysctls, map[string]string{"net.ipv4.ip_unprivileged_port_start": "0"}) {
		t.Fatalf("sysctls %v", sysctls)
	}
	sc, sysctls = Sandbox(pod(nil, nil))
	if sc.Privileged || sc.RunAsUser != nil || len(sysctls) != 0 || sc.NamespaceOptions.Network != runtimeapi.NamespaceMode_POD {
		t.Fatalf("plain pod's sandbox: %v %v", sc, sysctls)
	}
}

func TestContainer(t *testing.T) {
	opts := Options{SeccompProfileRoot: "/var/lib/kubelet/seccomp"}
	rootImage := ImageUser{UID: i64(0)}
	unmasked := v1.UnmaskedProcMount
	for _, tc := range []struct {
		name  string
		psc   *v1.PodSecurityContext
		csc   *v1.SecurityContext
		image ImageUser
		opts  Options
		check func(t *testing.T, got *runtimeapi.LinuxContainerSecurityContext)
	}{
		{name: "defaults", image: rootImage, check: func(t *testing.T, got *runtimeapi.LinuxContainerSecurityContext) {
			if got.RunAsUser.GetValue() != 0 || got.RunAsUser == nil || got.Privileged || got.ReadonlyRootfs || got.NoNewPrivs ||
				got.Capabilities != nil || got.Seccomp.ProfileType != runtimeapi.SecurityProfile_Unconfined || got.Apparmor != nil {
				t.Fatalf("defaults: %v", got)
			}
			if !reflect.DeepEqual(got.MaskedPaths, defaultMaskedPaths) || !reflect.DeepEqual(got.ReadonlyPaths, defaultReadonlyPaths) {
				t.Fatalf("masked %v readonly %v", got.MaskedPaths, got.ReadonlyPaths)
			}
		}},
		{name: "seccomp default on the node", opts: Options{SeccompDefault: true}, check: func(t *testing.T, got *runtimeapi.LinuxContainerSecurityContext) {
			if got.Seccomp.ProfileType != runtimeapi.SecurityProfile_RuntimeDefault {
				t.Fatalf("seccomp %v", got.Seccomp)
			}
		}},
		{name: "image user by name", image: ImageUser{Username: "nginx"}, check: func(t *testing.T, got *runtimeapi.LinuxContainerSecurityContext) {
			if got.RunAsUser != nil || got.RunAsUsername != "nginx" {
				t.Fatalf("user %v %q", got.RunAsUser, got.RunAsUsername)
			}
		}},
		{name: "pod user and groups, container group", image: rootImage,
			psc: &v1.PodSecurityContext{RunAsUser: i64(1000), RunAsGroup: i64(1), FSGroup: i64(2000), SupplementalGroups: []int64{3000}},
			csc: &v1.SecurityContext{RunAsGroup: i64(1500)},
			check: func(t *testing.T, got *runtimeapi.LinuxContainerSecurityContext) {
				if got.RunAsUser.GetValue() != 1000 || got.RunAsGroup.GetValue() != 1500 || got.RunAsUsername != "" ||
					!reflect.DeepEqual(got.SupplementalGroups, []int64{2000, 3000}) {
					t.Fatalf("users and groups: %v", got)
				}
			}},
		{name: "hardened", image: rootImage, csc: &v1.SecurityContext{
			ReadOnlyRootFilesystem: ptr(true), AllowPrivilegeEscalation: ptr(false),
			Capabilities: &v1.Capabilities{Drop: []v1.Capability{"ALL"}, Add: []v1.Capability{"NET_BIND_SERVICE"}},
		}, check: func(t *testing.T, got *runtimeapi.LinuxContainerSecurityContext) {
			if !got.ReadonlyRootfs || !got.NoNewPrivs ||
				!reflect.DeepEqual(got.Capabilities, &runtimeapi.Capability{AddCapabilities: []string{"NET_BIND_SERVICE"}, DropCapabilities: []string{"ALL"}}) {
				t.Fatalf("hardened: %v", got)
			}
		}},
		{name: "privilege escalation allowed explicitly", csc: &v1.SecurityContext{AllowPrivilegeEscalation: ptr(true)}, check: func(t *testing.T, got *runtimeapi.LinuxContainerSecurityContext) {
			if got.NoNewPrivs {
				t.Fatal("no_new_privs with allowPrivilegeEscalation true")
			}
		}},
		{name: "privileged", csc: &v1.SecurityContext{Privileged: ptr(true)}, check: func(t *testing.T, got *runtimeapi.LinuxContainerSecurityContext) {
			if !got.Privileged {
				t.Fatal("not privileged")
			}
		}},
		{name: "unmasked proc", csc: &v1.SecurityContext{ProcMount: &unmasked}, check: func(t *testing.T, got *runtimeapi.LinuxContainerSecurityContext) {
			if got.MaskedPaths == nil || len(got.MaskedPaths) != 0 || got.ReadonlyPaths == nil || len(got.ReadonlyPaths) != 0 {
				t.Fatalf("unmasked: masked %v readonly %v", got.MaskedPaths, got.ReadonlyPaths)
			}
		}},
		{name: "pod seccomp localhost", opts: opts,
			psc: &v1.PodSecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr("profiles/audit.json")}},
			check: func(t *testing.T, got *runtimeapi.LinuxContainerSecurityContext) {
				want := &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: "/var/lib/kubelet/seccomp/profiles/audit.json"}
				if !reflect.DeepEqual(got.Seccomp, want) {
					t.Fatalf("seccomp %v", got.Seccomp)
				}
			}},
		{name: "container seccomp wins", opts: Options{SeccompDefault: true},
			psc: &v1.PodSecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault}},
			csc: &v1.SecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeUnconfined}},
			check: func(t *testing.T, got *runtimeapi.LinuxContainerSecurityContext) {
				if got.Seccomp.ProfileType != runtimeapi.SecurityProfile_Unconfined {
					t.Fatalf("seccomp %v", got.Seccomp)
				}
			}},
		{name: "apparmor", csc: &v1.SecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptr("k8s-deny-write")}},
			check: func(t *testing.T, got *runtimeapi.LinuxContainerSecurityContext) {
				if !reflect.DeepEqual(got.Apparmor, &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: "k8s-deny-write"}) ||
					got.ApparmorProfile != "localhost/k8s-deny-write" {
					t.Fatalf("apparmor %v %q", got.Apparmor, got.ApparmorProfile)
				}
			}},
		{name: "apparmor runtime default from pod", psc: &v1.PodSecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault}},
			check: func(t *testing.T, got *runtimeapi.LinuxContainerSecurityContext) {
				if got.Apparmor.GetProfileType() != runtimeapi.SecurityProfile_RuntimeDefault || got.ApparmorProfile != "runtime/default" {
					t.Fatalf("apparmor %v %q", got.Apparmor, got.ApparmorProfile)
				}
			}},
		{name: "shared pid namespace", check: func(t *testing.T, got *runtimeapi.LinuxContainerSecurityContext) {
			if got.NamespaceOptions.Pid != runtimeapi.NamespaceMode_POD {
				t.Fatalf("pid namespace %v", got.NamespaceOptions)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pod(tc.psc, tc.csc)
			if tc.name == "shared pid namespace" {
				p.Spec.ShareProcessNamespace = ptr(true)
			}
			tc.check(t, Container(p, &p.Spec.Containers[0], tc.image, tc.opts))
		})
	}
}
