// Package etcd3 stores API objects directly in etcd, the way kube-apiserver's
// etcd3 storage does: protobuf-encoded objects under "/registry/...", writes
// as compare-and-swap transactions on the key's modification revision, and
// the modification revision as resourceVersion.
//
// Spec properties enforced here: STORE-1 (resourceVersion is the etcd
// modification revision), STORE-2 (create is Txn If(ModRevision==0)),
// STORE-3 (update and delete are CAS on the revision read), STORE-6 (watch
// selectors: leaving the selector is DELETED, entering is ADDED).
package etcd3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeproof/kubeproof/impl/faults"
	"github.com/kubeproof/kubeproof/impl/internal/reqlatency"
	"github.com/kubeproof/kubeproof/impl/storage"
)

// Config configures the store of one resource.
type Config struct {
	// Client talks to etcd.
	Client *clientv3.Client
	// NewWatcher returns a Watcher of its own for one watch; nil means
	// clientv3.NewWatcher(Client). An in-process client (package
	// embedded's InProcessClient) has no connection to open watch streams
	// on and must bring its own (embedded.Etcd.NewWatcher).
	NewWatcher func() clientv3.Watcher
	// Prefix is prepended to every key; "" means "/registry".
	Prefix string
	// Resource describes the resource stored.
	Resource storage.ResourceConfig
	// Codec encodes objects; nil means NewCodec(client-go's scheme,
	// Resource.StorageVersion).
	Codec runtime.Codec
	// Metrics receives etcd request metrics; nil records nothing.
	Metrics *Metrics
	// BookmarkInterval is how often watches that allow bookmarks get one
	// (via etcd progress notifications); 0 means one minute.
	BookmarkInterval time.Duration
	// TooLargeResourceVersionWait is how long a read that asks for a
	// resourceVersion newer than etcd's waits for it before failing with
	// ErrCodeTooLargeResourceVersion; 0 means 3 seconds.
	TooLargeResourceVersionWait time.Duration
	// Logger logs rare events (watch errors); nil means slog.Default().
	Logger *slog.Logger
}

// Store is storage.Interface on etcd for one resource.
type Store struct {
	client       *clientv3.Client
	requestTxn   RequestTxner // client.KV if it is one, else nil
	newWatcher   func() clientv3.Watcher
	codec        runtime.Codec
	pathPrefix   string // "/registry"
	resource     storage.ResourceConfig
	mlabels      metricLabels // the metrics' group and resource labels
	metrics      *Metrics
	tooLargeWait time.Duration
	log          *slog.Logger
	bookmarks    *progressRequester
	newFunc      func() runtime.Object
	newListFunc  func() runtime.Object
	getAttrs     storage.AttrFunc
	shared       *sharedDecodes
	leases       *leases // nil unless resource.TTL > 0
	closeOnce    sync.Once
}

var _ storage.Interface = (*Store)(nil)

