package registry

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var coreV1 = schema.GroupVersion{Version: "v1"}

func newPod(name string, containers ...corev1.Container) *corev1.Pod {
	if len(containers) == 0 {
		containers = []corev1.Container{{Name: "app", Image: "nginx:1.27"}}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       corev1.PodSpec{Containers: containers},
	}
}

// defaultedPod is a pod as the API server stores it after create.
func defaultedPod(t *testing.T, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	r := find(t, coreV1, "pods")
	r.Strategy.Default(p)
	r.Strategy.PrepareForCreate(context.Background(), p)
	if errs := r.Strategy.Validate(context.Background(), p); len(errs) > 0 {
		t.Fatalf("pod invalid: %v", errs.ToAggregate())
	}
	// As stored: updates carry the resourceVersion they were read at.
	p.ResourceVersion = "1"
	return p
}

func TestPodDefaults(t *testing.T) {
	p := newPod("web",
		corev1.Container{
			Name: "app", Image: "nginx",
			Ports: []corev1.ContainerPort{{ContainerPort: 80}},
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("128Mi")}},
			LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(80)}}},
			Env:           []corev1.EnvVar{{Name: "NODE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}},
		},
		corev1.Container{Name: "tagged", Image: "registry.example.com:5000/team/tool:v2"},
		corev1.Container{Name: "latest", Image: "busybox:latest"},
		corev1.Container{Name: "digest", Image: "busybox@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
	)
	p.Spec.Volumes = []corev1.Volume{
		{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}},
		{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}},
		{Name: "scratch"},
	}
	defaultPod(p)

	s := p.Spec
	if s.RestartPolicy != corev1.RestartPolicyAlways || s.DNSPolicy != corev1.DNSClusterFirst ||
		s.SchedulerName != "default-scheduler" || *s.TerminationGracePeriodSeconds != 30 ||
		s.SecurityContext == nil || !*s.EnableServiceLinks || *s.PreemptionPolicy != corev1.PreemptLowerPriority || *s.Priority != 0 {
		t.Errorf("pod spec defaults wrong: %+v", s)
	}
	app := s.Containers[0]
	if app.ImagePullPolicy != corev1.PullAlways {
		t.Errorf("untagged image: pull policy %s, want Always", app.ImagePullPolicy)
	}
	if app.TerminationMessagePath != "/dev/termination-log" || app.TerminationMessagePolicy != corev1.TerminationMessageReadFile {
		t.Errorf("termination message defaults: %q %q", app.TerminationMessagePath, app.TerminationMessagePolicy)
	}
	if app.Ports[0].Protocol != corev1.ProtocolTCP {
		t.Errorf("port protocol %q", app.Ports[0].Protocol)
	}
	probe := app.LivenessProbe
	if probe.TimeoutSeconds != 1 || probe.PeriodSeconds != 10 || probe.SuccessThreshold != 1 || probe.FailureThreshold != 3 ||
		probe.HTTPGet.Path != "/" || probe.HTTPGet.Scheme != corev1.URISchemeHTTP {
		t.Errorf("probe defaults: %+v", probe)
	}
	if !apiequality.Semantic.DeepEqual(app.Resources.Requests, app.Resources.Limits) {
		t.Errorf("requests not defaulted from limits: %v", app.Resources.Requests)
	}
	// Upstream defaults no resizePolicy since 1.33 (PR 128920).
	if app.ResizePolicy != nil || s.Containers[1].ResizePolicy != nil {
		t.Errorf("resize policy defaulted: %v, %v", app.ResizePolicy, s.Containers[1].ResizePolicy)
	}
	if app.Env[0].ValueFrom.FieldRef.APIVersion != "v1" {
		t.Errorf("fieldRef apiVersion %q", app.Env[0].ValueFrom.FieldRef.APIVersion)
	}
	for i, want := range []corev1.PullPolicy{corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullAlways, corev1.PullIfNotPresent} {
		if got := s.Containers[i].ImagePullPolicy; got != want {
			t.Errorf("container %s (%s): pull policy %s, want %s", s.Containers[i].Name, s.Containers[i].Image, got, want)
		}
	}
	if *s.Volumes[0].ConfigMap.DefaultMode != 0644 || *s.Volumes[1].Secret.DefaultMode != 0644 {
		t.Errorf("volume default modes not 0644")
	}
	if s.Volumes[2].EmptyDir == nil {
		t.Errorf("volume without source is not an emptyDir")
	}
}

