package registry

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// resizeUpdate runs a write through pods/resize as the API server does:
// default, prepare, validate.
func resizeUpdate(t *testing.T, p, old *corev1.Pod) field.ErrorList {
	t.Helper()
	r := find(t, coreV1, "pods")
	if r.Resize == nil {
		t.Fatal("pods serve no resize subresource")
	}
	ctx := context.Background()
	r.Strategy.Default(p)
	r.Resize.PrepareForUpdate(ctx, p, old)
	return r.Resize.ValidateUpdate(ctx, p, old)
}

func rl(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

// resizablePod is a Burstable pod with an app container, a sidecar and an
// init container, running on a node that reports container resources.
func resizablePod(t *testing.T) *corev1.Pod {
	t.Helper()
	always := corev1.ContainerRestartPolicyAlways
	p := newPod("p", corev1.Container{Name: "app", Image: "nginx", Resources: corev1.ResourceRequirements{
		Requests: rl("cpu", "100m", "memory", "64Mi"), Limits: rl("cpu", "500m", "memory", "128Mi"),
	}})
	p.Spec.InitContainers = []corev1.Container{
		{Name: "init", Image: "busybox", Resources: corev1.ResourceRequirements{Requests: rl("cpu", "50m")}},
		{Name: "sidecar", Image: "busybox", RestartPolicy: &always, Resources: corev1.ResourceRequirements{Requests: rl("cpu", "50m", "memory", "32Mi")}},
	}
	p = defaultedPod(t, p)
	p.Generation = 1
	p.Spec.NodeName = "node-1"
	p.Status.Phase = corev1.PodRunning
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{
		Name: "app", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
		Resources: p.Spec.Containers[0].Resources.DeepCopy(),
	}}
	return p
}

func TestPodResizeValidationAsUpstream(t *testing.T) {
	app := func(f func(r *corev1.ResourceRequirements)) func(p *corev1.Pod) {
		return func(p *corev1.Pod) { f(&p.Spec.Containers[0].Resources) }
	}
	const spec = "spec"
	cases := []struct {
		name    string
		mutate  func(p *corev1.Pod)
		want    []string
		message string // of the first error, when set
	}{
		{"cpu request up", app(func(r *corev1.ResourceRequirements) { r.Requests["cpu"] = resource.MustParse("200m") }), nil, ""},
		{"memory limit down", app(func(r *corev1.ResourceRequirements) { r.Limits["memory"] = resource.MustParse("100Mi") }), nil, ""},
		{"sidecar memory up", func(p *corev1.Pod) {
			p.Spec.InitContainers[1].Resources.Requests["memory"] = resource.MustParse("64Mi")
		}, nil, ""},
		{"sidecar memory limit added", func(p *corev1.Pod) { p.Spec.InitContainers[1].Resources.Limits = rl("memory", "64Mi") }, nil, ""},
		// (a memory request removed where there is a limit is defaulted to it)
		{"requests removed", func(p *corev1.Pod) { delete(p.Spec.InitContainers[1].Resources.Requests, "memory") },
			[]string{forbidden + " spec.initContainers[1].resources.requests"}, "resource requests cannot be removed"},
		{"limits removed", app(func(r *corev1.ResourceRequirements) { r.Limits = nil }),
			[]string{forbidden + " spec.containers[0].resources.limits"}, "resource limits cannot be removed"},
		{"ephemeral storage added", app(func(r *corev1.ResourceRequirements) { r.Requests["ephemeral-storage"] = resource.MustParse("1Gi") }),
			[]string{forbidden + " " + spec}, resizeOnlyCPUMemory},
		{"non-sidecar init resized", func(p *corev1.Pod) { p.Spec.InitContainers[0].Resources.Requests["cpu"] = resource.MustParse("60m") },
			[]string{forbidden + " " + spec}, resizeNonSidecarInit},
		{"sidecar hugepages added", func(p *corev1.Pod) { p.Spec.InitContainers[1].Resources.Limits = rl("hugepages-2Mi", "2Mi") },
			// upstream also refuses hugepages without cpu or memory
			[]string{forbidden + " " + spec, required + " spec.initContainers[1].resources"}, ""},
		// InPlacePodLevelResourcesVerticalScaling (beta, on since 1.36):
		// pod-level cpu and memory may be added to a pod without them.
		{"pod-level resources added", func(p *corev1.Pod) { p.Spec.Resources = &corev1.ResourceRequirements{Requests: rl("cpu", "1")} }, nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := resizablePod(t)
			p := old.DeepCopy()
			tc.mutate(p)
			errs := resizeUpdate(t, p, old)
			if tc.name == "sidecar hugepages added" {
				// the hugepages check's own error is not ours to pin; the
				// resize one must be there.
				found := false
				for _, e := range errs {
					found = found || e.Type == field.ErrorTypeForbidden && e.Field == spec && e.Detail == resizeOnlySidecarCPUMem
				}
				if !found {
					t.Errorf("errors %v, want %q", errs, resizeOnlySidecarCPUMem)
				}
				return
			}
			wantErrors(t, errs, tc.want...)
			if tc.message != "" && len(errs) > 0 && errs[0].Detail != tc.message {
				t.Errorf("message %q, want %q", errs[0].Detail, tc.message)
			}
		})
	}
}