// New returns the store of cfg.Resource. Close releases it.
func New(cfg Config) (*Store, error) {
	if cfg.Client == nil {
		return nil, errors.New("etcd3: Client is required")
	}
	if cfg.Resource.NewFunc == nil || cfg.Resource.NewListFunc == nil {
		return nil, errors.New("etcd3: Resource.NewFunc and NewListFunc are required")
	}
	prefix := storage.NormalizePrefix(cfg.Prefix)
	codec := cfg.Codec
	if codec == nil {
		codec = NewCodec(nil, cfg.Resource.StorageVersion)
	}
	wait := cfg.TooLargeResourceVersionWait
	if wait == 0 {
		wait = 3 * time.Second
	}
	interval := cfg.BookmarkInterval
	if interval == 0 {
		interval = time.Minute
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	newWatcher := cfg.NewWatcher
	if newWatcher == nil {
		client := cfg.Client
		newWatcher = func() clientv3.Watcher { return clientv3.NewWatcher(client) }
	}
	mlabels := metricLabels{group: cfg.Resource.GroupResource.Group, resource: cfg.Resource.GroupResource.Resource}
	if mlabels.resource == "" {
		mlabels.resource = strings.Trim(cfg.Resource.ResourcePrefix, "/")
	}
	getAttrs := cfg.Resource.GetAttrs
	if getAttrs == nil {
		getAttrs = storage.DefaultAttrs
	}
	requestTxn, _ := cfg.Client.KV.(RequestTxner)
	var ls *leases
	if cfg.Resource.TTL > 0 {
		ls = newLeases(cfg.Client, cfg.Resource.TTL)
	}
	return &Store{
		client:       cfg.Client,
		requestTxn:   requestTxn,
		newWatcher:   newWatcher,
		codec:        codec,
		pathPrefix:   prefix,
		resource:     cfg.Resource,
		mlabels:      mlabels,
		metrics:      cfg.Metrics,
		tooLargeWait: wait,
		log:          logger,
		bookmarks:    newProgressRequester(interval),
		newFunc:      cfg.Resource.NewFunc,
		newListFunc:  cfg.Resource.NewListFunc,
		getAttrs:     getAttrs,
		shared:       newSharedDecodes(cfg.Resource.NewFunc),
		leases:       ls,
	}, nil
}

// Close stops the store's background work. Watches already started end
// when their context ends or they are stopped.
func (s *Store) Close() {
	s.closeOnce.Do(s.bookmarks.stop)
}

// Codec returns the codec objects are stored with.
func (s *Store) Codec() runtime.Codec { return s.codec }

// Client returns the etcd client.
func (s *Store) Client() *clientv3.Client { return s.client }

// PathPrefix returns the prefix every key is stored under ("/registry").
func (s *Store) PathPrefix() string { return s.pathPrefix }

// prepareKey returns the etcd key of key, refusing keys that would leave the
// prefix.
func (s *Store) prepareKey(key string) (string, error) {
	if key == "" || !strings.HasPrefix(key, "/") {
		return "", storage.NewError(storage.ErrCodeInvalidArgument, key, 0, "invalid key: must start with /", nil)
	}
	for seg := range strings.SplitSeq(key[1:], "/") {
		if seg == "." || seg == ".." {
			return "", storage.NewError(storage.ErrCodeInvalidArgument, key, 0, "invalid key: contains . or .. segment", nil)
		}
	}
	return s.pathPrefix + key, nil
}

// Create implements storage.Interface.
func (s *Store) Create(ctx context.Context, key string, obj, out runtime.Object) error {
	k, err := s.prepareKey(key)
	if err != nil {
		return err
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return storage.NewError(storage.ErrCodeInvalidObj, key, 0, "reading object metadata", err)
	}
	// As kube-apiserver's store: a resourceVersion that is 0 or not an
	// unsigned number is ignored (encode drops it).
	if rv := m.GetResourceVersion(); rv != "" {
		if n, err := strconv.ParseUint(rv, 10, 64); err == nil && n != 0 {
			return storage.NewError(storage.ErrCodeInvalidObj, key, 0, "resourceVersion should not be set on objects to be created", nil)
		}
	}
	buf := getEncodeBuffer()
	defer putEncodeBuffer(buf)
	if err := s.encode(obj, buf); err != nil {
		return storage.NewError(storage.ErrCodeInvalidObj, key, 0, "encoding object", err)
	}
	data := buf.Bytes()
	// One decode of what is written serves this Create and the watch that
	// sees the write (see sharedDecodes).
	shared := s.shared.begin(k, out)
	defer s.shared.end(k, shared)
	return s.create(ctx, key, k, data, out, shared)
}

// create writes data at k (key's etcd key) if k does not exist and decodes
// it into out, taking the decode from a watch through shared if not nil.
func (s *Store) create(ctx context.Context, key, k string, data []byte, out runtime.Object, shared *sharedDecode) error {
	lease, err := s.lease(ctx)
	if err != nil {
		return s.etcdError(key, "create", err)
	}
	start := time.Now()
	// mutation: create without its precondition (STORE-2)
	precondition := !faults.Enabled(faults.CreateOverwritesExistingKey)
	succeeded, rev, err := s.txnCreate(ctx, k, data, lease, precondition)
	s.metrics.observe(ctx, "create", s.mlabels, start, err)
	if err != nil {
		return s.etcdError(key, "create", err)
	}
	if !succeeded {
		return storage.NewError(storage.ErrCodeKeyExists, key, 0, "", nil)
	}
	return s.decodeWritten(key, k, data, out, rev, shared)
}

// decodeWritten decodes data, just written at k (key's etcd key) at rev,
// into out (if not nil). With shared it takes a watch's decode of the
// write instead, or leaves the watch a copy of its own.
func (s *Store) decodeWritten(key, k string, data []byte, out runtime.Object, rev int64, shared *sharedDecode) error {
	if out == nil {
		return nil
	}
	if shared == nil {
		return s.decode(key, data, out, rev)
	}
	if s.shared.take(k, shared, rev, out) {
		return nil
	}
	if err := s.decode(key, data, out, rev); err != nil {
		return err
	}
	s.shared.publish(k, shared, rev, out)
	return nil
}

// Get implements storage.Interface.
func (s *Store) Get(ctx context.Context, key string, opts storage.GetOptions, out runtime.Object) error {
	k, err := s.prepareKey(key)
	if err != nil {
		return err
	}
	minRV, err := storage.ParseResourceVersion(key, opts.ResourceVersion)
	if err != nil {
		return err
	}
	var getOpts []clientv3.OpOption
	if opts.ResourceVersion == "0" {
		getOpts = append(getOpts, clientv3.WithSerializable())
	}
	resp, err := s.getAtLeast(ctx, key, "get", minRV, func() (*clientv3.GetResponse, error) {
		return s.client.KV.Get(ctx, k, getOpts...)
	})
	if err != nil {
		return err
	}
	if len(resp.Kvs) == 0 {
		if opts.IgnoreNotFound {
			return runtime.SetZeroValue(out)
		}
		return storage.NewError(storage.ErrCodeKeyNotFound, key, 0, "", nil)
	}
	kv := resp.Kvs[0]
	return s.decode(key, kv.Value, out, kv.ModRevision)
}

// getAtLeast runs get until its revision reaches minRV or the wait for a
// too large resourceVersion runs out.
func (s *Store) getAtLeast(ctx context.Context, key, op string, minRV int64, get func() (*clientv3.GetResponse, error)) (*clientv3.GetResponse, error) {
	deadline := time.Now().Add(s.tooLargeWait)
	backoff := 10 * time.Millisecond
	for {
		start := time.Now()
		resp, err := get()
		s.metrics.observe(ctx, op, s.mlabels, start, err)
		if err != nil {
			return nil, s.etcdError(key, op, err)
		}
		if resp.Header.Revision >= minRV {
			return resp, nil
		}
		if time.Now().After(deadline) {
			return nil, tooLargeError(key, minRV, resp.Header.Revision)
		}
		select {
		case <-ctx.Done():
			return nil, s.etcdError(key, op, ctx.Err())
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 200*time.Millisecond)
	}
}

func tooLargeError(key string, requested, current int64) error {
	return storage.NewError(storage.ErrCodeTooLargeResourceVersion, key, requested,
		fmt.Sprintf("Too large resource version: %d, current: %d", requested, current), nil)
}

// GetList implements storage.Interface.
func (s *Store) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	k, err := s.prepareKey(key)
	if err != nil {
		return err
	}
	listPtr, err := meta.GetItemsPtr(listObj)
	if err != nil {
		return storage.NewError(storage.ErrCodeInvalidObj, key, 0, "list object has no items", err)
	}
	items, err := conversion.EnforcePtr(listPtr)
	if err != nil || items.Kind() != reflect.Slice {
		return storage.NewError(storage.ErrCodeInvalidObj, key, 0, "list items are not a slice", err)
	}
	listMeta, err := meta.ListAccessor(listObj)
	if err != nil {
		return storage.NewError(storage.ErrCodeInvalidObj, key, 0, "reading list metadata", err)
	}
	pred := opts.Predicate
	if pred.GetAttrs == nil {
		pred.GetAttrs = s.getAttrs
	}
	// Keys under a directory end in "/" so that /pods/ns does not also list
	// /pods/ns2.
	keyPrefix := k
	if opts.Recursive && !strings.HasSuffix(keyPrefix, "/") {
		keyPrefix += "/"
	}

	plan, err := planList(key, keyPrefix, opts)
	if err != nil {
		return err
	}
	limit := pred.Limit
	if !opts.Recursive || limit < 0 {
		limit = 0
	}
	paging := limit > 0

	var getOpts []clientv3.OpOption
	if opts.Recursive {
		getOpts = append(getOpts, clientv3.WithRange(clientv3.GetPrefixRangeEnd(keyPrefix)))
	}
	if opts.ResourceVersion == "0" && plan.withRev == 0 {
		getOpts = append(getOpts, clientv3.WithSerializable())
	}

	fromKey := plan.fromKey
	withRev := plan.withRev
	fetch := limit
	sizes := storage.ValueSizesFrom(ctx)
	tracked := reqlatency.From(ctx)
	var (
		lastKey   []byte
		count     int64
		more      bool
		collected int64
		v         = items
	)
	for first := true; ; first = false {
		ops := getOpts
		if fetch > 0 {
			ops = append(ops[:len(ops):len(ops)], clientv3.WithLimit(fetch))
		}
		var resp *clientv3.GetResponse
		if withRev == 0 {
			resp, err = s.getAtLeast(ctx, key, "list", plan.minRV, func() (*clientv3.GetResponse, error) {
				return s.client.KV.Get(ctx, fromKey, ops...)
			})
		} else {
			ops = append(ops[:len(ops):len(ops)], clientv3.WithRev(withRev))
			start := time.Now()
			resp, err = s.client.KV.Get(ctx, fromKey, ops...)
			s.metrics.observe(ctx, "list", s.mlabels, start, err)
			if err != nil {
				err = s.listError(key, keyPrefix, plan, withRev, err)
			}
		}
		if err != nil {
			return err
		}
		if first {
			count = resp.Count
		}
		// Every later page of this list is read at this revision.
		if withRev == 0 {
			withRev = resp.Header.Revision
		}
		more = resp.More
		for _, kv := range resp.Kvs {
			if paging && collected == limit {
				more = true // the page is full but keys remain in this batch
				break
			}
			lastKey = kv.Key
			if sizes != nil {
				sizes(len(kv.Value), 0)
			}
			// As kube-apiserver: each listed item's decoding is the
			// request's decode-response-object latency.
			var decodeStart time.Time
			if tracked != nil {
				decodeStart = time.Now()
			}
			obj, err := s.decodeNew(key, kv.Value, kv.ModRevision)
			if tracked != nil {
				tracked.AddDecode(time.Since(decodeStart))
			}
			if err != nil {
				return err
			}
			if !pred.Empty() {
				ok, err := pred.Matches(obj)
				if err != nil {
					return storage.NewError(storage.ErrCodeInvalidObj, string(kv.Key), kv.ModRevision, "evaluating selector", err)
				}
				if !ok {
					continue
				}
			}
			v.Set(reflect.Append(v, reflect.ValueOf(obj).Elem()))
			collected++
		}
		if !paging || !more || collected == limit {
			break
		}
		// Selectors dropped some keys: read on after the last key, in
		// larger batches, at the same revision.
		fromKey = string(lastKey) + "\x00"
		fetch = min(fetch*2, 10000)
	}
	readRev := withRev

	if v.IsNil() {
		v.Set(reflect.MakeSlice(v.Type(), 0, 0))
	}
	listMeta.SetResourceVersion(strconv.FormatInt(readRev, 10))
	listMeta.SetContinue("")
	listMeta.SetRemainingItemCount(nil)
	if paging && more {
		next, err := EncodeContinue(string(lastKey)+"\x00", keyPrefix, readRev)
		if err != nil {
			return storage.NewError(storage.ErrCodeInvalidObj, key, readRev, "encoding continue token", err)
		}
		listMeta.SetContinue(next)
		if pred.Empty() {
			remaining := count - collected
			if remaining > 0 {
				listMeta.SetRemainingItemCount(&remaining)
			}
		}
	}
	return nil
}

