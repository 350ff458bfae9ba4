package admission

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// TestPodSecurityAuditAnnotationsInUpstreamOrder: the audit annotations
// follow kube-apiserver's ValidatePod order: exempt namespace and user,
// then a namespace whose three policies are privileged (labels all valid)
// is annotated privileged:latest whatever its version labels, then an
// update that is not significant is allowed unannotated, then an exempt
// runtime class; invalid labels add an error annotation.
func TestPodSecurityAuditAnnotationsInUpstreamOrder(t *testing.T) {
	kata := newPod("p")
	kata.Spec.RuntimeClassName = ptr("kata")
	update := func(pod *corev1.Pod) *Attributes {
		newer := pod.DeepCopy()
		newer.Labels = map[string]string{"touched": "yes"}
		a := podCreate(newer)
		a.Operation, a.OldObject = Update, pod
		return a
	}
	for _, tt := range []struct {
		name   string
		labels map[string]string
		a      *Attributes
		want   map[string]string
	}{
		{"privileged at a pinned version is privileged:latest", map[string]string{podSecurityEnforce: "privileged", podSecurityEnforce + "-version": "v1.30"},
			podCreate(newPod("p")), map[string]string{auditEnforcePolicy: "privileged:latest"}},
		{"an exempt runtime class in a privileged namespace", nil,
			podCreate(kata.DeepCopy()), map[string]string{auditEnforcePolicy: "privileged:latest"}},
		{"an insignificant update of an exempt runtime class", map[string]string{podSecurityEnforce: "baseline"},
			update(kata), map[string]string{}},
		{"an exempt runtime class created", map[string]string{podSecurityEnforce: "baseline"},
			podCreate(kata.DeepCopy()), map[string]string{auditExempt: "runtimeClass"}},
		{"invalid labels", map[string]string{podSecurityWarn: "bogus"},
			podCreate(newPod("p")), map[string]string{auditEnforcePolicy: "privileged:latest",
				auditError: `Failed to parse policy: metadata.labels[pod-security.kubernetes.io/warn]: Invalid value: "bogus": must be one of privileged, baseline, restricted`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := podSecurity(tt.labels)
			p.ExemptRuntimeClasses = map[string]bool{"kata": true}
			got := auditedAnnotations(t, func(ctx context.Context) {
				if err := p.Validate(ctx, tt.a); err != nil {
					t.Fatal(err)
				}
			})
			if !maps.Equal(got, tt.want) {
				t.Fatalf("annotations %v, want %v", got, tt.want)
			}
		})
	}
}

// TestPodSecurityExistingPodsListError: when the namespace's pods cannot
// be listed, the relabel is allowed with kube-apiserver's warning, which
// does not carry the error.
func TestPodSecurityExistingPodsListError(t *testing.T) {
	p := podSecurity(nil)
	p.ListPods = func(context.Context, string) ([]corev1.Pod, error) { return nil, errors.New("etcd: too slow") }
	ns := func(labels map[string]string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", Labels: labels}}
	}
	ctx, warnings := request.WithWarnings(context.Background())
	err := p.Validate(ctx, &Attributes{Operation: Update, Resource: corev1.SchemeGroupVersion.WithResource("namespaces"), Name: "ns",
		Object: ns(map[string]string{podSecurityEnforce: "baseline"}), OldObject: ns(nil)})
	want := []string{"failed to list pods while checking new PodSecurity enforce level"}
	if err != nil || !slices.Equal(warnings.List(), want) {
		t.Fatalf("%v, warnings %q, want %q", err, warnings.List(), want)
	}
}