func TestPodResizeRefusedPods(t *testing.T) {
	cases := []struct {
		name   string
		stored func(p *corev1.Pod)
		detail string
		field  string
	}{
		{"mirror", func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"} }, "static pods cannot be resized", "[]"},
		{"windows", func(p *corev1.Pod) { p.Spec.OS = &corev1.PodOS{Name: corev1.Windows} }, "windows pods cannot be resized", "[]"},
		{"node without resize", func(p *corev1.Pod) { p.Status.ContainerStatuses[0].Resources = nil }, resizeNodeWithoutSupport, "spec"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := resizablePod(t)
			tc.stored(old)
			p := old.DeepCopy()
			p.Spec.Containers[0].Resources.Requests["cpu"] = resource.MustParse("200m")
			errs := resizeUpdate(t, p, old)
			if len(errs) != 1 || errs[0].Type != field.ErrorTypeForbidden || errs[0].Field != tc.field || errs[0].Detail != tc.detail {
				t.Errorf("errors %v, want one Forbidden %s %q", errs, tc.field, tc.detail)
			}
		})
	}
}

// TestPodResizeKeepsQOSClass: a Guaranteed pod whose cpu request goes
// below its limit would be Burstable.
func TestPodResizeKeepsQOSClass(t *testing.T) {
	old := defaultedPod(t, newPod("p", corev1.Container{Name: "app", Image: "nginx", Resources: corev1.ResourceRequirements{
		Limits: rl("cpu", "500m", "memory", "128Mi"),
	}}))
	if old.Status.QOSClass != corev1.PodQOSGuaranteed {
		t.Fatalf("QoS %s", old.Status.QOSClass)
	}
	p := old.DeepCopy()
	p.Spec.Containers[0].Resources.Requests["cpu"] = resource.MustParse("100m")
	errs := resizeUpdate(t, p, old)
	wantErrors(t, errs, invalid+" spec")
	if len(errs) == 1 && errs[0].Detail != resizeQOSMayNotChange {
		t.Errorf("message %q", errs[0].Detail)
	}
	up := old.DeepCopy()
	up.Spec.Containers[0].Resources.Requests["cpu"] = resource.MustParse("1")
	up.Spec.Containers[0].Resources.Limits["cpu"] = resource.MustParse("1")
	wantErrors(t, resizeUpdate(t, up, old))
}

// TestPodResizeTakesResourcesOnly: the subresource takes the containers'
// resources and resize policies; everything else of the body is the
// stored pod's, and the generation goes up only with a change.
func TestPodResizeTakesResourcesOnly(t *testing.T) {
	old := resizablePod(t)
	p := old.DeepCopy()
	p.Labels = map[string]string{"changed": "yes"}
	p.Spec.Containers[0].Image = "nginx:2"
	p.Spec.ActiveDeadlineSeconds = ptr(int64(5))
	p.Status.Phase = corev1.PodFailed
	p.Spec.Containers[0].Resources.Requests["cpu"] = resource.MustParse("200m")
	if errs := resizeUpdate(t, p, old); len(errs) != 0 {
		t.Fatalf("resize: %v", errs)
	}
	if p.Labels["changed"] != "" || p.Spec.Containers[0].Image != "nginx" || p.Spec.ActiveDeadlineSeconds != nil || p.Status.Phase != corev1.PodRunning {
		t.Errorf("took more than resources: labels %v image %s ads %v phase %s", p.Labels, p.Spec.Containers[0].Image, p.Spec.ActiveDeadlineSeconds, p.Status.Phase)
	}
	if q := p.Spec.Containers[0].Resources.Requests["cpu"]; q.String() != "200m" {
		t.Errorf("cpu request %s, want 200m", q.String())
	}
	if p.Generation != old.Generation+1 {
		t.Errorf("generation %d, want %d", p.Generation, old.Generation+1)
	}
	if q := old.Spec.Containers[0].Resources.Requests["cpu"]; q.String() != "100m" {
		t.Errorf("stored pod changed: cpu %s", q.String())
	}

	same := old.DeepCopy()
	if errs := resizeUpdate(t, same, old); len(errs) != 0 {
		t.Fatalf("no-op resize: %v", errs)
	}
	if same.Generation != old.Generation {
		t.Errorf("no-op resize: generation %d, want %d", same.Generation, old.Generation)
	}

	renamed := old.DeepCopy()
	renamed.Spec.Containers[0].Name = "other"
	errs := resizeUpdate(t, renamed, old)
	if len(errs) != 1 || errs[0].Detail != resizeOnlyCPUMemory {
		t.Errorf("renamed container: %v", errs)
	}
	added := old.DeepCopy()
	added.Spec.Containers = append(added.Spec.Containers, corev1.Container{Name: "two", Image: "nginx"})
	errs = resizeUpdate(t, added, old)
	if len(errs) == 0 || errs[len(errs)-1].Detail != resizeOnlyCPUMemory {
		t.Errorf("added container: %v", errs)
	}
}

