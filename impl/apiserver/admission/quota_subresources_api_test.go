package admission_test

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestQuotaSubresourcesThroughTheAPIServer: the subresource writes a
// client makes reach the ResourceQuota plugin under their own
// subresource, and only pods/resize of them is evaluated — with a quota
// full for pods, cpu requests, services, deployments and replica sets,
// writing pods/status, pods/ephemeralcontainers and pods/binding,
// services/status, deployments/scale and /status, replicasets/scale and
// pods/eviction is admitted and charges nothing, while a resize that
// grows the pod is refused, as kube-apiserver's quota evaluators decide.
func TestQuotaSubresourcesThroughTheAPIServer(t *testing.T) {
	cs, _ := startServer(t)
	ctx := context.Background()
	core, apps := cs.CoreV1(), cs.AppsV1()
	const ns = "subq"
	created(core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})).must(t, "namespace")
	created(core.ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})).must(t, "service account")
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}}}
	}
	created(core.Pods(ns).Create(ctx, pod("web"), metav1.CreateOptions{})).must(t, "pod")
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "svc"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
	created(core.Services(ns).Create(ctx, svc, metav1.CreateOptions{})).must(t, "service")
	labels := map[string]string{"app": "x"}
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	zero := int32(0)
	created(apps.Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d"},
		Spec: appsv1.DeploymentSpec{Replicas: &zero, Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template}}, metav1.CreateOptions{})).must(t, "deployment")
	created(apps.ReplicaSets(ns).Create(ctx, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "r"},
		Spec: appsv1.ReplicaSetSpec{Replicas: &zero, Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template}}, metav1.CreateOptions{})).must(t, "replica set")

	// Full: status.used is status.hard for every name.
	hard := corev1.ResourceList{
		corev1.ResourcePods: resource.MustParse("1"), "count/pods": resource.MustParse("1"), corev1.ResourceRequestsCPU: resource.MustParse("100m"),
		corev1.ResourceServices: resource.MustParse("1"), "count/deployments.apps": resource.MustParse("1"),
		"count/replicasets.apps": resource.MustParse("1"),
	}
	created(core.ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "full"},
		Spec: corev1.ResourceQuotaSpec{Hard: hard}}, metav1.CreateOptions{})).must(t, "quota")
	writeQuotaStatus(t, core, ns, "full", hard)
	eventually(t, "the quota seen by admission", func() error {
		if _, err := core.Pods(ns).Create(ctx, pod("more"), dryRun); !quotaRefused(err) {
			return fmt.Errorf("a pod create not refused yet: %v", err)
		}
		return nil
	})
	// The main resources are limited by the quota.
	if _, err := core.Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "svc2"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}, dryRun); !quotaRefused(err) {
		t.Fatalf("a service create: %v, want the quota's refusal", err)
	}
	if _, err := apps.Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d2"},
		Spec: appsv1.DeploymentSpec{Replicas: &zero, Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template}}, dryRun); !quotaRefused(err) {
		t.Fatalf("a deployment create: %v, want the quota's refusal", err)
	}

	step := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v (not a write the quota evaluates)", what, err)
		}
	}
	p, err := core.Pods(ns).Get(ctx, "web", metav1.GetOptions{})
	step("get pod", err)
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: "example.com/Checked", Status: corev1.ConditionTrue})
	p, err = core.Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	step("pods/status", err)
	p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, corev1.EphemeralContainer{
		EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox", TerminationMessagePolicy: corev1.TerminationMessageReadFile}})
	_, err = core.Pods(ns).UpdateEphemeralContainers(ctx, "web", p, metav1.UpdateOptions{})
	step("pods/ephemeralcontainers", err)
	_, err = core.Pods(ns).Patch(ctx, "web", types.StrategicMergePatchType,
		[]byte(`{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"200m"}}}]}}`), metav1.PatchOptions{}, "resize")
	wantStatus(t, err, 403, `pods "web" is forbidden: exceeded quota: full, requested: requests.cpu=100m, used: requests.cpu=100m, limited: requests.cpu=100m`)
	step("pods/binding", core.Pods(ns).Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}, metav1.CreateOptions{}))

	s, err := core.Services(ns).Get(ctx, "svc", metav1.GetOptions{})
	step("get service", err)
	s.Status.Conditions = append(s.Status.Conditions, metav1.Condition{Type: "Checked", Status: metav1.ConditionTrue,
		Reason: "Test", LastTransitionTime: metav1.Now()})
	_, err = core.Services(ns).UpdateStatus(ctx, s, metav1.UpdateOptions{})
	step("services/status", err)

	_, err = apps.Deployments(ns).UpdateScale(ctx, "d", &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: ns},
		Spec: autoscalingv1.ScaleSpec{Replicas: 2}}, metav1.UpdateOptions{})
	step("deployments/scale", err)
	d, err := apps.Deployments(ns).Get(ctx, "d", metav1.GetOptions{})
	step("get deployment", err)
	d.Status.ObservedGeneration = d.Generation
	_, err = apps.Deployments(ns).UpdateStatus(ctx, d, metav1.UpdateOptions{})
	step("deployments/status", err)
	_, err = apps.ReplicaSets(ns).UpdateScale(ctx, "r", &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: ns},
		Spec: autoscalingv1.ScaleSpec{Replicas: 2}}, metav1.UpdateOptions{})
	step("replicasets/scale", err)
	step("pods/eviction", core.Pods(ns).EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}}))

	q, err := core.ResourceQuotas(ns).Get(ctx, "full", metav1.GetOptions{})
	step("get quota", err)
	if !apiequality.Semantic.DeepEqual(q.Status.Used, hard) {
		t.Errorf("quota used %v after the subresource writes, want %v unchanged", q.Status.Used, hard)
	}
}
