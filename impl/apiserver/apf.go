package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	flowcontrolclient "k8s.io/client-go/kubernetes/typed/flowcontrol/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver/flowcontrol"
	"github.com/kubeproof/kubeproof/impl/apiserver/internal/localcache"
	"github.com/kubeproof/kubeproof/impl/storage"
)

var (
	flowSchemasGR    = flowcontrolv1.SchemeGroupVersion.WithResource("flowschemas").GroupResource()
	priorityLevelsGR = flowcontrolv1.SchemeGroupVersion.WithResource("prioritylevelconfigurations").GroupResource()
)

// apfConfig makes API Priority and Fairness follow the FlowSchemas and
// PriorityLevelConfigurations, as kube-apiserver's configuration
// controller and its bootstrap ensurer do:
//   - ensure: at start, and every minute after, the mandatory objects
//     (exempt, catch-all) are created or given back their spec; the
//     suggested ones are created when missing and updated only while their
//     apf.kubernetes.io/autoupdate-spec annotation is "true" (or, without
//     a valid annotation, while no one else has changed them: generation
//     1); the annotation is set to say which ("false" on a suggested
//     object someone changed); objects the server once suggested
//     (annotation true) that are no longer suggested are deleted. A
//     mandatory object deleted is also created again as soon as the watch
//     shows it gone. Another server creating an object first is fine.
//     Every write (and the start's reads; the later runs read the caches
//     below, as kube-apiserver's read its listers) is a request of the
//     server's in-process loopback client, as kube-apiserver's
//     priority-and-fairness-config-producer hook makes them (audited,
//     admitted; creates and updates under the field manager
//     apfProducerFieldManager).
//   - follow: both resources are mirrored through the server's own
//     storage (localcache, as the other internal caches); every change
//     digests the whole configuration again (flowcontrol.Digest) into the
//     Controller, and writes each FlowSchema's Dangling condition when it
//     differs from what the object says, as a forced server-side apply of
//     the status subresource by the loopback client under the field
//     manager kube-apiserver's controller uses (apfFieldManager).
type apfConfig struct {
	fc               *flowcontrol.Controller
	fsStore, plStore storage.Interface
	fsCache, plCache *localcache.Cache
	// client is the server's in-process loopback client's flowcontrol
	// group; a function, since the client is built after the handler
	// this configuration is part of.
	client  func() flowcontrolclient.FlowcontrolV1Interface
	changed chan struct{}
	// synced is closed once the first configuration has been applied.
	synced   chan struct{}
	syncOnce sync.Once
	log      *slog.Logger
	now      func() time.Time
	// ensurePeriod is how often the ensurer runs again once the server
	// has started (apfEnsurePeriod).
	ensurePeriod time.Duration
}

// The field managers of kube-apiserver's flow control writes: the
// bootstrap ensurer's creates and updates, and the configuration
// controller's status applies.
const (
	apfProducerFieldManager = "api-priority-and-fairness-config-producer-v1"
	apfFieldManager         = "api-priority-and-fairness-config-consumer-v1"
)

// The ensurer retries a failed attempt, whatever failed, every
// apfEnsureRetryInterval, and fails the start after apfEnsureTimeout, as
// kube-apiserver's hook gives up after five minutes.
const (
	apfEnsureRetryInterval = 200 * time.Millisecond
	apfEnsureTimeout       = 5 * time.Minute
)

// apfEnsurePeriod is how often the ensurer runs again after the start,
// as kube-apiserver's priority-and-fairness-config-producer hook keeps
// doing every minute: a suggested object changed while its
// autoupdate-spec annotation says "true" is put back, and one no longer
// suggested is deleted, without a restart.
const apfEnsurePeriod = time.Minute

