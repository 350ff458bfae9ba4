package endpoints

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubeproof/kubeproof/impl/apiserver/codec"
	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
	"github.com/kubeproof/kubeproof/impl/storage"
)

// collidingStore answers the first collisions creates with "exists".
type collidingStore struct {
	storage.Interface
	collisions int
	keys       []string
}

func (s *collidingStore) Create(_ context.Context, key string, obj, out runtime.Object) error {
	s.keys = append(s.keys, key)
	if len(s.keys) <= s.collisions {
		return storage.NewError(storage.ErrCodeKeyExists, key, 0, "", nil)
	}
	cm := obj.(*corev1.ConfigMap).DeepCopy()
	cm.ResourceVersion = "7"
	*out.(*corev1.ConfigMap) = *cm
	return nil
}

type cmStrategy struct{}

func (cmStrategy) Default(runtime.Object)                                           {}
func (cmStrategy) PrepareForCreate(context.Context, runtime.Object)                 {}
func (cmStrategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}
func (cmStrategy) Validate(context.Context, runtime.Object) field.ErrorList         { return nil }
func (cmStrategy) ValidateUpdate(context.Context, runtime.Object, runtime.Object) field.ErrorList {
	return nil
}
func (cmStrategy) GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	return storage.DefaultAttrs(obj)
}
func (cmStrategy) ConvertToTable(context.Context, runtime.Object, *metav1.TableOptions) (*metav1.Table, error) {
	return &metav1.Table{}, nil
}

func configMapHandler(t *testing.T, store storage.Interface) *Handler {
	t.Helper()
	c, err := codec.New()
	if err != nil {
		t.Fatal(err)
	}
	res := &resource.Resource{
		GroupVersion: corev1.SchemeGroupVersion, Name: "configmaps", SingularName: "configmap", Kind: "ConfigMap",
		Namespaced: true, Verbs: []string{"create", "get"},
		New:      func() runtime.Object { return &corev1.ConfigMap{} },
		NewList:  func() runtime.Object { return &corev1.ConfigMapList{} },
		Strategy: cmStrategy{},
	}
	return NewHandler(res, store, "/configmaps", &Options{Codecs: c})
}

func TestGenerateNameRetriesCollisions(t *testing.T) {
	store := &collidingStore{collisions: 3}
	h := configMapHandler(t, store)
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", GenerateName: "gen-"}}
	out, err := h.CreateObject(context.Background(), nil, obj, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(store.keys) != 4 {
		t.Fatalf("attempts %v", store.keys)
	}
	name := out.(*corev1.ConfigMap).Name
	if store.keys[3] != "/configmaps/ns/"+name || !strings.HasPrefix(name, "gen-") {
		t.Fatalf("created %q at %v", name, store.keys)
	}

	// always colliding: a generate-name conflict after the bounded retries.
	store = &collidingStore{collisions: 1000}
	h = configMapHandler(t, store)
	obj = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", GenerateName: "gen-"}}
	_, err = h.CreateObject(context.Background(), nil, obj, false)
	if !apierrors.IsAlreadyExists(err) || len(store.keys) != generateNameAttempts {
		t.Fatalf("err %v after %d attempts", err, len(store.keys))
	}
	// a fixed name that exists is not retried.
	store = &collidingStore{collisions: 1}
	h = configMapHandler(t, store)
	obj = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "fixed"}}
	_, err = h.CreateObject(context.Background(), nil, obj, false)
	if !apierrors.IsAlreadyExists(err) || len(store.keys) != 1 {
		t.Fatalf("fixed name: %v after %d attempts", err, len(store.keys))
	}
}

// countingDefaults counts its strategy's Default calls.
type countingDefaults struct {
	cmStrategy
	calls *int
}

func (s countingDefaults) Default(runtime.Object) { *s.calls++ }

// A POST create defaults its object once (trackCreate, before the managed
// fields are computed), not again on the create path; an internal
// CreateObject defaults it itself.
func TestCreateDefaultsOnce(t *testing.T) {
	calls := 0
	h := configMapHandler(t, acceptingStore{})
	h.res.Strategy = countingDefaults{calls: &calls}
	if rep := do(h, "POST", "/api/v1/namespaces/ns/configmaps", "application/json",
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}`); rep.code != 201 {
		t.Fatalf("POST: %d %s", rep.code, rep.body)
	}
	if calls != 1 {
		t.Errorf("a POST create defaulted %d times, want 1", calls)
	}
	calls = 0
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b"}}
	if _, err := h.CreateObject(context.Background(), nil, obj, false); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Errorf("CreateObject defaulted %d times, want 1", calls)
	}
}
