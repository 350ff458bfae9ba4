package endpoints

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubeproof/kubeproof/impl/apiserver/codec"
	"github.com/kubeproof/kubeproof/impl/registry"
	"github.com/kubeproof/kubeproof/impl/storage"
)

// memStore is an in-memory storage.Interface with etcd3's write semantics
// (create only if absent, compare-and-swap updates, no write when nothing
// changed), enough for the write handlers.
type memStore struct {
	mu   sync.Mutex
	rev  int64
	objs map[string]runtime.Object
	new  func() runtime.Object
}

func newMemStore(newFunc func() runtime.Object) *memStore {
	return &memStore{objs: map[string]runtime.Object{}, new: newFunc}
}

func setInto(out, obj runtime.Object) {
	reflect.ValueOf(out).Elem().Set(reflect.ValueOf(obj.DeepCopyObject()).Elem())
}

func (s *memStore) put(key string, obj runtime.Object) runtime.Object {
	s.rev++
	obj = obj.DeepCopyObject()
	accessor(obj).SetResourceVersion(strconv.FormatInt(s.rev, 10))
	s.objs[key] = obj
	return obj
}

func (s *memStore) Create(_ context.Context, key string, obj, out runtime.Object) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.objs[key]; ok {
		return storage.NewError(storage.ErrCodeKeyExists, key, 0, "", nil)
	}
	setInto(out, s.put(key, obj))
	return nil
}

func (s *memStore) Get(_ context.Context, key string, opts storage.GetOptions, out runtime.Object) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	obj, ok := s.objs[key]
	if !ok {
		return storage.NewError(storage.ErrCodeKeyNotFound, key, 0, "", nil)
	}
	setInto(out, obj)
	return nil
}

func (s *memStore) GuaranteedUpdate(_ context.Context, key string, dest runtime.Object, ignoreNotFound bool,
	pre *storage.Preconditions, try storage.UpdateFunc) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.objs[key]
	if !ok {
		return storage.NewError(storage.ErrCodeKeyNotFound, key, 0, "", nil)
	}
	obj, err := try(cur.DeepCopyObject())
	if err != nil {
		return err
	}
	if equality.Semantic.DeepEqual(withoutKind(obj), withoutKind(cur)) {
		setInto(dest, cur)
		return nil
	}
	setInto(dest, s.put(key, obj))
	return nil
}

func withoutKind(obj runtime.Object) runtime.Object {
	obj = obj.DeepCopyObject()
	obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	return obj
}

func (s *memStore) Delete(_ context.Context, key string, out runtime.Object, _ *storage.Preconditions, _ storage.ValidateObjectFunc) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	obj, ok := s.objs[key]
	if !ok {
		return storage.NewError(storage.ErrCodeKeyNotFound, key, 0, "", nil)
	}
	delete(s.objs, key)
	setInto(out, obj)
	return nil
}

func (s *memStore) GetList(context.Context, string, storage.ListOptions, runtime.Object) error {
	return errors.New("memStore: no lists")
}

func (s *memStore) Watch(context.Context, string, storage.ListOptions) (watch.Interface, error) {
	return nil, errors.New("memStore: no watches")
}

// servedHandler is the handler of a registry resource on a memStore.
func servedHandler(t testing.TB, resourceName string) (*Handler, *memStore) {
	t.Helper()
	c, err := codec.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range registry.All() {
		if res.Name == resourceName && res.SharedStorage == nil {
			store := newMemStore(res.New)
			return NewHandler(res, store, "/"+res.Name, &Options{Codecs: c}), store
		}
	}
	t.Fatalf("no resource %s", resourceName)
	return nil, nil
}

type reply struct {
	code    int
	body    []byte
	warning string // the first Warning header
	// warnings are all the Warning headers, in order.
	warnings []string
}

func do(h *Handler, method, path, contentType, body string) reply {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	r.Header.Set("User-Agent", "tester/1.0 (linux)")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return reply{code: w.Code, body: w.Body.Bytes(), warning: w.Header().Get("Warning"), warnings: w.Header().Values("Warning")}
}

func (r reply) status(t *testing.T) metav1.Status {
	t.Helper()
	var st metav1.Status
	if err := json.Unmarshal(r.body, &st); err != nil || st.Kind != "Status" {
		t.Fatalf("not a Status (%v): %s", err, r.body)
	}
	return st
}