// TestPodStatusAcceptsResizeStatus: what the kubelet writes of a resize
// (allocatedResources, resources, the resize conditions) is a valid
// status write.
func TestPodStatusAcceptsResizeStatus(t *testing.T) {
	r := find(t, coreV1, "pods")
	ctx := context.Background()
	old := resizablePod(t)
	p := old.DeepCopy()
	cs := &p.Status.ContainerStatuses[0]
	cs.AllocatedResources = rl("cpu", "200m", "memory", "64Mi")
	cs.Resources = &corev1.ResourceRequirements{Requests: rl("cpu", "100m", "memory", "64Mi"), Limits: rl("cpu", "500m", "memory", "128Mi")}
	p.Status.Conditions = append(p.Status.Conditions,
		corev1.PodCondition{Type: corev1.PodResizeInProgress, Status: corev1.ConditionTrue, ObservedGeneration: 2},
		corev1.PodCondition{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: corev1.PodReasonDeferred, Message: "Node didn't have enough capacity", ObservedGeneration: 2})
	r.Strategy.Default(p)
	r.Status.PrepareForUpdate(ctx, p, old)
	if errs := r.Status.ValidateUpdate(ctx, p, old); len(errs) != 0 {
		t.Fatalf("resize status refused: %v", errs)
	}
}

// TestPodResizeAddsARequest: a Burstable container with only a memory
// request may be given a cpu request too (the pod stays Burstable). It
// was refused while pods had a defaulted resizePolicy, which such a
// resize changed (upstream dropped that defaulting in 1.33, PR 128920).
func TestPodResizeAddsARequest(t *testing.T) {
	old := defaultedPod(t, newPod("p", corev1.Container{Name: "app", Image: "nginx", Resources: corev1.ResourceRequirements{
		Requests: rl("memory", "64Mi")}}))
	old.Generation = 1
	old.Spec.NodeName = "node-1"
	old.Status.Phase = corev1.PodRunning
	old.Status.ContainerStatuses = []corev1.ContainerStatus{{
		Name: "app", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
		Resources: old.Spec.Containers[0].Resources.DeepCopy(),
	}}
	p := old.DeepCopy()
	p.Spec.Containers[0].Resources.Requests = rl("memory", "64Mi", "cpu", "200m")
	if errs := resizeUpdate(t, p, old); len(errs) != 0 {
		t.Fatalf("resize adding a cpu request: %v", errs)
	}
	if p.Spec.Containers[0].ResizePolicy != nil {
		t.Errorf("resize policy %v, want none (not defaulted)", p.Spec.Containers[0].ResizePolicy)
	}
}

// podLevelResizablePod is resizablePod with pod-level resources (Burstable).
func podLevelResizablePod(t *testing.T) *corev1.Pod {
	t.Helper()
	p := resizablePod(t)
	p.Spec.Resources = &corev1.ResourceRequirements{Requests: rl("cpu", "500m", "memory", "256Mi"), Limits: rl("cpu", "1", "memory", "512Mi")}
	return p
}

