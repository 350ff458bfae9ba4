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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeproof/kubeproof/impl/apiserver/fieldmanager"
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
//   - ensure: at start the mandatory objects (exempt, catch-all) are
//     created or given back their spec; the suggested ones are created
//     when missing and updated only while their
//     apf.kubernetes.io/autoupdate-spec annotation is "true" (or, without
//     a valid annotation, while no one else has changed them: generation
//     1); objects the server once suggested (annotation "true") that are
//     no longer suggested are deleted. A mandatory object deleted later is
//     created again as soon as the watch shows it gone. Another server
//     creating an object first is fine.
//   - follow: both resources are mirrored through the server's own
//     storage (localcache, as the other internal caches); every change
//     digests the whole configuration again (flowcontrol.Digest) into the
//     Controller, and writes each FlowSchema's Dangling condition when it
//     differs from what the object says, as a server-side apply of the
//     status by the field manager kube-apiserver's controller uses
//     (apfFieldManager, forced: the condition and its managedFields
//     entry are that manager's).
type apfConfig struct {
	fc               *flowcontrol.Controller
	fsStore, plStore storage.Interface
	fsKey, plKey     func(name string) string
	fsCache, plCache *localcache.Cache
	changed          chan struct{}
	// synced is closed once the first configuration has been applied.
	synced   chan struct{}
	syncOnce sync.Once
	log      *slog.Logger
	now      func() time.Time
	// statusFields applies the Dangling condition to FlowSchemas' status.
	statusFields *fieldmanager.Manager
}

// apfFieldManager is the manager kube-apiserver's configuration
// controller applies FlowSchema status conditions as.
const apfFieldManager = "api-priority-and-fairness-config-consumer-v1"

// newAPFConfig returns nil when the flowcontrol resources are not served,
// and an error when the field manager of FlowSchemas' status cannot be
// built.
func newAPFConfig(s *Server, fc *flowcontrol.Controller) (*apfConfig, error) {
	fsEntry, ok1 := s.stores[flowSchemasGR]
	plStore, ok2 := s.Store(priorityLevelsGR)
	if fc == nil || !ok1 || !ok2 {
		return nil, nil
	}
	fm, err := fieldmanager.New(fieldmanager.Config{TypeConverter: fieldmanager.TypeConverterFor(fsEntry.res),
		Scheme: s.codecs.Scheme, Kind: flowcontrolv1.SchemeGroupVersion.WithKind("FlowSchema"),
		Default: fsEntry.res.Strategy.Default, Subresource: "status", ResetFields: []string{"spec"}})
	if err != nil {
		return nil, fmt.Errorf("building the field manager of FlowSchema conditions: %w", err)
	}
	a := &apfConfig{fc: fc, fsStore: fsEntry.store, plStore: plStore, statusFields: fm,
		fsKey:   func(name string) string { return s.ObjectKey(flowSchemasGR, "", name) },
		plKey:   func(name string) string { return s.ObjectKey(priorityLevelsGR, "", name) },
		changed: make(chan struct{}, 1), synced: make(chan struct{}), log: s.log, now: time.Now}
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
	return a, nil
}

// run follows the objects until ctx ends.
func (a *apfConfig) run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { a.fsCache.Run(ctx) })
	wg.Go(func() { a.plCache.Run(ctx) })
	wg.Go(func() { a.fc.Run(ctx) }) // gives lingering final seats back at the end
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
			Reason: "NotFound", Message: fmt.Sprintf("the priority level %q this FlowSchema names does not exist", level)}
	}
	return flowcontrolv1.FlowSchemaCondition{Type: flowcontrolv1.FlowSchemaConditionDangling, Status: flowcontrolv1.ConditionFalse,
		Reason: "Found", Message: fmt.Sprintf("the priority level %q this FlowSchema names exists", level)}
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