func TestPodDefaultsKeepExplicitValues(t *testing.T) {
	p := newPod("p", corev1.Container{Name: "c", Image: "nginx", ImagePullPolicy: corev1.PullNever})
	p.Spec.RestartPolicy = corev1.RestartPolicyNever
	p.Spec.TerminationGracePeriodSeconds = ptr(int64(5))
	p.Spec.EnableServiceLinks = ptr(false)
	p.Spec.DeprecatedServiceAccount = "builder"
	p.Spec.PriorityClassName = "high"
	defaultPod(p)
	if p.Spec.Priority != nil || p.Spec.PreemptionPolicy != nil {
		t.Errorf("priority of a named class is admission's to resolve, got %v %v", p.Spec.Priority, p.Spec.PreemptionPolicy)
	}
	if p.Spec.RestartPolicy != corev1.RestartPolicyNever || *p.Spec.TerminationGracePeriodSeconds != 5 ||
		*p.Spec.EnableServiceLinks || p.Spec.Containers[0].ImagePullPolicy != corev1.PullNever {
		t.Errorf("explicit values overwritten: %+v", p.Spec)
	}
	if p.Spec.ServiceAccountName != "builder" || p.Spec.DeprecatedServiceAccount != "builder" {
		t.Errorf("serviceAccount not mirrored: %q %q", p.Spec.ServiceAccountName, p.Spec.DeprecatedServiceAccount)
	}
}

func TestPodValidation(t *testing.T) {
	r := find(t, coreV1, "pods")
	cases := []struct {
		name   string
		mutate func(*corev1.Pod)
		want   []string
	}{
		{"valid", func(*corev1.Pod) {}, nil},
		{"bad name", func(p *corev1.Pod) { p.Name = "Web_1" }, []string{invalid + " metadata.name"}},
		{"no namespace", func(p *corev1.Pod) { p.Namespace = "" }, []string{required + " metadata.namespace"}},
		{"bad label", func(p *corev1.Pod) { p.Labels = map[string]string{"a b": "c"} }, []string{invalid + " metadata.labels"}},
		{"no containers", func(p *corev1.Pod) { p.Spec.Containers = nil }, []string{required + " spec.containers"}},
		{"no container name or image", func(p *corev1.Pod) { p.Spec.Containers[0].Name = ""; p.Spec.Containers[0].Image = "" },
			[]string{required + " spec.containers[0].name", required + " spec.containers[0].image"}},
		{"container name not a DNS label", func(p *corev1.Pod) { p.Spec.Containers[0].Name = "App.1" },
			[]string{invalid + " spec.containers[0].name"}},
		{"container names unique across init and app", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "app", Image: "busybox", ImagePullPolicy: "Always",
				TerminationMessagePolicy: corev1.TerminationMessageReadFile}}
		}, []string{duplicate + " spec.containers[0].name"}},
		{"port out of range", func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 70000, Protocol: corev1.ProtocolTCP}}
		}, []string{invalid + " spec.containers[0].ports[0].containerPort"}},
		{"bad protocol", func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, Protocol: "HTTP"}}
		}, []string{notSupported + " spec.containers[0].ports[0].protocol"}},
		{"request above limit", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
			}
		}, []string{invalid + " spec.containers[0].resources.requests"}},
		{"negative quantity", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("-1")}
		}, []string{invalid + " spec.containers[0].resources.requests[memory]"}},
		{"unknown resource", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{"gpu": resource.MustParse("1")}
		}, []string{invalid + " spec.containers[0].resources.requests[gpu]"}},
		{"bad restart policy", func(p *corev1.Pod) { p.Spec.RestartPolicy = "Sometimes" }, []string{notSupported + " spec.restartPolicy"}},
		{"bad dns policy", func(p *corev1.Pod) { p.Spec.DNSPolicy = "Google" }, []string{notSupported + " spec.dnsPolicy"}},
		{"mount of unknown volume", func(p *corev1.Pod) {
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		}, []string{notFound + " spec.containers[0].volumeMounts[0].name"}},
		{"duplicate volume", func(p *corev1.Pod) {
			v := corev1.Volume{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
			p.Spec.Volumes = []corev1.Volume{v, v}
		}, []string{duplicate + " spec.volumes[1].name"}},
		{"liveness success threshold", func(p *corev1.Pod) {
			p.Spec.Containers[0].LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}},
				TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 2, FailureThreshold: 3}
		}, []string{invalid + " spec.containers[0].livenessProbe.successThreshold"}},
		{"toleration value with Exists", func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, Value: "v"}}
		}, []string{invalid + " spec.tolerations[0].operator"}},
		{"bad node selector", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"-x": "y"} },
			[]string{invalid + " spec.nodeSelector"}},
		{"zero active deadline", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr(int64(0)) },
			[]string{invalid + " spec.activeDeadlineSeconds"}},
		{"privileged without escalation", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr(true), AllowPrivilegeEscalation: ptr(false),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost}}
		}, []string{invalid + " spec.containers[0].securityContext", required + " spec.containers[0].securityContext.seccompProfile.localhostProfile"}},
		{"hook without handler", func(p *corev1.Pod) {
			p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{}}
		}, []string{required + " spec.containers[0].lifecycle.preStop"}},
		{"bad env name", func(p *corev1.Pod) { p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A=B"}} },
			[]string{invalid + " spec.containers[0].env[0].name"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPod("web")
			defaultPod(p)
			tc.mutate(p)
			wantErrors(t, r.Strategy.Validate(context.Background(), p), tc.want...)
		})
	}
}

