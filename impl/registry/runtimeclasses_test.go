package registry

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

func TestRuntimeClasses(t *testing.T) {
	ctx := context.Background()
	r := find(t, nodev1.SchemeGroupVersion, "runtimeclasses")
	if r.Namespaced || r.Status != nil || r.Scale != nil || !r.AllowCreateOnUpdate || len(r.ShortNames) != 0 ||
		strings.Join(r.Verbs, ",") != strings.Join(allVerbs, ",") {
		t.Errorf("runtimeclasses served as %+v", r)
	}
	// An update must name the resourceVersion it read (upstream's
	// AllowUnconditionalUpdate false).
	if u, ok := r.Strategy.(interface{ AllowUnconditionalUpdate() bool }); !ok || u.AllowUnconditionalUpdate() {
		t.Errorf("runtimeclasses allow unconditional updates")
	}
	if u, ok := find(t, coreV1, "pods").Strategy.(interface{ AllowUnconditionalUpdate() bool }); !ok || !u.AllowUnconditionalUpdate() {
		t.Errorf("pods must keep unconditional updates")
	}

	rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "gvisor", ResourceVersion: "1"}, Handler: "runsc",
		Overhead: &nodev1.Overhead{PodFixed: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("120Mi")}},
		Scheduling: &nodev1.Scheduling{NodeSelector: map[string]string{"runtime": "gvisor"},
			Tolerations: []corev1.Toleration{{Key: "sandboxed", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}}}
	r.Strategy.Default(rc)
	wantErrors(t, r.Strategy.Validate(ctx, rc))
	rc.CreationTimestamp = metav1.NewTime(testNow.Add(-3 * time.Hour))
	assertRow(t, r, rc, "Name,Handler,Age", "gvisor", "runsc", "3h")

	for _, tc := range []struct {
		name string
		edit func(*nodev1.RuntimeClass)
		want []string
	}{
		{"no handler", func(rc *nodev1.RuntimeClass) { rc.Handler = "" }, []string{required + " handler"}},
		{"handler not a DNS label", func(rc *nodev1.RuntimeClass) { rc.Handler = "run.sc" }, []string{invalid + " handler"}},
		{"upper-case handler", func(rc *nodev1.RuntimeClass) { rc.Handler = "RunSC" }, []string{invalid + " handler"}},
		{"bad name", func(rc *nodev1.RuntimeClass) { rc.Name = "G_visor" }, []string{invalid + " metadata.name"}},
		{"negative overhead", func(rc *nodev1.RuntimeClass) {
			rc.Overhead.PodFixed[corev1.ResourceCPU] = resource.MustParse("-1")
		}, []string{invalid + " overhead.limits[cpu]"}},
		{"overhead not a container resource", func(rc *nodev1.RuntimeClass) {
			rc.Overhead.PodFixed["pods"] = resource.MustParse("1")
		}, []string{invalid + " overhead.limits[pods]"}},
		{"bad node selector", func(rc *nodev1.RuntimeClass) {
			rc.Scheduling.NodeSelector["bad key!"] = "x"
			rc.Scheduling.NodeSelector["ok"] = "bad value!"
		}, []string{invalid + " scheduling.nodeSelector", invalid + " scheduling.nodeSelector"}},
		{"bad toleration", func(rc *nodev1.RuntimeClass) {
			rc.Scheduling.Tolerations = append(rc.Scheduling.Tolerations,
				corev1.Toleration{Key: "k", Operator: "Sometimes"},
				corev1.Toleration{Operator: corev1.TolerationOpEqual, Value: "v"})
		}, []string{notSupported + " scheduling.tolerations[1].operator", invalid + " scheduling.tolerations[2].operator"}},
		{"duplicate toleration", func(rc *nodev1.RuntimeClass) {
			dup := rc.Scheduling.Tolerations[0]
			rc.Scheduling.Tolerations = append(rc.Scheduling.Tolerations, dup)
		}, []string{duplicate + " scheduling.tolerations[1]"}},
		{"tolerations differing in seconds only are duplicates", func(rc *nodev1.RuntimeClass) {
			rc.Scheduling.Tolerations = []corev1.Toleration{
				{Key: "k", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(1))},
				{Key: "k", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(2))}}
		}, []string{duplicate + " scheduling.tolerations[1]"}},
		{"nil overhead and scheduling", func(rc *nodev1.RuntimeClass) { rc.Overhead, rc.Scheduling = nil, nil }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := rc.DeepCopy()
			tc.edit(c)
			wantErrors(t, r.Strategy.Validate(ctx, c), tc.want...)
		})
	}

	// The handler is immutable; nothing else is. An unchanged handler is
	// not checked again.
	upd := rc.DeepCopy()
	upd.Overhead = nil
	upd.Scheduling.NodeSelector = nil
	upd.Labels = map[string]string{"tier": "sandbox"}
	wantErrors(t, r.Strategy.ValidateUpdate(ctx, upd, rc))
	upd.Handler = "kata"
	errs := r.Strategy.ValidateUpdate(ctx, upd, rc)
	wantErrors(t, errs, invalid+" handler")
	if got := errs.ToAggregate().Error(); got != "handler: Invalid value: null: field is immutable" {
		t.Errorf("immutable handler: %q", got)
	}
	upd.Handler = ""
	wantErrors(t, r.Strategy.ValidateUpdate(ctx, upd, rc), invalid+" handler", required+" handler")
	if got := r.Strategy.Validate(ctx, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "x"}}).ToAggregate().Error(); got != "handler: Required value" {
		t.Errorf("no handler: %q", got)
	}
}