func (a *apfConfig) writeDangling(ctx context.Context, fs *flowcontrolv1.FlowSchema, missing bool) error {
	want := danglingCondition(fs, missing)
	if _, changed := setDangling(fs.Status.Conditions, want); !changed {
		return nil
	}
	want.LastTransitionTime = metav1.NewTime(a.now())
	err := a.fsStore.GuaranteedUpdate(ctx, a.fsKey(fs.Name), &flowcontrolv1.FlowSchema{}, false,
		&storage.Preconditions{UID: &fs.UID}, func(input runtime.Object) (runtime.Object, error) {
			cur := input.(*flowcontrolv1.FlowSchema)
			if _, changed := setDangling(cur.Status.Conditions, want); !changed ||
				cur.Spec.PriorityLevelConfiguration.Name != fs.Spec.PriorityLevelConfiguration.Name {
				return input, nil // said already, or changed since: the next sync decides
			}
			return a.applyDangling(cur, want)
		})
	if err != nil && !storage.IsNotFound(err) && storage.CodeOf(err) != storage.ErrCodeInvalidObj {
		return fmt.Errorf("writing the Dangling condition of FlowSchema %s: %w", fs.Name, err)
	}
	return nil
}

// applyDangling is cur with the Dangling condition want, server-side
// applied to its status by apfFieldManager with force, as kube-apiserver's
// configuration controller writes it.
func (a *apfConfig) applyDangling(cur *flowcontrolv1.FlowSchema, want flowcontrolv1.FlowSchemaCondition) (runtime.Object, error) {
	patch, err := json.Marshal(map[string]any{
		"apiVersion": flowcontrolv1.SchemeGroupVersion.String(), "kind": "FlowSchema",
		"metadata": map[string]any{"name": cur.Name},
		"status":   map[string]any{"conditions": []flowcontrolv1.FlowSchemaCondition{want}},
	})
	if err != nil {
		return nil, err
	}
	return a.statusFields.Apply(cur, patch, apfFieldManager, true)
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
	for _, it := range a.bootItems() {
		if !it.mandatory || have[it.kind+"/"+it.want.GetName()] {
			continue
		}
		if err := a.create(ctx, it); err != nil && !storage.IsExists(err) {
			errs = append(errs, err)
		}
	}
	return errs
}

// apfObject is a FlowSchema or a PriorityLevelConfiguration.
type apfObject interface {
	runtime.Object
	metav1.Object
}

// bootItem is one of kube-apiserver's bootstrap objects.
type bootItem struct {
	kind      string // "fs" or "pl"
	mandatory bool
	want      apfObject
	store     storage.Interface
	key       string
	newObj    func() apfObject
	// specOf is the part of an object the ensurer keeps as wanted: the
	// spec (of the exempt level: all but its shares and lendable
	// percentage, which are the administrator's).
	sameSpec func(cur apfObject) bool
	setSpec  func(cur apfObject)
}

