// Package convert serves one resource's storage as another kind: a
// storage.Interface decorator that converts objects on the way in and out.
// Kubernetes stores events once and serves them as core/v1 Events and as
// events.k8s.io/v1 Events; this is how kubeproof does the same, so a
// scheduler writing events.k8s.io events and `kubectl describe` reading
// core events see the same objects.
package convert

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubeproof/kubeproof/impl/storage"
)

// Config describes the conversion between the served kind (outer) and the
// stored kind (inner).
type Config struct {
	// Inner is the storage of the stored kind.
	Inner storage.Interface
	// NewInner and NewInnerList make empty stored objects.
	NewInner, NewInnerList func() runtime.Object
	// InnerAttrs are the stored kind's labels and fields; selectors are
	// evaluated on stored objects.
	InnerAttrs storage.AttrFunc
	// ToInner and FromInner convert one object; they must keep the
	// metadata (name, uid, resourceVersion, annotations, …).
	ToInner, FromInner func(runtime.Object) (runtime.Object, error)
	// FieldLabel maps a served field selector label to the stored kind's
	// (e.g. "regarding.name" → "involvedObject.name"); nil keeps labels.
	FieldLabel func(string) string
}

// Store is the served view of an inner store.
type Store struct{ cfg Config }

var _ storage.Interface = (*Store)(nil)

// New returns the converting store.
func New(cfg Config) *Store { return &Store{cfg: cfg} }

// Create implements storage.Interface.
func (s *Store) Create(ctx context.Context, key string, obj, out runtime.Object) error {
	in, err := s.cfg.ToInner(obj)
	if err != nil {
		return invalid(key, err)
	}
	innerOut := s.cfg.NewInner()
	if err := s.cfg.Inner.Create(ctx, key, in, innerOut); err != nil {
		return err
	}
	return s.fill(key, out, innerOut)
}

// Get implements storage.Interface.
func (s *Store) Get(ctx context.Context, key string, opts storage.GetOptions, out runtime.Object) error {
	innerOut := s.cfg.NewInner()
	if err := s.cfg.Inner.Get(ctx, key, opts, innerOut); err != nil {
		return err
	}
	if opts.IgnoreNotFound {
		if m, err := meta.Accessor(innerOut); err == nil && m.GetResourceVersion() == "" && m.GetName() == "" {
			return nil // not found: out stays zero
		}
	}
	return s.fill(key, out, innerOut)
}

// GetList implements storage.Interface.
func (s *Store) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	if err := s.innerPredicate(&opts.Predicate); err != nil {
		return err
	}
	innerList := s.cfg.NewInnerList()
	if err := s.cfg.Inner.GetList(ctx, key, opts, innerList); err != nil {
		return err
	}
	items, err := meta.ExtractList(innerList)
	if err != nil {
		return invalid(key, err)
	}
	converted := make([]runtime.Object, len(items))
	for i, it := range items {
		if converted[i], err = s.cfg.FromInner(it); err != nil {
			return invalid(key, err)
		}
	}
	if err := meta.SetList(listObj, converted); err != nil {
		return invalid(key, err)
	}
	from, err := meta.ListAccessor(innerList)
	if err != nil {
		return invalid(key, err)
	}
	to, err := meta.ListAccessor(listObj)
	if err != nil {
		return invalid(key, err)
	}
	to.SetResourceVersion(from.GetResourceVersion())
	to.SetContinue(from.GetContinue())
	to.SetRemainingItemCount(from.GetRemainingItemCount())
	return nil
}

// GuaranteedUpdate implements storage.Interface: tryUpdate sees and returns
// served objects; the compare-and-swap happens on the stored ones.
func (s *Store) GuaranteedUpdate(ctx context.Context, key string, dest runtime.Object, ignoreNotFound bool,
	preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc) error {
	innerDest := s.cfg.NewInner()
	err := s.cfg.Inner.GuaranteedUpdate(ctx, key, innerDest, ignoreNotFound, preconditions, func(input runtime.Object) (runtime.Object, error) {
		outer, err := s.cfg.FromInner(input)
		if err != nil {
			return nil, invalid(key, err)
		}
		updated, err := tryUpdate(outer)
		if err != nil {
			return nil, err
		}
		in, err := s.cfg.ToInner(updated)
		if err != nil {
			return nil, invalid(key, err)
		}
		return in, nil
	})
	if err != nil {
		return err
	}
	return s.fill(key, dest, innerDest)
}