// listPlan is where and at which revision a list reads.
type listPlan struct {
	fromKey    string
	withRev    int64 // read at this revision (exact / continue); 0: latest
	minRV      int64 // the latest revision must be at least this
	isContinue bool
	exact      bool
}

func planList(key, keyPrefix string, opts storage.ListOptions) (listPlan, error) {
	p := listPlan{fromKey: keyPrefix}
	pred := opts.Predicate
	if opts.Recursive && pred.Continue != "" {
		if opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
			return p, storage.NewError(storage.ErrCodeInvalidArgument, key, 0,
				"specifying resource version is not allowed when using continue", nil)
		}
		from, rv, err := DecodeContinue(pred.Continue, keyPrefix)
		if err != nil {
			return p, storage.NewError(storage.ErrCodeInvalidArgument, key, 0, err.Error(), err)
		}
		p.fromKey = from
		p.isContinue = true
		if rv > 0 {
			p.withRev = rv
		}
		// rv == -1: continue at the latest revision.
		return p, nil
	}
	rv, err := storage.ParseResourceVersion(key, opts.ResourceVersion)
	if err != nil {
		return p, err
	}
	switch opts.ResourceVersionMatch {
	case "":
		// Legacy: an RV with a limit lists exactly at it; without a
		// limit, not older than it.
		if rv > 0 && opts.Recursive && pred.Limit > 0 {
			p.withRev = rv
			p.exact = true
		} else {
			p.minRV = rv
		}
	case metav1.ResourceVersionMatchNotOlderThan:
		if opts.ResourceVersion == "" {
			return p, storage.NewError(storage.ErrCodeInvalidArgument, key, 0,
				"resourceVersionMatch is forbidden unless resourceVersion is provided", nil)
		}
		p.minRV = rv
	case metav1.ResourceVersionMatchExact:
		if rv == 0 {
			return p, storage.NewError(storage.ErrCodeInvalidArgument, key, 0,
				"resourceVersionMatch \"Exact\" is forbidden for resourceVersion \"0\"", nil)
		}
		p.withRev = rv
		p.exact = true
	default:
		return p, storage.NewError(storage.ErrCodeInvalidArgument, key, 0,
			fmt.Sprintf("unknown ResourceVersionMatch value: %v", opts.ResourceVersionMatch), nil)
	}
	return p, nil
}