func (a *apfConfig) bootItems() []bootItem {
	var out []bootItem
	for _, p := range flowcontrol.DefaultPriorityLevels() {
		want := p
		out = append(out, bootItem{kind: "pl", mandatory: flowcontrol.MandatoryPriorityLevel(p.Name) != nil, want: want,
			store: a.plStore, key: a.plKey(p.Name),
			newObj: func() apfObject { return &flowcontrolv1.PriorityLevelConfiguration{} },
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
			store: a.fsStore, key: a.fsKey(fs.Name),
			newObj: func() apfObject { return &flowcontrolv1.FlowSchema{} },
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

// create writes a bootstrap object as the API's create would.
func (a *apfConfig) create(ctx context.Context, it bootItem) error {
	obj := it.want.DeepCopyObject().(apfObject)
	obj.SetCreationTimestamp(metav1.NewTime(a.now()))
	obj.SetGeneration(1)
	if err := it.store.Create(ctx, it.key, obj, nil); err != nil {
		if storage.IsExists(err) {
			return err
		}
		return fmt.Errorf("creating %s %s: %w", it.kind, it.want.GetName(), err)
	}
	return nil
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

// ensure writes the bootstrap configuration; transient storage errors are
// retried until ctx ends.
func (a *apfConfig) ensure(ctx context.Context) error {
	for {
		err := a.ensureOnce(ctx)
		if err == nil {
			return nil
		}
		if code := storage.CodeOf(err); code != storage.ErrCodeUnreachable && code != storage.ErrCodeResourceVersionConflicts {
			return fmt.Errorf("apiserver: API Priority and Fairness bootstrap: %w", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("apiserver: API Priority and Fairness bootstrap: %w (last error: %v)", ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (a *apfConfig) ensureOnce(ctx context.Context) error {
	var errs []error
	items := a.bootItems()
	wanted := map[string]bool{}
	for _, it := range items {
		wanted[it.kind+"/"+it.want.GetName()] = true
		if err := a.ensureItem(ctx, it); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, a.removeUnwanted(ctx, a.fsStore, "fs", &flowcontrolv1.FlowSchemaList{}, wanted)...)
	errs = append(errs, a.removeUnwanted(ctx, a.plStore, "pl", &flowcontrolv1.PriorityLevelConfigurationList{}, wanted)...)
	return errors.Join(errs...)
}

func (a *apfConfig) ensureItem(ctx context.Context, it bootItem) error {
	err := a.create(ctx, it)
	if err == nil || !storage.IsExists(err) {
		return err
	}
	err = it.store.GuaranteedUpdate(ctx, it.key, it.newObj(), false, nil, func(input runtime.Object) (runtime.Object, error) {
		cur := input.(apfObject)
		if (!it.mandatory && !autoUpdate(cur)) || it.sameSpec(cur) {
			return input, nil
		}
		next := input.DeepCopyObject().(apfObject)
		it.setSpec(next)
		next.SetGeneration(cur.GetGeneration() + 1)
		ann := map[string]string{}
		for k, v := range cur.GetAnnotations() {
			ann[k] = v
		}
		ann[flowcontrolv1.AutoUpdateAnnotationKey] = "true"
		next.SetAnnotations(ann)
		return next, nil
	})
	if err != nil && !storage.IsNotFound(err) {
		return fmt.Errorf("updating %s %s: %w", it.kind, it.want.GetName(), err)
	}
	return nil
}

// removeUnwanted deletes the objects the server suggested once
// (autoupdate-spec "true") that are no longer suggested.
func (a *apfConfig) removeUnwanted(ctx context.Context, store storage.Interface, kind string, list runtime.Object, wanted map[string]bool) []error {
	key := a.fsKey("")
	if kind == "pl" {
		key = a.plKey("")
	}
	if err := store.GetList(ctx, key, storage.ListOptions{Recursive: true, Predicate: storage.Everything()}, list); err != nil {
		return []error{fmt.Errorf("listing %s: %w", kind, err)}
	}
	var objs []apfObject
	switch l := list.(type) {
	case *flowcontrolv1.FlowSchemaList:
		for i := range l.Items {
			objs = append(objs, &l.Items[i])
		}
	case *flowcontrolv1.PriorityLevelConfigurationList:
		for i := range l.Items {
			objs = append(objs, &l.Items[i])
		}
	}
	var errs []error
	for _, o := range objs {
		if wanted[kind+"/"+o.GetName()] || o.GetAnnotations()[flowcontrolv1.AutoUpdateAnnotationKey] != "true" {
			continue
		}
		uid, rv := o.GetUID(), o.GetResourceVersion()
		keyOf := a.fsKey
		if kind == "pl" {
			keyOf = a.plKey
		}
		err := store.Delete(ctx, keyOf(o.GetName()), o.DeepCopyObject(), &storage.Preconditions{UID: &uid, ResourceVersion: &rv}, nil)
		if err != nil && !storage.IsNotFound(err) && !storage.IsConflict(err) && storage.CodeOf(err) != storage.ErrCodeInvalidObj {
			errs = append(errs, fmt.Errorf("deleting %s %s: %w", kind, o.GetName(), err))
		}
	}
	return errs
}
