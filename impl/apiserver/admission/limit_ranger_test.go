package admission

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func limitRanger(items ...corev1.LimitRangeItem) *LimitRanger {
	lr := corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "lr", Namespace: "ns"}, Spec: corev1.LimitRangeSpec{Limits: items}}
	return &LimitRanger{List: func(_ context.Context, ns string) ([]corev1.LimitRange, error) {
		if ns != "ns" {
			return nil, nil
		}
		return []corev1.LimitRange{lr}, nil
	}}
}

func TestLimitRangerDefaults(t *testing.T) {
	p := limitRanger(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer,
		Default: rl("cpu", "500m", "memory", "256Mi"), DefaultRequest: rl("cpu", "100m", "memory", "128Mi")})
	pod := newPod("p", container("a", nil, nil), container("b", rl("cpu", "200m"), rl("memory", "1Gi")))
	if err := p.Admit(context.Background(), podCreate(pod)); err != nil {
		t.Fatal(err)
	}
	a, b := pod.Spec.Containers[0].Resources, pod.Spec.Containers[1].Resources
	if !apiequality.Semantic.DeepEqual(a.Limits, rl("cpu", "500m", "memory", "256Mi")) || !apiequality.Semantic.DeepEqual(a.Requests, rl("cpu", "100m", "memory", "128Mi")) {
		t.Fatalf("container a: %+v", a)
	}
	if !apiequality.Semantic.DeepEqual(b.Limits, rl("cpu", "500m", "memory", "1Gi")) || !apiequality.Semantic.DeepEqual(b.Requests, rl("cpu", "200m", "memory", "128Mi")) {
		t.Fatalf("container b: %+v", b)
	}
	want := "LimitRanger plugin set: cpu, memory request for container a; cpu, memory limit for container a; memory request for container b; cpu limit for container b"
	if got := pod.Annotations[limitRangerAnnotation]; got != want {
		t.Fatalf("annotation %q\nwant       %q", got, want)
	}
}

func TestLimitRangerConstraints(t *testing.T) {
	containerMinMax := corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Min: rl("cpu", "100m"), Max: rl("memory", "1Gi")}
	ratio := corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, MaxLimitRequestRatio: rl("cpu", "2")}
	podMax := corev1.LimitRangeItem{Type: corev1.LimitTypePod, Max: rl("cpu", "1")}
	tests := []struct {
		name string
		item corev1.LimitRangeItem
		pod  *corev1.Pod
		want string
	}{
		{"within min and max", containerMinMax, newPod("p", container("a", rl("cpu", "200m"), rl("memory", "512Mi"))), ""},
		{"no request for min", containerMinMax, newPod("p", container("a", nil, rl("memory", "512Mi"))), "minimum cpu usage per Container is 100m.  No request is specified"},
		{"below min", containerMinMax, newPod("p", container("a", rl("cpu", "50m"), rl("memory", "512Mi"))), "minimum cpu usage per Container is 100m, but request is 50m"},
		{"no limit for max", containerMinMax, newPod("p", container("a", rl("cpu", "200m"), nil)), "maximum memory usage per Container is 1Gi.  No limit is specified"},
		{"above max", containerMinMax, newPod("p", container("a", rl("cpu", "200m"), rl("memory", "2Gi"))), "maximum memory usage per Container is 1Gi, but limit is 2Gi"},
		{"ratio ok", ratio, newPod("p", container("a", rl("cpu", "1"), rl("cpu", "2"))), ""},
		{"ratio exceeded", ratio, newPod("p", container("a", rl("cpu", "100m"), rl("cpu", "500m"))), `pods "p" is forbidden: cpu max limit to request ratio per Container is 2, but provided ratio is 5.000000`},
		{"ratio without request", ratio, newPod("p", container("a", nil, rl("cpu", "500m"))), "cpu max limit to request ratio per Container is 2, but no request is specified or request is 0"},
		{"pod sum within", podMax, newPod("p", container("a", nil, rl("cpu", "500m")), container("b", nil, rl("cpu", "500m"))), ""},
		{"pod sum above", podMax, newPod("p", container("a", nil, rl("cpu", "600m")), container("b", nil, rl("cpu", "500m"))), "maximum cpu usage per Pod is 1, but limit is 1100m"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantForbidden(t, limitRanger(tt.item).Validate(context.Background(), podCreate(tt.pod)), tt.want)
		})
	}
}

