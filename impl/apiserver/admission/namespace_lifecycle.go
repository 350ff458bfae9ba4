package admission

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NamespaceGetter reads a namespace; a missing one is a NotFound API error.
// fresh asks for a quorum read rather than a possibly cached one.
type NamespaceGetter func(ctx context.Context, name string, fresh bool) (*corev1.Namespace, error)

// NamespaceLifecycle rejects creating or updating objects in a namespace
// that does not exist (404 NotFound for the namespace), creating them in
// one being terminated (403 Forbidden; updates there are allowed), and
// deleting the namespaces the system needs, as kube-apiserver's plugin of
// the same name does (it handles CREATE, UPDATE and DELETE). Like that plugin it is a
// mutating plugin only (it changes nothing), the first of the chain: a
// create is refused before ServiceAccount waits for the "default" account
// of a namespace that does not exist or a mutating webhook is called, and
// so is the delete of an immortal namespace (DELETE runs the mutating
// plugins too). A namespace deleted through this server is read fresh by
// the creates in it of the next 30 s whose cached copy still says Active
// (kube-apiserver's forceLiveLookupCache: 100 namespaces at most).
type NamespaceLifecycle struct {
	Get NamespaceGetter
	// Immortal namespaces may not be deleted.
	Immortal map[string]bool

	now func() time.Time // nil: time.Now
	// forced holds, until when, the namespaces deleted lately;
	// liveLookups is its size, read without mu on every create.
	mu          sync.Mutex
	forced      map[string]time.Time
	liveLookups atomic.Int32
}

const (
	// forceLiveLookupTTL and forceLiveLookupMax are kube-apiserver's
	// (the plugin's forceLiveLookupTTL and its LRU's size).
	forceLiveLookupTTL = 30 * time.Second
	forceLiveLookupMax = 100
)

func (p *NamespaceLifecycle) clock() time.Time {
	if p.now != nil {
		return p.now()
	}
	return time.Now()
}

// forceLiveLookup remembers for forceLiveLookupTTL that name was deleted,
// dropping the entry that expires first when forceLiveLookupMax are held.
func (p *NamespaceLifecycle) forceLiveLookup(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.forced == nil {
		p.forced = map[string]time.Time{}
	}
	if _, ok := p.forced[name]; !ok && len(p.forced) >= forceLiveLookupMax {
		oldest := ""
		for n, until := range p.forced {
			if oldest == "" || until.Before(p.forced[oldest]) {
				oldest = n
			}
		}
		delete(p.forced, oldest)
	}
	p.forced[name] = p.clock().Add(forceLiveLookupTTL)
	p.liveLookups.Store(int32(len(p.forced)))
}

// mustLookUpLive reports whether name was deleted at most
// forceLiveLookupTTL ago, dropping its entry once expired.
func (p *NamespaceLifecycle) mustLookUpLive(name string) bool {
	if p.liveLookups.Load() == 0 {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	until, ok := p.forced[name]
	if !ok {
		return false
	}
	if p.clock().After(until) {
		delete(p.forced, name)
		p.liveLookups.Store(int32(len(p.forced)))
		return false
	}
	return true
}

// Admit implements Mutator: an immortal namespace may not be deleted,
// nothing may be created or updated in a namespace that is missing, and
// nothing may be created in one being terminated. Deletes of namespaced
// objects and writes of namespaces themselves are always allowed.
func (p *NamespaceLifecycle) Admit(ctx context.Context, a *Attributes) error {
	isNamespace := a.Resource.Group == "" && a.Resource.Resource == "namespaces"
	if a.Operation == Delete && isNamespace && a.Subresource == "" && p.Immortal[a.Name] {
		return forbidden(a, fmt.Errorf("this namespace may not be deleted"))
	}
	if a.Operation == Delete && isNamespace && a.Subresource == "" {
		p.forceLiveLookup(a.Name)
		return nil
	}
	if (a.Operation != Create && a.Operation != Update) || a.Namespace == "" || isNamespace {
		return nil
	}
	ns, err := p.Get(ctx, a.Namespace, false)
	// (err != nil first: IsNotFound allocates even for nil.)
	if err != nil && apierrors.IsNotFound(err) {
		// The cached view may lag a namespace just created: look again.
		ns, err = p.Get(ctx, a.Namespace, true)
	} else if err == nil && ns.Status.Phase == corev1.NamespaceActive && p.mustLookUpLive(a.Namespace) {
		// Or lag its deletion through this server.
		ns, err = p.Get(ctx, a.Namespace, true)
	}
	if err != nil && apierrors.IsNotFound(err) {
		return apierrors.NewNotFound(corev1.Resource("namespaces"), a.Namespace)
	}
	if err != nil {
		return err
	}
	if a.Operation != Create {
		return nil
	}
	// Terminating is the phase, as kube-apiserver's plugin reads it (a
	// deletionTimestamp alone does not refuse: the delete sets both).
	if ns.Status.Phase == corev1.NamespaceTerminating {
		e := forbidden(a, fmt.Errorf("unable to create new content in namespace %s because it is being terminated", a.Namespace))
		e.ErrStatus.Details.Causes = append(e.ErrStatus.Details.Causes, metav1.StatusCause{
			Type:    corev1.NamespaceTerminatingCause,
			Message: fmt.Sprintf("namespace %s is being terminated", a.Namespace),
			Field:   "metadata.namespace",
		})
		return e
	}
	return nil
}