// newAPFConfig returns nil when the flowcontrol resources are not served.
func newAPFConfig(s *Server, fc *flowcontrol.Controller) *apfConfig {
	fsStore, ok1 := s.Store(flowSchemasGR)
	plStore, ok2 := s.Store(priorityLevelsGR)
	if fc == nil || !ok1 || !ok2 {
		return nil
	}
	a := &apfConfig{fc: fc, fsStore: fsStore, plStore: plStore,
		client:  func() flowcontrolclient.FlowcontrolV1Interface { return s.self.typed.FlowcontrolV1() },
		changed: make(chan struct{}, 1), synced: make(chan struct{}), log: s.log, now: time.Now, ensurePeriod: apfEnsurePeriod}
	notify := func(_, _ runtime.Object) {
		select {
		case a.changed <- struct{}{}:
		default:
		}
	}
	a.fsCache = localcache.New(localcache.Config{Store: a.fsStore, Key: s.ListKey(flowSchemasGR, ""),
		NewList: func() runtime.Object { return &flowcontrolv1.FlowSchemaList{} }, KeepWhileReloading: true, OnChange: notify})
	a.plCache = localcache.New(localcache.Config{Store: plStore, Key: s.ListKey(priorityLevelsGR, ""),
		NewList:            func() runtime.Object { return &flowcontrolv1.PriorityLevelConfigurationList{} },
		KeepWhileReloading: true, OnChange: notify})
	return a
}

// run follows the objects until ctx ends.
func (a *apfConfig) run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { a.fsCache.Run(ctx) })
	wg.Go(func() { a.plCache.Run(ctx) })
	wg.Go(func() { a.fc.Run(ctx) }) // gives lingering final seats back at the end
	wg.Go(func() { a.ensurePeriodically(ctx) })
	if a.fsCache.WaitLoaded(ctx) != nil || a.plCache.WaitLoaded(ctx) != nil {
		return
	}
	var retry <-chan time.Time
	for {
		if err := a.sync(ctx); err != nil {
			a.log.Warn("API Priority and Fairness configuration", "err", err)
			retry = time.After(time.Second)
		}
		select {
		case <-ctx.Done():
			return
		case <-a.changed:
		case <-retry:
		}
	}
}

// ensurePeriodically runs the ensurer again every ensurePeriod until ctx
// ends (the first run, at the start, is ensure's); a failed run is logged
// and left to the next. These runs read the caches, as kube-apiserver's
// ensurer reads its informers' listers, so only their writes are
// requests.
func (a *apfConfig) ensurePeriodically(ctx context.Context) {
	t := time.NewTicker(a.ensurePeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := a.ensureOnce(ctx, true); err != nil && ctx.Err() == nil {
			a.log.Warn("API Priority and Fairness bootstrap ensurer, will retry", "err", err)
		}
	}
}

// waitSynced returns once the objects' configuration is applied, or with
// ctx's error.
func (a *apfConfig) waitSynced(ctx context.Context) error {
	select {
	case <-a.synced:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("apiserver: waiting for the API Priority and Fairness configuration: %w", ctx.Err())
	}
}

// sync applies the cached objects and writes what follows from them.
func (a *apfConfig) sync(ctx context.Context) error {
	fsObjs, ok1 := a.fsCache.List("")
	plObjs, ok2 := a.plCache.List("")
	if !ok1 || !ok2 {
		return nil // reloading; the load's changes call again
	}
	schemas := make([]*flowcontrolv1.FlowSchema, 0, len(fsObjs))
	for _, o := range fsObjs {
		if fs, ok := o.(*flowcontrolv1.FlowSchema); ok {
			schemas = append(schemas, fs)
		}
	}
	levels := make([]*flowcontrolv1.PriorityLevelConfiguration, 0, len(plObjs))
	for _, o := range plObjs {
		if p, ok := o.(*flowcontrolv1.PriorityLevelConfiguration); ok {
			levels = append(levels, p)
		}
	}
	dg := flowcontrol.Digest(schemas, levels)
	for _, err := range dg.Unusable {
		a.log.Warn("API Priority and Fairness: priority level left out", "err", err)
	}
	if err := a.fc.Reconfigure(dg); err != nil {
		return fmt.Errorf("applying the configuration: %w", err)
	}
	a.syncOnce.Do(func() { close(a.synced) })
	var errs []error
	for _, fs := range schemas {
		if err := a.writeDangling(ctx, fs, dg.Dangling[fs.Name]); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, a.recreateMandatory(ctx, schemas, levels)...)
	return errors.Join(errs...)
}

