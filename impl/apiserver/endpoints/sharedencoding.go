package endpoints

import (
	"reflect"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// sharedEncodings keeps the encodings of the objects watch events carry,
// per serializer, for the other watchers of the same event. The watch
// cache hands every watcher an event's object as the same pointer, so the
// first watcher to encode it does so for all of them (the scheduler's, the
// controller manager's, the pod's kubelet's...), as kube-apiserver's watch
// cache does with its cachingObject. An entry is found by the object's
// identity and holds the object, so the address of an object that is gone
// never matches; objects in the watch cache are never changed. The latest
// sharedEncodingEntries entries are kept: a watcher further behind encodes
// again. Objects that are not shared (a watch straight on etcd decodes an
// object per watcher) only ever miss.
type sharedEncodings struct {
	mu      sync.Mutex
	entries map[encodingKey][]byte
	ring    []encodingKey // the entries in insertion order, the oldest at next
	next    int
}

// encodingKey is an object and the serializer that encoded it.
type encodingKey struct {
	obj runtime.Object
	enc runtime.Identifier
}

// sharedEncodingEntries bounds the entries per resource: at a few hundred
// events a second, about the last second of events.
const sharedEncodingEntries = 512

func newSharedEncodings() *sharedEncodings {
	return &sharedEncodings{entries: make(map[encodingKey][]byte, sharedEncodingEntries),
		ring: make([]encodingKey, 0, sharedEncodingEntries)}
}

// shareable reports whether ev's object, rendered as obj, may be looked
// up and kept: an object event whose object is sent as it is, a pointer
// (compared by identity). Bookmarks and errors are made per watcher.
func shareable(ev watch.Event, obj runtime.Object) bool {
	switch ev.Type {
	case watch.Added, watch.Modified, watch.Deleted:
	default:
		return false
	}
	if obj == nil || reflect.TypeOf(obj).Kind() != reflect.Pointer {
		return false
	}
	return obj == ev.Object
}

// get returns the encoding of obj by enc, or nil.
func (s *sharedEncodings) get(obj runtime.Object, enc runtime.Identifier) []byte {
	s.mu.Lock()
	raw := s.entries[encodingKey{obj, enc}]
	s.mu.Unlock()
	return raw
}

// put keeps raw (which must not change afterwards) as obj's encoding by
// enc, dropping the oldest entry when full.
func (s *sharedEncodings) put(obj runtime.Object, enc runtime.Identifier, raw []byte) {
	k := encodingKey{obj, enc}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.entries[k]; ok {
		return
	}
	if len(s.ring) < sharedEncodingEntries {
		s.ring = append(s.ring, k)
	} else {
		delete(s.entries, s.ring[s.next])
		s.ring[s.next] = k
		s.next = (s.next + 1) % sharedEncodingEntries
	}
	s.entries[k] = raw
}
