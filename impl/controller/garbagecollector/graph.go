package garbagecollector

import (
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Finalizers the API server adds for non-background propagation.
const (
	FinalizerOrphan     = metav1.FinalizerOrphanDependents // "orphan"
	FinalizerForeground = metav1.FinalizerDeleteDependents // "foregroundDeletion"
)

// ObjectRef identifies an object in the graph.
type ObjectRef struct {
	APIVersion, Kind, Namespace, Name string
	UID                               types.UID
}

func (r ObjectRef) String() string {
	return fmt.Sprintf("[%s/%s, namespace: %s, name: %s, uid: %s]", r.APIVersion, r.Kind, r.Namespace, r.Name, r.UID)
}

func refFromOwner(o metav1.OwnerReference, namespace string) ObjectRef {
	return ObjectRef{APIVersion: o.APIVersion, Kind: o.Kind, Namespace: namespace, Name: o.Name, UID: o.UID}
}

// node is one object of the graph: one per object of every watched kind
// (pods among them), so its identity is kept as the Graph's shared
// apiVersion/kind pair and its own namespace, name and UID.
type node struct {
	kind            *apiKind
	namespace, name string
	uid             types.UID
	owners          []metav1.OwnerReference
	// dependents are the nodes whose ownerReferences name this node; nil
	// until the first (most objects, pods among them, own nothing).
	dependents map[*node]struct{}
	// observed is false for a "virtual" node: an owner known only from a
	// dependent's reference, not (yet) seen by an informer.
	observed           bool
	beingDeleted       bool
	deletingDependents bool // being deleted with the foregroundDeletion finalizer
}

// apiKind is an apiVersion and kind, shared by the nodes of that kind.
type apiKind struct{ apiVersion, kind string }

// identity is the node's object reference.
func (n *node) identity() ObjectRef {
	return ObjectRef{APIVersion: n.kind.apiVersion, Kind: n.kind.kind, Namespace: n.namespace, Name: n.name, UID: n.uid}
}

// newNode returns a node for r; g.mu is held for writing.
func (g *Graph) newNode(r ObjectRef, observed bool) *node {
	n := &node{observed: observed}
	g.setIdentity(n, r)
	return n
}

// setIdentity sets n's identity to r; g.mu is held for writing.
func (g *Graph) setIdentity(n *node, r ObjectRef) {
	k := apiKind{r.APIVersion, r.Kind}
	shared, ok := g.kinds[k]
	if !ok {
		shared = &k
		if len(g.kinds) < maxKinds {
			g.kinds[k] = shared
		}
	}
	n.kind, n.namespace, n.name, n.uid = shared, r.Namespace, r.Name, r.UID
}

// maxKinds bounds Graph.kinds (kinds beyond it are kept per node).
const maxKinds = 1024

// ChangeType is the kind of a graph change.
type ChangeType int

// Graph changes: informer events, plus VirtualDeleted when a live read
// proved an object absent.
const (
	Added ChangeType = iota
	Updated
	Deleted
	VirtualDeleted
)

// Change is one observed change of an object's metadata.
type Change struct {
	Type       ChangeType
	Object     ObjectRef
	Owners     []metav1.OwnerReference
	Deleting   bool // deletionTimestamp set
	Finalizers []string
}

// InvalidOwnerRef records a namespaced owner reference that resolved to an
// object in another namespace (OwnerRefInvalidNamespace).
type InvalidOwnerRef struct {
	Dependent ObjectRef
	OwnerUID  types.UID
}

// Effects are the work a graph change creates.
type Effects struct {
	AttemptToDelete []types.UID
	AttemptToOrphan []types.UID
	Invalid         []InvalidOwnerRef
}

func (e *Effects) del(n *node) { e.AttemptToDelete = append(e.AttemptToDelete, n.uid) }

// Graph is the owner-reference graph over every monitored object. Apply is
// its only mutator; the garbage collector's workers read snapshots.
type Graph struct {
	mu    sync.RWMutex
	nodes map[types.UID]*node
	kinds map[apiKind]*apiKind // guarded by mu (written only under the write lock)
}

// NewGraph returns an empty graph.
func NewGraph() *Graph { return &Graph{nodes: map[types.UID]*node{}, kinds: map[apiKind]*apiKind{}} }

func has(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Apply folds one change into the graph and returns the work it creates.
func (g *Graph) Apply(ch Change) Effects {
	g.mu.Lock()
	defer g.mu.Unlock()
	var eff Effects
	existing, found := g.nodes[ch.Object.UID]
	if found && ch.Type != VirtualDeleted && ch.Type != Deleted && !existing.observed {
		// A virtual node is now seen for real: adopt the observed identity,
		// and let dependents that named it differently be re-examined.
		if existing.identity() != ch.Object {
			for dep := range existing.dependents {
				if ch.Object.Namespace != "" && dep.namespace != ch.Object.Namespace {
					eff.Invalid = append(eff.Invalid, InvalidOwnerRef{Dependent: dep.identity(), OwnerUID: ch.Object.UID})
				}
				eff.del(dep)
			}
			g.setIdentity(existing, ch.Object)
		}
		existing.observed = true
	}
	switch ch.Type {
	case Added, Updated:
		n := existing
		if !found {
			n = g.newNode(ch.Object, true)
			g.nodes[ch.Object.UID] = n
			n.owners = ch.Owners
			g.addToOwners(n, ch.Owners, &eff)
		} else {
			added, removed, changed := diffRefs(n.owners, ch.Owners)
			if len(added)+len(removed)+len(changed) > 0 {
				// Dropping a blocking reference may unblock a foreground owner.
				for _, r := range append(removed, changed...) {
					if o, ok := g.nodes[r.UID]; ok && o.deletingDependents {
						eff.del(o)
					}
				}
				n.owners = ch.Owners
				g.addToOwners(n, added, &eff)
				for _, r := range removed {
					if o, ok := g.nodes[r.UID]; ok {
						delete(o.dependents, n)
					}
				}
			}
		}
		n.beingDeleted = ch.Deleting
		// Level-triggered transitions into orphan / foreground deletion.
		switch {
		case ch.Deleting && has(ch.Finalizers, FinalizerOrphan):
			eff.AttemptToOrphan = append(eff.AttemptToOrphan, n.uid)
		case ch.Deleting && has(ch.Finalizers, FinalizerForeground):
			n.deletingDependents = true
			for dep := range n.dependents {
				eff.del(dep)
			}
			eff.del(n)
		default:
			n.deletingDependents = false
		}
	case Deleted, VirtualDeleted:
		if !found {
			return eff
		}
		if ch.Type == VirtualDeleted && existing.observed {
			// A live read disagrees with what the informer shows; the
			// informer's delete event will settle it.
			return eff
		}
		delete(g.nodes, existing.uid)
		for _, r := range existing.owners {
			if o, ok := g.nodes[r.UID]; ok {
				delete(o.dependents, existing)
				if o.deletingDependents {
					eff.del(o)
				}
				if !o.observed && len(o.dependents) == 0 {
					delete(g.nodes, o.uid)
				}
			}
		}
		// LIVE-2: dependents of a vanished owner are examined.
		for dep := range existing.dependents {
			eff.del(dep)
		}
	}
	return eff
}

func (g *Graph) addToOwners(n *node, owners []metav1.OwnerReference, eff *Effects) {
	for _, o := range owners {
		owner, ok := g.nodes[o.UID]
		if !ok {
			owner = g.newNode(refFromOwner(o, n.namespace), false)
			g.nodes[o.UID] = owner
			eff.del(owner) // verify the virtual owner exists
		}
		if owner.dependents == nil {
			owner.dependents = map[*node]struct{}{}
		}
		owner.dependents[n] = struct{}{}
		if ok && owner.namespace != "" && owner.namespace != n.namespace {
			// No cross-namespace owners: a namespaced owner must be in the
			// dependent's namespace.
			if owner.observed {
				eff.Invalid = append(eff.Invalid, InvalidOwnerRef{Dependent: n.identity(), OwnerUID: o.UID})
			}
			eff.del(n)
		}
	}
}

func diffRefs(old, new []metav1.OwnerReference) (added, removed, changed []metav1.OwnerReference) {
	oldByUID := map[types.UID]metav1.OwnerReference{}
	for _, r := range old {
		oldByUID[r.UID] = r
	}
	for _, r := range new {
		o, ok := oldByUID[r.UID]
		if !ok {
			added = append(added, r)
			continue
		}
		if blocks(o) && !blocks(r) {
			changed = append(changed, r)
		}
		delete(oldByUID, r.UID)
	}
	for _, r := range old {
		if _, ok := oldByUID[r.UID]; ok {
			removed = append(removed, r)
		}
	}
	return added, removed, changed
}

func blocks(r metav1.OwnerReference) bool {
	return r.BlockOwnerDeletion != nil && *r.BlockOwnerDeletion
}

// Snapshot is a read-only view of one node for a worker.
type Snapshot struct {
	Identity           ObjectRef
	Observed           bool
	BeingDeleted       bool
	DeletingDependents bool
	Dependents         []ObjectRef
	// Blocking are the dependents whose reference to this node has
	// blockOwnerDeletion, and that are not themselves deleting dependents.
	Blocking []types.UID
	// BlockingCount counts every blocking dependent.
	BlockingCount int
	// DependentDeletingDependents is true if some dependent is itself in
	// foreground deletion (a possible cycle).
	DependentDeletingDependents bool
}

// Snapshot returns a view of the node with uid.
func (g *Graph) Snapshot(uid types.UID) (Snapshot, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	n, ok := g.nodes[uid]
	if !ok {
		return Snapshot{}, false
	}
	s := Snapshot{Identity: n.identity(), Observed: n.observed, BeingDeleted: n.beingDeleted, DeletingDependents: n.deletingDependents}
	for dep := range n.dependents {
		s.Dependents = append(s.Dependents, dep.identity())
		if dep.deletingDependents {
			s.DependentDeletingDependents = true
		}
		for _, r := range dep.owners {
			if r.UID == uid && blocks(r) {
				s.BlockingCount++
				if !dep.deletingDependents {
					s.Blocking = append(s.Blocking, dep.uid)
				}
			}
		}
	}
	return s, true
}

// Len is the number of nodes (observed and virtual).
func (g *Graph) Len() int {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return len(g.nodes)
}