// danglingCondition is the Dangling condition a FlowSchema should have.
func danglingCondition(fs *flowcontrolv1.FlowSchema, missing bool) flowcontrolv1.FlowSchemaCondition {
	level := fs.Spec.PriorityLevelConfiguration.Name
	if missing {
		return flowcontrolv1.FlowSchemaCondition{Type: flowcontrolv1.FlowSchemaConditionDangling, Status: flowcontrolv1.ConditionTrue,
			Reason: "NotFound", Message: fmt.Sprintf("This FlowSchema references the PriorityLevelConfiguration object named %q but there is no such object", level)}
	}
	return flowcontrolv1.FlowSchemaCondition{Type: flowcontrolv1.FlowSchemaConditionDangling, Status: flowcontrolv1.ConditionFalse,
		Reason: "Found", Message: fmt.Sprintf("This FlowSchema references the PriorityLevelConfiguration object named %q and it exists", level)}
}

// setDangling puts want among conds; it reports false when conds already
// say the same (status, reason and message).
func setDangling(conds []flowcontrolv1.FlowSchemaCondition, want flowcontrolv1.FlowSchemaCondition) ([]flowcontrolv1.FlowSchemaCondition, bool) {
	for i, c := range conds {
		if c.Type != want.Type {
			continue
		}
		if c.Status == want.Status && c.Reason == want.Reason && c.Message == want.Message {
			return conds, false
		}
		out := append([]flowcontrolv1.FlowSchemaCondition(nil), conds...)
		out[i] = want
		return out, true
	}
	return append(append([]flowcontrolv1.FlowSchemaCondition(nil), conds...), want), true
}

// writeDangling server-side applies the Dangling condition fs should
// have to its status, forced, as apfFieldManager, when fs does not say
// it already; a FlowSchema deleted meanwhile needs nothing.
func (a *apfConfig) writeDangling(ctx context.Context, fs *flowcontrolv1.FlowSchema, missing bool) error {
	want := danglingCondition(fs, missing)
	if _, changed := setDangling(fs.Status.Conditions, want); !changed {
		return nil
	}
	want.LastTransitionTime = metav1.NewTime(a.now())
	patch, err := danglingPatch(fs.Name, want)
	if err != nil {
		return fmt.Errorf("writing the Dangling condition of FlowSchema %s: %w", fs.Name, err)
	}
	force := true
	_, err = a.client().FlowSchemas().Patch(ctx, fs.Name, types.ApplyPatchType, patch,
		metav1.PatchOptions{FieldManager: apfFieldManager, Force: &force}, "status")
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("writing the Dangling condition of FlowSchema %s: %w", fs.Name, err)
	}
	return nil
}

// danglingPatch is the apply configuration of FlowSchema name's status
// holding the one condition want.
func danglingPatch(name string, want flowcontrolv1.FlowSchemaCondition) ([]byte, error) {
	return json.Marshal(map[string]any{
		"apiVersion": flowcontrolv1.SchemeGroupVersion.String(), "kind": "FlowSchema",
		"metadata": map[string]any{"name": name},
		"status":   map[string]any{"conditions": []flowcontrolv1.FlowSchemaCondition{want}},
	})
}

// recreateMandatory creates the mandatory objects missing from the cache.
func (a *apfConfig) recreateMandatory(ctx context.Context, schemas []*flowcontrolv1.FlowSchema, levels []*flowcontrolv1.PriorityLevelConfiguration) []error {
	have := map[string]bool{}
	for _, p := range levels {
		have["pl/"+p.Name] = true
	}
	for _, fs := range schemas {
		have["fs/"+fs.Name] = true
	}
	var errs []error
	for _, it := range a.bootItems(false) {
		if !it.mandatory || have[it.kind+"/"+it.want.GetName()] {
			continue
		}
		if err := it.client.create(ctx, it.want); err != nil && !apierrors.IsAlreadyExists(err) {
			errs = append(errs, fmt.Errorf("creating %s %s: %w", it.kind, it.want.GetName(), err))
		}
	}
	return errs
}

// apfObject is a FlowSchema or a PriorityLevelConfiguration.
type apfObject interface {
	runtime.Object
	metav1.Object
}