func (r reply) deployment(t *testing.T) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := json.Unmarshal(r.body, d); err != nil || d.Kind != "Deployment" {
		t.Fatalf("not a Deployment (%v): %s", err, r.body)
	}
	return d
}

// managers renders an object's managed fields as
// "manager/operation[/subresource]" keys.
func managers(m metav1.Object) map[string]string {
	out := map[string]string{}
	for _, e := range m.GetManagedFields() {
		k := e.Manager + "/" + string(e.Operation)
		if e.Subresource != "" {
			k += "/" + e.Subresource
		}
		out[k] = string(e.FieldsV1.Raw)
	}
	return out
}

const (
	applyType = "application/apply-patch+yaml"
	mergeType = "application/merge-patch+json"
	deps      = "/apis/apps/v1/namespaces/ns/deployments"
)

func webConfig(replicas, image string) string {
	return `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","labels":{"app":"web"}},
"spec":{"replicas":` + replicas + `,"selector":{"matchLabels":{"app":"web"}},
"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"` + image + `"}]}}}}`
}

func TestServerSideApplyThroughHandler(t *testing.T) {
	h, store := servedHandler(t, "deployments")

	// Bad requests first: nothing is written.
	bad := []struct {
		name, method, path, ctype, body string
		code                            int
		msg                             string
	}{
		{"apply needs a field manager", "PATCH", deps + "/web", applyType, webConfig("1", "nginx"), 422, "fieldManager: Required value: is required for apply patch"},
		{"force only for apply", "PATCH", deps + "/web?force=true&fieldManager=x", mergeType, `{}`, 422, "force: Forbidden: may not be specified for non-apply patch"},
		{"bad force", "PATCH", deps + "/web?force=maybe&fieldManager=x", applyType, webConfig("1", "nginx"), 400, "invalid value for force"},
		{"field manager too long", "PATCH", deps + "/web?fieldManager=" + strings.Repeat("m", 129), applyType, webConfig("1", "nginx"), 422, "fieldManager: Too long"},
		{"unprintable field manager", "PUT", deps + "/web?fieldManager=a%07b", "application/json", webConfig("1", "nginx"), 422, "fieldManager: Invalid value"},
		{"CBOR apply is not served", "PATCH", deps + "/web?fieldManager=x", "application/apply-patch+cbor", "\xa0", 415, "application/apply-patch+yaml"},
		{"name differs from the URL", "PATCH", deps + "/other?fieldManager=x", applyType, webConfig("1", "nginx"), 400, "does not match the name on the URL"},
		{"unknown field", "PATCH", deps + "/web?fieldManager=x", applyType, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"frob":1}}`, 400, "field not declared in schema"},
		{"duplicate field under Strict", "PATCH", deps + "/web?fieldManager=x&fieldValidation=Strict", applyType, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nmetadata: {name: web}\n", 400, "error strict decoding YAML"},
		{"invalid result", "PATCH", deps + "/web?fieldManager=x", applyType, webConfig("-1", "nginx"), 422, "spec.replicas"},
		{"merge patch does not create", "PATCH", deps + "/web?fieldManager=x", mergeType, `{"spec":{"replicas":1}}`, 404, "not found"},
		{"PUT does not create deployments", "PUT", deps + "/web", "application/json", webConfig("1", "nginx"), 404, "not found"},
		{"apply to /scale of a missing object", "PATCH", deps + "/web/scale?fieldManager=x", applyType, `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"web"},"spec":{"replicas":1}}`, 404, "not found"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			r := do(h, c.method, c.path, c.ctype, c.body)
			if r.code != c.code || !strings.Contains(r.status(t).Message, c.msg) {
				t.Fatalf("got %d %s, want %d %q", r.code, r.body, c.code, c.msg)
			}
		})
	}
	if len(store.objs) != 0 {
		t.Fatalf("bad requests wrote %v", store.objs)
	}

	// A dry-run apply answers what it would create and writes nothing.
	if r := do(h, "PATCH", deps+"/web?fieldManager=alice&dryRun=All", applyType, webConfig("2", "nginx")); r.code != 201 || len(store.objs) != 0 {
		t.Fatalf("dry run: %d %s, stored %d", r.code, r.body, len(store.objs))
	} else if _, ok := managers(r.deployment(t))["alice/Apply"]; !ok {
		t.Fatalf("dry run answer lacks the apply entry: %s", r.body)
	}

	// Apply creates (201), with defaults and the applier's entry.
	r := do(h, "PATCH", deps+"/web?fieldManager=alice", applyType, webConfig("2", "nginx"))
	if r.code != 201 {
		t.Fatalf("apply create: %d %s", r.code, r.body)
	}
	d := r.deployment(t)
	if d.UID == "" || d.Namespace != "ns" || d.Generation != 1 || d.Spec.RevisionHistoryLimit == nil || d.Spec.Template.Spec.Containers[0].TerminationMessagePath == "" {
		t.Fatalf("created %+v", d)
	}
	if m := managers(d); len(m) != 1 || !strings.Contains(m["alice/Apply"], `"f:replicas"`) {
		t.Fatalf("managers after create: %v", m)
	}
	rv := d.ResourceVersion

	// Applying the same configuration again writes nothing.
	if r := do(h, "PATCH", deps+"/web?fieldManager=alice", applyType, webConfig("2", "nginx")); r.code != 200 || r.deployment(t).ResourceVersion != rv {
		t.Fatalf("re-apply: %d, resourceVersion %s -> %s", r.code, rv, r.deployment(t).ResourceVersion)
	}

	// bob changes replicas with a merge patch: an Update entry for bob.
	r = do(h, "PATCH", deps+"/web?fieldManager=bob", mergeType, `{"spec":{"replicas":5}}`)
	if r.code != 200 {
		t.Fatalf("merge patch: %d %s", r.code, r.body)
	}
	if m := managers(r.deployment(t)); m["bob/Update"] != `{"f:spec":{"f:replicas":{}}}` || strings.Contains(m["alice/Apply"], "replicas") {
		t.Fatalf("managers after bob's patch: %v", m)
	}

	// alice applying other replicas conflicts with bob: a 409 listing it.
	r = do(h, "PATCH", deps+"/web?fieldManager=alice", applyType, webConfig("3", "nginx"))
	st := r.status(t)
	if r.code != 409 || st.Reason != metav1.StatusReasonConflict || st.Message != `Apply failed with 1 conflict: conflict with "bob" using apps/v1: .spec.replicas` {
		t.Fatalf("conflict: %d %s", r.code, r.body)
	}
	if st.Details == nil || len(st.Details.Causes) != 1 || st.Details.Causes[0].Type != metav1.CauseTypeFieldManagerConflict || st.Details.Causes[0].Field != ".spec.replicas" {
		t.Fatalf("conflict causes: %+v", st.Details)
	}

	// Forced, alice takes replicas over and bob's entry goes.
	r = do(h, "PATCH", deps+"/web?fieldManager=alice&force=true", applyType, webConfig("3", "nginx"))
	if r.code != 200 {
		t.Fatalf("forced apply: %d %s", r.code, r.body)
	}
	d = r.deployment(t)
	if *d.Spec.Replicas != 3 || d.Generation != 3 {
		t.Fatalf("forced apply: replicas %d generation %d", *d.Spec.Replicas, d.Generation)
	}
	if m := managers(d); len(m) != 1 || !strings.Contains(m["alice/Apply"], "f:replicas") {
		t.Fatalf("managers after force: %v", m)
	}

	// A PUT without fieldManager records the user agent's product.
	d.Spec.Template.Spec.Containers[0].Image = "nginx:2"
	body, _ := json.Marshal(d)
	r = do(h, "PUT", deps+"/web", "application/json", string(body))
	if m := managers(r.deployment(t)); r.code != 200 || !strings.Contains(m["tester/Update"], "f:image") || strings.Contains(m["alice/Apply"], "f:image") {
		t.Fatalf("PUT: %d, managers %v", r.code, m)
	}

	// A status update is recorded for the status subresource, owning only
	// status.
	d = r.deployment(t)
	d.Status.Replicas = 3
	body, _ = json.Marshal(d)
	r = do(h, "PUT", deps+"/web/status?fieldManager=controller", "application/json", string(body))
	if m := managers(r.deployment(t)); r.code != 200 || m["controller/Update/status"] != `{"f:status":{"f:replicas":{}}}` {
		t.Fatalf("status PUT: %d, managers %v", r.code, m)
	}

	// Scaling is recorded for the scale subresource.
	r = do(h, "PATCH", deps+"/web/scale?fieldManager=hpa", mergeType, `{"spec":{"replicas":4}}`)
	if r.code != 200 {
		t.Fatalf("scale: %d %s", r.code, r.body)
	}
	var stored appsv1.Deployment
	if err := store.Get(context.Background(), "/deployments/ns/web", storage.GetOptions{}, &stored); err != nil {
		t.Fatal(err)
	}
	if m := managers(&stored); m["hpa/Update/scale"] != `{"f:spec":{"f:replicas":{}}}` || strings.Contains(m["alice/Apply"], "f:replicas") {
		t.Fatalf("managers after scale: %v", m)
	}

	// Duplicate fields under the default Warn are a warning.
	dup := `{"apiVersion":"apps/v1",` + webConfig("3", "nginx")[1:]
	r = do(h, "PATCH", deps+"/web?fieldManager=alice&force=true", applyType, dup)
	if r.code != 200 || !strings.Contains(r.warning, "already set in map") {
		t.Fatalf("duplicate under Warn: %d %q %s", r.code, r.warning, r.body)
	}
}

func TestUpdateCreatesWhereKubernetesDoes(t *testing.T) {
	leases, leaseStore := servedHandler(t, "leases")
	lease := `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l","resourceVersion":"99"},"spec":{"holderIdentity":"me"}}`
	path := "/apis/coordination.k8s.io/v1/namespaces/ns/leases/l"

	// dry run: 201 and nothing stored.
	if r := do(leases, "PUT", path+"?dryRun=All", "application/json", lease); r.code != 201 || len(leaseStore.objs) != 0 {
		t.Fatalf("dry-run create on update: %d %s", r.code, r.body)
	}
	r := do(leases, "PUT", path+"?fieldManager=elector", "application/json", lease)
	if r.code != 201 {
		t.Fatalf("create on update: %d %s", r.code, r.body)
	}
	var l coordinationv1.Lease
	if err := json.Unmarshal(r.body, &l); err != nil {
		t.Fatal(err)
	}
	if l.UID == "" || l.Namespace != "ns" || *l.Spec.HolderIdentity != "me" || managers(&l)["elector/Update"] != `{"f:spec":{"f:holderIdentity":{}}}` {
		t.Fatalf("created %+v", l)
	}
	// The same PUT now updates (a stale resourceVersion is a conflict).
	if r := do(leases, "PUT", path, "application/json", lease); r.code != 409 {
		t.Fatalf("stale update: %d %s", r.code, r.body)
	}
	l.Spec.HolderIdentity = nil
	body, _ := json.Marshal(&l)
	if r := do(leases, "PUT", path, "application/json", string(body)); r.code != 200 {
		t.Fatalf("update: %d %s", r.code, r.body)
	}
	// Names must agree on create too.
	if r := do(leases, "PUT", "/apis/coordination.k8s.io/v1/namespaces/ns/leases/other", "application/json", lease); r.code != 400 {
		t.Fatalf("name mismatch: %d %s", r.code, r.body)
	}

	// Kinds that do not allow it answer 404 and create nothing.
	for _, name := range []string{"configmaps", "pods", "deployments", "secrets", "namespaces", "nodes"} {
		h, store := servedHandler(t, name)
		if h.res.AllowCreateOnUpdate {
			t.Errorf("%s allows create on update; Kubernetes does not", name)
		}
		_ = store
	}
	for _, name := range []string{"events", "limitranges", "leases", "roles", "rolebindings", "clusterroles", "clusterrolebindings"} {
		h, _ := servedHandler(t, name)
		if !h.res.AllowCreateOnUpdate {
			t.Errorf("%s does not allow create on update; Kubernetes does", name)
		}
	}
	cms, cmStore := servedHandler(t, "configmaps")
	r = do(cms, "PUT", "/api/v1/namespaces/ns/configmaps/c", "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}`)
	if r.code != 404 || len(cmStore.objs) != 0 {
		t.Fatalf("configmap PUT of a missing object: %d %s", r.code, r.body)
	}
}

// racingStore reports the object missing to the update, then finds it
// created by someone else when the create comes.
type racingStore struct {
	*memStore
	raced bool
}

func (s *racingStore) GuaranteedUpdate(ctx context.Context, key string, dest runtime.Object, ignoreNotFound bool,
	pre *storage.Preconditions, try storage.UpdateFunc) error {
	if !s.raced {
		s.raced = true
		other := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "l", Namespace: "ns", UID: "other"}}
		s.mu.Lock()
		s.put(key, other)
		s.mu.Unlock()
		return storage.NewError(storage.ErrCodeKeyNotFound, key, 0, "", nil)
	}
	return s.memStore.GuaranteedUpdate(ctx, key, dest, ignoreNotFound, pre, try)
}

