package admission

import (
	"context"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// restrictedPod passes every restricted check.
func restrictedPod() *corev1.Pod {
	pod := newPod("p")
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: ptr(true),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
	pod.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{AllowPrivilegeEscalation: ptr(false),
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
	return pod
}

func TestPodSecurityChecks(t *testing.T) {
	tests := []struct {
		name       string
		mutate     func(p *corev1.Pod)
		baseline   string // "" means allowed
		restricted string
	}{
		{"compliant", func(*corev1.Pod) {}, "", ""},
		{"hostNetwork and hostPID", func(p *corev1.Pod) { p.Spec.HostNetwork, p.Spec.HostPID = true, true },
			"host namespaces (hostNetwork=true, hostPID=true)", "host namespaces (hostNetwork=true, hostPID=true)"},
		{"privileged", func(p *corev1.Pod) { p.Spec.Containers[0].SecurityContext.Privileged = ptr(true) },
			`privileged (container "c" must not set securityContext.privileged=true)`, "privileged"},
		{"hostProcess", func(p *corev1.Pod) {
			p.Spec.SecurityContext.WindowsOptions = &corev1.WindowsSecurityContextOptions{HostProcess: ptr(true)}
		}, "hostProcess (pod must not set securityContext.windowsOptions.hostProcess=true)", "hostProcess"},
		{"SYS_ADMIN", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext.Capabilities.Add = []corev1.Capability{"SYS_ADMIN"}
		}, `non-default capabilities (container "c" must not include "SYS_ADMIN" in securityContext.capabilities.add)`,
			`unrestricted capabilities (container "c" must not include "SYS_ADMIN" in securityContext.capabilities.add)`},
		{"CHOWN allowed by baseline only", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext.Capabilities.Add = []corev1.Capability{"CHOWN"}
		}, "", `unrestricted capabilities (container "c" must not include "CHOWN" in securityContext.capabilities.add)`},
		{"hostPath", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "h", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
		}, `hostPath volumes (volume "h")`, `restricted volume types (volume "h" uses restricted volume type "hostPath")`},
		{"hostPort", func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080}}
		},
			`hostPort (container "c" uses hostPort 8080)`, "hostPort"},
		{"AppArmor unconfined", func(p *corev1.Pod) {
			p.Spec.SecurityContext.AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}
		}, `forbidden AppArmor profile (pod must not set AppArmor profile type to "Unconfined")`, "AppArmor"},
		{"SELinux type", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext.SELinuxOptions = &corev1.SELinuxOptions{Type: "spc_t"}
		}, `seLinuxOptions (container "c" set forbidden securityContext.seLinuxOptions: type "spc_t")`, "seLinuxOptions"},
		{"procMount", func(p *corev1.Pod) {
			um := corev1.UnmaskedProcMount
			p.Spec.Containers[0].SecurityContext.ProcMount = &um
		}, `procMount (container "c" must not set securityContext.procMount to "Unmasked")`, "procMount"},
		{"seccomp unconfined", func(p *corev1.Pod) { p.Spec.SecurityContext.SeccompProfile.Type = corev1.SeccompProfileTypeUnconfined },
			`seccompProfile (pod must not set securityContext.seccompProfile.type to "Unconfined")`, "seccompProfile"},
		{"unsafe sysctl", func(p *corev1.Pod) {
			p.Spec.SecurityContext.Sysctls = []corev1.Sysctl{{Name: "kernel.msgmax", Value: "1"}, {Name: "net.ipv4.tcp_syncookies", Value: "1"}}
		}, "forbidden sysctls (kernel.msgmax)", "forbidden sysctls"},
		{"allowPrivilegeEscalation unset", func(p *corev1.Pod) { p.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = nil },
			"", `allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false)`},
		{"runAsNonRoot unset", func(p *corev1.Pod) { p.Spec.SecurityContext.RunAsNonRoot = nil },
			"", `runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true)`},
		{"runAsUser 0", func(p *corev1.Pod) { p.Spec.Containers[0].SecurityContext.RunAsUser = ptr(int64(0)) },
			"", `runAsUser=0 (container "c" must not set runAsUser=0)`},
		{"seccomp unset", func(p *corev1.Pod) { p.Spec.SecurityContext.SeccompProfile = nil },
			"", `seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`},
		{"capabilities not dropped", func(p *corev1.Pod) { p.Spec.Containers[0].SecurityContext.Capabilities = nil },
			"", `unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"])`},
		{"several host ports", func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 20}, {ContainerPort: 81, HostPort: 10}}
			p.Spec.InitContainers = []corev1.Container{{Name: "i", Image: "x", SecurityContext: p.Spec.Containers[0].SecurityContext,
				Ports: []corev1.ContainerPort{{ContainerPort: 80, HostPort: 10}}}}
		}, `hostPort (containers "i", "c" use hostPorts 10, 20)`, "hostPort"},
		{"SELinux on pod and container", func(p *corev1.Pod) {
			p.Spec.SecurityContext.SELinuxOptions = &corev1.SELinuxOptions{Type: "foo", User: "u"}
			p.Spec.Containers[0].SecurityContext.SELinuxOptions = &corev1.SELinuxOptions{Type: "bar", Role: "r"}
		}, `seLinuxOptions (pod and container "c" set forbidden securityContext.seLinuxOptions: types "bar", "foo"; user may not be set; role may not be set)`, "seLinuxOptions"},
		{"probe host", func(p *corev1.Pod) {
			p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Host: "10.0.0.1"}}}
		}, `probe or lifecycle host (container "c" uses probe or lifecycle host "10.0.0.1")`, "probe or lifecycle host"},
		{"AppArmor annotation", func(p *corev1.Pod) {
			p.Annotations = map[string]string{appArmorAnnotationPrefix + "c": "unconfined"}
		}, `forbidden AppArmor profile (annotation must not set AppArmor profile type to "container.apparmor.security.beta.kubernetes.io/c="unconfined"")`, "AppArmor"},
		{"user namespace relaxes runAsUser", func(p *corev1.Pod) {
			p.Spec.HostUsers = ptr(false)
			p.Spec.SecurityContext.RunAsNonRoot = nil
			p.Spec.Containers[0].SecurityContext.RunAsUser = ptr(int64(0))
		}, "", ""},
		{"runAsNonRoot false on pod and container", func(p *corev1.Pod) {
			p.Spec.SecurityContext.RunAsNonRoot = ptr(false)
			p.Spec.Containers[0].SecurityContext.RunAsNonRoot = ptr(false)
		}, "", `runAsNonRoot != true (pod and container "c" must not set securityContext.runAsNonRoot=false)`},
		{"emptyDir and projected allowed", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "e", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "t", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{}}}}
		}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := restrictedPod()
			tt.mutate(pod)
			for level, want := range map[string]string{levelBaseline: tt.baseline, levelRestricted: tt.restricted} {
				got := describeViolations(evaluatePodSecurity(podSecurityPolicy{level, "latest"}, &podMeta{pod.Annotations}, &pod.Spec))
				if (want == "") != (got == "") || !strings.Contains(got, want) {
					t.Errorf("%s: got %q, want %q", level, got, want)
				}
			}
			if v := evaluatePodSecurity(podSecurityPolicy{levelPrivileged, "latest"}, &podMeta{}, &pod.Spec); len(v) != 0 {
				t.Errorf("privileged refused %v", v)
			}
		})
	}
}

