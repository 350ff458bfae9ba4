package registry

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// debugContainer is the ephemeral container `kubectl debug --image=busybox`
// adds (before defaulting).
func debugContainer(name string) corev1.EphemeralContainer {
	return corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: name, Image: "busybox", Stdin: true, TTY: true,
	}}
}

// ephemeralUpdate runs a write through pods/ephemeralcontainers as the API
// server does: default, prepare, validate.
func ephemeralUpdate(t *testing.T, p, old *corev1.Pod) field.ErrorList {
	t.Helper()
	r := find(t, coreV1, "pods")
	ctx := context.Background()
	r.Strategy.Default(p)
	r.EphemeralContainers.PrepareForUpdate(ctx, p, old)
	return r.EphemeralContainers.ValidateUpdate(ctx, p, old)
}

func TestEphemeralContainersValidation(t *testing.T) {
	withEC := func(mutate func(ec *corev1.EphemeralContainer)) func(p *corev1.Pod) {
		return func(p *corev1.Pod) {
			ec := debugContainer("debugger")
			mutate(&ec)
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, ec)
		}
	}
	ec0 := "spec.ephemeralContainers[0]"
	cases := []struct {
		name   string
		mutate func(p *corev1.Pod)
		want   []string
	}{
		{"add one", withEC(func(*corev1.EphemeralContainer) {}), nil},
		{"add one targeting the app container", withEC(func(ec *corev1.EphemeralContainer) { ec.TargetContainerName = "app" }), nil},
		{"allowed fields", withEC(func(ec *corev1.EphemeralContainer) {
			ec.Command = []string{"sh"}
			ec.Env = []corev1.EnvVar{{Name: "A", Value: "b"}}
			ec.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
			ec.SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_PTRACE"}}}
		}), nil},
		{"no image", withEC(func(ec *corev1.EphemeralContainer) { ec.Image = "" }), []string{required + " " + ec0 + ".image"}},
		{"no name", withEC(func(ec *corev1.EphemeralContainer) { ec.Name = "" }), []string{required + " " + ec0 + ".name"}},
		{"bad name", withEC(func(ec *corev1.EphemeralContainer) { ec.Name = "Debug_1" }), []string{invalid + " " + ec0 + ".name"}},
		{"name of the app container", withEC(func(ec *corev1.EphemeralContainer) { ec.Name = "app" }), []string{duplicate + " " + ec0 + ".name"}},
		{"name of an init container", withEC(func(ec *corev1.EphemeralContainer) { ec.Name = "init" }), []string{duplicate + " " + ec0 + ".name"}},
		{"two with one name", func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{debugContainer("d"), debugContainer("d")}
		}, []string{duplicate + " spec.ephemeralContainers[1].name"}},
		{"unknown target", withEC(func(ec *corev1.EphemeralContainer) { ec.TargetContainerName = "nope" }), []string{notFound + " " + ec0 + ".targetContainerName"}},
		{"ephemeral target", func(p *corev1.Pod) {
			second := debugContainer("second")
			second.TargetContainerName = "first"
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{debugContainer("first"), second}
		}, []string{notFound + " spec.ephemeralContainers[1].targetContainerName"}},
		{"ports", withEC(func(ec *corev1.EphemeralContainer) { ec.Ports = []corev1.ContainerPort{{ContainerPort: 80}} }), []string{forbidden + " " + ec0 + ".ports"}},
		{"resources", withEC(func(ec *corev1.EphemeralContainer) {
			ec.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
		}), []string{forbidden + " " + ec0 + ".resources"}},
		{"probes and lifecycle", withEC(func(ec *corev1.EphemeralContainer) {
			h := corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}
			ec.LivenessProbe = &corev1.Probe{ProbeHandler: h}
			ec.ReadinessProbe = &corev1.Probe{ProbeHandler: h}
			ec.StartupProbe = &corev1.Probe{ProbeHandler: h}
			ec.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
		}), []string{forbidden + " " + ec0 + ".livenessProbe", forbidden + " " + ec0 + ".readinessProbe",
			forbidden + " " + ec0 + ".startupProbe", forbidden + " " + ec0 + ".lifecycle"}},
		{"restart and resize policies", withEC(func(ec *corev1.EphemeralContainer) {
			ec.RestartPolicy = ptr(corev1.ContainerRestartPolicyAlways)
			ec.ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired}}
		}), []string{forbidden + " " + ec0 + ".restartPolicy", forbidden + " " + ec0 + ".resizePolicy"}},
		{"sub-path mounts", withEC(func(ec *corev1.EphemeralContainer) {
			ec.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/a", SubPath: "x"}, {Name: "data", MountPath: "/b", SubPathExpr: "$(X)"}}
		}), []string{forbidden + " " + ec0 + ".volumeMounts[0].subPath", forbidden + " " + ec0 + ".volumeMounts[1].subPathExpr"}},
		{"mount of no volume", withEC(func(ec *corev1.EphemeralContainer) {
			ec.VolumeMounts = []corev1.VolumeMount{{Name: "nope", MountPath: "/x"}}
		}), []string{notFound + " " + ec0 + ".volumeMounts[0].name"}},
		{"bad pull policy", withEC(func(ec *corev1.EphemeralContainer) { ec.ImagePullPolicy = "Sometimes" }), []string{notSupported + " " + ec0 + ".imagePullPolicy"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := newPod("p")
			old.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox"}}
			old.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			old = defaultedPod(t, old)
			p := old.DeepCopy()
			tc.mutate(p)
			wantErrors(t, ephemeralUpdate(t, p, old), tc.want...)
		})
	}
}

