package apiserver_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/apiserver/admission"
)

// TestRuntimeClassesThroughClientGo: node.k8s.io/v1 RuntimeClasses are
// served and stored under /registry/runtimeclasses/<name>, and the
// RuntimeClass admission plugin applies a class to the pods created with
// it, as kube-apiserver 1.37.
func TestRuntimeClassesThroughClientGo(t *testing.T) {
	if testing.Short() {
		t.Skip("API server on embedded etcd: skipped with -short")
	}
	e := newEnv(t, func(c *apiserver.Config) {
		c.Plugins = func(stores apiserver.StoreGetter) (apiserver.Plugins, error) {
			m, v, s, err := admission.NewPlugins([]string{"RuntimeClass"}, stores)
			return apiserver.Plugins{Mutators: m, Validators: v, Starters: s}, err
		}
	})
	c := ctx(t)
	rcs := e.cs.NodeV1().RuntimeClasses()
	rc, err := rcs.Create(c, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "gvisor"}, Handler: "runsc",
		Overhead: &nodev1.Overhead{PodFixed: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("120Mi")}},
		Scheduling: &nodev1.Scheduling{NodeSelector: map[string]string{"sandbox": "gvisor"},
			Tolerations: []corev1.Toleration{{Key: "sandbox", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a RuntimeClass: %v", err)
	}

	// Stored where kube-apiserver stores it, as protobuf.
	resp, err := etcdServer.Client().Get(c, e.prefix+"/runtimeclasses/gvisor")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("etcd key %s/runtimeclasses/gvisor: %v %v", e.prefix, resp, err)
	}
	stored, _, err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Decode(resp.Kvs[0].Value, nil, nil)
	if s, ok := stored.(*nodev1.RuntimeClass); err != nil || !ok || s.Handler != "runsc" {
		t.Fatalf("stored %T %v", stored, err)
	}

	// kubectl get's table.
	r := e.do("GET", "/apis/node.k8s.io/v1/runtimeclasses", nil, "Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	var table metav1.Table
	if err := json.Unmarshal(r.body, &table); err != nil || r.code != 200 {
		t.Fatalf("table %d %s", r.code, r.body)
	}
	var cols []string
	for _, col := range table.ColumnDefinitions {
		cols = append(cols, col.Name)
	}
	if strings.Join(cols, ",") != "Name,Handler,Age" || len(table.Rows) != 1 || table.Rows[0].Cells[0] != "gvisor" || table.Rows[0].Cells[1] != "runsc" {
		t.Fatalf("table %v %+v", cols, table.Rows)
	}

	// The handler is immutable, and an update names the version it read.
	changed := rc.DeepCopy()
	changed.Handler = "kata"
	_, err = rcs.Update(c, changed, metav1.UpdateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `RuntimeClass.node.k8s.io "gvisor" is invalid: handler: Invalid value: null: field is immutable`) {
		t.Fatalf("handler change: %v", err)
	}
	unversioned := rc.DeepCopy()
	unversioned.ResourceVersion = ""
	unversioned.Labels = map[string]string{"a": "b"}
	_, err = rcs.Update(c, unversioned, metav1.UpdateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `runtimeclasses.node.k8s.io "gvisor" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update`) {
		t.Fatalf("update without resourceVersion: %v", err)
	}
	// A PUT of a missing class creates it.
	if _, err := rcs.Update(c, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "runc"}, Handler: "runc"}, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("create by update: %v", err)
	}

	ns := "rc-test"
	if _, err := e.cs.CoreV1().Namespaces().Create(c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := func(name, class string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"zone": "a"},
			Containers:   []corev1.Container{{Name: "c", Image: "busybox"}}}}
		if class != "" {
			p.Spec.RuntimeClassName = &class
		}
		return p
	}
	pods := e.cs.CoreV1().Pods(ns)
	_, err = pods.Create(c, pod("lost", "missing"), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || err.Error() != `pods "lost" is forbidden: pod rejected: RuntimeClass "missing" not found` {
		t.Fatalf("pod with a missing class: %v", err)
	}

	p, err := pods.Create(c, pod("sandboxed", "gvisor"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("pod with a class: %v", err)
	}
	if cpu, mem := p.Spec.Overhead[corev1.ResourceCPU], p.Spec.Overhead[corev1.ResourceMemory]; len(p.Spec.Overhead) != 2 || cpu.String() != "250m" || mem.String() != "120Mi" {
		t.Errorf("overhead %v", p.Spec.Overhead)
	}
	if p.Spec.NodeSelector["sandbox"] != "gvisor" || p.Spec.NodeSelector["zone"] != "a" {
		t.Errorf("node selector %v", p.Spec.NodeSelector)
	}
	if len(p.Spec.Tolerations) != 1 || p.Spec.Tolerations[0].Key != "sandbox" {
		t.Errorf("tolerations %+v", p.Spec.Tolerations)
	}
	// Updates are not admitted again: a label update keeps the pod as is.
	p.Labels = map[string]string{"updated": "yes"}
	if p, err = pods.Update(c, p, metav1.UpdateOptions{}); err != nil || len(p.Spec.Overhead) != 2 {
		t.Fatalf("label update: %v %v", err, p.Spec.Overhead)
	}

	// A pod may not bring its own overhead, nor one other than its class's.
	own := pod("own", "")
	own.Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	_, err = pods.Create(c, own, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead") {
		t.Fatalf("pod with its own overhead: %v", err)
	}
	other := pod("other", "gvisor")
	other.Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	_, err = pods.Create(c, other, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead") {
		t.Fatalf("pod with another overhead: %v", err)
	}
	conflict := pod("conflict", "gvisor")
	conflict.Spec.NodeSelector["sandbox"] = "kata"
	_, err = pods.Create(c, conflict, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "conflict: runtimeClass.scheduling.nodeSelector[sandbox] = gvisor; pod.spec.nodeSelector[sandbox] = kata") {
		t.Fatalf("pod with a conflicting selector: %v", err)
	}
	// Admission runs before validation: an invalid class name is not
	// found, as upstream. An empty one is validation's 422 (kube-apiserver:
	// a 500 from its failed lookup of ""; bad input is never a 5xx here).
	_, err = pods.Create(c, pod("bad", "Bad_Name"), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `pod rejected: RuntimeClass "Bad_Name" not found`) {
		t.Fatalf("pod with an invalid class name: %v", err)
	}
	empty := pod("empty", "")
	empty.Spec.RuntimeClassName = new(string)
	_, err = pods.Create(c, empty, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.runtimeClassName: Invalid value") {
		t.Fatalf("pod with an empty class name: %v", err)
	}

	// A class created now is found at once (a cache miss is confirmed
	// with a quorum read), and one deleted is refused once the plugin
	// sees it gone.
	if _, err := rcs.Create(c, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "kata"}, Handler: "kata"}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Create(c, pod("kata", "kata"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("pod with a class just created: %v", err)
	}
	if err := rcs.Delete(c, "kata", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := pods.Create(context.Background(), pod("gone", "kata"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if apierrors.IsForbidden(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a deleted class still admitted: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
