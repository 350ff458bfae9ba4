package apiserver_test

import (
	"net/http"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func pod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
}

func TestBindingAndGracefulDelete(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	pods := e.cs.CoreV1().Pods("default")
	p, err := pods.Create(c, pod("web"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bind := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Target: corev1.ObjectReference{Kind: "Node", Name: "node-1"}}
	if err := pods.Bind(c, bind, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bound, err := pods.Get(c, "web", metav1.GetOptions{})
	if err != nil || bound.Spec.NodeName != "node-1" {
		t.Fatalf("bound: %v %q", err, bound.Spec.NodeName)
	}
	scheduled := false
	for _, cond := range bound.Status.Conditions {
		if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionTrue {
			scheduled = true
		}
	}
	if !scheduled {
		t.Fatalf("no PodScheduled=True condition: %+v", bound.Status.Conditions)
	}
	bind.Target.Name = "node-2"
	err = pods.Bind(c, bind, metav1.CreateOptions{})
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), `pod web is already assigned to node "node-1"`) {
		t.Fatalf("rebind: %v", err)
	}
	// a binding for another name, or without a target, is rejected.
	r := e.do("POST", "/api/v1/namespaces/default/pods/web/binding", []byte(`{"apiVersion":"v1","kind":"Binding","metadata":{"name":"other"},"target":{"name":"n"}}`))
	expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest, "name in URL does not match")
	r = e.do("POST", "/api/v1/namespaces/default/pods/web/binding", []byte(`{"apiVersion":"v1","kind":"Binding","metadata":{"name":"web"}}`))
	expectStatus(t, r, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, "target.name")

	// a bound pod is deleted gracefully: marked, then removed by a
	// grace-0 delete (what the kubelet sends).
	if err := pods.Delete(c, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	marked, err := pods.Get(c, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("gracefully deleted pod gone at once: %v", err)
	}
	if marked.DeletionTimestamp == nil || marked.DeletionGracePeriodSeconds == nil || *marked.DeletionGracePeriodSeconds != 30 {
		t.Fatalf("marked: ts %v grace %v", marked.DeletionTimestamp, marked.DeletionGracePeriodSeconds)
	}
	// deleting again without a shorter grace changes nothing.
	if err := pods.Delete(c, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	again, _ := pods.Get(c, "web", metav1.GetOptions{})
	if again.ResourceVersion != marked.ResourceVersion {
		t.Fatalf("second graceful delete rewrote the pod")
	}
	// a deleted pod cannot be bound.
	zero := int64(0)
	if err := pods.Delete(c, "web", metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &p.UID}}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(c, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("after grace-0 delete: %v", err)
	}
	// an unbound pod goes at once.
	if _, err := pods.Create(c, pod("unbound"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(c, "unbound", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(c, "unbound", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("unbound pod after delete: %v", err)
	}
}

func TestStatusSubresource(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	pods := e.cs.CoreV1().Pods("default")
	p, err := pods.Create(c, pod("s"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// status written via the main resource is dropped.
	p.Status.Message = "via main"
	p.Labels["x"] = "y"
	p, err = pods.Update(c, p, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Status.Message != "" || p.Labels["x"] != "y" {
		t.Fatalf("main update: status %q labels %v", p.Status.Message, p.Labels)
	}
	// spec and labels written via /status are dropped.
	p.Status.Message = "via status"
	p.Status.Phase = corev1.PodRunning
	p.Spec.ActiveDeadlineSeconds = new(int64)
	*p.Spec.ActiveDeadlineSeconds = 5
	p, err = pods.UpdateStatus(c, p, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Status.Message != "via status" || p.Spec.ActiveDeadlineSeconds != nil {
		t.Fatalf("status update: status %q deadline %v", p.Status.Message, p.Spec.ActiveDeadlineSeconds)
	}
	p, err = pods.Patch(c, "s", types.MergePatchType, []byte(`{"status":{"message":"patched"}}`), metav1.PatchOptions{}, "status")
	if err != nil || p.Status.Message != "patched" {
		t.Fatalf("status patch: %v %q", err, p.Status.Message)
	}
}

func deployment(name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
			},
		},
	}
}

func TestScaleSubresource(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	deps := e.cs.AppsV1().Deployments("default")
	d, err := deps.Create(c, deployment("d", 1), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Generation != 1 {
		t.Fatalf("generation %d", d.Generation)
	}
	s, err := deps.GetScale(c, "d", metav1.GetOptions{})
	if err != nil || s.Spec.Replicas != 1 || s.Kind != "" && s.Kind != "Scale" {
		t.Fatalf("get scale: %v %+v", err, s)
	}
	s.Spec.Replicas = 4
	s, err = deps.UpdateScale(c, "d", s, metav1.UpdateOptions{})
	if err != nil || s.Spec.Replicas != 4 {
		t.Fatalf("update scale: %v %+v", err, s)
	}
	r := e.do("PATCH", "/apis/apps/v1/namespaces/default/deployments/d/scale", []byte(`{"spec":{"replicas":6}}`), "Content-Type", "application/merge-patch+json")
	if r.code != 200 || !strings.Contains(string(r.body), `"kind":"Scale","apiVersion":"autoscaling/v1"`) {
		t.Fatalf("scale patch: %d %s", r.code, r.body)
	}
	d, err = deps.Get(c, "d", metav1.GetOptions{})
	if err != nil || *d.Spec.Replicas != 6 || d.Generation != 3 {
		t.Fatalf("after scale: %v replicas %d generation %d", err, *d.Spec.Replicas, d.Generation)
	}
	stale := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "default", ResourceVersion: "1"}, Spec: autoscalingv1.ScaleSpec{Replicas: 2}}
	if _, err := deps.UpdateScale(c, "d", stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("stale scale: %v", err)
	}
	neg := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "default"}, Spec: autoscalingv1.ScaleSpec{Replicas: -1}}
	if _, err := deps.UpdateScale(c, "d", neg, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("negative scale: %v", err)
	}
	// the selector is immutable: a 422 with a field cause.
	d.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}}
	d.Spec.Template.Labels = map[string]string{"app": "other"}
	_, err = deps.Update(c, d, metav1.UpdateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("selector change: %v", err)
	}
	if st := err.(apierrors.APIStatus).Status(); st.Details == nil || len(st.Details.Causes) == 0 || !strings.HasPrefix(st.Details.Causes[0].Field, "spec.selector") {
		t.Fatalf("causes: %+v", st.Details)
	}
}