// Messages of kube-apiserver's list errors after compaction.
const (
	expiredListMessage = "The resourceVersion for the provided list is too old."
	// ContinueExpiredMessage is the 410 message for a compacted continue
	// token when no inconsistent continuation can be offered.
	ContinueExpiredMessage = "The provided continue parameter is too old to display a consistent list result. " +
		"You can start a new list without the continue parameter."
	// InconsistentContinueMessage is the 410 message when storage.Error.Continue
	// offers a token continuing at the latest revision.
	InconsistentContinueMessage = "The provided continue parameter is too old to display a consistent list result. " +
		"You can start a new list without the continue parameter, or use the continue token in this response to " +
		"retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - " +
		"objects that were created, modified, or deleted between the time the first chunk was returned and now may " +
		"show up in the list."
)

func (s *Store) listError(key, keyPrefix string, plan listPlan, rev int64, err error) error {
	if errors.Is(err, rpctypes.ErrCompacted) {
		if plan.isContinue {
			token, terr := EncodeContinue(plan.fromKey, keyPrefix, -1)
			if terr != nil {
				return storage.NewError(storage.ErrCodeExpired, key, rev, ContinueExpiredMessage, err)
			}
			e := storage.NewError(storage.ErrCodeExpired, key, rev, InconsistentContinueMessage, err)
			e.Continue = token
			return e
		}
		return storage.NewError(storage.ErrCodeExpired, key, rev, expiredListMessage, err)
	}
	if errors.Is(err, rpctypes.ErrFutureRev) {
		return tooLargeError(key, rev, 0)
	}
	return s.etcdError(key, "list", err)
}

