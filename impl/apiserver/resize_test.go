package apiserver_test

import (
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestResizeSubresource drives pods/resize as `kubectl patch pod P
// --subresource resize` (a strategic merge patch) and client-go's
// UpdateResize do, and checks what it may not do.
func TestResizeSubresource(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	pods := e.cs.CoreV1().Pods("default")
	p := pod("web")
	p.Spec.Containers[0].Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
	}
	created, err := pods.Create(c, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// Discovery lists the subresource (kubectl patch --subresource checks it).
	res, err := e.cs.Discovery().ServerResourcesForGroupVersion("v1")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range res.APIResources {
		if r.Name == "pods/resize" {
			found = r.Kind == "Pod" && strings.Join(r.Verbs, ",") == "get,patch,update"
		}
	}
	if !found {
		t.Fatalf("discovery: no pods/resize (kind Pod, verbs get,patch,update): %+v", res.APIResources)
	}

	// kubectl patch pod web --subresource resize: anything but the
	// containers' resources in the patch is ignored.
	patch := `{"metadata":{"labels":{"app":"changed"}},"spec":{"activeDeadlineSeconds":5,"containers":[{"name":"c","image":"nginx","resources":{"requests":{"cpu":"200m"}}}]}}`
	got, err := pods.Patch(c, "web", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "resize")
	if err != nil {
		t.Fatalf("kubectl's resize patch: %v", err)
	}
	if q := got.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; q.String() != "200m" {
		t.Errorf("cpu request %s, want 200m", q.String())
	}
	if got.Labels["app"] != "web" || got.Spec.ActiveDeadlineSeconds != nil || got.Spec.Containers[0].Image != "busybox" {
		t.Errorf("the subresource took more than resources: labels %v activeDeadlineSeconds %v image %s", got.Labels, got.Spec.ActiveDeadlineSeconds, got.Spec.Containers[0].Image)
	}
	if got.Generation != created.Generation+1 {
		t.Errorf("generation %d, want %d", got.Generation, created.Generation+1)
	}

	// GET of the subresource is the pod.
	r := e.do("GET", "/api/v1/namespaces/default/pods/web/resize", nil)
	if r.code != http.StatusOK || !strings.Contains(string(r.body), `"kind":"Pod"`) || !strings.Contains(string(r.body), `"cpu":"200m"`) {
		t.Fatalf("GET: %d %s", r.code, r.body)
	}

	// The typed client's UpdateResize (PUT).
	cur := got.DeepCopy()
	cur.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("256Mi")
	got, err = pods.UpdateResize(c, "web", cur, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("UpdateResize: %v", err)
	}
	if q := got.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory]; q.String() != "256Mi" {
		t.Errorf("memory limit %s, want 256Mi", q.String())
	}

	smp := "application/strategic-merge-patch+json"
	path := "/api/v1/namespaces/default/pods/web/resize"
	for _, tc := range []struct{ name, body, msg string }{
		{"ephemeral storage", `{"spec":{"containers":[{"name":"c","resources":{"requests":{"ephemeral-storage":"1Gi"}}}]}}`,
			"spec: Forbidden: only cpu and memory resources are mutable"},
		{"QoS class", `{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"500m","memory":"256Mi"}}}]}}`,
			"spec: Invalid value: \"Burstable\": Pod QOS Class may not change as a result of resizing"},
		{"limits removed", `{"spec":{"containers":[{"name":"c","resources":{"limits":null}}]}}`,
			"spec.containers[0].resources.limits: Forbidden: resource limits cannot be removed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do("PATCH", path, []byte(tc.body), "Content-Type", smp)
			expectStatus(t, r, 422, metav1.StatusReasonInvalid, tc.msg)
		})
	}

	// The main endpoint may still not change resources.
	r = e.do("PATCH", "/api/v1/namespaces/default/pods/web", []byte(`{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"300m"}}}]}}`), "Content-Type", smp)
	expectStatus(t, r, 422, metav1.StatusReasonInvalid, "pod updates may not change fields other than")

	// Server-side apply through the subresource records it (forced: the
	// patches and update before own the field).
	force := true
	applied, err := pods.Patch(c, "web", types.ApplyPatchType, []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"},"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"250m"}}}]}}`),
		metav1.PatchOptions{FieldManager: "vpa", Force: &force}, "resize")
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	if q := applied.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; q.String() != "250m" {
		t.Errorf("after apply: cpu request %s", q.String())
	}
	sub := ""
	for _, m := range applied.ManagedFields {
		if m.Manager == "vpa" {
			sub = m.Subresource
		}
	}
	if sub != "resize" {
		t.Errorf("managedFields of vpa: subresource %q, want resize (%+v)", sub, applied.ManagedFields)
	}
}
