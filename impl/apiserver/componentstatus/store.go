package componentstatus

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubeproof/kubeproof/impl/storage"
)

// Store serves the components' ComponentStatuses as a read-only
// storage.Interface: Get probes the component its key names, GetList
// probes every one at once and keeps those the predicate selects (a label
// selector selects none, the objects having no labels; a metadata.name
// field selector one), as kube-apiserver's componentstatus REST filters its
// list. Lists have no resourceVersion and are never paginated. Writes and
// watches are refused: the resource serves get and list only.
type Store struct {
	components []Component
}

var _ storage.Interface = (*Store)(nil)

// NewStore serves components.
func NewStore(components []Component) *Store {
	return &Store{components: slices.Clone(components)}
}

// Get implements storage.Interface: key's last segment names the component.
func (s *Store) Get(ctx context.Context, key string, opts storage.GetOptions, out runtime.Object) error {
	cs, ok := out.(*corev1.ComponentStatus)
	if !ok {
		return fmt.Errorf("reading component status %s into %T, not a ComponentStatus", key, out)
	}
	name := path.Base(key)
	i := slices.IndexFunc(s.components, func(c Component) bool { return c.Name == name })
	if i < 0 {
		if opts.IgnoreNotFound {
			*cs = corev1.ComponentStatus{}
			return nil
		}
		return storage.NewError(storage.ErrCodeKeyNotFound, key, 0, "", nil)
	}
	c := s.components[i]
	*cs = *Status(c.Name, c.Prober.Probe(ctx))
	return nil
}

// GetList implements storage.Interface: every component is probed, in
// parallel, and listed by name.
func (s *Store) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	list, ok := listObj.(*corev1.ComponentStatusList)
	if !ok {
		return fmt.Errorf("listing component statuses into %T, not a ComponentStatusList", listObj)
	}
	statuses := make([]*corev1.ComponentStatus, len(s.components))
	var wg sync.WaitGroup
	for i, c := range s.components {
		wg.Go(func() { statuses[i] = Status(c.Name, c.Prober.Probe(ctx)) })
	}
	wg.Wait()
	items := make([]corev1.ComponentStatus, 0, len(statuses))
	for _, cs := range statuses {
		ok, err := opts.Predicate.Matches(cs)
		if err != nil {
			return fmt.Errorf("selecting component status %s: %w", cs.Name, err)
		}
		if ok {
			items = append(items, *cs)
		}
	}
	slices.SortFunc(items, func(a, b corev1.ComponentStatus) int { return strings.Compare(a.Name, b.Name) })
	*list = corev1.ComponentStatusList{Items: items}
	return nil
}

// errNotStored answers the operations a computed resource has not.
func errNotStored(op, key string) error {
	return fmt.Errorf("%s of %s: component statuses are computed on each read, not stored", op, key)
}

// Create implements storage.Interface; it is refused.
func (s *Store) Create(_ context.Context, key string, _, _ runtime.Object) error {
	return errNotStored("create", key)
}

// GuaranteedUpdate implements storage.Interface; it is refused.
func (s *Store) GuaranteedUpdate(_ context.Context, key string, _ runtime.Object, _ bool, _ *storage.Preconditions, _ storage.UpdateFunc) error {
	return errNotStored("update", key)
}

// Delete implements storage.Interface; it is refused.
func (s *Store) Delete(_ context.Context, key string, _ runtime.Object, _ *storage.Preconditions, _ storage.ValidateObjectFunc) error {
	return errNotStored("delete", key)
}

// Watch implements storage.Interface; it is refused.
func (s *Store) Watch(_ context.Context, key string, _ storage.ListOptions) (watch.Interface, error) {
	return nil, errNotStored("watch", key)
}