func TestEphemeralContainersMayOnlyBeAdded(t *testing.T) {
	r := find(t, coreV1, "pods")
	ctx := context.Background()
	old := defaultedPod(t, newPod("p"))
	first := old.DeepCopy()
	first.Spec.EphemeralContainers = []corev1.EphemeralContainer{debugContainer("one")}
	if got := ephemeralUpdate(t, first, old); len(got) != 0 {
		t.Fatalf("adding: %v", got)
	}

	// A second one may be appended, in any order (a patch need not keep it).
	second := first.DeepCopy()
	second.Spec.EphemeralContainers = []corev1.EphemeralContainer{debugContainer("two"), first.Spec.EphemeralContainers[0]}
	if got := ephemeralUpdate(t, second, first); len(got) != 0 {
		t.Errorf("appending: %v", got)
	}

	removed := first.DeepCopy()
	removed.Spec.EphemeralContainers = nil
	r.Strategy.Default(removed)
	r.EphemeralContainers.PrepareForUpdate(ctx, removed, first)
	errs := r.EphemeralContainers.ValidateUpdate(ctx, removed, first)
	if len(errs) != 1 || errs[0].Field != "spec.ephemeralContainers" || !strings.Contains(errs[0].Detail, `existing ephemeral containers "one" may not be removed`) {
		t.Errorf("removing: %v", errs)
	}

	changed := first.DeepCopy()
	changed.Spec.EphemeralContainers[0].Image = "busybox:2"
	r.Strategy.Default(changed)
	r.EphemeralContainers.PrepareForUpdate(ctx, changed, first)
	errs = r.EphemeralContainers.ValidateUpdate(ctx, changed, first)
	if len(errs) != 1 || errs[0].Field != "spec.ephemeralContainers" || !strings.Contains(errs[0].Detail, `existing ephemeral containers "one" may not be changed`) {
		t.Errorf("changing: %v", errs)
	}
}

func TestEphemeralContainersEndpointTakesOnlyEphemeralContainers(t *testing.T) {
	r := find(t, coreV1, "pods")
	ctx := context.Background()
	old := newPod("p")
	old.Labels = map[string]string{"app": "web"}
	old = defaultedPod(t, old)
	old.Spec.NodeName = "node-1"
	old.Status.Phase = corev1.PodRunning

	p := old.DeepCopy()
	p.Spec.EphemeralContainers = []corev1.EphemeralContainer{debugContainer("debugger")}
	p.Spec.Containers[0].Image = "evil:1"
	p.Spec.NodeName = "elsewhere"
	p.Labels = map[string]string{"app": "changed"}
	p.Annotations = map[string]string{"new": "x"}
	p.Status.Phase = corev1.PodFailed
	r.Strategy.Default(p)
	r.EphemeralContainers.PrepareForUpdate(ctx, p, old)
	if p.Spec.Containers[0].Image != "nginx:1.27" || p.Spec.NodeName != "node-1" {
		t.Errorf("spec other than ephemeral containers taken: %q %q", p.Spec.Containers[0].Image, p.Spec.NodeName)
	}
	if p.Labels["app"] != "web" || p.Annotations != nil {
		t.Errorf("metadata taken: %v %v", p.Labels, p.Annotations)
	}
	if p.Status.Phase != corev1.PodRunning {
		t.Errorf("status taken: %s", p.Status.Phase)
	}
	if len(p.Spec.EphemeralContainers) != 1 {
		t.Fatalf("ephemeral containers not taken: %v", p.Spec.EphemeralContainers)
	}
	// Defaulted as containers are.
	ec := p.Spec.EphemeralContainers[0]
	if ec.TerminationMessagePath != corev1.TerminationMessagePathDefault || ec.TerminationMessagePolicy != corev1.TerminationMessageReadFile ||
		ec.ImagePullPolicy != corev1.PullAlways {
		t.Errorf("defaults: %q %q %q", ec.TerminationMessagePath, ec.TerminationMessagePolicy, ec.ImagePullPolicy)
	}
	// Adding one is a spec change: the generation moves.
	if p.Generation != old.Generation+1 {
		t.Errorf("generation %d, want %d", p.Generation, old.Generation+1)
	}
	// Writing the same list again is not.
	again := p.DeepCopy()
	r.EphemeralContainers.PrepareForUpdate(ctx, again, p)
	if again.Generation != p.Generation {
		t.Errorf("unchanged write moved generation %d → %d", p.Generation, again.Generation)
	}
}