// GuaranteedUpdate implements storage.Interface. tryUpdate is handed the
// object as read, which it may change: each attempt reads its own.
func (s *Store) GuaranteedUpdate(ctx context.Context, key string, dest runtime.Object, ignoreNotFound bool,
	preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc) error {
	return s.GuaranteedUpdateFrom(ctx, key, dest, ignoreNotFound, preconditions, tryUpdate, nil)
}

// GuaranteedUpdateFrom is GuaranteedUpdate starting from cached, the object
// at key as a watch cache last saw it (with its resourceVersion; a copy the
// update may change), instead of a quorum read, as kube-apiserver's watch
// cache hands its storage the cached object. The cached object may be
// stale; the write is still a compare-and-swap on the revision it was
// computed from (STORE-3), so a stale one only costs a failed transaction,
// whose reply carries the current object to retry on. What the cached
// object alone cannot decide is read from etcd first: preconditions or
// tryUpdate failing on it (they may pass on the current object), and an
// update that changes nothing (it writes nothing only if the current object
// is the cached one). cached nil is GuaranteedUpdate.
func (s *Store) GuaranteedUpdateFrom(ctx context.Context, key string, dest runtime.Object, ignoreNotFound bool,
	preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc, cached runtime.Object) error {
	k, err := s.prepareKey(key)
	if err != nil {
		return err
	}
	var cur objState
	current := cached == nil // cur is what a quorum read returned
	if current {
		if cur, err = s.readCurrent(ctx, k, key); err != nil {
			return err
		}
	} else {
		cachedBuf := getEncodeBuffer()
		defer putEncodeBuffer(cachedBuf)
		if cur, err = s.cachedState(key, cached, cachedBuf); err != nil {
			return err
		}
	}
	// refresh replaces a cached state by the current one.
	refresh := func() error {
		cur, err = s.readCurrent(ctx, k, key)
		current = true
		return err
	}
	buf := getEncodeBuffer()
	defer putEncodeBuffer(buf)
	// One decode of what is written serves this update and the watch that
	// sees the write (see sharedDecodes).
	shared := s.shared.begin(k, dest)
	defer s.shared.end(k, shared)
	for {
		if cur.rev == 0 && !ignoreNotFound {
			return storage.NewError(storage.ErrCodeKeyNotFound, key, 0, "", nil)
		}
		if cur.rev != 0 {
			if err := preconditions.Check(key, cur.obj); err != nil {
				if current {
					return err
				}
				if err := refresh(); err != nil {
					return err
				}
				continue
			}
		}
		// cur.obj is this call's own (decoded for it, or the caller's
		// copy) and is not read again once tryUpdate has had it.
		ret, err := tryUpdate(cur.obj)
		if err != nil {
			if current {
				return err
			}
			rev := cur.rev
			if err := refresh(); err != nil {
				return err
			}
			if cur.rev == rev {
				return err // the cached object was current
			}
			continue
		}
		if err := s.encode(ret, buf); err != nil {
			return storage.NewError(storage.ErrCodeInvalidObj, key, cur.rev, "encoding object", err)
		}
		data := buf.Bytes()
		if cur.rev != 0 && bytes.Equal(data, cur.data) {
			if !current {
				if err := refresh(); err != nil {
					return err
				}
				if !bytes.Equal(data, cur.data) {
					continue // changed since: update the current object
				}
			}
			// Nothing changed: no write, and dest is the stored object.
			return s.decode(key, cur.data, dest, cur.rev)
		}
		lease, err := s.lease(ctx)
		if err != nil {
			return s.etcdError(key, "update", err)
		}
		start := time.Now()
		txn, err := s.client.KV.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(k), "=", cur.rev)).
			Then(opPut(k, data, lease)).
			Else(clientv3.OpGet(k)).
			Commit()
		s.metrics.observe(ctx, "update", s.mlabels, start, err)
		if err != nil {
			return s.etcdError(key, "update", err)
		}
		if !txn.Succeeded {
			// Another write came first (or the cached object was stale):
			// retry on what is there.
			cur, err = s.stateFrom(key, txn.Responses[0].GetResponseRange().Kvs)
			if err != nil {
				return err
			}
			current = true
			continue
		}
		return s.decodeWritten(key, k, data, dest, txn.Header.Revision, shared)
	}
}