// TestPodLevelResizeValidationAsUpstream: pods/resize changes a pod's
// pod-level cpu and memory (InPlacePodLevelResourcesVerticalScaling, beta
// and on since 1.36) with upstream's ValidatePodResize rules for them:
// they may change and be added, not removed, nothing else of
// spec.resources changes, the QoS class stays and the pod-level values
// still bound the containers'.
func TestPodLevelResizeValidationAsUpstream(t *testing.T) {
	podLevel := func(f func(r *corev1.ResourceRequirements)) func(p *corev1.Pod) {
		return func(p *corev1.Pod) { f(p.Spec.Resources) }
	}
	cases := []struct {
		name    string
		mutate  func(p *corev1.Pod)
		want    []string
		message string // of the first error, when set
	}{
		{"cpu request up", podLevel(func(r *corev1.ResourceRequirements) { r.Requests["cpu"] = resource.MustParse("800m") }), nil, ""},
		{"memory limit down", podLevel(func(r *corev1.ResourceRequirements) { r.Limits["memory"] = resource.MustParse("300Mi") }), nil, ""},
		{"with a container resize", func(p *corev1.Pod) {
			p.Spec.Resources.Limits["cpu"] = resource.MustParse("2")
			p.Spec.Containers[0].Resources.Limits["cpu"] = resource.MustParse("2")
		}, nil, ""},
		{"pod-level resources removed", func(p *corev1.Pod) { p.Spec.Resources = nil },
			[]string{forbidden + " spec.resources"}, "pod-level resources cannot be removed"},
		{"pod-level request removed", podLevel(func(r *corev1.ResourceRequirements) { delete(r.Requests, "memory") }),
			[]string{forbidden + " spec.resources.requests"}, "pod-level resource requests cannot be removed"},
		{"pod-level limit removed", podLevel(func(r *corev1.ResourceRequirements) { r.Limits = nil }),
			[]string{forbidden + " spec.resources.limits"}, "pod-level resource limits cannot be removed"},
		{"pod-level hugepages added", podLevel(func(r *corev1.ResourceRequirements) {
			r.Limits["hugepages-2Mi"] = resource.MustParse("2Mi")
			r.Requests["hugepages-2Mi"] = resource.MustParse("2Mi")
		}), []string{forbidden + " spec"}, resizeOnlyCPUMemoryPodLevel},
		{"below the containers' requests", podLevel(func(r *corev1.ResourceRequirements) { r.Requests["cpu"] = resource.MustParse("100m") }),
			[]string{invalid + " spec.resources.requests[cpu]"}, "must be greater than or equal to aggregate container requests of 150m"},
		{"below a container's limit", podLevel(func(r *corev1.ResourceRequirements) {
			r.Requests["cpu"], r.Limits["cpu"] = resource.MustParse("300m"), resource.MustParse("400m")
		}),
			[]string{invalid + " spec.resources.containers[0][cpu].limits"}, "must be less than or equal to pod limits of 400m"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := podLevelResizablePod(t)
			p := old.DeepCopy()
			tc.mutate(p)
			errs := resizeUpdate(t, p, old)
			wantErrors(t, errs, tc.want...)
			if tc.message != "" && len(errs) > 0 && errs[0].Detail != tc.message {
				t.Errorf("message %q, want %q", errs[0].Detail, tc.message)
			}
			if len(tc.want) == 0 && p.Generation != old.Generation+1 {
				t.Errorf("generation %d, want %d", p.Generation, old.Generation+1)
			}
		})
	}
}

// TestPodLevelResizeTakesPodLevelResources: the subresource stores the
// body's pod-level resources (and nothing else of the spec but the
// containers' resources).
func TestPodLevelResizeTakesPodLevelResources(t *testing.T) {
	old := podLevelResizablePod(t)
	p := old.DeepCopy()
	p.Spec.Resources.Requests["cpu"] = resource.MustParse("750m")
	p.Spec.ActiveDeadlineSeconds = ptr(int64(5))
	if errs := resizeUpdate(t, p, old); len(errs) != 0 {
		t.Fatalf("resize: %v", errs)
	}
	if q := p.Spec.Resources.Requests["cpu"]; q.String() != "750m" {
		t.Errorf("pod-level cpu request %s, want 750m", q.String())
	}
	if p.Spec.ActiveDeadlineSeconds != nil || p.Generation != old.Generation+1 {
		t.Errorf("activeDeadlineSeconds %v generation %d", p.Spec.ActiveDeadlineSeconds, p.Generation)
	}
}

// TestPodLevelResizeKeepsQOSClass: a Guaranteed pod by its pod-level
// resources stays Guaranteed.
func TestPodLevelResizeKeepsQOSClass(t *testing.T) {
	old := defaultedPod(t, newPod("p", corev1.Container{Name: "app", Image: "nginx"}))
	old.Spec.Resources = &corev1.ResourceRequirements{Requests: rl("cpu", "1", "memory", "1Gi"), Limits: rl("cpu", "1", "memory", "1Gi")}
	old.Status.QOSClass = podQOSClass(old)
	if old.Status.QOSClass != corev1.PodQOSGuaranteed {
		t.Fatalf("QoS %s", old.Status.QOSClass)
	}
	p := old.DeepCopy()
	p.Spec.Resources.Requests["cpu"] = resource.MustParse("500m")
	wantErrors(t, resizeUpdate(t, p, old), invalid+" spec")
	up := old.DeepCopy()
	up.Spec.Resources.Requests["cpu"] = resource.MustParse("2")
	up.Spec.Resources.Limits["cpu"] = resource.MustParse("2")
	wantErrors(t, resizeUpdate(t, up, old))
}