// apfClient is what the ensurer does with one of the two resources:
// requests of the loopback client, creates and updates as
// apfProducerFieldManager.
type apfClient struct {
	get    func(ctx context.Context, name string) (apfObject, error)
	create func(ctx context.Context, obj apfObject) error
	update func(ctx context.Context, obj apfObject) error
	list   func(ctx context.Context) ([]apfObject, error)
	delete func(ctx context.Context, name string, opts metav1.DeleteOptions) error
	// cached says get and list answer from the caches, which may not
	// show the ensurer's own last writes yet.
	cached bool
}

func flowSchemaClient(c flowcontrolclient.FlowSchemaInterface) apfClient {
	return apfClient{
		get: func(ctx context.Context, name string) (apfObject, error) {
			return c.Get(ctx, name, metav1.GetOptions{})
		},
		create: func(ctx context.Context, obj apfObject) error {
			_, err := c.Create(ctx, forCreate(obj).(*flowcontrolv1.FlowSchema), metav1.CreateOptions{FieldManager: apfProducerFieldManager})
			return err
		},
		update: func(ctx context.Context, obj apfObject) error {
			_, err := c.Update(ctx, obj.(*flowcontrolv1.FlowSchema), metav1.UpdateOptions{FieldManager: apfProducerFieldManager})
			return err
		},
		list: func(ctx context.Context) ([]apfObject, error) {
			l, err := c.List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			out := make([]apfObject, 0, len(l.Items))
			for i := range l.Items {
				out = append(out, &l.Items[i])
			}
			return out, nil
		},
		delete: c.Delete,
	}
}

func priorityLevelClient(c flowcontrolclient.PriorityLevelConfigurationInterface) apfClient {
	return apfClient{
		get: func(ctx context.Context, name string) (apfObject, error) {
			return c.Get(ctx, name, metav1.GetOptions{})
		},
		create: func(ctx context.Context, obj apfObject) error {
			_, err := c.Create(ctx, forCreate(obj).(*flowcontrolv1.PriorityLevelConfiguration), metav1.CreateOptions{FieldManager: apfProducerFieldManager})
			return err
		},
		update: func(ctx context.Context, obj apfObject) error {
			_, err := c.Update(ctx, obj.(*flowcontrolv1.PriorityLevelConfiguration), metav1.UpdateOptions{FieldManager: apfProducerFieldManager})
			return err
		},
		list: func(ctx context.Context) ([]apfObject, error) {
			l, err := c.List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			out := make([]apfObject, 0, len(l.Items))
			for i := range l.Items {
				out = append(out, &l.Items[i])
			}
			return out, nil
		},
		delete: c.Delete,
	}
}

// forCreate is a copy of a bootstrap object as the ensurer sends it: its
// name, labels, annotations and spec; the server gives it its UID.
func forCreate(obj apfObject) apfObject {
	out := obj.DeepCopyObject().(apfObject)
	out.SetUID("")
	return out
}

// bootItem is one of kube-apiserver's bootstrap objects.
type bootItem struct {
	kind      string // "fs" or "pl"
	mandatory bool
	want      apfObject
	client    apfClient
	// sameSpec and setSpec compare and replace the part of an object the
	// ensurer keeps as wanted: the spec (of the exempt level: all but its
	// shares and lendable percentage, which are the administrator's).
	sameSpec func(cur apfObject) bool
	setSpec  func(cur apfObject)
}

// apfClients are the ensurer's clients of the two resources; cached makes
// their reads answer from the caches.
func (a *apfConfig) apfClients(cached bool) (pl, fs apfClient) {
	fc := a.client()
	pl, fs = priorityLevelClient(fc.PriorityLevelConfigurations()), flowSchemaClient(fc.FlowSchemas())
	if cached {
		pl.get, pl.list = cachedReads(a.plCache, priorityLevelsGR)
		pl.cached = true
		fs.get, fs.list = cachedReads(a.fsCache, flowSchemasGR)
		fs.cached = true
	}
	return pl, fs
}

