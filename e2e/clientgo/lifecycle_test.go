package clientgo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubeproof/kubeproof/impl/cluster"
	"github.com/kubeproof/kubeproof/impl/cluster/clustertest"
)

// TestLifecycle: finalizers and deletion, bindings, metadata rules, request
// errors and protobuf, through client-go, with the watch cache on and off.
func TestLifecycle(t *testing.T) {
	for _, mode := range cacheModes {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			c, _ := clustertest.Start(t, clustertest.Options{NoWatchCache: !mode.watchCache})
			cs := fastClient(t, c)
			for _, tc := range []struct {
				name string
				test func(t *testing.T, c *cluster.Cluster, cs kubernetes.Interface, ns string)
			}{
				{"Finalizers", testFinalizers},
				{"FinalizerMarkBumpsGeneration", func(t *testing.T, _ *cluster.Cluster, cs kubernetes.Interface, ns string) {
					testFinalizerMarkBumpsGeneration(t, cs, ns)
				}},
				{"BindingAndNodeNameWatch", testBinding},
				{"WatchFromZero", testWatchFromZero},
				{"MetadataRules", testMetadataRules},
				{"BadRequests", testBadRequests},
				{"Protobuf", testProtobuf},
				{"DeleteCollection", testDeleteCollection},
				{"NoopWrites", testNoopWrites},
				{"ScaleSubresource", testScaleSubresource},
			} {
				t.Run(tc.name, func(t *testing.T) {
					ns := strings.ToLower(tc.name)
					if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
						t.Fatal(err)
					}
					tc.test(t, c, cs, ns)
				})
			}
		})
	}
}

func simpleDeployment(name string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
			},
		},
	}
}