func TestCreateOnUpdateLosingTheRaceUpdates(t *testing.T) {
	h, store := servedHandler(t, "leases")
	rs := &racingStore{memStore: store}
	h.store = rs
	r := do(h, "PUT", "/apis/coordination.k8s.io/v1/namespaces/ns/leases/l", "application/json",
		`{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l"},"spec":{"holderIdentity":"me"}}`)
	var l coordinationv1.Lease
	if err := json.Unmarshal(r.body, &l); err != nil || r.code != 200 || l.UID != "other" || *l.Spec.HolderIdentity != "me" {
		t.Fatalf("after the race: %d %s", r.code, r.body)
	}
}

func TestTrackCreate(t *testing.T) {
	h, _ := servedHandler(t, "configmaps")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Labels: map[string]string{"a": "b"}}, Data: map[string]string{"k": "v"}}
	r := httptest.NewRequest("POST", "/api/v1/namespaces/ns/configmaps?fieldManager=creator", nil)
	out, err := h.trackCreate(r, cm)
	if err != nil {
		t.Fatal(err)
	}
	if m := managers(accessor(out)); len(m) != 1 || m["creator/Update"] != `{"f:data":{".":{},"f:k":{}},"f:metadata":{"f:labels":{".":{},"f:a":{}}}}` {
		t.Fatalf("managers %v", m)
	}
	r = httptest.NewRequest("POST", "/api/v1/namespaces/ns/configmaps?fieldManager=%00", nil)
	if _, err := h.trackCreate(r, cm); err == nil || !strings.Contains(err.Error(), "CreateOptions.meta.k8s.io") {
		t.Fatalf("bad fieldManager: %v", err)
	}
	r = httptest.NewRequest("POST", "/api/v1/namespaces/ns/configmaps", nil)
	r.Header.Set("User-Agent", "kube-controller-manager/v1.37.1 (linux/amd64)/replicaset-controller")
	out, err = h.trackCreate(r, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "d"}, Data: map[string]string{"k": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := managers(accessor(out))["kube-controller-manager/Update"]; !ok {
		t.Fatalf("user agent manager: %v", managers(accessor(out)))
	}
}