// cachedState is the state of cached (see GuaranteedUpdateFrom), its
// stored bytes encoded into buf.
func (s *Store) cachedState(key string, cached runtime.Object, buf *bytes.Buffer) (objState, error) {
	m, err := meta.Accessor(cached)
	if err != nil {
		return objState{}, storage.NewError(storage.ErrCodeInvalidObj, key, 0, "reading cached object metadata", err)
	}
	rev, err := strconv.ParseInt(m.GetResourceVersion(), 10, 64)
	if err != nil || rev <= 0 {
		return objState{}, storage.NewError(storage.ErrCodeInvalidObj, key, 0,
			fmt.Sprintf("cached object has resourceVersion %q", m.GetResourceVersion()), err)
	}
	if err := s.encode(cached, buf); err != nil {
		return objState{}, storage.NewError(storage.ErrCodeInvalidObj, key, rev, "encoding cached object", err)
	}
	return objState{obj: cached, data: buf.Bytes(), rev: rev}, nil
}

// objState is an object as read from etcd.
type objState struct {
	obj  runtime.Object
	data []byte
	rev  int64 // 0: no object
}

func (s *Store) stateFrom(key string, kvs []*mvccpb.KeyValue) (objState, error) {
	if len(kvs) == 0 {
		return objState{obj: s.newFunc()}, nil
	}
	kv := kvs[0]
	obj, err := s.decodeNew(key, kv.Value, kv.ModRevision)
	if err != nil {
		return objState{}, err
	}
	return objState{obj: obj, data: kv.Value, rev: kv.ModRevision}, nil
}

