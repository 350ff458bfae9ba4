package flowcontrol

import (
	"sync"

	"k8s.io/apimachinery/pkg/fields"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// watchKey is what a watch watches, as kube-apiserver's watch tracker
// tells watches apart: a resource, within a namespace or not, one object
// by name or all.
type watchKey struct {
	group, resource, namespace, name string
}

// WatchTracker counts the open watches by what they watch, for the work
// estimate of writes (their watch notifications). Watches are
// registered by the flow control filter once admitted, as
// kube-apiserver's are. Safe for concurrent use.
type WatchTracker struct {
	mu    sync.RWMutex
	count map[watchKey]int
}

// NewWatchTracker returns a tracker without watches.
func NewWatchTracker() *WatchTracker {
	return &WatchTracker{count: map[watchKey]int{}}
}

// indexedWatchField: the watch cache indexes the watches of pods by
// spec.nodeName, so a pod's event costs only the watches of its node and
// those without the field pinned. As kube-apiserver's tracker, a watch
// that pins the field to a node is not counted at all (the writes of one
// node's pods are a small share of the work).
var indexedWatchField = map[string]string{"pods": "spec.nodeName"}

// Register counts the watch info describes until the returned function
// is called (once). Anything but a watch is not counted (the function
// does nothing).
func (t *WatchTracker) Register(info *request.Info) (forget func()) {
	if info == nil || info.Verb != "watch" {
		return func() {}
	}
	if field, ok := indexedWatchField[info.Resource]; ok {
		if v, ok := exactFieldValue(info.FieldSelector, field); ok && v != "" {
			return func() {}
		}
	}
	k := watchKey{group: info.APIGroup, resource: info.Resource, namespace: info.Namespace, name: objectName(info)}
	t.mu.Lock()
	t.count[k]++
	t.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			t.mu.Lock()
			if t.count[k]--; t.count[k] <= 0 {
				delete(t.count, k)
			}
			t.mu.Unlock()
		})
	}
}

// Interested is the number of watches a write described by info may have
// to notify: those of its whole resource, of its namespace, and of the
// object itself by name (a create names none). Reads interest none.
func (t *WatchTracker) Interested(info *request.Info) int {
	if info == nil {
		return 0
	}
	switch info.Verb {
	case "get", "list", "watch", "proxy":
		return 0
	}
	k := watchKey{group: info.APIGroup, resource: info.Resource}
	t.mu.RLock()
	defer t.mu.RUnlock()
	n := t.count[k]
	if info.Namespace != "" {
		k.namespace = info.Namespace
		n += t.count[k]
	}
	if info.Name != "" {
		k.name = info.Name
		n += t.count[k]
	}
	return n
}

// objectName is the object a request is about: its name in the path, or
// for a list or watch the metadata.name its field selector requires (as
// kube-apiserver's request info names it).
func objectName(info *request.Info) string {
	if info.Name != "" {
		return info.Name
	}
	if info.Verb == "list" || info.Verb == "watch" {
		if v, ok := exactFieldValue(info.FieldSelector, "metadata.name"); ok {
			return v
		}
	}
	return ""
}

// exactFieldValue is the value selector (a raw field selector) requires
// of field, if it requires one.
func exactFieldValue(selector, field string) (string, bool) {
	if selector == "" {
		return "", false
	}
	sel, err := fields.ParseSelector(selector)
	if err != nil {
		return "", false
	}
	return sel.RequiresExactMatch(field)
}
