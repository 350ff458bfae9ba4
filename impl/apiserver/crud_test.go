package apiserver_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func configMap(ns, name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}
}

func TestSystemNamespacesCreated(t *testing.T) {
	e := newEnv(t, nil)
	for _, n := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
		ns, err := e.cs.CoreV1().Namespaces().Get(ctx(t), n, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("namespace %s: %v", n, err)
		}
		if ns.Status.Phase != corev1.NamespaceActive || ns.UID == "" || ns.CreationTimestamp.IsZero() {
			t.Errorf("namespace %s: phase %q uid %q created %v", n, ns.Status.Phase, ns.UID, ns.CreationTimestamp)
		}
	}
}

func TestConfigMapCRUDWithClientGo(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	cms := e.cs.CoreV1().ConfigMaps("default")
	created, err := cms.Create(c, configMap("", "a", map[string]string{"k": "v"}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.UID == "" || created.ResourceVersion == "" || created.CreationTimestamp.IsZero() || created.Namespace != "default" {
		t.Fatalf("system fields not set: %+v", created.ObjectMeta)
	}
	if _, err := cms.Create(c, configMap("", "a", nil), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("second create: want AlreadyExists, got %v", err)
	}
	got, err := cms.Get(c, "a", metav1.GetOptions{})
	if err != nil || got.Data["k"] != "v" || got.ResourceVersion != created.ResourceVersion {
		t.Fatalf("get: %v %+v", err, got)
	}

	// update with the current resourceVersion succeeds and moves it.
	got.Data["k"] = "v2"
	updated, err := cms.Update(c, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if updated.ResourceVersion == got.ResourceVersion || updated.UID != created.UID {
		t.Fatalf("update: rv %s -> %s, uid %s", got.ResourceVersion, updated.ResourceVersion, updated.UID)
	}
	// a stale one is a Conflict with kube-apiserver's message.
	got.Data["k"] = "stale"
	_, err = cms.Update(c, got, metav1.UpdateOptions{})
	if !apierrors.IsConflict(err) || err.Error() != `Operation cannot be fulfilled on configmaps "a": the object has been modified; please apply your changes to the latest version and try again` {
		t.Fatalf("stale update: %v", err)
	}
	// an empty resourceVersion is an unconditional update for configmaps.
	uncond := configMap("default", "a", map[string]string{"k": "v3"})
	if _, err := cms.Update(c, uncond, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("unconditional update: %v", err)
	}

	// the three patch types.
	p, err := cms.Patch(c, "a", types.MergePatchType, []byte(`{"data":{"m":"1"}}`), metav1.PatchOptions{})
	if err != nil || p.Data["m"] != "1" || p.Data["k"] != "v3" {
		t.Fatalf("merge patch: %v %v", err, p)
	}
	p, err = cms.Patch(c, "a", types.StrategicMergePatchType, []byte(`{"data":{"s":"2"}}`), metav1.PatchOptions{})
	if err != nil || p.Data["s"] != "2" {
		t.Fatalf("strategic patch: %v %v", err, p)
	}
	p, err = cms.Patch(c, "a", types.JSONPatchType, []byte(`[{"op":"remove","path":"/data/m"},{"op":"add","path":"/data/j","value":"3"}]`), metav1.PatchOptions{})
	if err != nil || p.Data["j"] != "3" || p.Data["m"] != "" {
		t.Fatalf("json patch: %v %v", err, p)
	}
	// a patch carrying a stale resourceVersion is a Conflict.
	_, err = cms.Patch(c, "a", types.MergePatchType, []byte(`{"metadata":{"resourceVersion":"`+created.ResourceVersion+`"},"data":{"x":"y"}}`), metav1.PatchOptions{})
	if !apierrors.IsConflict(err) {
		t.Fatalf("stale patch: %v", err)
	}
	// a failing JSON patch test op is 422.
	_, err = cms.Patch(c, "a", types.JSONPatchType, []byte(`[{"op":"test","path":"/data/j","value":"nope"}]`), metav1.PatchOptions{})
	if !apierrors.IsInvalid(err) && apierrors.ReasonForError(err) != "" && apierrors.APIStatus(nil) == nil {
		t.Fatalf("json patch test op: %v", err)
	}
	if se, ok := err.(apierrors.APIStatus); !ok || se.Status().Code != http.StatusUnprocessableEntity {
		t.Fatalf("json patch test op: want 422, got %v", err)
	}

	list, err := cms.List(c, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 || list.ResourceVersion == "" {
		t.Fatalf("list: %v %+v", err, list)
	}
	if err := cms.Delete(c, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Get(c, "a", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("after delete: %v", err)
	}
	if err := cms.Delete(c, "a", metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("second delete: %v", err)
	}
}

func TestDeleteReturnsStatusAndPreconditions(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	cm, err := e.cs.CoreV1().ConfigMaps("default").Create(c, configMap("", "p", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wrong := types.UID("not-the-uid")
	err = e.cs.CoreV1().ConfigMaps("default").Delete(c, "p", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &wrong}})
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "the UID in the precondition (not-the-uid) does not match the UID in record") {
		t.Fatalf("uid precondition: %v", err)
	}
	staleRV := "1"
	err = e.cs.CoreV1().ConfigMaps("default").Delete(c, "p", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &staleRV}})
	if !apierrors.IsConflict(err) {
		t.Fatalf("rv precondition: %v", err)
	}
	r := e.do("DELETE", "/api/v1/namespaces/default/configmaps/p", []byte(`{"kind":"DeleteOptions","apiVersion":"v1","preconditions":{"uid":"`+string(cm.UID)+`"}}`))
	if r.code != http.StatusOK {
		t.Fatalf("delete: %d %s", r.code, r.body)
	}
	st := r.status(t)
	if st.Status != metav1.StatusSuccess || st.Details == nil || st.Details.Name != "p" || st.Details.Kind != "configmaps" || st.Details.UID != cm.UID {
		t.Fatalf("delete status: %s", r.body)
	}
}

func TestDeleteCollection(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	for _, n := range []string{"a", "b", "c"} {
		cm := configMap("", n, nil)
		if n != "c" {
			cm.Labels = map[string]string{"del": "yes"}
		}
		if _, err := e.cs.CoreV1().ConfigMaps("default").Create(c, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.cs.CoreV1().ConfigMaps("default").DeleteCollection(c, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "del=yes"}); err != nil {
		t.Fatal(err)
	}
	list, err := e.cs.CoreV1().ConfigMaps("default").List(c, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != "c" {
		t.Fatalf("after deletecollection: %v %v", err, list.Items)
	}
}

func TestGenerateName(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	seen := map[string]bool{}
	for range 20 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "gen-"}}
		out, err := e.cs.CoreV1().ConfigMaps("default").Create(c, cm, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(out.Name, "gen-") || len(out.Name) != len("gen-")+5 || seen[out.Name] {
			t.Fatalf("generated name %q", out.Name)
		}
		seen[out.Name] = true
	}
}

func TestDryRun(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	cms := e.cs.CoreV1().ConfigMaps("default")
	out, err := cms.Create(c, configMap("", "dry", map[string]string{"a": "b"}), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil || out.Name != "dry" || out.UID == "" {
		t.Fatalf("dry-run create: %v %+v", err, out)
	}
	if _, err := cms.Get(c, "dry", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("dry-run create wrote: %v", err)
	}
	if _, err := cms.Create(c, configMap("", "real", map[string]string{"a": "b"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Patch(c, "real", types.MergePatchType, []byte(`{"data":{"a":"changed"}}`), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(c, "real", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatal(err)
	}
	got, err := cms.Get(c, "real", metav1.GetOptions{})
	if err != nil || got.Data["a"] != "b" {
		t.Fatalf("dry-run patch/delete wrote: %v %+v", err, got)
	}
	r := e.do("POST", "/api/v1/namespaces/default/configmaps?dryRun=Sometimes", []byte(`{"metadata":{"name":"x"}}`))
	expectStatus(t, r, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, "dryRun")
}

func TestFieldValidation(t *testing.T) {
	e := newEnv(t, nil)
	body := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fv"},"data":{"a":"b"},"bogus":1}`)
	r := e.do("POST", "/api/v1/namespaces/default/configmaps?fieldValidation=Strict", body)
	expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest, `strict decoding error: unknown field "bogus"`)
	dup := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fv","name":"fv2"}}`)
	r = e.do("POST", "/api/v1/namespaces/default/configmaps?fieldValidation=Strict", dup)
	expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest, `duplicate field "metadata.name"`)

	r = e.do("POST", "/api/v1/namespaces/default/configmaps?fieldValidation=Warn", body)
	if r.code != http.StatusCreated || !strings.Contains(r.header.Get("Warning"), `unknown field \"bogus\"`) {
		t.Fatalf("warn: %d %q %s", r.code, r.header.Get("Warning"), r.body)
	}
	body = []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fv3"},"bogus":1}`)
	r = e.do("POST", "/api/v1/namespaces/default/configmaps?fieldValidation=Ignore", body)
	if r.code != http.StatusCreated || r.header.Get("Warning") != "" {
		t.Fatalf("ignore: %d %q", r.code, r.header.Get("Warning"))
	}
	var cm corev1.ConfigMap
	if err := json.Unmarshal(r.body, &cm); err != nil || cm.Name != "fv3" || cm.Kind != "ConfigMap" || cm.APIVersion != "v1" {
		t.Fatalf("created body: %v %s", err, r.body)
	}
	// patches are checked too: as kube-apiserver, an unknown field in a
	// patched object is a 422 on the field "patch".
	r = e.do("PATCH", "/api/v1/namespaces/default/configmaps/fv3?fieldValidation=Strict", []byte(`{"spec":{"x":1}}`), "Content-Type", "application/merge-patch+json")
	expectStatus(t, r, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, `strict decoding error: unknown field "spec"`)
}

func TestYAMLBody(t *testing.T) {
	e := newEnv(t, nil)
	body := []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: yml\ndata:\n  a: b\n")
	r := e.do("POST", "/api/v1/namespaces/default/configmaps", body, "Content-Type", "application/yaml", "Accept", "application/yaml")
	if r.code != http.StatusCreated || !strings.Contains(string(r.body), "name: yml") || r.header.Get("Content-Type") != "application/yaml" {
		t.Fatalf("yaml create: %d %q %s", r.code, r.header.Get("Content-Type"), r.body)
	}
	r = e.do("POST", "/api/v1/namespaces/default/configmaps", []byte("a: [b"), "Content-Type", "application/yaml")
	expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest, "")
}

// An object left with only the orphan finalizer by an Orphan delete goes
// when deleted again with Background propagation: the finalizer is
// removed and the object deleted, as kube-apiserver does (found by
// FuzzHTTP: the finalizer change was dropped and the delete answered 409).
func TestDeleteAgainWithBackgroundRemovesOrphanFinalizer(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	cms := e.cs.CoreV1().ConfigMaps("default")
	if _, err := cms.Create(c, configMap("", "o", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	orphan, background := metav1.DeletePropagationOrphan, metav1.DeletePropagationBackground
	if err := cms.Delete(c, "o", metav1.DeleteOptions{PropagationPolicy: &orphan}); err != nil {
		t.Fatal(err)
	}
	got, err := cms.Get(c, "o", metav1.GetOptions{})
	if err != nil || got.DeletionTimestamp == nil || len(got.Finalizers) != 1 || got.Finalizers[0] != metav1.FinalizerOrphanDependents {
		t.Fatalf("after the orphan delete: %v %+v", err, got)
	}
	if err := cms.Delete(c, "o", metav1.DeleteOptions{PropagationPolicy: &background}); err != nil {
		t.Fatalf("background delete of the marked object: %v", err)
	}
	if _, err := cms.Get(c, "o", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("after the background delete: %v, want NotFound", err)
	}
}

// As kube-apiserver (kubernetes/kubernetes#113847): a create's
// resourceVersion that is 0 or not an unsigned number is ignored; another
// number is refused.
func TestCreateIgnoresResourceVersionNotANumber(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	cms := e.cs.CoreV1().ConfigMaps("default")
	for i, rv := range []string{"0", "-1", "x"} {
		cm := configMap("", fmt.Sprintf("rv-%d", i), nil)
		cm.ResourceVersion = rv
		out, err := cms.Create(c, cm, metav1.CreateOptions{})
		if err != nil || out.ResourceVersion == rv {
			t.Fatalf("create with resourceVersion %q: %v %+v", rv, err, out)
		}
	}
	cm := configMap("", "rv-5", nil)
	cm.ResourceVersion = "5"
	if _, err := cms.Create(c, cm, metav1.CreateOptions{}); err == nil {
		t.Fatal("create with resourceVersion 5 succeeded")
	}
}

// As kube-apiserver, whose dry-run store answers a create without its
// storage's resourceVersion check: a dry run of a create carrying a
// resourceVersion that is a number other than 0 is accepted (a real one is
// refused), and writes nothing.
func TestDryRunCreateDoesNotCheckResourceVersion(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	cms := e.cs.CoreV1().ConfigMaps("default")
	cm := configMap("", "rv-dry", nil)
	cm.ResourceVersion = "5"
	if _, err := cms.Create(c, cm, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatalf("dry-run create with resourceVersion 5: %v", err)
	}
	if _, err := cms.Get(c, "rv-dry", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("after the dry run: %v, want NotFound", err)
	}
	if _, err := cms.Create(c, cm, metav1.CreateOptions{}); !apierrors.IsBadRequest(err) {
		t.Fatalf("create with resourceVersion 5: %v, want a 400", err)
	}
}
