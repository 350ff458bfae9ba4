package admission

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubeproof/kubeproof/impl/storage"
)

// memStores is a StoreGetter of in-memory stores, one per resource, so the
// admission plugins can be built by NewPlugins without etcd: the fuzz
// target fills them with the namespaces, service accounts, limit ranges,
// quotas, priority classes, nodes and pods a request is admitted against.
// Its caches are never started, so every plugin read goes to the store
// (the path a plugin takes before its cache has synced).
type memStores struct {
	mu     sync.Mutex
	rev    int64
	stores map[schema.GroupResource]*memStore
}

func newMemStores(grs ...schema.GroupResource) *memStores {
	s := &memStores{stores: map[schema.GroupResource]*memStore{}}
	for _, gr := range grs {
		s.stores[gr] = &memStore{parent: s, objects: map[string]runtime.Object{}}
	}
	return s
}

func (s *memStores) Store(gr schema.GroupResource) (storage.Interface, bool) {
	st, ok := s.stores[gr]
	return st, ok
}

func (s *memStores) ObjectKey(gr schema.GroupResource, namespace, name string) string {
	if namespace == "" {
		return "/" + gr.String() + "/" + name
	}
	return "/" + gr.String() + "/" + namespace + "/" + name
}

func (s *memStores) ListKey(gr schema.GroupResource, namespace string) string {
	if namespace == "" {
		return "/" + gr.String() + "/"
	}
	return "/" + gr.String() + "/" + namespace + "/"
}

// add stores obj (a typed object with name and, if namespaced, namespace)
// as if created through the API.
func (s *memStores) add(gr schema.GroupResource, obj runtime.Object) error {
	st, ok := s.stores[gr]
	if !ok {
		return fmt.Errorf("no store for %s", gr)
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	return st.Create(context.Background(), s.ObjectKey(gr, m.GetNamespace(), m.GetName()), obj, nil)
}

// memStore is one resource's in-memory storage.Interface: the operations
// the plugins use (Get, GetList, Create, GuaranteedUpdate, Delete) with
// resourceVersions from one counter; Watch is refused.
type memStore struct {
	parent  *memStores
	objects map[string]runtime.Object
}

var errNoWatch = errors.New("memStore: watch is not supported")

func (m *memStore) nextRV(obj runtime.Object) error {
	m.parent.rev++
	a, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	a.SetResourceVersion(strconv.FormatInt(m.parent.rev, 10))
	return nil
}

// copyInto sets *out to a deep copy of src (same concrete type).
func copyInto(src, out runtime.Object) error {
	if out == nil {
		return nil
	}
	sv, ov := reflect.ValueOf(src.DeepCopyObject()), reflect.ValueOf(out)
	if sv.Type() != ov.Type() {
		return fmt.Errorf("memStore: stored %T, asked for %T", src, out)
	}
	ov.Elem().Set(sv.Elem())
	return nil
}

func (m *memStore) Create(_ context.Context, key string, obj, out runtime.Object) error {
	m.parent.mu.Lock()
	defer m.parent.mu.Unlock()
	if _, ok := m.objects[key]; ok {
		return storage.NewError(storage.ErrCodeKeyExists, key, 0, "key exists", nil)
	}
	c := obj.DeepCopyObject()
	if err := m.nextRV(c); err != nil {
		return err
	}
	m.objects[key] = c
	return copyInto(c, out)
}

func (m *memStore) Get(_ context.Context, key string, opts storage.GetOptions, out runtime.Object) error {
	m.parent.mu.Lock()
	defer m.parent.mu.Unlock()
	o, ok := m.objects[key]
	if !ok {
		if opts.IgnoreNotFound {
			ov := reflect.ValueOf(out).Elem()
			ov.Set(reflect.Zero(ov.Type()))
			return nil
		}
		return storage.NewError(storage.ErrCodeKeyNotFound, key, 0, "not found", nil)
	}
	return copyInto(o, out)
}

func (m *memStore) GetList(_ context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	m.parent.mu.Lock()
	defer m.parent.mu.Unlock()
	keys := make([]string, 0, len(m.objects))
	for k := range m.objects {
		if k == key || (opts.Recursive && strings.HasPrefix(k, key)) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var items []runtime.Object
	for _, k := range keys {
		o := m.objects[k]
		if ok, err := opts.Predicate.Matches(o); err != nil || !ok {
			continue
		}
		items = append(items, o.DeepCopyObject())
	}
	if err := meta.SetList(listObj, items); err != nil {
		return err
	}
	la, err := meta.ListAccessor(listObj)
	if err != nil {
		return err
	}
	la.SetResourceVersion(strconv.FormatInt(m.parent.rev, 10))
	return nil
}

func (m *memStore) GuaranteedUpdate(_ context.Context, key string, dest runtime.Object, ignoreNotFound bool,
	preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc) error {
	m.parent.mu.Lock()
	defer m.parent.mu.Unlock()
	cur, ok := m.objects[key]
	if !ok {
		if !ignoreNotFound {
			return storage.NewError(storage.ErrCodeKeyNotFound, key, 0, "not found", nil)
		}
		cur = reflect.New(reflect.TypeOf(dest).Elem()).Interface().(runtime.Object)
	}
	if preconditions != nil {
		if err := preconditions.Check(key, cur); err != nil {
			return err
		}
	}
	next, err := tryUpdate(cur.DeepCopyObject())
	if err != nil {
		return err
	}
	next = next.DeepCopyObject()
	if err := m.nextRV(next); err != nil {
		return err
	}
	m.objects[key] = next
	return copyInto(next, dest)
}

func (m *memStore) Delete(ctx context.Context, key string, out runtime.Object, preconditions *storage.Preconditions,
	validateDeletion storage.ValidateObjectFunc) error {
	m.parent.mu.Lock()
	defer m.parent.mu.Unlock()
	cur, ok := m.objects[key]
	if !ok {
		return storage.NewError(storage.ErrCodeKeyNotFound, key, 0, "not found", nil)
	}
	if preconditions != nil {
		if err := preconditions.Check(key, cur); err != nil {
			return err
		}
	}
	if validateDeletion != nil {
		if err := validateDeletion(ctx, cur); err != nil {
			return err
		}
	}
	delete(m.objects, key)
	return copyInto(cur, out)
}

func (m *memStore) Watch(context.Context, string, storage.ListOptions) (watch.Interface, error) {
	return nil, errNoWatch
}