// TestLimitRangerPodTotals: a Pod item is checked against the pod's
// requests and limits as kube-apiserver's LimitRanger adds them up:
// sidecars (restartable init containers) run beside the app containers and
// the init containers after them, pod-level resources replace the
// containers' sums, and the overhead is not counted.
func TestLimitRangerPodTotals(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	sidecar := func(c corev1.Container) corev1.Container { c.RestartPolicy = &always; return c }
	withInit := func(p *corev1.Pod, cs ...corev1.Container) *corev1.Pod { p.Spec.InitContainers = cs; return p }
	podMax := corev1.LimitRangeItem{Type: corev1.LimitTypePod, Max: rl("cpu", "1")}
	podMin := corev1.LimitRangeItem{Type: corev1.LimitTypePod, Min: rl("cpu", "1")}
	tests := []struct {
		name string
		item corev1.LimitRangeItem
		pod  *corev1.Pod
		want string
	}{
		{"overhead not counted", podMax, func() *corev1.Pod {
			p := newPod("p", container("a", nil, rl("cpu", "500m")), container("b", nil, rl("cpu", "500m")))
			p.Spec.Overhead = rl("cpu", "250m")
			return p
		}(), ""},
		{"a sidecar's limit adds to the app containers'", podMax,
			withInit(newPod("p", container("a", nil, rl("cpu", "600m"))), sidecar(container("s", nil, rl("cpu", "500m")))),
			"maximum cpu usage per Pod is 1, but limit is 1100m"},
		{"a sidecar's request adds to the app containers'", podMin,
			withInit(newPod("p", container("a", rl("cpu", "600m"), nil)), sidecar(container("s", rl("cpu", "500m"), nil))), ""},
		{"an init container runs beside the sidecars before it", podMax,
			withInit(newPod("p", container("a", nil, rl("cpu", "100m"))), sidecar(container("s", nil, rl("cpu", "300m"))), container("i", nil, rl("cpu", "900m"))),
			"maximum cpu usage per Pod is 1, but limit is 1200m"},
		{"pod-level resources replace the sums", podMax, func() *corev1.Pod {
			p := newPod("p", container("a", nil, rl("cpu", "500m")))
			p.Spec.Resources = &corev1.ResourceRequirements{Limits: rl("cpu", "2")}
			return p
		}(), "maximum cpu usage per Pod is 1, but limit is 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantForbidden(t, limitRanger(tt.item).Validate(context.Background(), podCreate(tt.pod)), tt.want)
		})
	}
}

func TestLimitRangerReportsEveryViolation(t *testing.T) {
	p := limitRanger(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Max: rl("memory", "400M"), MaxLimitRequestRatio: rl("memory", "3")})
	err := p.Validate(context.Background(), podCreate(newPod("my-lr-pod1", container("a", rl("memory", "100M"), rl("memory", "500M")))))
	wantForbidden(t, err, `pods "my-lr-pod1" is forbidden: [maximum memory usage per Container is 400M, but limit is 500M, memory max limit to request ratio per Container is 3, but provided ratio is 5.000000]`)
}

// TestLimitRangerOnResize: a pods/resize update is defaulted and checked
// as a create is, as upstream LimitRanger handles the resize subresource
// (containers' resources change there); other pod updates and
// subresources are not.
func TestLimitRangerOnResize(t *testing.T) {
	p := limitRanger(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Max: rl("cpu", "1")})
	old := newPod("p", container("a", rl("cpu", "200m"), rl("cpu", "500m")))
	resized := old.DeepCopy()
	resized.Spec.Containers[0].Resources.Limits = rl("cpu", "2")
	update := func(sub string) *Attributes {
		a := podCreate(resized)
		a.Operation, a.Subresource, a.OldObject = Update, sub, old
		return a
	}
	wantForbidden(t, p.Validate(context.Background(), update("resize")), "maximum cpu usage per Container is 1, but limit is 2")
	wantForbidden(t, p.Validate(context.Background(), update("")), "")
	wantForbidden(t, p.Validate(context.Background(), update("status")), "")

	defaults := limitRanger(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, DefaultRequest: rl("memory", "64Mi")})
	if err := defaults.Admit(context.Background(), update("resize")); err != nil {
		t.Fatal(err)
	}
	if q := resized.Spec.Containers[0].Resources.Requests["memory"]; q.String() != "64Mi" {
		t.Errorf("resize not defaulted: requests %v", resized.Spec.Containers[0].Resources.Requests)
	}
}