func TestApplyStatus(t *testing.T) {
	h, _ := servedHandler(t, "deployments")
	if r := do(h, "PATCH", deps+"/web/status?fieldManager=controller", applyType, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"status":{"replicas":2}}`); r.code != 404 {
		t.Fatalf("status apply of a missing object: %d %s", r.code, r.body)
	}
	if r := do(h, "PATCH", deps+"/web?fieldManager=alice", applyType, webConfig("2", "nginx")); r.code != 201 {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	// Spec in a status apply is ignored and not owned; status is.
	r := do(h, "PATCH", deps+"/web/status?fieldManager=controller", applyType,
		`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":9},"status":{"replicas":2}}`)
	if r.code != 200 {
		t.Fatalf("status apply: %d %s", r.code, r.body)
	}
	d := r.deployment(t)
	if *d.Spec.Replicas != 2 || d.Status.Replicas != 2 {
		t.Fatalf("spec.replicas %d status.replicas %d", *d.Spec.Replicas, d.Status.Replicas)
	}
	if m := managers(d); m["controller/Apply/status"] != `{"f:status":{"f:replicas":{}}}` {
		t.Fatalf("managers %v", m)
	}
	// Status in a main-resource apply is ignored and not owned either.
	r = do(h, "PATCH", deps+"/web?fieldManager=alice", applyType, webConfig("2", "nginx")[:len(webConfig("2", "nginx"))-1]+`,"status":{"replicas":7}}`)
	if d := r.deployment(t); r.code != 200 || d.Status.Replicas != 2 || strings.Contains(managers(d)["alice/Apply"], "status") {
		t.Fatalf("main apply with status: %d %s", r.code, r.body)
	}
}