func TestPodCreateResetsStatusAndSetsGeneration(t *testing.T) {
	p := newPod("p", corev1.Container{Name: "c", Image: "nginx", Resources: corev1.ResourceRequirements{
		Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}}})
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1", HostIP: "1.2.3.4"}
	p.Generation = 7
	p.DeletionTimestamp = &metav1.Time{Time: testNow}
	p = defaultedPod(t, p)
	if p.Status.Phase != corev1.PodPending || p.Status.PodIP != "" || p.Status.QOSClass != corev1.PodQOSGuaranteed {
		t.Errorf("status after create: %+v", p.Status)
	}
	if p.Generation != 1 || p.DeletionTimestamp != nil {
		t.Errorf("generation %d deletionTimestamp %v", p.Generation, p.DeletionTimestamp)
	}

	gated := newPod("gated")
	gated.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/wait"}}
	gated = defaultedPod(t, gated)
	if len(gated.Status.Conditions) != 1 || gated.Status.Conditions[0].Reason != "SchedulingGated" {
		t.Errorf("gated pod conditions: %+v", gated.Status.Conditions)
	}
}

func TestPodQOSClass(t *testing.T) {
	rl := func(kv ...string) corev1.ResourceList {
		l := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return l
	}
	cases := []struct {
		name string
		res  corev1.ResourceRequirements
		want corev1.PodQOSClass
	}{
		{"none", corev1.ResourceRequirements{}, corev1.PodQOSBestEffort},
		{"requests only", corev1.ResourceRequirements{Requests: rl("cpu", "100m")}, corev1.PodQOSBurstable},
		{"equal cpu+memory", corev1.ResourceRequirements{Requests: rl("cpu", "1", "memory", "1Gi"), Limits: rl("cpu", "1", "memory", "1Gi")}, corev1.PodQOSGuaranteed},
		{"cpu only limits", corev1.ResourceRequirements{Requests: rl("cpu", "1"), Limits: rl("cpu", "1")}, corev1.PodQOSBurstable},
		{"requests below limits", corev1.ResourceRequirements{Requests: rl("cpu", "500m", "memory", "1Gi"), Limits: rl("cpu", "1", "memory", "1Gi")}, corev1.PodQOSBurstable},
	}
	for _, tc := range cases {
		s := corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: tc.res}}}
		if got := podQOSClass(&corev1.Pod{Spec: s}); got != tc.want {
			t.Errorf("%s: QoS %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestPodQOSClassPodLevelResources: as upstream's ComputePodQOS, pod-level
// resources, when they name a pod-level resource, decide the class alone;
// the containers' resources are not looked at. An empty spec.resources
// (or one naming no pod-level resource) is not "set": the containers
// decide, as 1.37's ComputePodQOS (PodLevelResourcesFixKubeletQOSClass).
func TestPodQOSClassPodLevelResources(t *testing.T) {
	rl := func(kv ...string) corev1.ResourceList {
		l := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return l
	}
	guaranteed := corev1.ResourceRequirements{Requests: rl("cpu", "1", "memory", "1Gi"), Limits: rl("cpu", "1", "memory", "1Gi")}
	burstable := corev1.ResourceRequirements{Requests: rl("cpu", "100m")}
	cases := []struct {
		name      string
		pod       corev1.ResourceRequirements
		container corev1.ResourceRequirements
		want      corev1.PodQOSClass
	}{
		{"pod-level equal cpu+memory, containers none", guaranteed, corev1.ResourceRequirements{}, corev1.PodQOSGuaranteed},
		{"pod-level equal cpu+memory, containers burstable", guaranteed, burstable, corev1.PodQOSGuaranteed},
		{"pod-level requests only, containers guaranteed", corev1.ResourceRequirements{Requests: rl("memory", "1Gi")}, guaranteed, corev1.PodQOSBurstable},
		{"pod-level cpu limits only", corev1.ResourceRequirements{Requests: rl("cpu", "1"), Limits: rl("cpu", "1")}, corev1.ResourceRequirements{}, corev1.PodQOSBurstable},
		{"pod-level requests below limits", corev1.ResourceRequirements{Requests: rl("cpu", "500m", "memory", "1Gi"), Limits: rl("cpu", "1", "memory", "1Gi")}, guaranteed, corev1.PodQOSBurstable},
		{"pod-level empty, containers burstable", corev1.ResourceRequirements{}, burstable, corev1.PodQOSBurstable},
		{"pod-level empty, containers guaranteed", corev1.ResourceRequirements{}, guaranteed, corev1.PodQOSGuaranteed},
		{"pod-level empty maps, containers guaranteed", corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}, guaranteed, corev1.PodQOSGuaranteed},
		{"pod-level names no pod-level resource, containers guaranteed", corev1.ResourceRequirements{Requests: rl("ephemeral-storage", "1Gi")}, guaranteed, corev1.PodQOSGuaranteed},
		{"pod-level hugepages only, containers guaranteed", corev1.ResourceRequirements{Limits: rl("hugepages-2Mi", "2Mi")}, guaranteed, corev1.PodQOSBestEffort},
	}
	for _, tc := range cases {
		s := corev1.PodSpec{Resources: &tc.pod, Containers: []corev1.Container{{Name: "c", Resources: tc.container}}}
		if got := podQOSClass(&corev1.Pod{Spec: s}); got != tc.want {
			t.Errorf("%s: QoS %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestPodQOSClassPerContainer: without pod-level resources, 1.37's
// ComputePodQOS classes each init and app container on its own (cpu and
// memory only, zero quantities count as unset) and the pod takes their
// common class, Burstable when they differ.
func TestPodQOSClassPerContainer(t *testing.T) {
	g := corev1.ResourceRequirements{Requests: rlist("cpu", "1", "memory", "1Gi"), Limits: rlist("cpu", "1", "memory", "1Gi")}
	g2 := corev1.ResourceRequirements{Requests: rlist("cpu", "250m", "memory", "64Mi"), Limits: rlist("cpu", "250m", "memory", "64Mi")}
	none := corev1.ResourceRequirements{}
	cases := []struct {
		name string
		init []corev1.ResourceRequirements
		app  []corev1.ResourceRequirements
		want corev1.PodQOSClass
	}{
		{"no containers", nil, nil, corev1.PodQOSBestEffort},
		{"all guaranteed, different sizes", []corev1.ResourceRequirements{g2}, []corev1.ResourceRequirements{g, g2}, corev1.PodQOSGuaranteed},
		{"guaranteed init, best-effort app", []corev1.ResourceRequirements{g}, []corev1.ResourceRequirements{none}, corev1.PodQOSBurstable},
		{"best-effort init, guaranteed app", []corev1.ResourceRequirements{none}, []corev1.ResourceRequirements{g}, corev1.PodQOSBurstable},
		{"only non-QoS resources", nil, []corev1.ResourceRequirements{{Requests: rlist("ephemeral-storage", "1Gi"), Limits: rlist("example.com/gpu", "1")}}, corev1.PodQOSBestEffort},
		{"non-QoS resources beside guaranteed", nil, []corev1.ResourceRequirements{g, {Requests: rlist("ephemeral-storage", "1Gi")}}, corev1.PodQOSBurstable},
		{"zero cpu and memory are unset", nil, []corev1.ResourceRequirements{{Requests: rlist("cpu", "0", "memory", "0"), Limits: rlist("cpu", "0", "memory", "0")}}, corev1.PodQOSBestEffort},
		{"guaranteed plus extended resource", nil, []corev1.ResourceRequirements{{Requests: rlist("cpu", "1", "memory", "1Gi", "example.com/gpu", "1"), Limits: rlist("cpu", "1", "memory", "1Gi", "example.com/gpu", "1")}}, corev1.PodQOSGuaranteed},
		{"same value in other units", nil, []corev1.ResourceRequirements{{Requests: rlist("cpu", "1000m", "memory", "1024Mi"), Limits: rlist("cpu", "1", "memory", "1Gi")}}, corev1.PodQOSGuaranteed},
		{"zero request below a limit", nil, []corev1.ResourceRequirements{{Requests: rlist("cpu", "0", "memory", "1Gi"), Limits: rlist("cpu", "1", "memory", "1Gi")}}, corev1.PodQOSBurstable},
		{"memory equal, cpu unset", nil, []corev1.ResourceRequirements{{Requests: rlist("memory", "1Gi"), Limits: rlist("memory", "1Gi")}}, corev1.PodQOSBurstable},
	}
	for _, tc := range cases {
		var s corev1.PodSpec
		for i, r := range tc.init {
			s.InitContainers = append(s.InitContainers, corev1.Container{Name: fmt.Sprintf("i%d", i), Resources: r})
		}
		for i, r := range tc.app {
			s.Containers = append(s.Containers, corev1.Container{Name: fmt.Sprintf("c%d", i), Resources: r})
		}
		if got := podQOSClass(&corev1.Pod{Spec: s}); got != tc.want {
			t.Errorf("%s: QoS %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestPodUpdateImmutability(t *testing.T) {
	r := find(t, coreV1, "pods")
	ctx := context.Background()
	cases := []struct {
		name   string
		mutate func(p *corev1.Pod)
		want   []string
	}{
		{"image change", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "nginx:1.28" }, nil},
		{"labels change", func(p *corev1.Pod) { p.Labels = map[string]string{"a": "b"} }, nil},
		{"add toleration", func(p *corev1.Pod) {
			p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: "k", Operator: corev1.TolerationOpExists})
		}, nil},
		{"set active deadline", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr(int64(60)) }, nil},
		{"change restart policy", func(p *corev1.Pod) { p.Spec.RestartPolicy = corev1.RestartPolicyNever }, []string{forbidden + " spec"}},
		{"add container", func(p *corev1.Pod) {
			c := p.Spec.Containers[0]
			c.Name = "second"
			p.Spec.Containers = append(p.Spec.Containers, c)
		}, []string{forbidden + " spec.containers"}},
		{"remove init container", func(p *corev1.Pod) { p.Spec.InitContainers = nil }, []string{forbidden + " spec.initContainers"}},
		// Twice, as upstream: validateContainersOnlyForPod and ValidateContainerUpdates.
		{"image with whitespace", func(p *corev1.Pod) { p.Spec.Containers[0].Image = " nginx:1.28" },
			[]string{invalid + " spec.containers[0].image", invalid + " spec.containers[0].image"}},
		{"change node name", func(p *corev1.Pod) { p.Spec.NodeName = "node-1" }, []string{forbidden + " spec"}},
		{"remove toleration", func(p *corev1.Pod) { p.Spec.Tolerations = nil }, []string{forbidden + " spec.tolerations"}},
		{"add scheduling gate", func(p *corev1.Pod) {
			p.Spec.SchedulingGates = append(p.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: "new"})
		}, []string{forbidden + " spec.schedulingGates[1].name"}},
		{"remove scheduling gate", func(p *corev1.Pod) { p.Spec.SchedulingGates = nil }, nil},
		{"change grace period", func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr(int64(3)) }, []string{forbidden + " spec"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := newPod("p")
			old.Spec.Tolerations = []corev1.Toleration{{Key: "t", Operator: corev1.TolerationOpEqual, Value: "v", Effect: corev1.TaintEffectNoSchedule}}
			old.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "gate"}}
			old.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox"}}
			old = defaultedPod(t, old)
			p := old.DeepCopy()
			tc.mutate(p)
			r.Strategy.PrepareForUpdate(ctx, p, old)
			wantErrors(t, r.Strategy.ValidateUpdate(ctx, p, old), tc.want...)
		})
	}
}

