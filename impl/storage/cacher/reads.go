package cacher

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeproof/kubeproof/impl/faults"
	"github.com/kubeproof/kubeproof/impl/storage"
	"github.com/kubeproof/kubeproof/impl/storage/etcd3"
)

// Create implements storage.Interface by writing to etcd.
func (c *Cacher) Create(ctx context.Context, key string, obj, out runtime.Object) error {
	return c.store.Create(ctx, key, obj, out)
}

// cachedUpdater is an Upstream that can start an update from the cache's
// copy of the object (etcd3.Store.GuaranteedUpdateFrom).
type cachedUpdater interface {
	GuaranteedUpdateFrom(ctx context.Context, key string, dest runtime.Object, ignoreNotFound bool,
		preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc, cached runtime.Object) error
}

// GuaranteedUpdate implements storage.Interface by writing to etcd. As
// kube-apiserver's watch cache, it hands the store a copy of the cached
// object to start from instead of the store's quorum read; the write is
// still a compare-and-swap on that object's revision, retried on the
// current object if it was stale (STORE-3).
func (c *Cacher) GuaranteedUpdate(ctx context.Context, key string, dest runtime.Object, ignoreNotFound bool,
	preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc) error {
	if u, ok := c.store.(cachedUpdater); ok && c.isReady() {
		c.mu.RLock()
		co, found := c.items.Get(&cachedObject{key: key})
		c.mu.RUnlock()
		if found {
			return u.GuaranteedUpdateFrom(ctx, key, dest, ignoreNotFound, preconditions, tryUpdate, co.obj.DeepCopyObject())
		}
	}
	return c.store.GuaranteedUpdate(ctx, key, dest, ignoreNotFound, preconditions, tryUpdate)
}

// Delete implements storage.Interface by writing to etcd.
func (c *Cacher) Delete(ctx context.Context, key string, out runtime.Object, preconditions *storage.Preconditions,
	validateDeletion storage.ValidateObjectFunc) error {
	return c.store.Delete(ctx, key, out, preconditions, validateDeletion)
}

// Get implements storage.Interface: resourceVersion "" reads etcd, "0" and
// "N" (not older than N) read the cache.
func (c *Cacher) Get(ctx context.Context, key string, opts storage.GetOptions, out runtime.Object) error {
	obj, cached, err := c.get(ctx, key, opts, func() runtime.Object { return out })
	if err != nil || !cached {
		return err
	}
	return copyInto(key, obj, out)
}

// View is Get handing view the object read instead of a copy of it in an
// out object: the cached object itself when the cache serves the read, so
// view must not change it, nor keep anything of it but its strings (other
// readers share it). A read Get would take from etcd (or a missing object
// with IgnoreNotFound, zeroed) goes into a newOut object, which view is
// then handed.
func (c *Cacher) View(ctx context.Context, key string, opts storage.GetOptions, newOut func() runtime.Object, view func(runtime.Object)) error {
	obj, _, err := c.get(ctx, key, opts, newOut)
	if err != nil {
		return err
	}
	view(obj)
	return nil
}

// get is Get's read: the cached object itself (cached true, not copied),
// or out() read from etcd, or zeroed for a missing object with
// IgnoreNotFound.
func (c *Cacher) get(ctx context.Context, key string, opts storage.GetOptions, out func() runtime.Object) (obj runtime.Object, cached bool, err error) {
	fromStore := func() (runtime.Object, bool, error) {
		o := out()
		return o, false, c.store.Get(ctx, key, opts, o)
	}
	if opts.ResourceVersion == "" || !c.isReady() {
		return fromStore()
	}
	rv, err := storage.ParseResourceVersion(key, opts.ResourceVersion)
	if err != nil {
		return nil, false, err
	}
	if err := c.waitUntilFresh(ctx, key, rv, true); errors.Is(err, errNotReady) {
		return fromStore()
	} else if err != nil {
		return nil, false, err
	}
	c.mu.RLock()
	co, ok := c.items.Get(&cachedObject{key: key})
	c.mu.RUnlock()
	if !ok {
		if opts.IgnoreNotFound {
			o := out()
			return o, false, runtime.SetZeroValue(o)
		}
		return nil, false, storage.NewError(storage.ErrCodeKeyNotFound, key, 0, "", nil)
	}
	return co.obj, true, nil
}