func TestApplySharedStorageKind(t *testing.T) {
	c, err := codec.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range registry.All() {
		if res.GroupVersion.Group != "events.k8s.io" {
			continue
		}
		// Served here from its own in-memory store: the converting store
		// is not what this test is about.
		h := NewHandler(res, newMemStore(res.New), "/events", &Options{Codecs: c})
		r := do(h, "PATCH", "/apis/events.k8s.io/v1/namespaces/ns/events/e?fieldManager=recorder", applyType,
			`{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"e"},"eventTime":"2026-01-01T00:00:00.000000Z","reportingController":"x/y","reportingInstance":"i","action":"A","reason":"R","type":"Normal","regarding":{"kind":"Pod","name":"p","namespace":"ns"}}`)
		if r.code != 201 || !strings.Contains(string(r.body), `"manager":"recorder","operation":"Apply"`) {
			t.Fatalf("apply of an events.k8s.io Event: %d %s", r.code, r.body)
		}
		return
	}
	t.Fatal("events.k8s.io is not served")
}

func TestApplyScale(t *testing.T) {
	h, store := servedHandler(t, "deployments")
	if r := do(h, "PATCH", deps+"/web?fieldManager=alice", applyType, webConfig("2", "nginx")); r.code != 201 {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	scale := func(replicas string) string {
		return `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"web"},"spec":{"replicas":` + replicas + `}}`
	}
	storedManagers := func() map[string]string {
		var d appsv1.Deployment
		if err := store.Get(context.Background(), "/deployments/ns/web", storage.GetOptions{}, &d); err != nil {
			t.Fatal(err)
		}
		return managers(&d)
	}
	// alice applied replicas on the deployment: a different value through
	// /scale conflicts with her.
	r := do(h, "PATCH", deps+"/web/scale?fieldManager=hpa", applyType, scale("4"))
	if st := r.status(t); r.code != 409 || st.Message != `Apply failed with 1 conflict: conflict with "alice": .spec.replicas` {
		t.Fatalf("scale apply against alice: %d %s", r.code, r.body)
	}
	// The same value is shared; forced, hpa owns replicas alone.
	if r := do(h, "PATCH", deps+"/web/scale?fieldManager=hpa", applyType, scale("2")); r.code != 200 {
		t.Fatalf("shared: %d %s", r.code, r.body)
	}
	if m := storedManagers(); m["hpa/Apply/scale"] != `{"f:spec":{"f:replicas":{}}}` || !strings.Contains(m["alice/Apply"], "f:replicas") {
		t.Fatalf("after sharing: %v", m)
	}
	r = do(h, "PATCH", deps+"/web/scale?fieldManager=hpa&force=true", applyType, scale("4"))
	var s struct {
		Kind string
		Spec struct{ Replicas int32 }
	}
	if err := json.Unmarshal(r.body, &s); err != nil || r.code != 200 || s.Kind != "Scale" || s.Spec.Replicas != 4 {
		t.Fatalf("forced scale apply: %d %s", r.code, r.body)
	}
	if m := storedManagers(); m["hpa/Apply/scale"] != `{"f:spec":{"f:replicas":{}}}` || strings.Contains(m["alice/Apply"], "f:replicas") {
		t.Fatalf("after force: %v", m)
	}
	// Now alice's apply of other replicas conflicts with the hpa.
	r = do(h, "PATCH", deps+"/web?fieldManager=alice", applyType, webConfig("2", "nginx"))
	if st := r.status(t); r.code != 409 || !strings.Contains(st.Message, `conflict with "hpa" with subresource "scale": .spec.replicas`) {
		t.Fatalf("alice against hpa: %d %s", r.code, r.body)
	}
	// A Scale of another kind is a 400.
	if r := do(h, "PATCH", deps+"/web/scale?fieldManager=hpa", applyType, webConfig("2", "nginx")); r.code != 400 {
		t.Fatalf("deployment applied to /scale: %d %s", r.code, r.body)
	}
}

// A POST create records its manager, so a later apply by another manager
// conflicts on the fields the creator set (as kubectl create then kubectl
// apply --server-side does against kube-apiserver).
func TestPostCreateRecordsManager(t *testing.T) {
	h, _ := servedHandler(t, "deployments")
	got := do(h, "POST", deps+"?fieldManager=creator", "application/json", webConfig("1", "nginx:1"))
	if got.code != 201 {
		t.Fatalf("create: %d %s", got.code, got.body)
	}
	if m := managers(got.deployment(t)); len(m) != 1 || m["creator/Update"] == "" {
		t.Fatalf("managers after create: %v", m)
	}
	got = do(h, "PATCH", deps+"/web?fieldManager=applier", applyType, webConfig("1", "nginx:2"))
	if got.code != 409 {
		t.Fatalf("apply over the creator's image: %d %s, want 409", got.code, got.body)
	}
}