func TestPodUpdateMessageNamesUpdatableFields(t *testing.T) {
	old := defaultedPod(t, newPod("p"))
	p := old.DeepCopy()
	p.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	errs := validatePodUpdate(p, old)
	// The newest upstream list (validation.go updatablePodSpecFields) has
	// no scheduling gates entry.
	const fields = "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`," +
		"`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)\n"
	if len(errs) != 1 || !strings.HasPrefix(errs[0].Detail, fields) {
		t.Fatalf("errors %v", errs)
	}
}

func TestPodActiveDeadlineMayOnlyDecrease(t *testing.T) {
	old := newPod("p")
	old.Spec.ActiveDeadlineSeconds = ptr(int64(100))
	old = defaultedPod(t, old)
	for _, tc := range []struct {
		v    *int64
		want []string
	}{
		{ptr(int64(50)), nil},
		{ptr(int64(200)), []string{invalid + " spec.activeDeadlineSeconds"}},
		{nil, []string{invalid + " spec.activeDeadlineSeconds"}},
	} {
		p := old.DeepCopy()
		p.Spec.ActiveDeadlineSeconds = tc.v
		wantErrors(t, validatePodUpdate(p, old), tc.want...)
	}
}

func TestPodGenerationBumpsOnSpecChangeOnly(t *testing.T) {
	r := find(t, coreV1, "pods")
	ctx := context.Background()
	old := defaultedPod(t, newPod("p"))
	p := old.DeepCopy()
	p.Labels = map[string]string{"x": "y"}
	p.Generation = 42 // clients cannot set it
	r.Strategy.PrepareForUpdate(ctx, p, old)
	if p.Generation != 1 {
		t.Errorf("metadata-only update: generation %d, want 1", p.Generation)
	}
	p2 := p.DeepCopy()
	p2.Spec.Containers[0].Image = "nginx:2"
	r.Strategy.PrepareForUpdate(ctx, p2, p)
	if p2.Generation != 2 {
		t.Errorf("spec update: generation %d, want 2", p2.Generation)
	}
}

