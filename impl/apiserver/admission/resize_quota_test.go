package admission_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestQuotaOnResizeThroughTheAPIServer: a pods/resize update is charged
// to the namespace's quotas by its growth and refused beyond them, as
// upstream's quota admission evaluates pods/resize updates.
func TestQuotaOnResizeThroughTheAPIServer(t *testing.T) {
	cs, _ := startServer(t)
	ctx := context.Background()
	core := cs.CoreV1()
	const ns = "resizeq"
	created(core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})).must(t, "namespace")
	created(core.ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})).must(t, "service account")
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox",
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}}}
	created(core.Pods(ns).Create(ctx, p, metav1.CreateOptions{})).must(t, "pod")
	created(core.ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("300m")}}}, metav1.CreateOptions{})).must(t, "quota")
	writeQuotaStatus(t, core, ns, "q", corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("100m")})

	resize := func(cpu string, opts metav1.PatchOptions) error {
		patch := fmt.Sprintf(`{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":%q}}}]}}`, cpu)
		_, err := core.Pods(ns).Patch(ctx, "web", types.StrategicMergePatchType, []byte(patch), opts, "resize")
		return err
	}
	eventually(t, "quota seen by admission", func() error {
		if err := resize("500m", metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}); !quotaRefused(err) {
			return fmt.Errorf("dry run not refused yet: %v", err)
		}
		return nil
	})
	if err := resize("250m", metav1.PatchOptions{}); err != nil {
		t.Fatalf("resize within the quota: %v", err)
	}
	q, err := core.ResourceQuotas(ns).Get(ctx, "q", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if used := q.Status.Used[corev1.ResourceRequestsCPU]; used.String() != "250m" {
		t.Errorf("quota used requests.cpu %s after the resize, want 250m (100m and the growth)", used.String())
	}
	err = resize("400m", metav1.PatchOptions{})
	wantStatus(t, err, 403, `pods "web" is forbidden: exceeded quota: q, requested: requests.cpu=150m, used: requests.cpu=250m, limited: requests.cpu=300m`)
	// Going down is no charge.
	if err := resize("200m", metav1.PatchOptions{}); err != nil {
		t.Fatalf("resize down: %v", err)
	}
}

// TestPodLevelResizeAdmittedThroughTheAPIServer: a pods/resize update of
// a pod's pod-level resources (InPlacePodLevelResourcesVerticalScaling,
// beta and on since 1.36) is charged to the quotas by the growth of the
// pod-level requests, which stand for the containers' in the pod
// evaluator, and LimitRanger checks the pod-level limits against a Pod
// item, as upstream's admission of pods/resize.
func TestPodLevelResizeAdmittedThroughTheAPIServer(t *testing.T) {
	cs, _ := startServer(t)
	ctx := context.Background()
	core := cs.CoreV1()
	const ns = "resizeplr"
	created(core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})).must(t, "namespace")
	created(core.ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})).must(t, "service account")
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.PodSpec{
		Resources: &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
			Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}},
		Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	created(core.Pods(ns).Create(ctx, p, metav1.CreateOptions{})).must(t, "pod")
	created(core.ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("300m")}}}, metav1.CreateOptions{})).must(t, "quota")
	writeQuotaStatus(t, core, ns, "q", corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("100m")})
	created(core.LimitRanges(ns).Create(ctx, &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "lr"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypePod, Max: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}},
		metav1.CreateOptions{})).must(t, "limit range")

	resize := func(patch string, opts metav1.PatchOptions) error {
		_, err := core.Pods(ns).Patch(ctx, "web", types.StrategicMergePatchType, []byte(patch), opts, "resize")
		return err
	}
	requests := func(cpu string) string { return fmt.Sprintf(`{"spec":{"resources":{"requests":{"cpu":%q}}}}`, cpu) }
	eventually(t, "quota seen by admission", func() error {
		if err := resize(requests("500m"), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}); !quotaRefused(err) {
			return fmt.Errorf("dry run not refused yet: %v", err)
		}
		return nil
	})
	// LimitRanger reads the LimitRange from its own cache: wait for it too
	// (a dry run of a pod-level limit over the range's max refused).
	eventually(t, "limit range seen by admission", func() error {
		err := resize(`{"spec":{"resources":{"limits":{"cpu":"2"}}}}`, metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "maximum cpu usage per Pod") {
			return fmt.Errorf("dry run not refused by the limit range yet: %v", err)
		}
		return nil
	})
	if err := resize(requests("250m"), metav1.PatchOptions{}); err != nil {
		t.Fatalf("pod-level resize within the quota: %v", err)
	}
	got, err := core.Pods(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if q := got.Spec.Resources.Requests[corev1.ResourceCPU]; q.String() != "250m" || got.Generation != 2 {
		t.Errorf("after the resize: pod-level cpu request %s generation %d, want 250m and 2", q.String(), got.Generation)
	}
	q, err := core.ResourceQuotas(ns).Get(ctx, "q", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if used := q.Status.Used[corev1.ResourceRequestsCPU]; used.String() != "250m" {
		t.Errorf("quota used requests.cpu %s after the resize, want 250m (100m and the growth)", used.String())
	}
	err = resize(requests("400m"), metav1.PatchOptions{})
	wantStatus(t, err, 403, `pods "web" is forbidden: exceeded quota: q, requested: requests.cpu=150m, used: requests.cpu=250m, limited: requests.cpu=300m`)
	err = resize(`{"spec":{"resources":{"limits":{"cpu":"2"}}}}`, metav1.PatchOptions{})
	wantStatus(t, err, 403, `pods "web" is forbidden: maximum cpu usage per Pod is 1, but limit is 2`)
	if err := resize(`{"spec":{"resources":{"limits":{"cpu":"1"}}}}`, metav1.PatchOptions{}); err != nil {
		t.Fatalf("pod-level limit raised within the limit range: %v", err)
	}
}