// readCurrent reads the object at k (key's etcd key) by a quorum get, as
// the first step of a compare-and-swap write: the object's state (rev 0
// when absent).
func (s *Store) readCurrent(ctx context.Context, k, key string) (objState, error) {
	start := time.Now()
	resp, err := s.client.KV.Get(ctx, k)
	s.metrics.observe(ctx, "get", s.mlabels, start, err)
	if err != nil {
		return objState{}, s.etcdError(key, "get", err)
	}
	return s.stateFrom(key, resp.Kvs)
}

// Delete implements storage.Interface.
func (s *Store) Delete(ctx context.Context, key string, out runtime.Object, preconditions *storage.Preconditions,
	validateDeletion storage.ValidateObjectFunc) error {
	k, err := s.prepareKey(key)
	if err != nil {
		return err
	}
	cur, err := s.readCurrent(ctx, k, key)
	if err != nil {
		return err
	}
	for {
		if cur.rev == 0 {
			return storage.NewError(storage.ErrCodeKeyNotFound, key, 0, "", nil)
		}
		if err := preconditions.Check(key, cur.obj); err != nil {
			return err
		}
		if validateDeletion != nil {
			if err := validateDeletion(ctx, cur.obj); err != nil {
				return err
			}
		}
		start := time.Now()
		txn, err := s.client.KV.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(k), "=", cur.rev)).
			Then(clientv3.OpDelete(k)).
			Else(clientv3.OpGet(k)).
			Commit()
		s.metrics.observe(ctx, "delete", s.mlabels, start, err)
		if err != nil {
			return s.etcdError(key, "delete", err)
		}
		if !txn.Succeeded {
			cur, err = s.stateFrom(key, txn.Responses[0].GetResponseRange().Kvs)
			if err != nil {
				return err
			}
			continue
		}
		// The last state, stamped with the deletion's revision as the
		// DELETED watch event is.
		return s.decode(key, cur.data, out, txn.Header.Revision)
	}
}

// encode writes obj's stored bytes into buf (replacing what it held): its
// resourceVersion is not stored (it is the key's modification revision).
func (s *Store) encode(obj runtime.Object, buf *bytes.Buffer) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	rv := m.GetResourceVersion()
	if rv != "" {
		m.SetResourceVersion("")
		defer m.SetResourceVersion(rv)
	}
	buf.Reset()
	if enc, ok := s.codec.(runtime.EncoderWithAllocator); ok {
		alloc := runtime.AllocatorPool.Get().(*runtime.Allocator)
		defer runtime.AllocatorPool.Put(alloc)
		return enc.EncodeWithAllocator(obj, buf, alloc)
	}
	return s.codec.Encode(obj, buf)
}

// encodeBuffers hold encoded objects for the length of one write: the
// bytes are copied into the etcd request and decoded into the caller's
// object (decoding into a typed object copies what it keeps) before the
// buffer goes back.
var encodeBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledEncodeBuffer: buffers grown beyond this are left to the GC.
const maxPooledEncodeBuffer = 1 << 20