// cachedReads are get and list answered from c: NotFound as the API
// answers it, an error while c is not loaded.
func cachedReads(c *localcache.Cache, gr schema.GroupResource) (func(context.Context, string) (apfObject, error), func(context.Context) ([]apfObject, error)) {
	get := func(_ context.Context, name string) (apfObject, error) {
		obj, found, synced := c.Get("", name)
		switch {
		case !synced:
			return nil, fmt.Errorf("reading %s %s: the cache is not loaded", gr, name)
		case !found:
			return nil, apierrors.NewNotFound(gr, name)
		}
		o, ok := obj.DeepCopyObject().(apfObject)
		if !ok {
			return nil, fmt.Errorf("reading %s %s: cached %T", gr, name, obj)
		}
		return o, nil
	}
	list := func(context.Context) ([]apfObject, error) {
		objs, synced := c.List("")
		if !synced {
			return nil, fmt.Errorf("listing %s: the cache is not loaded", gr)
		}
		out := make([]apfObject, 0, len(objs))
		for _, obj := range objs {
			if o, ok := obj.(apfObject); ok {
				out = append(out, o)
			}
		}
		return out, nil
	}
	return get, list
}

func (a *apfConfig) bootItems(cached bool) []bootItem {
	plClient, fsClient := a.apfClients(cached)
	var out []bootItem
	for _, p := range flowcontrol.DefaultPriorityLevels() {
		want := p
		out = append(out, bootItem{kind: "pl", mandatory: flowcontrol.MandatoryPriorityLevel(p.Name) != nil, want: want,
			client: plClient,
			sameSpec: func(cur apfObject) bool {
				return apiequality.Semantic.DeepEqual(cur.(*flowcontrolv1.PriorityLevelConfiguration).Spec, wantedLevelSpec(want, cur))
			},
			setSpec: func(cur apfObject) {
				c := cur.(*flowcontrolv1.PriorityLevelConfiguration)
				c.Spec = wantedLevelSpec(want, cur)
			}})
	}
	for _, fs := range flowcontrol.DefaultFlowSchemas() {
		want := fs
		out = append(out, bootItem{kind: "fs", mandatory: flowcontrol.MandatoryFlowSchema(fs.Name) != nil, want: want,
			client: fsClient,
			sameSpec: func(cur apfObject) bool {
				return apiequality.Semantic.DeepEqual(cur.(*flowcontrolv1.FlowSchema).Spec, want.Spec)
			},
			setSpec: func(cur apfObject) { cur.(*flowcontrolv1.FlowSchema).Spec = *want.Spec.DeepCopy() }})
	}
	return out
}

// wantedLevelSpec is want's spec, but for the exempt level the shares and
// lendable percentage cur has.
func wantedLevelSpec(want *flowcontrolv1.PriorityLevelConfiguration, cur apfObject) flowcontrolv1.PriorityLevelConfigurationSpec {
	spec := *want.Spec.DeepCopy()
	c := cur.(*flowcontrolv1.PriorityLevelConfiguration)
	if want.Name == flowcontrolv1.PriorityLevelConfigurationNameExempt && c.Spec.Exempt != nil && spec.Exempt != nil {
		spec.Exempt.NominalConcurrencyShares = c.Spec.Exempt.NominalConcurrencyShares
		spec.Exempt.LendablePercent = c.Spec.Exempt.LendablePercent
	}
	return spec
}

// autoUpdate is whether the ensurer may rewrite a suggested object's spec:
// its apf.kubernetes.io/autoupdate-spec annotation, or, when that is not a
// boolean, whether no one has changed it since it was created.
func autoUpdate(o metav1.Object) bool {
	if v, err := strconv.ParseBool(o.GetAnnotations()[flowcontrolv1.AutoUpdateAnnotationKey]); err == nil {
		return v
	}
	return o.GetGeneration() == 1
}

// revise is the pure decision on an existing bootstrap object, as
// kube-apiserver's ensure strategy: a mandatory object's spec is always
// kept as wanted, a suggested one's only while autoUpdate says so; and the
// autoupdate-spec annotation is made to say which of the two it is (so a
// suggested object changed by someone while it had no annotation is
// marked "false" and left to them). It returns the object to write back,
// or false when the object is already as it should be.
func revise(it bootItem, cur apfObject) (apfObject, bool) {
	update := it.mandatory || autoUpdate(cur)
	v, err := strconv.ParseBool(cur.GetAnnotations()[flowcontrolv1.AutoUpdateAnnotationKey])
	fixAnnotation := err != nil || v != update
	fixSpec := update && !it.sameSpec(cur)
	if !fixAnnotation && !fixSpec {
		return nil, false
	}
	next := cur.DeepCopyObject().(apfObject)
	if fixSpec {
		it.setSpec(next)
	}
	if fixAnnotation {
		ann := make(map[string]string, len(cur.GetAnnotations())+1)
		for k, v := range cur.GetAnnotations() {
			ann[k] = v
		}
		ann[flowcontrolv1.AutoUpdateAnnotationKey] = strconv.FormatBool(update)
		next.SetAnnotations(ann)
	}
	return next, true
}