func podSecurity(labels map[string]string) *PodSecurity {
	return &PodSecurity{Namespaces: func(_ context.Context, name string, _ bool) (*corev1.Namespace, error) {
		if name != "ns" {
			return nil, apierrors.NewNotFound(nsResource, name)
		}
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, nil
	}}
}

func TestPodSecurityNamespaceLabels(t *testing.T) {
	privilegedPod := newPod("p")
	privilegedPod.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr(true)}
	plain := newPod("p")
	tests := []struct {
		name     string
		labels   map[string]string
		pod      *corev1.Pod
		wantErr  string
		wantWarn string
	}{
		{"no labels: privileged", nil, privilegedPod, "", ""},
		{"enforce baseline", map[string]string{podSecurityEnforce: "baseline"}, privilegedPod,
			`pods "p" is forbidden: violates PodSecurity "baseline:latest": privileged (container "c" must not set securityContext.privileged=true)`, ""},
		{"enforce with version", map[string]string{podSecurityEnforce: "baseline", podSecurityEnforce + "-version": "v1.30"}, privilegedPod,
			`violates PodSecurity "baseline:v1.30"`, ""},
		{"warn restricted, enforce baseline", map[string]string{podSecurityEnforce: "baseline", podSecurityWarn: "restricted"}, plain,
			"", `would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false`},
		{"invalid level enforces restricted", map[string]string{podSecurityEnforce: "strict"}, plain,
			`violates PodSecurity "restricted:latest"`, ""},
		{"audit alone enforces nothing", map[string]string{podSecurityAudit: "restricted"}, privilegedPod, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, warnings := request.WithWarnings(context.Background())
			wantForbidden(t, podSecurity(tt.labels).Validate(ctx, podCreate(tt.pod.DeepCopy())), tt.wantErr)
			w := strings.Join(warnings.List(), "\n")
			if (tt.wantWarn == "") != (w == "") || !strings.Contains(w, tt.wantWarn) {
				t.Fatalf("warnings %q, want %q", w, tt.wantWarn)
			}
		})
	}
}