func TestPodMainEndpointCarriesStatusAndStatusEndpointCarriesSpec(t *testing.T) {
	r := find(t, coreV1, "pods")
	ctx := context.Background()
	old := defaultedPod(t, newPod("p"))
	old.Status.Phase = corev1.PodRunning
	old.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "u1"}}

	p := old.DeepCopy()
	p.Status.Phase = corev1.PodFailed
	r.Strategy.PrepareForUpdate(ctx, p, old)
	if p.Status.Phase != corev1.PodRunning {
		t.Errorf("main endpoint changed status to %s", p.Status.Phase)
	}

	s := old.DeepCopy()
	s.Spec.NodeName = "sneaky"
	s.OwnerReferences = nil
	s.Status.Phase = corev1.PodSucceeded
	s.Status.QOSClass = ""
	s.Status.PodIPs = []corev1.PodIP{{IP: "10.1.2.3"}}
	r.Status.PrepareForUpdate(ctx, s, old)
	if s.Spec.NodeName != "" || len(s.OwnerReferences) != 1 {
		t.Errorf("status endpoint changed spec or owners: %q %v", s.Spec.NodeName, s.OwnerReferences)
	}
	if s.Status.Phase != corev1.PodSucceeded || s.Status.QOSClass != old.Status.QOSClass || s.Status.PodIP != "10.1.2.3" {
		t.Errorf("status endpoint status: %+v", s.Status)
	}
	if errs := r.Status.ValidateUpdate(ctx, s, old); len(errs) != 0 {
		t.Errorf("valid status update rejected: %v", errs)
	}
}