// Delete implements storage.Interface.
func (s *Store) Delete(ctx context.Context, key string, out runtime.Object, preconditions *storage.Preconditions,
	validateDeletion storage.ValidateObjectFunc) error {
	innerOut := s.cfg.NewInner()
	var validate storage.ValidateObjectFunc
	if validateDeletion != nil {
		validate = func(ctx context.Context, obj runtime.Object) error {
			outer, err := s.cfg.FromInner(obj)
			if err != nil {
				return invalid(key, err)
			}
			return validateDeletion(ctx, outer)
		}
	}
	if err := s.cfg.Inner.Delete(ctx, key, innerOut, preconditions, validate); err != nil {
		return err
	}
	return s.fill(key, out, innerOut)
}

// Watch implements storage.Interface: events carry served objects.
func (s *Store) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	if err := s.innerPredicate(&opts.Predicate); err != nil {
		return nil, err
	}
	w, err := s.cfg.Inner.Watch(ctx, key, opts)
	if err != nil {
		return nil, err
	}
	cw := &convertingWatch{inner: w, result: make(chan watch.Event), stop: make(chan struct{}), done: make(chan struct{})}
	go cw.run(s.cfg.FromInner)
	return cw, nil
}

// innerPredicate makes p evaluate on stored objects: the stored kind's
// attributes and field labels.
func (s *Store) innerPredicate(p *storage.SelectionPredicate) error {
	p.GetAttrs = s.cfg.InnerAttrs
	if p.Field == nil || p.Field.Empty() || s.cfg.FieldLabel == nil {
		return nil
	}
	f, err := p.Field.Transform(func(label, value string) (string, string, error) {
		return s.cfg.FieldLabel(label), value, nil
	})
	if err != nil {
		return storage.NewError(storage.ErrCodeInvalidArgument, "", 0, fmt.Sprintf("field selector: %v", err), nil)
	}
	p.Field = f
	return nil
}

// fill converts a stored object into out (a pointer to a served object).
func (s *Store) fill(key string, out, inner runtime.Object) error {
	if out == nil {
		return nil
	}
	conv, err := s.cfg.FromInner(inner)
	if err != nil {
		return invalid(key, err)
	}
	dst, src := reflect.ValueOf(out), reflect.ValueOf(conv)
	if dst.Kind() != reflect.Pointer || src.Type() != dst.Type() {
		return invalid(key, fmt.Errorf("converted %T cannot fill %T", conv, out))
	}
	dst.Elem().Set(src.Elem())
	return nil
}

func invalid(key string, err error) error {
	return storage.NewError(storage.ErrCodeInvalidObj, key, 0, "converting between served and stored kinds", err)
}

// convertingWatch converts the objects of an inner watch's events. ERROR
// events carry a Status and pass through unchanged.
type convertingWatch struct {
	inner    watch.Interface
	result   chan watch.Event
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
}

func (w *convertingWatch) run(from func(runtime.Object) (runtime.Object, error)) {
	defer close(w.done)
	defer close(w.result)
	defer w.inner.Stop()
	in := w.inner.ResultChan()
	for {
		select {
		case e, ok := <-in:
			if !ok {
				return
			}
			if e.Type != watch.Error {
				obj, err := from(e.Object)
				if err != nil {
					// Never skip an event silently: end the watch with an
					// error so the client relists.
					status := apierrors.NewInternalError(fmt.Errorf("converting watch event: %w", err)).Status()
					e = watch.Event{Type: watch.Error, Object: &status}
					select {
					case w.result <- e:
					case <-w.stop:
					}
					return
				}
				e.Object = obj
			}
			select {
			case w.result <- e:
			case <-w.stop:
				return
			}
		case <-w.stop:
			return
		}
	}
}

// Stop ends the watch and waits for its goroutine.
func (w *convertingWatch) Stop() {
	w.stopOnce.Do(func() { close(w.stop) })
	<-w.done
}

// ResultChan returns the converted events.
func (w *convertingWatch) ResultChan() <-chan watch.Event { return w.result }