// testFinalizers: deleting an object with finalizers only marks it
// (deletionTimestamp, deletionGracePeriodSeconds 0); no new finalizer may be added then; it goes when the last
// finalizer goes, and watchers see MODIFIED then DELETED.
func testFinalizers(t *testing.T, _ *cluster.Cluster, cs kubernetes.Interface, ns string) {
	ctx := context.Background()
	d := simpleDeployment("held")
	d.Finalizers = []string{"example.com/hold"}
	created, err := cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := cs.AppsV1().Deployments(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: created.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := cs.AppsV1().Deployments(ns).Delete(ctx, "held", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := cs.AppsV1().Deployments(ns).Get(ctx, "held", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("a deleted object with a finalizer is gone: %v", err)
	}
	if got.DeletionTimestamp == nil || got.DeletionGracePeriodSeconds == nil || *got.DeletionGracePeriodSeconds != 0 {
		t.Errorf("marked object: deletionTimestamp %v deletionGracePeriodSeconds %v, want set and 0", got.DeletionTimestamp, got.DeletionGracePeriodSeconds)
	}
	if ev := nextNonBookmark(t, w); ev.Type != watch.Modified {
		t.Errorf("watch: %s, want MODIFIED for the deletion mark", describe(t, ev))
	}
	// A second delete changes nothing.
	if err := cs.AppsV1().Deployments(ns).Delete(ctx, "held", metav1.DeleteOptions{}); err != nil {
		t.Errorf("second delete: %v", err)
	}
	again, err := cs.AppsV1().Deployments(ns).Get(ctx, "held", metav1.GetOptions{})
	if err != nil || !again.DeletionTimestamp.Equal(got.DeletionTimestamp) {
		t.Errorf("second delete moved deletionTimestamp %v -> %v (%v)", got.DeletionTimestamp, again.DeletionTimestamp, err)
	}
	// No new finalizers on an object being deleted.
	_, err = cs.AppsV1().Deployments(ns).Patch(ctx, "held", types.JSONPatchType, []byte(`[{"op":"add","path":"/metadata/finalizers/-","value":"example.com/late"}]`), metav1.PatchOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "no new finalizers can be added if the object is being deleted") {
		t.Errorf("adding a finalizer while deleting: %v, want 422 no new finalizers", err)
	}
	// Spec changes are still allowed while finalizers hold it.
	if _, err := cs.AppsV1().Deployments(ns).Patch(ctx, "held", types.MergePatchType, []byte(`{"spec":{"replicas":3}}`), metav1.PatchOptions{}); err != nil {
		t.Errorf("updating an object being deleted: %v", err)
	}
	nextNonBookmark(t, w)
	last, err := cs.AppsV1().Deployments(ns).Patch(ctx, "held", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.AppsV1().Deployments(ns).Get(ctx, "held", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after the last finalizer went: %v, want NotFound", err)
	}
	ev := nextNonBookmark(t, w)
	if ev.Type != watch.Deleted {
		t.Errorf("watch: %s, want DELETED when the last finalizer goes", describe(t, ev))
	}
	if last != nil {
		// The patch that removed the last finalizer returns the object as it
		// was deleted.
		if len(last.Finalizers) != 0 || last.DeletionTimestamp == nil {
			t.Errorf("finalizer-removing patch returned %v %v", last.Finalizers, last.DeletionTimestamp)
		}
	}

	// Orphan and foreground propagation add their finalizers.
	for _, c := range []struct {
		policy    metav1.DeletionPropagation
		finalizer string
	}{{metav1.DeletePropagationOrphan, metav1.FinalizerOrphanDependents}, {metav1.DeletePropagationForeground, metav1.FinalizerDeleteDependents}} {
		name := "p-" + strings.ToLower(string(c.policy))
		if _, err := cs.AppsV1().Deployments(ns).Create(ctx, simpleDeployment(name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := cs.AppsV1().Deployments(ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &c.policy}); err != nil {
			t.Fatal(err)
		}
		got, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil || !slices.Equal(got.Finalizers, []string{c.finalizer}) || got.DeletionTimestamp == nil {
			t.Errorf("delete propagationPolicy=%s: %v finalizers %v deletionTimestamp %v", c.policy, err, got.Finalizers, got.DeletionTimestamp)
		}
	}
	// orphanDependents=false (the deprecated form) is Background.
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, simpleDeployment("bg"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bg := metav1.DeletePropagationBackground
	if err := cs.AppsV1().Deployments(ns).Delete(ctx, "bg", metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.AppsV1().Deployments(ns).Get(ctx, "bg", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("background delete: %v, want NotFound", err)
	}
}

// testFinalizerMarkBumpsGeneration: upstream bumps generation (when > 0)
// as it first sets deletionTimestamp on an object held by finalizers.
func testFinalizerMarkBumpsGeneration(t *testing.T, cs kubernetes.Interface, ns string) {
	ctx := context.Background()
	d := simpleDeployment("gen")
	d.Finalizers = []string{"example.com/hold"}
	created, err := cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.AppsV1().Deployments(ns).Delete(ctx, "gen", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := cs.AppsV1().Deployments(ns).Get(ctx, "gen", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Generation != created.Generation+1 {
		t.Errorf("generation %d after the deletion mark, want %d", got.Generation, created.Generation+1)
	}
}

// testBinding: binding an unscheduled pod sets spec.nodeName (a pod
// entering a spec.nodeName field-selector watch is ADDED for it); binding it
// again is a 409.
func testBinding(t *testing.T, _ *cluster.Cluster, cs kubernetes.Interface, ns string) {
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}
	created, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: created.ResourceVersion, FieldSelector: "spec.nodeName=node-a"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Target: corev1.ObjectReference{Kind: "Node", Name: "node-a"}}
	if err := cs.CoreV1().Pods(ns).Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("binding: %v", err)
	}
	bound, err := cs.CoreV1().Pods(ns).Get(ctx, "p", metav1.GetOptions{})
	if err != nil || bound.Spec.NodeName != "node-a" {
		t.Fatalf("bound pod: nodeName %q (%v)", bound.Spec.NodeName, err)
	}
	if got := describe(t, nextNonBookmark(t, w)); got != "ADDED p "+bound.ResourceVersion {
		t.Errorf("spec.nodeName=node-a watch: %q, want the binding as ADDED", got)
	}
	binding.Target.Name = "node-b"
	err = cs.CoreV1().Pods(ns).Bind(ctx, binding, metav1.CreateOptions{})
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), `pod p is already assigned to node "node-a"`) {
		t.Errorf("second binding: %v, want 409 already assigned to node \"node-a\"", err)
	}
	// spec.nodeName is immutable through the pod itself once set.
	_, err = cs.CoreV1().Pods(ns).Patch(ctx, "p", types.MergePatchType, []byte(`{"spec":{"nodeName":"node-b"}}`), metav1.PatchOptions{})
	if !apierrors.IsInvalid(err) {
		t.Errorf("changing spec.nodeName: %v, want 422", err)
	}
}

// testWatchFromZero: a watch from resourceVersion "0" starts with the
// current objects as ADDED, then follows changes.
func testWatchFromZero(t *testing.T, _ *cluster.Cluster, cs kubernetes.Interface, ns string) {
	ctx := context.Background()
	want := map[string]string{}
	for i := range 3 {
		cm := mustCreate(t, cs, ns, configMap(fmt.Sprintf("cm-%d", i), nil, "1"))
		want[cm.Name] = cm.ResourceVersion
	}
	w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	got := map[string]string{}
	for len(got) < len(want) {
		ev := nextNonBookmark(t, w)
		if ev.Type != watch.Added {
			t.Fatalf("watch from 0: %s before the current objects", describe(t, ev))
		}
		cm := ev.Object.(*corev1.ConfigMap)
		got[cm.Name] = cm.ResourceVersion
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("watch from 0: initial %v, want %v", got, want)
	}
	s := mustCreate(t, cs, ns, configMap("later", nil, "1"))
	if got := describe(t, nextNonBookmark(t, w)); got != "ADDED later "+s.ResourceVersion {
		t.Errorf("watch from 0 after the initial objects: %q", got)
	}
}

// testMetadataRules: what the server owns in metadata and how mismatches
// are refused.
func testMetadataRules(t *testing.T, _ *cluster.Cluster, cs kubernetes.Interface, ns string) {
	ctx := context.Background()
	cm := configMap("a", nil, "1")
	cm.UID = "client-chosen"
	cm.Generation = 7
	cm.CreationTimestamp = metav1.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	created, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.UID == "client-chosen" || created.UID == "" || created.CreationTimestamp.Year() == 2000 {
		t.Errorf("create kept client uid/creationTimestamp: %s %v", created.UID, created.CreationTimestamp)
	}
	// uid is immutable; creationTimestamp changes are ignored.
	upd := created.DeepCopy()
	upd.UID = "other"
	_, err = cs.CoreV1().ConfigMaps(ns).Update(ctx, upd, metav1.UpdateOptions{})
	if !apierrors.IsInvalid(err) && !apierrors.IsConflict(err) {
		t.Errorf("changing uid: %v, want a 422 or 409", err)
	}
	upd = created.DeepCopy()
	upd.CreationTimestamp = metav1.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	upd.Data["v"] = "2"
	after, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, upd, metav1.UpdateOptions{})
	if err != nil || !after.CreationTimestamp.Equal(&created.CreationTimestamp) {
		t.Errorf("update with another creationTimestamp: %v, kept %v want %v", err, after.CreationTimestamp, created.CreationTimestamp)
	}

	// Name and namespace must match the URL.
	raw := cs.CoreV1().RESTClient()
	res := raw.Put().Namespace(ns).Resource("configmaps").Name("a").Body([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"}}`)).SetHeader("Content-Type", "application/json").Do(ctx)
	if err := res.Error(); !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "the name of the object (b) does not match the name on the URL (a)") {
		t.Errorf("PUT with another name: %v", err)
	}
	res = raw.Post().Namespace(ns).Resource("configmaps").Body([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"elsewhere"}}`)).SetHeader("Content-Type", "application/json").Do(ctx)
	if err := res.Error(); !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "the namespace of the provided object does not match the namespace sent on the request") {
		t.Errorf("POST with another namespace: %v", err)
	}
	// generateName: the server picks a unique name with a 5-character suffix.
	seen := map[string]bool{}
	for range 20 {
		g, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "gen-"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(g.Name) != len("gen-")+5 || !strings.HasPrefix(g.Name, "gen-") || seen[g.Name] {
			t.Errorf("generateName gave %q", g.Name)
		}
		seen[g.Name] = true
	}
	// dryRun=All: validated and defaulted, not stored.
	dry, err := cs.AppsV1().Deployments(ns).Create(ctx, simpleDeployment("dry"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil || dry.Spec.Replicas == nil || *dry.Spec.Replicas != 1 {
		t.Errorf("dry-run create: %v, replicas %v (want the default 1)", err, dry.Spec.Replicas)
	}
	if _, err := cs.AppsV1().Deployments(ns).Get(ctx, "dry", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after a dry-run create: %v, want NotFound", err)
	}
	if err := cs.CoreV1().ConfigMaps(ns).Delete(ctx, "a", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Errorf("dry-run delete: %v", err)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "a", metav1.GetOptions{}); err != nil {
		t.Errorf("after a dry-run delete: %v", err)
	}
}

// testBadRequests: malformed selectors, resourceVersions and bodies are 4xx
// Status errors.
func testBadRequests(t *testing.T, _ *cluster.Cluster, cs kubernetes.Interface, ns string) {
	ctx := context.Background()
	_, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "a in (b"})
	if !apierrors.IsBadRequest(err) {
		t.Errorf("bad label selector: %v, want 400", err)
	}
	_, err = cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.nosuch=x"})
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), `field label not supported: spec.nosuch`) {
		t.Errorf("unsupported field selector: %v, want 400 field label not supported", err)
	}
	_, err = cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{ResourceVersion: "0", ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	if !apierrors.IsBadRequest(err) && !apierrors.IsInvalid(err) {
		t.Errorf("exact match at resourceVersion 0: %v, want a 4xx", err)
	}
	_, err = cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{Continue: "not-a-token"})
	if !apierrors.IsBadRequest(err) {
		t.Errorf("bad continue token: %v, want 400", err)
	}
	raw := cs.CoreV1().RESTClient()
	for _, body := range []string{`{"apiVersion":"v1","kind":"ConfigMap",`, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"}}`, `{"apiVersion":"v9","kind":"ConfigMap","metadata":{"name":"x"}}`} {
		err := raw.Post().Namespace(ns).Resource("configmaps").Body([]byte(body)).SetHeader("Content-Type", "application/json").Do(ctx).Error()
		var se apierrors.APIStatus
		if !errors.As(err, &se) || se.Status().Code < 400 || se.Status().Code >= 500 {
			t.Errorf("POST %s: %v, want a 4xx Status", body, err)
		}
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "x", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a refused body left an object: %v", err)
	}
}

// testProtobuf: create, update, list and watch with protobuf bodies.
func testProtobuf(t *testing.T, c *cluster.Cluster, _ kubernetes.Interface, ns string) {
	ctx := context.Background()
	cfg := rest.CopyConfig(c.AdminConfig)
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf"
	cfg.QPS, cfg.Burst = 1000, 1000
	cs := mustClient(t, cfg)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"a": "b"}}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}
	created, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("protobuf create: %v", err)
	}
	if created.Spec.RestartPolicy != corev1.RestartPolicyAlways || created.Spec.Containers[0].TerminationMessagePath == "" {
		t.Errorf("protobuf create: defaults missing: %+v", created.Spec)
	}
	w, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: created.ResourceVersion, LabelSelector: "a=b"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	created.Labels["x"] = "y"
	upd, err := cs.CoreV1().Pods(ns).Update(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("protobuf update: %v", err)
	}
	if got := describe(t, nextNonBookmark(t, w)); got != "MODIFIED p "+upd.ResourceVersion {
		t.Errorf("protobuf watch: %q", got)
	}
	list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 || list.Items[0].Labels["x"] != "y" {
		t.Errorf("protobuf list: %v %v", err, list)
	}
	_, err = cs.CoreV1().Pods(ns).Get(ctx, "missing", metav1.GetOptions{})
	if !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), `pods "missing" not found`) {
		t.Errorf("protobuf NotFound: %v", err)
	}
}