func TestPodStatusValidation(t *testing.T) {
	r := find(t, coreV1, "pods")
	ctx := context.Background()
	old := defaultedPod(t, newPod("p"))
	old.Spec.RestartPolicy = corev1.RestartPolicyNever
	old.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox"}, {Name: "sidecar", Image: "busybox", RestartPolicy: ptr(corev1.ContainerRestartPolicyAlways)}}
	old.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}}}
	terminated := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}
	old.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "init", State: terminated}, {Name: "sidecar", State: terminated}}
	old.Status.EphemeralContainerStatuses = []corev1.ContainerStatus{{Name: "debug", State: terminated}}
	cases := []struct {
		name   string
		mutate func(*corev1.Pod)
		want   []string
	}{
		// Upstream's ValidatePodStatusUpdate checks neither the phase nor
		// a condition's status against the known values.
		{"unknown phase", func(p *corev1.Pod) { p.Status.Phase = "Sleeping" }, nil},
		{"unknown condition status", func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: "Maybe"}}
		}, nil},
		{"invalid new nominated node", func(p *corev1.Pod) { p.Status.NominatedNodeName = "Node_1" }, []string{invalid + " status.nominatedNodeName"}},
		{"bad custom condition type", func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: "not valid!", Status: corev1.ConditionTrue}}
		}, []string{invalid + " status.conditions[0].Type"}}, // upstream's validatePodConditions path
		{"negative observed generations", func(p *corev1.Pod) {
			p.Status.ObservedGeneration = -1
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, ObservedGeneration: -2}}
		}, []string{invalid + " status.observedGeneration", invalid + " status.conditions[0].observedGeneration"}},
		{"changed QoS class", func(p *corev1.Pod) { p.Status.QOSClass = corev1.PodQOSGuaranteed }, []string{invalid + " status.qosClass"}},
		{"init container restart after termination", func(p *corev1.Pod) {
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "init", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		}, []string{forbidden + " status.initContainerStatuses[0].state"}},
		{"sidecar restart after termination", func(p *corev1.Pod) {
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "sidecar", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		}, nil},
		{"ephemeral container restart after termination", func(p *corev1.Pod) {
			p.Status.EphemeralContainerStatuses = []corev1.ContainerStatus{{Name: "debug", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		}, []string{forbidden + " status.ephemeralContainerStatuses[0].state"}},
		{"bad pod IP", func(p *corev1.Pod) { p.Status.PodIPs = []corev1.PodIP{{IP: "10.0.0.300"}} }, []string{invalid + " status.podIPs[0]"}}, // upstream's path
		{"restart after termination with Never", func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		}, []string{forbidden + " status.containerStatuses[0].state"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := old.DeepCopy()
			tc.mutate(p)
			r.Status.PrepareForUpdate(ctx, p, old)
			wantErrors(t, r.Status.ValidateUpdate(ctx, p, old), tc.want...)
		})
	}
	// A bound pod may keep its nominatedNodeName or clear it, never get a
	// new one (ClearingNominatedNodeNameAfterBinding, on since 1.35).
	bound := old.DeepCopy()
	bound.Spec.NodeName = "node-1"
	bound.Status.NominatedNodeName = "node-2"
	for _, tc := range []struct {
		nominated string
		want      []string
	}{{"node-2", nil}, {"", nil}, {"node-3", []string{forbidden + " status.nominatedNodeName"}}} {
		p := bound.DeepCopy()
		p.Status.NominatedNodeName = tc.nominated
		r.Status.PrepareForUpdate(ctx, p, bound)
		errs := r.Status.ValidateUpdate(ctx, p, bound)
		wantErrors(t, errs, tc.want...)
		if tc.want != nil {
			wantError(t, errs, "status.nominatedNodeName: Forbidden: may not be set on pods that are already bound to a node")
		}
	}
	// A stored invalid nominatedNodeName may stay: upstream checks it only
	// when the write changes it.
	stored := old.DeepCopy()
	stored.Status.NominatedNodeName = "Node_1"
	p := stored.DeepCopy()
	p.Status.Message = "still nominated"
	r.Status.PrepareForUpdate(ctx, p, stored)
	wantErrors(t, r.Status.ValidateUpdate(ctx, p, stored))
}

