package admission

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// atVersion is one enforce-version label and what a pod gets under it:
// "" admitted, else the violations the 403 lists.
type atVersion struct{ version, want string }

// TestPodSecurityVersionBoundaries: a namespace's enforce-version label
// picks each control's definition as of that Kubernetes version, at every
// version where pod-security-admission's definition of a control changes
// (policy/check_*.go: MinimumVersion and OverrideCheckIDs).
func TestPodSecurityVersionBoundaries(t *testing.T) {
	windows := func(p *corev1.Pod) { p.Spec.OS = &corev1.PodOS{Name: corev1.Windows} }
	userNS := func(p *corev1.Pod) { p.Spec.HostUsers = ptr(false) }
	unmasked := func(p *corev1.Pod) {
		um := corev1.UnmaskedProcMount
		p.Spec.Containers[0].SecurityContext.ProcMount = &um
	}
	sysctl := func(name string) func(p *corev1.Pod) {
		return func(p *corev1.Pod) { p.Spec.SecurityContext.Sysctls = []corev1.Sysctl{{Name: name, Value: "1"}} }
	}
	const (
		probeHost     = `probe or lifecycle host (container "c" uses probe or lifecycle host "10.0.0.1")`
		procMount     = `procMount (container "c" must not set securityContext.procMount to "Unmasked")`
		escalation    = `allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false)`
		noDropAll     = `unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"])`
		nonRoot       = `runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true)`
		rootUser      = `runAsUser=0 (container "c" must not set runAsUser=0)`
		seccompUnset  = `seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`
		seccompUnconf = `seccompProfile (pod must not set securityContext.seccompProfile.type to "Unconfined")`
	)
	tests := []struct {
		name   string
		level  string
		mutate []func(p *corev1.Pod)
		cases  []atVersion
	}{
		{"probe host forbidden from v1.34", levelBaseline, []func(*corev1.Pod){func(p *corev1.Pod) {
			p.Spec.Containers[0].LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Host: "10.0.0.1"}}}
		}}, []atVersion{{"v1.33", ""}, {"v1.34", probeHost}, {"latest", probeHost}}},
		{"baseline procMount relaxed for user namespaces from v1.35", levelBaseline, []func(*corev1.Pod){userNS, unmasked},
			[]atVersion{{"v1.0", procMount}, {"v1.34", procMount}, {"v1.35", ""}, {"latest", ""}}},
		{"restricted procMount not relaxed, reported among restricted from v1.35", levelRestricted, []func(*corev1.Pod){userNS, unmasked, func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = nil
		}}, []atVersion{{"v1.34", procMount + ", " + escalation}, {"v1.35", escalation + ", " + procMount}}},
		{"container_engine_t allowed from v1.31", levelBaseline, []func(*corev1.Pod){func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext.SELinuxOptions = &corev1.SELinuxOptions{Type: "container_engine_t"}
		}}, []atVersion{{"v1.30", `seLinuxOptions (container "c" set forbidden securityContext.seLinuxOptions: type "container_engine_t")`}, {"v1.31", ""}}},
		{"seccomp annotations up to v1.18", levelBaseline, []func(*corev1.Pod){func(p *corev1.Pod) {
			p.Annotations = map[string]string{seccompPodAnnotation: "unconfined", seccompContainerAnnotationPrefix + "c": "localhost/x"}
		}}, []atVersion{{"v1.18", `seccompProfile (forbidden annotation seccomp.security.alpha.kubernetes.io/pod="unconfined")`}, {"v1.19", ""}}},
		{"seccomp fields from v1.19", levelBaseline, []func(*corev1.Pod){func(p *corev1.Pod) {
			p.Spec.SecurityContext.SeccompProfile.Type = corev1.SeccompProfileTypeUnconfined
		}}, []atVersion{{"v1.18", ""}, {"v1.19", seccompUnconf}}},
		{"ip_local_reserved_ports safe from v1.27", levelBaseline, []func(*corev1.Pod){sysctl("net.ipv4.ip_local_reserved_ports")},
			[]atVersion{{"v1.26", "forbidden sysctls (net.ipv4.ip_local_reserved_ports)"}, {"v1.27", ""}}},
		{"tcp_keepalive_time safe from v1.29", levelBaseline, []func(*corev1.Pod){sysctl("net.ipv4.tcp_keepalive_time")},
			[]atVersion{{"v1.28", "forbidden sysctls (net.ipv4.tcp_keepalive_time)"}, {"v1.29", ""}}},
		{"tcp_rmem safe from v1.32", levelBaseline, []func(*corev1.Pod){sysctl("net.ipv4.tcp_rmem")},
			[]atVersion{{"v1.31", "forbidden sysctls (net.ipv4.tcp_rmem)"}, {"v1.32", ""}}},
		{"tcp_notsent_lowat safe from v1.37", levelBaseline, []func(*corev1.Pod){sysctl("net.ipv4.tcp_notsent_lowat")},
			[]atVersion{{"v1.36", "forbidden sysctls (net.ipv4.tcp_notsent_lowat)"}, {"v1.37", ""}, {"latest", ""}}},
		{"allowPrivilegeEscalation from v1.8", levelRestricted, []func(*corev1.Pod){func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = nil
		}}, []atVersion{{"v1.7", ""}, {"v1.8", escalation}}},
		{"allowPrivilegeEscalation exempts Windows from v1.25", levelRestricted, []func(*corev1.Pod){windows, func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = nil
		}}, []atVersion{{"v1.24", escalation}, {"v1.25", ""}}},
		{"drop ALL required from v1.22", levelRestricted, []func(*corev1.Pod){func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext.Capabilities = nil
		}}, []atVersion{{"v1.21", ""}, {"v1.22", noDropAll}}},
		{"restricted capabilities replace baseline's from v1.22", levelRestricted, []func(*corev1.Pod){func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext.Capabilities.Add = []corev1.Capability{"SYS_ADMIN"}
		}}, []atVersion{
			{"v1.21", `non-default capabilities (container "c" must not include "SYS_ADMIN" in securityContext.capabilities.add)`},
			{"v1.22", `unrestricted capabilities (container "c" must not include "SYS_ADMIN" in securityContext.capabilities.add)`}}},
		{"capabilities exempt Windows from v1.25", levelRestricted, []func(*corev1.Pod){windows, func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext.Capabilities = nil
		}}, []atVersion{{"v1.24", noDropAll}, {"v1.25", ""}}},
		{"restricted volumes replace hostPath volumes", levelRestricted, []func(*corev1.Pod){func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "h", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
		}}, []atVersion{{"v1.0", `restricted volume types (volume "h" uses restricted volume type "hostPath")`},
			{"latest", `restricted volume types (volume "h" uses restricted volume type "hostPath")`}}},
		{"runAsNonRoot relaxed for user namespaces from v1.35", levelRestricted, []func(*corev1.Pod){userNS, func(p *corev1.Pod) {
			p.Spec.SecurityContext.RunAsNonRoot = nil
		}}, []atVersion{{"v1.0", nonRoot}, {"v1.34", nonRoot}, {"v1.35", ""}}},
		{"runAsUser=0 forbidden from v1.23", levelRestricted, []func(*corev1.Pod){func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext.RunAsUser = ptr(int64(0))
		}}, []atVersion{{"v1.22", ""}, {"v1.23", rootUser}}},
		{"runAsUser relaxed for user namespaces from v1.35", levelRestricted, []func(*corev1.Pod){userNS, func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext.RunAsUser = ptr(int64(0))
		}}, []atVersion{{"v1.34", rootUser}, {"v1.35", ""}}},
		{"seccomp required from v1.19", levelRestricted, []func(*corev1.Pod){func(p *corev1.Pod) {
			p.Spec.SecurityContext.SeccompProfile = nil
		}}, []atVersion{{"v1.18", ""}, {"v1.19", seccompUnset}}},
		{"seccomp exempts Windows from v1.25", levelRestricted, []func(*corev1.Pod){windows, func(p *corev1.Pod) {
			p.Spec.SecurityContext.SeccompProfile = nil
		}}, []atVersion{{"v1.24", seccompUnset}, {"v1.25", ""}}},
		{"restricted seccomp replaces baseline's", levelRestricted, []func(*corev1.Pod){func(p *corev1.Pod) {
			p.Spec.SecurityContext.SeccompProfile.Type = corev1.SeccompProfileTypeUnconfined
		}}, []atVersion{{"v1.19", seccompUnconf}, {"latest", seccompUnconf}}},
		{"a version newer than the newest definition is latest", levelBaseline, []func(*corev1.Pod){sysctl("net.ipv4.tcp_notsent_lowat"), func(p *corev1.Pod) {
			p.Spec.HostNetwork = true
		}}, []atVersion{{"v1.36", "host namespaces (hostNetwork=true), forbidden sysctls (net.ipv4.tcp_notsent_lowat)"},
			{"v1.99", "host namespaces (hostNetwork=true)"}, {"latest", "host namespaces (hostNetwork=true)"}}},
	}
	for _, tt := range tests {
		for _, c := range tt.cases {
			t.Run(tt.name+"/"+c.version, func(t *testing.T) {
				pod := restrictedPod()
				for _, m := range tt.mutate {
					m(pod)
				}
				labels := map[string]string{podSecurityEnforce: tt.level, podSecurityEnforce + "-version": c.version}
				want := ""
				if c.want != "" {
					want = `pods "p" is forbidden: violates PodSecurity "` + tt.level + ":" + c.version + `": ` + c.want
				}
				err := podSecurity(labels).Validate(context.Background(), podCreate(pod))
				if got := errString(err); got != want {
					t.Fatalf("got  %s\nwant %s", got, want)
				}
			})
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestPodSecurityInvalidLabels: as kube-apiserver's PolicyToEvaluate, an
// invalid level or version replaces only itself: an enforce level with
// restricted, a warn or audit level with privileged (they fail open), a
// version with latest.
func TestPodSecurityInvalidLabels(t *testing.T) {
	hostNet := newPod("p")
	hostNet.Spec.HostNetwork = true
	tests := []struct {
		name      string
		labels    map[string]string
		wantErr   string
		wantWarns []string
	}{
		{"invalid enforce version is latest, level kept", map[string]string{podSecurityEnforce: "baseline", podSecurityEnforce + "-version": "v2.0"},
			`pods "p" is forbidden: violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true)`, nil},
		{"invalid enforce level is restricted, version kept", map[string]string{podSecurityEnforce: "strict", podSecurityEnforce + "-version": "v1.7"},
			`pods "p" is forbidden: violates PodSecurity "restricted:v1.7": host namespaces (hostNetwork=true), runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true)`, nil},
		{"an overflowing version is invalid", map[string]string{podSecurityEnforce: "baseline", podSecurityEnforce + "-version": "v1.99999999999999999999"},
			`pods "p" is forbidden: violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true)`, nil},
		{"invalid warn level warns nothing", map[string]string{podSecurityWarn: "strict"}, "", nil},
		{"invalid warn version is latest", map[string]string{podSecurityWarn: "baseline", podSecurityWarn + "-version": "1.30"}, "",
			[]string{`would violate PodSecurity "baseline:latest": host namespaces (hostNetwork=true)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, warnings := request.WithWarnings(context.Background())
			if got := errString(podSecurity(tt.labels).Validate(ctx, podCreate(hostNet.DeepCopy()))); got != tt.wantErr {
				t.Fatalf("got  %s\nwant %s", got, tt.wantErr)
			}
			if w := warnings.List(); !slices.Equal(w, tt.wantWarns) {
				t.Fatalf("warnings %q, want %q", w, tt.wantWarns)
			}
		})
	}
}

// TestPodSecurityDefaultVersions: PodSecurityConfiguration's default
// versions apply to namespaces without the version labels.
func TestPodSecurityDefaultVersions(t *testing.T) {
	pod := newPod("p")
	pod.Spec.Containers[0].LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Host: "h"}}}
	p := podSecurity(nil)
	p.DefaultEnforce, p.DefaultEnforceVersion = levelBaseline, "v1.33"
	p.DefaultWarn, p.DefaultWarnVersion = levelBaseline, "v1.34"
	ctx, warnings := request.WithWarnings(context.Background())
	if err := p.Validate(ctx, podCreate(pod.DeepCopy())); err != nil {
		t.Fatalf("baseline:v1.33 allows probe hosts: %v", err)
	}
	if w := warnings.List(); !slices.Equal(w, []string{`would violate PodSecurity "baseline:v1.34": probe or lifecycle host (container "c" uses probe or lifecycle host "h")`}) {
		t.Fatalf("warnings %q", w)
	}
	// A namespace's own version label wins.
	p.Namespaces = podSecurity(map[string]string{podSecurityEnforce + "-version": "v1.34"}).Namespaces
	wantForbidden(t, p.Validate(context.Background(), podCreate(pod.DeepCopy())), `violates PodSecurity "baseline:v1.34"`)

	if _, _, _, err := NewPluginsWithOptions(nil, nil, Options{PodSecurityDefaultAuditVersion: "v1"}); err == nil {
		t.Fatal("an invalid default version is refused")
	}
}

// TestPodSecurityNamespaceLabelErrors: the 422 lists invalid labels in
// kube-apiserver's order (enforce, audit, warn), and an update that keeps
// the same invalid labels (changing others) is not refused.
func TestPodSecurityNamespaceLabelErrors(t *testing.T) {
	p := podSecurity(nil)
	nsGVR := corev1.SchemeGroupVersion.WithResource("namespaces")
	ns := func(labels map[string]string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", Labels: labels}}
	}
	bad := map[string]string{podSecurityWarn: "x", podSecurityAudit + "-version": "y", podSecurityEnforce: "z"}
	err := p.Validate(context.Background(), &Attributes{Operation: Create, Resource: nsGVR, Name: "ns", Object: ns(bad)})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("create: %v", err)
	}
	msg := err.Error()
	e, a, w := strings.Index(msg, "[pod-security.kubernetes.io/enforce]"), strings.Index(msg, "[pod-security.kubernetes.io/audit-version]"), strings.Index(msg, "[pod-security.kubernetes.io/warn]")
	if e < 0 || a < e || w < a {
		t.Fatalf("order: %s", msg)
	}
	changed := map[string]string{podSecurityWarn: "x", podSecurityAudit + "-version": "y", podSecurityEnforce: "z", podSecurityWarn + "-version": "v1.30"}
	if err := p.Validate(context.Background(), &Attributes{Operation: Update, Resource: nsGVR, Name: "ns", Object: ns(changed), OldObject: ns(bad)}); err != nil {
		t.Fatalf("same invalid labels: %v", err)
	}
	if err := p.Validate(context.Background(), &Attributes{Operation: Update, Resource: nsGVR, Name: "ns", Object: ns(bad), OldObject: ns(nil)}); !apierrors.IsInvalid(err) {
		t.Fatalf("newly invalid labels: %v", err)
	}
}

// TestPodSecurityExistingPodsAtVersion: a new enforce policy checks the
// namespace's pods at its version, skipping exempt runtime classes.
func TestPodSecurityExistingPodsAtVersion(t *testing.T) {
	probe := newPod("probe")
	probe.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Host: "h"}}}
	exempt := probe.DeepCopy()
	exempt.Name, exempt.Spec.RuntimeClassName = "exempt", ptr("kata")
	p := podSecurity(nil)
	p.ExemptRuntimeClasses = map[string]bool{"kata": true}
	p.ListPods = func(context.Context, string) ([]corev1.Pod, error) { return []corev1.Pod{*exempt, *probe}, nil }
	nsGVR := corev1.SchemeGroupVersion.WithResource("namespaces")
	ns := func(labels map[string]string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", Labels: labels}}
	}
	for _, tt := range []struct {
		version string
		want    []string
	}{
		{"v1.33", nil},
		{"v1.34", []string{`existing pods in namespace "ns" violate the new PodSecurity enforce level "baseline:v1.34"`, "probe: probe or lifecycle host"}},
	} {
		ctx, warnings := request.WithWarnings(context.Background())
		err := p.Validate(ctx, &Attributes{Operation: Update, Resource: nsGVR, Name: "ns",
			Object: ns(map[string]string{podSecurityEnforce: "baseline", podSecurityEnforce + "-version": tt.version}), OldObject: ns(nil)})
		if err != nil || !slices.Equal(warnings.List(), tt.want) {
			t.Fatalf("%s: %v, warnings %q, want %q", tt.version, err, warnings.List(), tt.want)
		}
	}
}

// TestSecurityChecksRegistry: the controls are listed baseline first, each
// level sorted by ID (the order violations are reported in), their
// definitions in increasing version order; only restricted definitions
// override, and only baseline controls; "latest" is v1.37.
func TestSecurityChecksRegistry(t *testing.T) {
	ids := map[string]string{}
	for i, c := range securityChecks {
		ids[c.id] = c.level
		if i > 0 {
			prev := securityChecks[i-1]
			if prev.level == c.level && prev.id >= c.id || prev.level == levelRestricted && c.level == levelBaseline {
				t.Errorf("%s listed after %s", c.id, prev.id)
			}
		}
		for j, v := range c.versions {
			if j > 0 && v.since <= c.versions[j-1].since {
				t.Errorf("%s: versions not increasing", c.id)
			}
			if len(v.overrides) > 0 && c.level != levelRestricted {
				t.Errorf("%s: a baseline control overrides", c.id)
			}
		}
	}
	for _, c := range securityChecks {
		for _, v := range c.versions {
			for _, o := range v.overrides {
				if ids[o] != levelBaseline {
					t.Errorf("%s overrides %q, not a baseline control", c.id, o)
				}
			}
		}
	}
	if maxPolicyMinor != 37 {
		t.Errorf("latest is v1.%d", maxPolicyMinor)
	}
}

// TestPodSecuritySignificantUpdates: a pod update is evaluated again only
// when it adds or removes containers, changes an image or a container's
// seccomp annotation, or adds an ephemeral container (kube-apiserver's
// isSignificantPodUpdate), through pods or pods/ephemeralcontainers alike;
// any other change to a pod admitted under a laxer policy is allowed.
func TestPodSecuritySignificantUpdates(t *testing.T) {
	p := podSecurity(map[string]string{podSecurityEnforce: "baseline"})
	old := newPod("p")
	old.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr(true)}
	old.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "dbg", Image: "busybox"}}}
	update := func(sub string, mutate func(p *corev1.Pod)) error {
		pod := old.DeepCopy()
		mutate(pod)
		a := podCreate(pod)
		a.Operation, a.OldObject, a.Subresource = Update, old, sub
		return p.Validate(context.Background(), a)
	}
	for _, tt := range []struct {
		name        string
		sub         string
		mutate      func(p *corev1.Pod)
		significant bool
	}{
		{"toleration added", "", func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}}
		}, false},
		{"activeDeadlineSeconds set", "", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr(int64(60)) }, false},
		{"nothing changed through ephemeralcontainers", "ephemeralcontainers", func(*corev1.Pod) {}, false},
		{"image changed", "", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "busybox:2" }, true},
		{"ephemeral image changed", "ephemeralcontainers", func(p *corev1.Pod) { p.Spec.EphemeralContainers[0].Image = "busybox:2" }, true},
		{"ephemeral container added", "ephemeralcontainers", func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "dbg2", Image: "busybox"}})
		}, true},
		{"container seccomp annotation changed", "", func(p *corev1.Pod) {
			p.Annotations = map[string]string{seccompContainerAnnotationPrefix + "c": "runtime/default"}
		}, true},
	} {
		err := update(tt.sub, tt.mutate)
		if got := apierrors.IsForbidden(err); got != tt.significant || (err != nil && !got) {
			t.Errorf("%s: %v, want evaluated %v", tt.name, err, tt.significant)
		}
	}
}

// TestPodSecurityExistingPodsPrioritized: as kube-apiserver's
// EvaluatePodsInNamespace, a new enforce policy checks at most 3000 pods,
// one per controller first (the rest of each controller's after), says so
// when it checked fewer than there are, names each group of violations by
// its lexically first pod, and checks finished pods too.
func TestPodSecurityExistingPodsPrioritized(t *testing.T) {
	var pods []corev1.Pod
	owner := []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "rs-uid", Controller: ptr(true)}}
	for i := range maxPodsChecked {
		pod := newPod(fmt.Sprintf("a-%04d", maxPodsChecked-1-i))
		pod.OwnerReferences = owner
		pod.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr(true)}
		pods = append(pods, *pod)
	}
	done := newPod("z-done")
	done.Spec.HostNetwork = true
	done.Status.Phase = corev1.PodSucceeded
	pods = append(pods, *done)
	got := existingPodWarnings("ns", podSecurityPolicy{levelBaseline, "latest"}, pods, nil, maxPodsChecked, func() bool { return false })
	want := []string{
		`new PodSecurity enforce level only checked against the first 3000 of 3001 existing pods`,
		`existing pods in namespace "ns" violate the new PodSecurity enforce level "baseline:latest"`,
		`a-0001 (and 2998 other pods): privileged`,
		`z-done: host namespaces`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("warnings\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