// ensure writes the bootstrap configuration. A failed attempt is retried
// every apfEnsureRetryInterval, whatever failed (storage down, a webhook
// refusing, another server's write in between), until apfEnsureTimeout
// or ctx ends.
func (a *apfConfig) ensure(ctx context.Context) error {
	ectx, cancel := context.WithTimeout(ctx, apfEnsureTimeout)
	defer cancel()
	for {
		err := a.ensureOnce(ectx, false)
		if err == nil {
			return nil
		}
		a.log.Warn("API Priority and Fairness bootstrap, retrying", "err", err)
		select {
		case <-ectx.Done():
			return fmt.Errorf("apiserver: API Priority and Fairness bootstrap: %w (last error: %v)", ectx.Err(), err)
		case <-time.After(apfEnsureRetryInterval):
		}
	}
}

// ensureOnce runs the ensurer once; cached makes it read the caches
// rather than the API.
func (a *apfConfig) ensureOnce(ctx context.Context, cached bool) error {
	var errs []error
	items := a.bootItems(cached)
	wanted := map[string]bool{}
	for _, it := range items {
		wanted[it.kind+"/"+it.want.GetName()] = true
		if err := a.ensureItem(ctx, it); err != nil {
			errs = append(errs, err)
		}
	}
	plClient, fsClient := a.apfClients(cached)
	errs = append(errs, a.removeUnwanted(ctx, fsClient, "fs", wanted)...)
	errs = append(errs, a.removeUnwanted(ctx, plClient, "pl", wanted)...)
	return errors.Join(errs...)
}

// ensureItem reads the object, creates it when missing and updates it
// when revise says so; a create losing to another server's, or an
// update to another writer's, is decided again on what they wrote.
func (a *apfConfig) ensureItem(ctx context.Context, it bootItem) error {
	name := it.want.GetName()
	for {
		cur, err := it.client.get(ctx, name)
		switch {
		case apierrors.IsNotFound(err):
			err = it.client.create(ctx, it.want)
			if err == nil {
				a.log.Debug("created API Priority and Fairness bootstrap object", "kind", it.kind, "name", name)
				return nil
			}
			if !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating %s %s: %w", it.kind, name, err)
			}
			if it.client.cached {
				return nil // the cache is behind; the next run decides
			}
			continue
		case err != nil:
			return fmt.Errorf("reading %s %s: %w", it.kind, name, err)
		}
		next, ok := revise(it, cur)
		if !ok {
			return nil
		}
		err = it.client.update(ctx, next)
		if err != nil && it.client.cached && (apierrors.IsConflict(err) || apierrors.IsNotFound(err)) {
			return nil // the cache is behind; the next run decides
		}
		if err == nil || (!apierrors.IsConflict(err) && !apierrors.IsNotFound(err)) {
			if err != nil {
				return fmt.Errorf("updating %s %s: %w", it.kind, name, err)
			}
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("updating %s %s: %w", it.kind, name, err)
		}
	}
}

// removeUnwanted deletes the objects the server suggested once (an
// autoupdate-spec annotation that is a true boolean) that are no longer
// suggested. As kube-apiserver's ensurer, the delete has no
// preconditions.
func (a *apfConfig) removeUnwanted(ctx context.Context, c apfClient, kind string, wanted map[string]bool) []error {
	objs, err := c.list(ctx)
	if err != nil {
		return []error{fmt.Errorf("listing %s: %w", kind, err)}
	}
	var errs []error
	for _, o := range objs {
		if wanted[kind+"/"+o.GetName()] {
			continue
		}
		if v, err := strconv.ParseBool(o.GetAnnotations()[flowcontrolv1.AutoUpdateAnnotationKey]); err != nil || !v {
			continue
		}
		err := c.delete(ctx, o.GetName(), metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting %s %s: %w", kind, o.GetName(), err))
		}
	}
	return errs
}