func TestEphemeralContainersNotOnCreateNorThroughTheMainEndpoint(t *testing.T) {
	r := find(t, coreV1, "pods")
	ctx := context.Background()
	p := newPod("p")
	p.Spec.EphemeralContainers = []corev1.EphemeralContainer{debugContainer("debugger")}
	r.Strategy.Default(p)
	r.Strategy.PrepareForCreate(ctx, p)
	wantErrors(t, r.Strategy.Validate(ctx, p), forbidden+" spec.ephemeralContainers")

	old := defaultedPod(t, newPod("q"))
	u := old.DeepCopy()
	u.Spec.EphemeralContainers = []corev1.EphemeralContainer{debugContainer("debugger")}
	r.Strategy.Default(u)
	r.Strategy.PrepareForUpdate(ctx, u, old)
	wantErrors(t, r.Strategy.ValidateUpdate(ctx, u, old), forbidden+" spec")
}

func TestEphemeralContainersNotForStaticPods(t *testing.T) {
	old := newPod("p")
	old.Spec.NodeName = "node-1"
	old.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"}
	old = defaultedPod(t, old)
	p := old.DeepCopy()
	p.Spec.EphemeralContainers = []corev1.EphemeralContainer{debugContainer("debugger")}
	errs := ephemeralUpdate(t, p, old)
	if len(errs) != 1 || errs[0].Type != field.ErrorTypeForbidden || errs[0].Detail != "static pods do not support ephemeral containers" {
		t.Errorf("errors %v", errs)
	}
}

// BenchmarkValidateEphemeralContainers: the checks of a pod's ephemeral
// containers (three: kubectl debug's, one with the other allowed fields,
// one with forbidden fields), as each pods/ephemeralcontainers write runs
// them.
func BenchmarkValidateEphemeralContainers(b *testing.B) {
	withFields := debugContainer("tools")
	withFields.Command, withFields.Args = []string{"sh", "-c"}, []string{"sleep 1"}
	withFields.Env = []corev1.EnvVar{{Name: "A", Value: "b"}}
	withFields.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	withFields.TargetContainerName = "app"
	forbiddenFields := debugContainer("ports")
	forbiddenFields.Ports = []corev1.ContainerPort{{ContainerPort: 80}}
	forbiddenFields.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	spec := &corev1.PodSpec{EphemeralContainers: []corev1.EphemeralContainer{debugContainer("debugger"), withFields, forbiddenFields}}
	for i := range spec.EphemeralContainers {
		// As defaulting leaves them.
		ec := &spec.EphemeralContainers[i]
		ec.ImagePullPolicy, ec.TerminationMessagePolicy = corev1.PullIfNotPresent, corev1.TerminationMessageReadFile
	}
	volumes := map[string]corev1.VolumeSource{"data": {EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	path := field.NewPath("spec", "ephemeralContainers")
	b.ReportAllocs()
	for b.Loop() {
		names := sets.New("app", "init")
		if errs := validateEphemeralContainers(spec, volumes, names, path, podValidationOptions{}); len(errs) != 2 {
			b.Fatalf("%d errors, want the two forbidden fields: %v", len(errs), errs)
		}
	}
}