func TestFinalizersAndPropagation(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	rs := e.cs.AppsV1().Deployments("default")
	for _, tc := range []struct {
		policy    metav1.DeletionPropagation
		finalizer string
	}{
		{metav1.DeletePropagationForeground, metav1.FinalizerDeleteDependents},
		{metav1.DeletePropagationOrphan, metav1.FinalizerOrphanDependents},
	} {
		name := strings.ToLower(string(tc.policy))
		if _, err := rs.Create(c, deployment(name, 1), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		policy := tc.policy
		if err := rs.Delete(c, name, metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil {
			t.Fatal(err)
		}
		d, err := rs.Get(c, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s: deleted at once: %v", tc.policy, err)
		}
		if d.DeletionTimestamp == nil || len(d.Finalizers) != 1 || d.Finalizers[0] != tc.finalizer || d.Generation != 2 {
			t.Fatalf("%s: ts %v finalizers %v generation %d", tc.policy, d.DeletionTimestamp, d.Finalizers, d.Generation)
		}
		// the garbage collector's update removing the finalizer removes the object.
		d.Finalizers = nil
		if _, err := rs.Update(c, d, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := rs.Get(c, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("%s: after last finalizer: %v", tc.policy, err)
		}
	}
	// background: gone at once; a user finalizer keeps the object marked.
	d := deployment("kept", 1)
	d.Finalizers = []string{"example.com/keep"}
	if _, err := rs.Create(c, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bg := metav1.DeletePropagationBackground
	if err := rs.Delete(c, "kept", metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		t.Fatal(err)
	}
	got, err := rs.Get(c, "kept", metav1.GetOptions{})
	if err != nil || got.DeletionTimestamp == nil || len(got.Finalizers) != 1 {
		t.Fatalf("finalized object: %v %+v", err, got)
	}
	// while deleting, new finalizers cannot be... but labels can change
	if _, err := rs.Patch(c, "kept", types.MergePatchType, []byte(`{"metadata":{"labels":{"a":"b"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rs.Patch(c, "kept", types.JSONPatchType, []byte(`[{"op":"remove","path":"/metadata/finalizers"}]`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rs.Get(c, "kept", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("after finalizer patch: %v", err)
	}
}