// testDeleteCollection: deletecollection with a label selector deletes
// exactly the matching objects; watchers see each DELETED.
func testDeleteCollection(t *testing.T, _ *cluster.Cluster, cs kubernetes.Interface, ns string) {
	ctx := context.Background()
	var last string
	for i := range 6 {
		team := "red"
		if i%2 == 1 {
			team = "blue"
		}
		last = mustCreate(t, cs, ns, configMap(fmt.Sprintf("cm-%d", i), map[string]string{"team": team}, "1")).ResourceVersion
	}
	w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: last})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := cs.CoreV1().ConfigMaps(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "team=red"}); err != nil {
		t.Fatal(err)
	}
	var deleted []string
	for range 3 {
		ev := nextNonBookmark(t, w)
		if ev.Type != watch.Deleted {
			t.Fatalf("after deletecollection: %s", describe(t, ev))
		}
		deleted = append(deleted, ev.Object.(*corev1.ConfigMap).Name)
	}
	slices.Sort(deleted)
	if !slices.Equal(deleted, []string{"cm-0", "cm-2", "cm-4"}) {
		t.Errorf("deleted %v", deleted)
	}
	list, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, cm := range list.Items {
		left = append(left, cm.Name)
	}
	if !slices.Equal(left, []string{"cm-1", "cm-3", "cm-5"}) {
		t.Errorf("left %v", left)
	}
}