// copyInto sets out to a deep copy of obj.
func copyInto(key string, obj, out runtime.Object) error {
	src := reflect.ValueOf(obj.DeepCopyObject())
	dst := reflect.ValueOf(out)
	if dst.Kind() != reflect.Pointer || src.Type() != dst.Type() {
		return storage.NewError(storage.ErrCodeInvalidObj, key, 0, fmt.Sprintf("cannot read %T into %T", obj, out), nil)
	}
	dst.Elem().Set(src.Elem())
	return nil
}

// DelegatesList reports whether the watch cache reads a list with opts
// from etcd rather than from memory (see delegateList); API Priority and
// Fairness's list work estimate asks, as kube-apiserver's asks its
// cacher's delegator.
func DelegatesList(opts storage.ListOptions) bool { return delegateList(opts) }

// delegateList reports whether a list must be read from etcd: quorum reads,
// exact revisions (explicit, or the legacy resourceVersion+limit form) and
// continuations.
func delegateList(opts storage.ListOptions) bool {
	switch {
	case opts.ResourceVersion == "":
		return !faults.Enabled(faults.QuorumListFromCache) // mutation: quorum list from the cache (STORE-4)
	case opts.Predicate.Continue != "":
		return true
	case opts.ResourceVersionMatch == metav1.ResourceVersionMatchExact:
		return true
	case opts.ResourceVersionMatch == "" && opts.ResourceVersion != "0" && opts.Predicate.Limit > 0 && opts.Recursive:
		return true
	case opts.ResourceVersionMatch != "" && opts.ResourceVersionMatch != metav1.ResourceVersionMatchNotOlderThan:
		return true // let etcd3 reject it
	}
	return false
}

// GetList implements storage.Interface; see delegateList for what is read
// from etcd. A list from the cache is at the cache's revision; with a limit
// it returns the first page and a continue token that etcd serves at that
// revision.
func (c *Cacher) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	if delegateList(opts) || !c.isReady() {
		return c.store.GetList(ctx, key, opts, listObj)
	}
	rv, err := storage.ParseResourceVersion(key, opts.ResourceVersion)
	if err != nil {
		return err
	}
	if err := c.waitUntilFresh(ctx, key, rv, true); errors.Is(err, errNotReady) {
		return c.store.GetList(ctx, key, opts, listObj)
	} else if err != nil {
		return err
	}
	pred := opts.Predicate
	if pred.GetAttrs == nil {
		pred.GetAttrs = c.getAttrs
	}
	prefix := keyPrefix(key, opts.Recursive)
	c.mu.RLock()
	matched := c.snapshotLocked(prefix, opts.Recursive, pred)
	listRV := c.rv
	c.mu.RUnlock()

	listPtr, err := meta.GetItemsPtr(listObj)
	if err != nil {
		return storage.NewError(storage.ErrCodeInvalidObj, key, 0, "list object has no items", err)
	}
	items, err := conversion.EnforcePtr(listPtr)
	if err != nil || items.Kind() != reflect.Slice {
		return storage.NewError(storage.ErrCodeInvalidObj, key, 0, "list items are not a slice", err)
	}
	lm, err := meta.ListAccessor(listObj)
	if err != nil {
		return storage.NewError(storage.ErrCodeInvalidObj, key, 0, "reading list metadata", err)
	}
	page := matched
	var next string
	var remaining *int64
	if limit := pred.Limit; opts.Recursive && limit > 0 && int64(len(matched)) > limit {
		page = matched[:limit]
		last := page[len(page)-1].key
		etcdPrefix := c.store.PathPrefix() + prefix
		next, err = etcd3.EncodeContinue(c.store.PathPrefix()+last+"\x00", etcdPrefix, listRV)
		if err != nil {
			return storage.NewError(storage.ErrCodeInvalidObj, key, listRV, "encoding continue token", err)
		}
		if pred.Empty() {
			n := int64(len(matched)) - limit
			remaining = &n
		}
	}
	slice := reflect.MakeSlice(items.Type(), 0, len(page))
	for _, co := range page {
		slice = reflect.Append(slice, reflect.ValueOf(co.obj.DeepCopyObject()).Elem())
	}
	items.Set(slice)
	lm.SetResourceVersion(strconv.FormatInt(listRV, 10))
	lm.SetContinue(next)
	lm.SetRemainingItemCount(remaining)
	return nil
}
