package kubectl

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// TestServerSideApplyClientGo: what controllers do with client-go's typed
// apply configurations. An apply creates; ExtractConfigMap reads back from
// the managed fields exactly what a manager applied (so the entries are in
// the format client-go expects); conflicts are errors apierrors recognises;
// and an apply to /status owns only status.
func TestServerSideApplyClientGo(t *testing.T) {
	t.Parallel()
	ns := createNamespace(t, "server-side-apply-client-go")
	cfg, err := clientcmd.BuildConfigFromFlags("", server.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cms := cs.CoreV1().ConfigMaps(ns)

	applied := corev1ac.ConfigMap("settings", ns).WithLabels(map[string]string{"team": "a"}).WithData(map[string]string{"mode": "fast"})
	cm, err := cms.Apply(ctx, applied, metav1.ApplyOptions{FieldManager: "settings-controller"})
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	if cm.Data["mode"] != "fast" || cm.UID == "" {
		t.Fatalf("applied %+v", cm)
	}
	extracted, err := corev1ac.ExtractConfigMap(cm, "settings-controller")
	if err != nil {
		t.Fatalf("ExtractConfigMap: %v", err)
	}
	if got := extracted.Data["mode"]; got != "fast" || extracted.Labels["team"] != "a" || len(extracted.Data) != 1 {
		t.Fatalf("extracted %+v", extracted)
	}

	// An update by someone else, then a conflicting apply.
	cm.Data["mode"] = "slow"
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: "operator"}); err != nil {
		t.Fatal(err)
	}
	_, err = cms.Apply(ctx, applied, metav1.ApplyOptions{FieldManager: "settings-controller"})
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), `conflict with "operator" using v1: .data.mode`) {
		t.Fatalf("conflicting apply: %v", err)
	}
	cm, err = cms.Apply(ctx, applied, metav1.ApplyOptions{FieldManager: "settings-controller", Force: true})
	if err != nil || cm.Data["mode"] != "fast" {
		t.Fatalf("forced apply: %v %+v", err, cm)
	}

	// A controller applies Deployment status through /status.
	deps := cs.AppsV1().Deployments(ns)
	if _, err := deps.Apply(ctx, appsv1ac.Deployment("web", ns).WithSpec(appsv1ac.DeploymentSpec().
		WithReplicas(1).
		WithSelector(metav1ac.LabelSelector().WithMatchLabels(map[string]string{"app": "web"})).
		WithTemplate(corev1ac.PodTemplateSpec().WithLabels(map[string]string{"app": "web"}).
			WithSpec(corev1ac.PodSpec().WithContainers(corev1ac.Container().WithName("c").WithImage("nginx"))))),
		metav1.ApplyOptions{FieldManager: "deployer"}); err != nil {
		t.Fatalf("deployment apply: %v", err)
	}
	d, err := deps.ApplyStatus(ctx, appsv1ac.Deployment("web", ns).WithStatus(appsv1ac.DeploymentStatus().WithObservedGeneration(1).WithReplicas(1)),
		metav1.ApplyOptions{FieldManager: "status-controller"})
	if err != nil {
		t.Fatalf("status apply: %v", err)
	}
	if d.Status.Replicas != 1 || d.Status.ObservedGeneration != 1 {
		t.Fatalf("status %+v", d.Status)
	}
	for _, e := range d.ManagedFields {
		if e.Manager == "status-controller" && (e.Subresource != "status" || strings.Contains(string(e.FieldsV1.Raw), "f:spec")) {
			t.Errorf("status manager's entry: %+v %s", e, e.FieldsV1.Raw)
		}
	}
	var found bool
	for _, e := range d.ManagedFields {
		found = found || e.Manager == "status-controller"
	}
	if !found {
		t.Errorf("no entry for the status manager: %+v", d.ManagedFields)
	}
}