func getEncodeBuffer() *bytes.Buffer { return encodeBuffers.Get().(*bytes.Buffer) }

func putEncodeBuffer(b *bytes.Buffer) {
	if b.Cap() <= maxPooledEncodeBuffer {
		encodeBuffers.Put(b)
	}
}

// opPut is clientv3.OpPut of data, which is usually a pooled encode
// buffer, attached to lease unless it is clientv3.NoLease. OpPut copies
// its value into the Op ([]byte(val)), so the string only has to live
// through the call: viewing data as one, instead of converting it, spares
// a second copy of every written object.
func opPut(key string, data []byte, lease clientv3.LeaseID) clientv3.Op {
	val := unsafe.String(unsafe.SliceData(data), len(data))
	if lease != clientv3.NoLease {
		return clientv3.OpPut(key, val, clientv3.WithLease(lease))
	}
	return clientv3.OpPut(key, val)
}

// lease is the lease a write attaches its object to: none for a resource
// without a TTL (clientv3.NoLease), else one that keeps the object for at
// least the TTL after this write (see leases).
func (s *Store) lease(ctx context.Context) (clientv3.LeaseID, error) {
	if s.leases == nil {
		return clientv3.NoLease, nil
	}
	return s.leases.get(ctx)
}

// decode decodes data into out and sets its resourceVersion to rev.
func (s *Store) decode(key string, data []byte, out runtime.Object, rev int64) error {
	if out == nil {
		return nil
	}
	if _, ok := out.(*runtime.Unknown); ok {
		// An Unknown keeps the bytes it is decoded from; data may be a
		// pooled encode buffer.
		data = bytes.Clone(data)
	}
	if _, _, err := s.codec.Decode(data, nil, out); err != nil {
		return storage.NewError(storage.ErrCodeInvalidObj, key, rev, "decoding stored object", err)
	}
	return setRV(key, out, rev)
}

func (s *Store) decodeNew(key string, data []byte, rev int64) (runtime.Object, error) {
	obj := s.newFunc()
	if err := s.decode(key, data, obj, rev); err != nil {
		return nil, err
	}
	return obj, nil
}

func setRV(key string, obj runtime.Object, rev int64) error {
	if m, ok := obj.(metav1.Object); ok {
		m.SetResourceVersion(strconv.FormatInt(rev, 10))
		return nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return storage.NewError(storage.ErrCodeInvalidObj, key, rev, "setting resourceVersion", err)
	}
	m.SetResourceVersion(strconv.FormatInt(rev, 10))
	return nil
}

// etcdError classifies an etcd client error.
//
// A read that failed is "unreachable", which the API server answers with a
// ServerTimeout that carries Retry-After, so clients (client-go) retry it.
// A write (create, update, delete) that failed may still take effect — an
// etcd proposal that timed out can commit later — so it is not marked
// retryable: it stays a plain error, which the API server answers with a
// 500 InternalError and no Retry-After, as kube-apiserver's etcd3 store
// hands etcd's error up. Otherwise client-go would send a create again
// whose first attempt had committed and report AlreadyExists for it (seen
// once in a benchmark run under heavy load).
func (s *Store) etcdError(key, op string, err error) error {
	if errors.Is(err, rpctypes.ErrCompacted) {
		return storage.NewError(storage.ErrCodeExpired, key, 0, expiredListMessage, err)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return storage.NewError(storage.ErrCodeUnreachable, key, 0, fmt.Sprintf("etcd %s interrupted", op), err)
	}
	if errors.Is(err, rpctypes.ErrRequestTooLarge) || errors.Is(err, rpctypes.ErrGRPCRequestTooLarge) {
		return storage.NewError(storage.ErrCodeInvalidObj, key, 0, "object too large for etcd", err)
	}
	switch op {
	case "create", "update", "delete":
		return fmt.Errorf("etcd %s of %q failed: %w", op, key, err)
	}
	return storage.NewError(storage.ErrCodeUnreachable, key, 0, fmt.Sprintf("etcd %s failed", op), err)
}
