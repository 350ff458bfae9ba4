package cacher

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeproof/kubeproof/impl/intern"
)

// maxInterned bounds an interner's tables; past it they start over, so
// that a stream of ever new values cannot grow them without end.
const maxInterned = 4096

// interner makes the managedFields of cached objects share memory: objects
// written the same way by the same manager (every pod a ReplicaSet
// creates, every ConfigMap of a benchmark) carry byte-identical FieldsV1
// sets (one shared FieldsV1 each) and the same manager, operation and
// apiVersion strings, which etcd decoding allocates anew for every object. Held once, they are about a
// sixth of a cached pod's memory.
//
// Pods, the one kind whose count grows with the workload, also share
// the rest of their repeated values (labels, resources, tolerations, the
// defaulted security contexts and projected token volume, condition and
// status strings, start times: impl/intern's Table.Pod, what the
// components' informers do with their copies), and a new version of a pod
// takes the UID and name strings of the version it replaces. A decoded
// Running pod is about 80 heap objects; shared, a cached one keeps about
// 20 of its own (its unique strings, the status manager's FieldsV1 with
// its IP), and the objects are what the collector marks in every cycle.
//
// Only the reflector goroutine uses it. The cache never changes a cached
// object or anything it points to in place (reads deep-copy, watch events
// are only encoded), so sharing is safe; a deep copy gets values of its
// own.
type interner struct {
	bytes   map[string][]byte
	fields  map[string]*metav1.FieldsV1
	strings map[string]string
	pods    *intern.Table
}

func newInterner() *interner {
	return &interner{bytes: map[string][]byte{}, fields: map[string]*metav1.FieldsV1{}, strings: map[string]string{}, pods: intern.New()}
}

// object shares the repeated values of obj, which etcd just gave the
// reflector, in place; prior is the version the cache holds of the same
// key (nil if none).
func (in *interner) object(obj, prior runtime.Object) {
	in.managedFields(obj)
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	in.pods.Pod(p)
	for i := range p.ManagedFields {
		p.ManagedFields[i].Time = in.pods.Time(p.ManagedFields[i].Time)
	}
	if old, ok := prior.(*corev1.Pod); ok {
		intern.SharePrior(p, old)
	}
}

// managedFields replaces the managedFields values of obj with the equal
// values interned before.
func (in *interner) managedFields(obj runtime.Object) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	entries := m.GetManagedFields() // the object's own slice, not a copy
	for i := range entries {
		e := &entries[i]
		e.Manager = in.string(e.Manager)
		e.Operation = in.operation(e.Operation)
		e.APIVersion = in.string(e.APIVersion)
		e.FieldsType = in.string(e.FieldsType)
		e.Subresource = in.string(e.Subresource)
		if e.FieldsV1 != nil && len(e.FieldsV1.Raw) > 0 {
			e.FieldsV1 = in.fieldsV1(e.FieldsV1)
		}
	}
}

// fieldsV1 returns the shared FieldsV1 with f's bytes: entries written
// alike point to one, bytes and all.
func (in *interner) fieldsV1(f *metav1.FieldsV1) *metav1.FieldsV1 {
	if v, ok := in.fields[string(f.Raw)]; ok {
		return v
	}
	if len(in.fields) >= maxInterned {
		clear(in.fields)
	}
	f.Raw = in.byteSlice(f.Raw)
	in.fields[string(f.Raw)] = f
	return f
}

func (in *interner) operation(op metav1.ManagedFieldsOperationType) metav1.ManagedFieldsOperationType {
	return metav1.ManagedFieldsOperationType(in.string(string(op)))
}

func (in *interner) string(s string) string {
	if s == "" {
		return s
	}
	if v, ok := in.strings[s]; ok {
		return v
	}
	if len(in.strings) >= maxInterned {
		clear(in.strings)
	}
	in.strings[s] = s
	return s
}

func (in *interner) byteSlice(b []byte) []byte {
	if v, ok := in.bytes[string(b)]; ok {
		return v
	}
	if len(in.bytes) >= maxInterned {
		clear(in.bytes)
	}
	// The capacity is cut to the length, so an append to one object's
	// bytes copies them instead of writing into the shared array.
	b = b[:len(b):len(b)]
	in.bytes[string(b)] = b
	return b
}