// testNoopWrites: an update or patch that changes nothing writes nothing:
// same resourceVersion, no watch event.
func testNoopWrites(t *testing.T, _ *cluster.Cluster, cs kubernetes.Interface, ns string) {
	ctx := context.Background()
	cm := mustCreate(t, cs, ns, configMap("a", map[string]string{"k": "v"}, "1"))
	w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: cm.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	upd, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
	if err != nil || upd.ResourceVersion != cm.ResourceVersion {
		t.Errorf("no-op update: %v, resourceVersion %s -> %s", err, cm.ResourceVersion, upd.ResourceVersion)
	}
	p := mustPatch(t, cs, ns, "a", `{"metadata":{"labels":{"k":"v"}}}`)
	if p.ResourceVersion != cm.ResourceVersion {
		t.Errorf("no-op patch: resourceVersion %s -> %s", cm.ResourceVersion, p.ResourceVersion)
	}
	s := mustCreate(t, cs, ns, configMap("sentinel", nil, "1"))
	if got := describe(t, nextNonBookmark(t, w)); got != "ADDED sentinel "+s.ResourceVersion {
		t.Errorf("watch after no-op writes: %q, want only the sentinel", got)
	}
}

// testScaleSubresource: GET and UPDATE of deployments/scale and
// replicasets/scale (autoscaling/v1 Scale with the selector as a string).
func testScaleSubresource(t *testing.T, _ *cluster.Cluster, cs kubernetes.Interface, ns string) {
	ctx := context.Background()
	d, err := cs.AppsV1().Deployments(ns).Create(ctx, simpleDeployment("web"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := cs.AppsV1().Deployments(ns).GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sc.Spec.Replicas != 1 || sc.Status.Selector != "app=web" || sc.Name != "web" || sc.ResourceVersion != d.ResourceVersion || sc.UID != d.UID {
		t.Errorf("deployment scale: %+v", sc)
	}
	sc.Spec.Replicas = 4
	out, err := cs.AppsV1().Deployments(ns).UpdateScale(ctx, "web", sc, metav1.UpdateOptions{})
	if err != nil || out.Spec.Replicas != 4 {
		t.Fatalf("update scale: %v %+v", err, out)
	}
	got, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil || *got.Spec.Replicas != 4 || got.Generation != d.Generation+1 {
		t.Errorf("after scale: replicas %v generation %d (%v)", got.Spec.Replicas, got.Generation, err)
	}
	// A stale scale is a Conflict.
	sc.Spec.Replicas = 5
	if _, err := cs.AppsV1().Deployments(ns).UpdateScale(ctx, "web", sc, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("stale scale update: %v, want Conflict", err)
	}
	sc.Spec.Replicas = -1
	sc.ResourceVersion = ""
	if _, err := cs.AppsV1().Deployments(ns).UpdateScale(ctx, "web", sc, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("negative scale: %v, want 422", err)
	}
}