// TestPodSecurityWorkloadsWarnOnly: a workload's pod template is checked
// against the warn (and audit) policy only, never refused and not warned
// about for the enforce policy alone (kube-apiserver's
// ValidatePodController evaluates with enforce off).
func TestPodSecurityWorkloadsWarnOnly(t *testing.T) {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "ns"}}
	d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "c", Image: "x", SecurityContext: &corev1.SecurityContext{Privileged: ptr(true)}}}
	a := &Attributes{Operation: Create, Resource: appsv1.SchemeGroupVersion.WithResource("deployments"), Namespace: "ns", Name: "d", Object: d}
	for _, tt := range []struct {
		labels map[string]string
		want   []string
	}{
		{map[string]string{podSecurityEnforce: "baseline"}, nil},
		{map[string]string{podSecurityEnforce: "baseline", podSecurityWarn: "baseline", podSecurityWarn + "-version": "v1.30"},
			[]string{`would violate PodSecurity "baseline:v1.30": privileged (container "c" must not set securityContext.privileged=true)`}},
	} {
		ctx, warnings := request.WithWarnings(context.Background())
		if err := podSecurity(tt.labels).Validate(ctx, a); err != nil {
			t.Fatalf("%v: a workload is not refused: %v", tt.labels, err)
		}
		if w := warnings.List(); !slices.Equal(w, tt.want) {
			t.Fatalf("%v: warnings %q, want %q", tt.labels, w, tt.want)
		}
	}
}

func TestPodSecurityUpdates(t *testing.T) {
	p := podSecurity(map[string]string{podSecurityEnforce: "baseline"})
	old := newPod("p")
	old.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr(true)}
	// A label change to a pod that predates the label is not refused.
	relabel := old.DeepCopy()
	relabel.Labels = map[string]string{"x": "y"}
	a := podCreate(relabel)
	a.Operation, a.OldObject = Update, old
	wantForbidden(t, p.Validate(context.Background(), a), "")
	// A spec change is checked.
	changed := old.DeepCopy()
	changed.Spec.Containers[0].Image = "x:2"
	a = podCreate(changed)
	a.Operation, a.OldObject = Update, old
	wantForbidden(t, p.Validate(context.Background(), a), "violates PodSecurity")
}

func TestPodSecurityNamespaceLabels422AndExistingPods(t *testing.T) {
	privileged := newPod("priv-1")
	privileged.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr(true)}
	privileged2 := privileged.DeepCopy()
	privileged2.Name = "priv-2"
	hostNet := newPod("hostnet")
	hostNet.Spec.HostNetwork = true
	done := newPod("done")
	done.Spec.HostNetwork = true
	done.Status.Phase = corev1.PodSucceeded
	p := podSecurity(nil)
	p.ListPods = func(context.Context, string) ([]corev1.Pod, error) {
		return []corev1.Pod{*privileged2, *hostNet, *newPod("fine"), *privileged, *done}, nil
	}
	nsWith := func(labels map[string]string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", Labels: labels}}
	}
	nsGVR := corev1.SchemeGroupVersion.WithResource("namespaces")

	err := p.Validate(context.Background(), &Attributes{Operation: Create, Resource: nsGVR, Name: "ns", Object: nsWith(map[string]string{podSecurityEnforce: "strict"})})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": must be one of privileged, baseline, restricted`) {
		t.Fatalf("invalid level: %v", err)
	}

	ctx, warnings := request.WithWarnings(context.Background())
	err = p.Validate(ctx, &Attributes{Operation: Update, Resource: nsGVR, Name: "ns",
		Object: nsWith(map[string]string{podSecurityEnforce: "baseline"}), OldObject: nsWith(nil)})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`existing pods in namespace "ns" violate the new PodSecurity enforce level "baseline:latest"`,
		`done (and 1 other pod): host namespaces`, // finished pods are checked too
		`priv-1 (and 1 other pod): privileged`,    // named by the lexically first pod
	}
	if got := warnings.List(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("warnings\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// Relaxing the level checks nothing.
	ctx, warnings = request.WithWarnings(context.Background())
	if err := p.Validate(ctx, &Attributes{Operation: Update, Resource: nsGVR, Name: "ns",
		Object: nsWith(map[string]string{podSecurityEnforce: "baseline"}), OldObject: nsWith(map[string]string{podSecurityEnforce: "restricted"})}); err != nil || len(warnings.List()) != 0 {
		t.Fatalf("relaxed: %v %v", err, warnings.List())
	}
}

// TestPodSecurityEphemeralContainers: a write through pods/ephemeralcontainers
// is checked like a pod's update, its ephemeral containers included: when
// it adds one (a write that changes nothing is not evaluated again).
func TestPodSecurityEphemeralContainers(t *testing.T) {
	p := podSecurity(map[string]string{podSecurityEnforce: "baseline"})
	old := newPod("p")
	debug := old.DeepCopy()
	debug.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debugger", Image: "busybox", SecurityContext: &corev1.SecurityContext{Privileged: ptr(true)}}}}
	a := podCreate(debug)
	a.Operation, a.OldObject, a.Subresource = Update, old, "ephemeralcontainers"
	wantForbidden(t, p.Validate(context.Background(), a), `privileged (container "debugger" must not set securityContext.privileged=true)`)

	same := debug.DeepCopy()
	a = podCreate(same)
	a.Operation, a.OldObject, a.Subresource = Update, debug, "ephemeralcontainers"
	wantForbidden(t, p.Validate(context.Background(), a), "")

	plain := old.DeepCopy()
	plain.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debugger", Image: "busybox"}}}
	a = podCreate(plain)
	a.Operation, a.OldObject, a.Subresource = Update, old, "ephemeralcontainers"
	wantForbidden(t, p.Validate(context.Background(), a), "")
}
