package endpoints_test

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kubeproof/kubeproof/impl/cluster/clustertest"
)

// TestDeletePreconditionMessages: a DELETE whose uid or resourceVersion
// precondition does not hold is refused as kube-apiserver's generic store
// refuses it before deleting (BeforeDelete): a 409 naming the kind, not
// the resource (ConfigMap "c", Deployment.apps "d"), "the UID in the
// precondition (…) does not match the UID in record (…)"; the uid is
// checked first. Namespaces keep their registry's own "Precondition
// failed" 409 on namespaces. Nothing is deleted.
func TestDeletePreconditionMessages(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	_, client := clustertest.Start(t, clustertest.Options{})
	ctx := context.Background()
	cm, err := client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, err error, group, kind, name, msg string) {
		t.Helper()
		se, ok := err.(*apierrors.StatusError)
		if !ok || !apierrors.IsConflict(err) || err.Error() != msg {
			t.Errorf("%s: %v, want 409 %q", what, err, msg)
			return
		}
		if d := se.ErrStatus.Details; d == nil || d.Group != group || d.Kind != kind || d.Name != name {
			t.Errorf("%s: details %+v, want group %q kind %q name %q", what, se.ErrStatus.Details, group, kind, name)
		}
	}
	wrong := types.UID("not-the-uid")
	err = client.CoreV1().ConfigMaps("default").Delete(ctx, "c", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &wrong, ResourceVersion: ptr.To("1")}})
	check("configmap, wrong uid and resourceVersion", err, "", "ConfigMap", "c", fmt.Sprintf(
		`Operation cannot be fulfilled on ConfigMap "c": the UID in the precondition (not-the-uid) does not match the UID in record (%s). The object might have been deleted and then recreated`, cm.UID))
	err = client.CoreV1().ConfigMaps("default").Delete(ctx, "c", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: ptr.To("1")}})
	check("configmap, stale resourceVersion", err, "", "ConfigMap", "c", fmt.Sprintf(
		`Operation cannot be fulfilled on ConfigMap "c": the ResourceVersion in the precondition (1) does not match the ResourceVersion in record (%s). The object might have been modified`, cm.ResourceVersion))

	d, err := client.AppsV1().Deployments("default").Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d"}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b"}}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	err = client.AppsV1().Deployments("default").Delete(ctx, "d", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &wrong}})
	check("deployment, wrong uid", err, "apps", "Deployment", "d", fmt.Sprintf(
		`Operation cannot be fulfilled on Deployment.apps "d": the UID in the precondition (not-the-uid) does not match the UID in record (%s). The object might have been deleted and then recreated`, d.UID))

	ns, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "n"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	err = client.CoreV1().Namespaces().Delete(ctx, "n", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &wrong}})
	check("namespace, wrong uid", err, "", "namespaces", "n", fmt.Sprintf(
		`Operation cannot be fulfilled on namespaces "n": Precondition failed: UID in precondition: not-the-uid, UID in object meta: %s`, ns.UID))

	if _, err := client.CoreV1().ConfigMaps("default").Get(ctx, "c", metav1.GetOptions{}); err != nil {
		t.Errorf("configmap after the refused deletes: %v", err)
	}
	if _, err := client.AppsV1().Deployments("default").Get(ctx, "d", metav1.GetOptions{}); err != nil {
		t.Errorf("deployment after the refused delete: %v", err)
	}
}