func TestRuntimeClassWarnings(t *testing.T) {
	r := find(t, nodev1.SchemeGroupVersion, "runtimeclasses")
	rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Handler: "runc",
		Scheduling: &nodev1.Scheduling{NodeSelector: map[string]string{
			"beta.kubernetes.io/os": "linux", "failure-domain.beta.kubernetes.io/zone": "a", "kubernetes.io/arch": "amd64"}}}
	for _, update := range []bool{false, true} {
		ctx, w := request.WithWarnings(context.Background())
		if update {
			old := rc.DeepCopy()
			old.ResourceVersion = "1"
			wantErrors(t, r.Strategy.ValidateUpdate(ctx, rc, old))
		} else {
			wantErrors(t, r.Strategy.Validate(ctx, rc))
		}
		want := []string{
			`scheduling.nodeSelector: deprecated since v1.14; use "kubernetes.io/os" instead`,
			`scheduling.nodeSelector: deprecated since v1.17; use "topology.kubernetes.io/zone" instead`,
		}
		if got := w.List(); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("update %v: warnings %q, want %q", update, got, want)
		}
	}
}

// TestPodRuntimeClassValidation: spec.runtimeClassName is a DNS subdomain
// and spec.overhead is checked as container limits, in pods and in
// workload templates, as upstream's ValidatePodSpec.
func TestPodRuntimeClassValidation(t *testing.T) {
	ctx := context.Background()
	pods := find(t, coreV1, "pods")
	for _, tc := range []struct {
		name      string
		className *string
		overhead  corev1.ResourceList
		want      []string
	}{
		{"class and overhead", ptr("gvisor"), corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}, nil},
		{"dotted class", ptr("sandbox.example.com"), nil, nil},
		{"class not a DNS subdomain", ptr("G_visor"), nil, []string{invalid + " spec.runtimeClassName"}},
		{"empty class", ptr(""), nil, []string{invalid + " spec.runtimeClassName"}},
		{"negative overhead", nil, corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("-1Mi")}, []string{invalid + " spec.overhead.limits[memory]"}},
		{"overhead not a container resource", nil, corev1.ResourceList{"pods": resource.MustParse("1")}, []string{invalid + " spec.overhead.limits[pods]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPod("web")
			p.Spec.RuntimeClassName, p.Spec.Overhead = tc.className, tc.overhead
			pods.Strategy.Default(p)
			wantErrors(t, pods.Strategy.Validate(ctx, p), tc.want...)
		})
	}

	deployments := find(t, appsV1, "deployments")
	d := newDeployment()
	d.Spec.Template.Spec.RuntimeClassName = ptr("Bad_Class")
	deployments.Strategy.Default(d)
	wantErrors(t, deployments.Strategy.Validate(ctx, d), invalid+" spec.template.spec.runtimeClassName")
}