func TestPodGracePeriod(t *testing.T) {
	d := podGracefulDeleter{}
	scheduled := func(mut func(*corev1.Pod)) *corev1.Pod {
		p := newPod("p")
		defaultPod(p)
		p.Spec.NodeName = "node-1"
		p.Status.Phase = corev1.PodRunning
		if mut != nil {
			mut(p)
		}
		return p
	}
	opts := func(g *int64) *metav1.DeleteOptions { return &metav1.DeleteOptions{GracePeriodSeconds: g} }
	cases := []struct {
		name    string
		pod     *corev1.Pod
		options *metav1.DeleteOptions
		want    int64
	}{
		{"spec default", scheduled(nil), opts(nil), 30},
		{"nil options", scheduled(nil), nil, 30},
		{"requested", scheduled(nil), opts(ptr(int64(5))), 5},
		{"requested zero", scheduled(nil), opts(ptr(int64(0))), 0},
		{"negative becomes 1", scheduled(nil), opts(ptr(int64(-3))), 1},
		{"never scheduled", scheduled(func(p *corev1.Pod) { p.Spec.NodeName = "" }), opts(ptr(int64(20))), 0},
		{"succeeded", scheduled(func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }), opts(nil), 0},
		{"failed", scheduled(func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }), opts(nil), 0},
		{"shorter replaces pending", scheduled(func(p *corev1.Pod) {
			p.DeletionTimestamp = &metav1.Time{Time: testNow}
			p.DeletionGracePeriodSeconds = ptr(int64(30))
		}), opts(ptr(int64(10))), 10},
		{"longer keeps pending", scheduled(func(p *corev1.Pod) {
			p.DeletionTimestamp = &metav1.Time{Time: testNow}
			p.DeletionGracePeriodSeconds = ptr(int64(30))
		}), opts(ptr(int64(60))), 30},
		{"unspecified keeps pending", scheduled(func(p *corev1.Pod) {
			p.DeletionTimestamp = &metav1.Time{Time: testNow}
			p.DeletionGracePeriodSeconds = ptr(int64(30))
		}), opts(nil), 30},
		{"pending zero deletes now", scheduled(func(p *corev1.Pod) {
			p.DeletionTimestamp = &metav1.Time{Time: testNow}
			p.DeletionGracePeriodSeconds = ptr(int64(0))
		}), opts(ptr(int64(10))), 0},
	}
	for _, tc := range cases {
		if got := d.GracePeriod(tc.pod, tc.options); got != tc.want {
			t.Errorf("%s: GracePeriod = %d; want %d", tc.name, got, tc.want)
		}
	}
}

func TestPodFieldAttrs(t *testing.T) {
	r := find(t, coreV1, "pods")
	p := defaultedPod(t, newPod("p"))
	p.Spec.NodeName = "node-1"
	p.Spec.ServiceAccountName = "sa"
	p.Spec.HostNetwork = true
	p.Status.PodIPs = []corev1.PodIP{{IP: "10.0.0.5"}, {IP: "fd00::5"}}
	p.Status.NominatedNodeName = "node-2"
	p.Labels = map[string]string{"app": "web"}
	l, f, err := r.Strategy.GetAttrs(p)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"metadata.name": "p", "metadata.namespace": "default",
		"spec.nodeName": "node-1", "spec.restartPolicy": "Always", "spec.schedulerName": "default-scheduler",
		"spec.serviceAccountName": "sa", "spec.hostNetwork": "true", "status.phase": "Pending",
		"status.podIP": "10.0.0.5", "status.nominatedNodeName": "node-2",
	}
	if len(f) != len(want) {
		t.Errorf("fields %v", f)
	}
	for k, v := range want {
		if f[k] != v {
			t.Errorf("field %s = %q, want %q", k, f[k], v)
		}
	}
	if l["app"] != "web" {
		t.Errorf("labels %v", l)
	}
}

