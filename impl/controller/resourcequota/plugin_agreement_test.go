package resourcequota_test

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"pgregory.net/rapid"

	"github.com/kubeproof/kubeproof/impl/apiserver/admission"

	"github.com/kubeproof/kubeproof/impl/controller/resourcequota"
)

// oneQuota is the admission plugin's QuotaStore holding a single quota.
type oneQuota struct{ q *corev1.ResourceQuota }

func (s *oneQuota) List(context.Context, string) ([]corev1.ResourceQuota, error) {
	return []corev1.ResourceQuota{*s.q.DeepCopy()}, nil
}

func (s *oneQuota) Update(_ context.Context, _, _ string, tryUpdate func(*corev1.ResourceQuota) (*corev1.ResourceQuota, error)) error {
	next, err := tryUpdate(s.q.DeepCopy())
	if err != nil {
		return err
	}
	s.q = next
	return nil
}

func (s *oneQuota) Usage(context.Context, string, *corev1.ResourceQuota) (corev1.ResourceList, error) {
	return nil, fmt.Errorf("the test quota's status is always computed")
}

var quotaNames = []corev1.ResourceName{
	"pods", "count/pods", "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory",
	"requests.ephemeral-storage", "requests.example.com/gpu", "limits.cpu", "limits.memory",
	"limits.ephemeral-storage", "configmaps", "count/configmaps", "secrets", "count/deployments.apps",
}

var computeNames = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage, "example.com/gpu"}

// drawList draws a resource list; complete lists always name cpu and
// memory (so quotas on them admit the pod).
func drawList(t *rapid.T, label string, complete bool) corev1.ResourceList {
	l := corev1.ResourceList{}
	for _, n := range computeNames {
		always := complete && (n == corev1.ResourceCPU || n == corev1.ResourceMemory)
		if always || rapid.Bool().Draw(t, label+string(n)) {
			l[n] = *resource.NewMilliQuantity(int64(rapid.IntRange(0, 3000).Draw(t, label+string(n)+"-milli")), resource.DecimalSI)
		}
	}
	return l
}

func drawContainer(t *rapid.T, label string, complete bool) corev1.Container {
	return corev1.Container{Name: label, Image: "busybox", Resources: corev1.ResourceRequirements{
		Requests: drawList(t, label+"-requests-", complete), Limits: drawList(t, label+"-limits-", complete)}}
}

func drawPod(t *rapid.T) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	complete := rapid.IntRange(0, 3).Draw(t, "complete") > 0
	for i := range rapid.IntRange(1, 3).Draw(t, "containers") {
		p.Spec.Containers = append(p.Spec.Containers, drawContainer(t, fmt.Sprintf("c%d", i), complete))
	}
	for i := range rapid.IntRange(0, 2).Draw(t, "initContainers") {
		p.Spec.InitContainers = append(p.Spec.InitContainers, drawContainer(t, fmt.Sprintf("i%d", i), complete))
	}
	if rapid.Bool().Draw(t, "ephemeral") {
		p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon(drawContainer(t, "e", false))}}
	}
	if rapid.Bool().Draw(t, "overhead") {
		p.Spec.Overhead = drawList(t, "overhead-", false)
	}
	if rapid.Bool().Draw(t, "deadline") {
		d := int64(rapid.IntRange(0, 100).Draw(t, "deadline-seconds"))
		p.Spec.ActiveDeadlineSeconds = &d
	}
	p.Spec.PriorityClassName = rapid.SampledFrom([]string{"", "high", "low"}).Draw(t, "priorityClass")
	p.Status.Phase = rapid.SampledFrom([]corev1.PodPhase{"", corev1.PodPending, corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed}).Draw(t, "phase")
	return p
}

// TestUsageAgreesWithAdmissionPlugin: for any one object and any quota,
// what the ResourceQuota admission plugin charges when it admits the
// object's create is what Usage counts for that object alone — the
// controller gives back exactly what the plugin took.
func TestUsageAgreesWithAdmissionPlugin(t *testing.T) {
	admitted, runs := 0, 0
	defer func() {
		// The property says nothing about refused creates: most runs
		// must be admitted ones.
		if !t.Failed() && admitted*2 < runs {
			t.Fatalf("only %d of %d creates admitted", admitted, runs)
		}
	}()
	rapid.Check(t, func(t *rapid.T) {
		runs++
		q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "q"}}
		q.Spec.Hard = corev1.ResourceList{}
		for _, n := range quotaNames {
			if rapid.Bool().Draw(t, "hard-"+string(n)) {
				q.Spec.Hard[n] = resource.MustParse("1000000")
			}
		}
		if len(q.Spec.Hard) == 0 {
			q.Spec.Hard["count/pods"] = resource.MustParse("1000000")
		}
		for _, s := range []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating,
			corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort} {
			if rapid.IntRange(0, 4).Draw(t, "scope-"+string(s)) == 0 {
				q.Spec.Scopes = append(q.Spec.Scopes, s)
			}
		}
		if rapid.IntRange(0, 3).Draw(t, "selector") == 0 {
			op := rapid.SampledFrom([]corev1.ScopeSelectorOperator{corev1.ScopeSelectorOpIn, corev1.ScopeSelectorOpNotIn,
				corev1.ScopeSelectorOpExists, corev1.ScopeSelectorOpDoesNotExist}).Draw(t, "selector-op")
			req := corev1.ScopedResourceSelectorRequirement{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: op}
			if op == corev1.ScopeSelectorOpIn || op == corev1.ScopeSelectorOpNotIn {
				req.Values = []string{"high"}
			}
			q.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{req}}
		}
		q.Status.Hard = q.Spec.Hard.DeepCopy()
		q.Status.Used = corev1.ResourceList{}
		for n := range q.Spec.Hard {
			q.Status.Used[n] = resource.MustParse("0")
		}

		var gvr schema.GroupVersionResource
		var obj runtime.Object
		switch rapid.IntRange(0, 3).Draw(t, "kind") {
		case 0:
			gvr, obj = corev1.SchemeGroupVersion.WithResource("configmaps"), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "o"}}
		case 1:
			gvr, obj = appsv1.SchemeGroupVersion.WithResource("deployments"), &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "o"}}
		default:
			gvr, obj = corev1.SchemeGroupVersion.WithResource("pods"), drawPod(t)
		}

		store := &oneQuota{q: q.DeepCopy()}
		plugin := &admission.ResourceQuota{Store: store}
		err := plugin.Validate(context.Background(), &admission.Attributes{
			Operation: admission.Create, Resource: gvr, Namespace: "ns", Name: "o", Object: obj,
		})
		if err != nil {
			// Refused (a quota on cpu or memory needs every container
			// to say how much): nothing charged, nothing to agree on.
			if !apiequality.Semantic.DeepEqual(store.q.Status, q.Status) {
				t.Fatalf("a refused create changed the quota: %v", store.q.Status.Used)
			}
			return
		}
		admitted++
		counted := resourcequota.Usage(q, resourcequota.Observed{Objects: map[schema.GroupResource][]runtime.Object{gvr.GroupResource(): {obj}, podResource: podsOf(obj)}})
		for n := range q.Spec.Hard {
			charged, got := store.q.Status.Used[n], counted[n]
			if charged.Cmp(got) != 0 {
				t.Fatalf("%s: plugin charged %s, Usage counts %s (quota %+v)", n, charged.String(), got.String(), q.Spec)
			}
		}
	})
}

func podsOf(obj runtime.Object) []runtime.Object {
	if p, ok := obj.(*corev1.Pod); ok {
		return []runtime.Object{p}
	}
	return nil
}