func TestPodTableStatus(t *testing.T) {
	created := metav1.NewTime(testNow.Add(-5 * time.Minute))
	base := func(mut func(*corev1.Pod)) *corev1.Pod {
		p := newPod("web")
		p.CreationTimestamp = created
		p.Status.Phase = corev1.PodPending
		mut(p)
		return p
	}
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	cases := []struct {
		name                      string
		pod                       *corev1.Pod
		ready, status, restarts   string
		ip, node, nominated, gate string
	}{
		{"pending", base(func(*corev1.Pod) {}), "0/1", "Pending", "0", "<none>", "<none>", "<none>", "<none>"},
		{"running", base(func(p *corev1.Pod) {
			p.Spec.NodeName = "n1"
			p.Status.Phase = corev1.PodRunning
			p.Status.PodIPs = []corev1.PodIP{{IP: "10.0.0.9"}}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Ready: true, State: running}}
		}), "1/1", "Running", "0", "10.0.0.9", "n1", "<none>", "<none>"},
		{"crash loop with restarts", base(func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodRunning
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", RestartCount: 4,
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					ExitCode: 1, FinishedAt: metav1.NewTime(testNow.Add(-90 * time.Second))}}}}
		}), "0/1", "CrashLoopBackOff", "4 (90s ago)", "<none>", "<none>", "<none>", "<none>"},
		{"init waiting", base(func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "i1"}, {Name: "i2"}}
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{
				{Name: "i1", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}},
				{Name: "i2", State: running},
			}
		}), "0/1", "Init:1/2", "0", "<none>", "<none>", "<none>", "<none>"},
		{"init failed", base(func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "i1"}}
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{
				{Name: "i1", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2}}},
			}
		}), "0/1", "Init:ExitCode:2", "0", "<none>", "<none>", "<none>", "<none>"},
		{"image pull in init", base(func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "i1"}}
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{
				{Name: "i1", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull"}}},
			}
		}), "0/1", "Init:ErrImagePull", "0", "<none>", "<none>", "<none>", "<none>"},
		{"completed", base(func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodSucceeded
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app",
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed"}}}}
		}), "0/1", "Completed", "0", "<none>", "<none>", "<none>", "<none>"},
		{"killed by signal", base(func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodFailed
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app",
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Signal: 9, ExitCode: 137}}}}
		}), "0/1", "Signal:9", "0", "<none>", "<none>", "<none>", "<none>"},
		{"terminating", base(func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodRunning
			p.DeletionTimestamp = &metav1.Time{Time: testNow}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Ready: true, State: running}}
		}), "1/1", "Terminating", "0", "<none>", "<none>", "<none>", "<none>"},
		{"node lost", base(func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodRunning
			p.Status.Reason = "NodeLost"
			p.DeletionTimestamp = &metav1.Time{Time: testNow}
		}), "0/1", "Unknown", "0", "<none>", "<none>", "<none>", "<none>"},
		{"evicted", base(func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodFailed
			p.Status.Reason = "Evicted"
		}), "0/1", "Evicted", "0", "<none>", "<none>", "<none>", "<none>"},
		{"scheduling gated with readiness gate", base(func(p *corev1.Pod) {
			p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/lb"}, {ConditionType: "example.com/dns"}}
			p.Status.NominatedNodeName = "n2"
			p.Status.Conditions = []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "SchedulingGated"},
				{Type: "example.com/lb", Status: corev1.ConditionTrue},
			}
		}), "0/1", "SchedulingGated", "0", "<none>", "<none>", "n2", "1/2"},
		{"sidecar counts as container", base(func(p *corev1.Pod) {
			always := corev1.ContainerRestartPolicyAlways
			p.Spec.InitContainers = []corev1.Container{{Name: "proxy", RestartPolicy: &always}}
			p.Status.Phase = corev1.PodRunning
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodInitialized, Status: corev1.ConditionTrue}}
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "proxy", Ready: true, Started: ptr(true), State: running}}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Ready: true, State: running}}
		}), "2/2", "Running", "0", "<none>", "<none>", "<none>", "<none>"},
	}
	r := find(t, coreV1, "pods")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			table, err := r.Strategy.ConvertToTable(context.Background(), tc.pod, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := table.Rows[0].Cells
			want := []any{"web", tc.ready, tc.status, tc.restarts, "5m", tc.ip, tc.node, tc.nominated, tc.gate}
			if !apiequality.Semantic.DeepEqual(got, want) {
				t.Errorf("cells\n got  %q\n want %q", got, want)
			}
		})
	}
}

func TestPodTableColumnsAndList(t *testing.T) {
	r := find(t, coreV1, "pods")
	list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "77", Continue: "tok", RemainingItemCount: ptr(int64(3))}}
	p := newPod("a")
	p.Status.Phase = corev1.PodSucceeded
	list.Items = []corev1.Pod{*p, *newPod("b")}
	table, err := r.Strategy.ConvertToTable(context.Background(), list, &metav1.TableOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names, wide []string
	for _, c := range table.ColumnDefinitions {
		names = append(names, c.Name)
		if c.Priority == 1 {
			wide = append(wide, c.Name)
		}
	}
	if strings.Join(names, ",") != "Name,Ready,Status,Restarts,Age,IP,Node,Nominated Node,Readiness Gates" ||
		strings.Join(wide, ",") != "IP,Node,Nominated Node,Readiness Gates" {
		t.Errorf("columns %v (wide %v)", names, wide)
	}
	if table.ColumnDefinitions[0].Format != "name" {
		t.Errorf("NAME column format %q", table.ColumnDefinitions[0].Format)
	}
	if table.ResourceVersion != "77" || table.Continue != "tok" || *table.RemainingItemCount != 3 {
		t.Errorf("list meta not copied: %+v", table.ListMeta)
	}
	if len(table.Rows) != 2 || table.Rows[0].Object.Object.(*corev1.Pod).Name != "a" {
		t.Fatalf("rows %+v", table.Rows)
	}
	if c := table.Rows[0].Conditions; len(c) != 1 || c[0].Type != metav1.RowCompleted || c[0].Reason != "Succeeded" {
		t.Errorf("succeeded pod row conditions %+v", c)
	}
	if table.Rows[1].Conditions != nil {
		t.Errorf("pending pod row conditions %+v", table.Rows[1].Conditions)
	}
}

func TestContainerMayNotLeaveTerminated(t *testing.T) {
	terminated := func(code int32) []corev1.ContainerStatus {
		return []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}}}
	}
	running := []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	path := field.NewPath("status", "containerStatuses")
	cases := []struct {
		policy corev1.RestartPolicy
		old    []corev1.ContainerStatus
		want   []string
	}{
		{corev1.RestartPolicyAlways, terminated(0), nil},
		{corev1.RestartPolicyOnFailure, terminated(1), nil},
		{corev1.RestartPolicyOnFailure, terminated(0), []string{forbidden + " status.containerStatuses[0].state"}},
		{corev1.RestartPolicyNever, terminated(1), []string{forbidden + " status.containerStatuses[0].state"}},
		{corev1.RestartPolicyNever, running, nil},
	}
	for _, tc := range cases {
		wantErrors(t, validateNoRestartAfterTermination(running, tc.old, path, tc.policy, nil), tc.want...)
	}
}
