package framework

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"github.com/kubeproof/kubeproof/impl/scheduler/config"
)

// Extension point names, as used in configuration and metrics.
const (
	ExtensionQueueSort  = "QueueSort"
	ExtensionPreFilter  = "PreFilter"
	ExtensionFilter     = "Filter"
	ExtensionPostFilter = "PostFilter"
	ExtensionPreScore   = "PreScore"
	ExtensionScore      = "Score"
	ExtensionReserve    = "Reserve"
	ExtensionUnreserve  = "Unreserve"
	ExtensionPermit     = "Permit"
	ExtensionPreBind    = "PreBind"
	ExtensionBind       = "Bind"
	ExtensionPostBind   = "PostBind"
)

// MetricsRecorder observes extension point durations.
type MetricsRecorder interface {
	ObserveExtensionPoint(extensionPoint string, status *Status, profile string, d time.Duration)
}

type weightedScorePlugin struct {
	ScorePlugin
	weight int64
}

// Framework runs the plugins of one profile.
type Framework struct {
	profileName              string
	percentageOfNodesToScore *int32

	queueSort   QueueSortPlugin
	preFilter   []PreFilterPlugin
	filter      []FilterPlugin
	postFilter  []PostFilterPlugin
	preScore    []PreScorePlugin
	score       []weightedScorePlugin
	reserve     []ReservePlugin
	permit      []PermitPlugin
	preBind     []PreBindPlugin
	postBind    []PostBindPlugin
	enqueueExts []EnqueueExtensions
	waitingPods *WaitingPods

	snapshot     SharedLister
	parallelizer Parallelizer
	nominator    PodNominator
	metrics      MetricsRecorder
	nsLabels     func(string) labels.Set
	pdbs         func() ([]*policyv1.PodDisruptionBudget, error)
	defaultSel   func(*v1.Pod) labels.Selector
	extenders    []PreemptionExtender
}

// Option configures a Framework.
type Option func(*Framework)

// WithSnapshotSharedLister sets the snapshot plugins read. The scheduler
// updates that snapshot in place before every cycle.
func WithSnapshotSharedLister(s SharedLister) Option { return func(f *Framework) { f.snapshot = s } }

// WithParallelism bounds the worker pool.
func WithParallelism(n int) Option {
	return func(f *Framework) { f.parallelizer = NewParallelizer(n) }
}

// WithPodNominator sets the source of nominated pods.
func WithPodNominator(n PodNominator) Option { return func(f *Framework) { f.nominator = n } }

// WithNamespaceLabels sets the namespace label lookup (a namespace lister).
func WithNamespaceLabels(f func(namespace string) labels.Set) Option {
	return func(fw *Framework) { fw.nsLabels = f }
}

// WithDefaultSelector sets how a pod's workload selector is found
// (listers of Services, ReplicationControllers, ReplicaSets and
// StatefulSets); without it every pod's is empty.
func WithDefaultSelector(sel func(*v1.Pod) labels.Selector) Option {
	return func(f *Framework) { f.defaultSel = sel }
}

// WithExtenders sets the HTTP extenders preemption consults.
func WithExtenders(exts []PreemptionExtender) Option {
	return func(f *Framework) { f.extenders = exts }
}

// WithPodDisruptionBudgets sets where PodDisruptionBudgets come from (a
// lister); without it there are none.
func WithPodDisruptionBudgets(list func() ([]*policyv1.PodDisruptionBudget, error)) Option {
	return func(f *Framework) { f.pdbs = list }
}

// WithWaitingPods shares one set of pods held at Permit (by default each
// framework has its own).
func WithWaitingPods(w *WaitingPods) Option { return func(f *Framework) { f.waitingPods = w } }

// WithMetricsRecorder sets where extension point durations go.
func WithMetricsRecorder(m MetricsRecorder) Option { return func(f *Framework) { f.metrics = m } }

type namedWeight struct {
	name   string
	weight int32
}

func applySet(list []namedWeight, set config.PluginSet) []namedWeight {
	for _, d := range set.Disabled {
		if d.Name == "*" {
			list = nil
			break
		}
		list = slices.DeleteFunc(list, func(n namedWeight) bool { return n.name == d.Name })
	}
	for _, e := range set.Enabled {
		w := int32(0)
		if e.Weight != nil {
			w = *e.Weight
		}
		if i := slices.IndexFunc(list, func(n namedWeight) bool { return n.name == e.Name }); i >= 0 {
			if e.Weight != nil {
				list[i].weight = w
			}
			continue
		}
		list = append(list, namedWeight{e.Name, w})
	}
	return list
}

// NewFramework instantiates a profile's plugins from the registry. The
// profile's multiPoint set (defaulting to config.DefaultMultiPoint) enables
// each plugin at every extension point it implements; the per-point sets
// then disable or add plugins there, and give score weights.
func NewFramework(ctx context.Context, registry Registry, profile *config.KubeSchedulerProfile, opts ...Option) (*Framework, error) {
	f := &Framework{
		profileName:              profile.SchedulerName,
		percentageOfNodesToScore: profile.PercentageOfNodesToScore,
		parallelizer:             NewParallelizer(DefaultParallelism),
		waitingPods:              NewWaitingPods(),
	}
	for _, o := range opts {
		o(f)
	}
	plugins := profile.Plugins
	if plugins == nil {
		plugins = &config.Plugins{}
	}
	var multi []namedWeight
	for _, d := range config.DefaultMultiPoint {
		multi = append(multi, namedWeight{d.Name, d.Weight})
	}
	multi = applySet(multi, plugins.MultiPoint)

	args := map[string][]byte{}
	for _, pc := range profile.PluginConfig {
		args[pc.Name] = pc.Args
	}
	instances := map[string]Plugin{}
	get := func(name string) (Plugin, error) {
		if p, ok := instances[name]; ok {
			return p, nil
		}
		factory, ok := registry[name]
		if !ok {
			return nil, fmt.Errorf("profile %q: plugin %q does not exist", profile.SchedulerName, name)
		}
		p, err := factory(args[name], f)
		if err != nil {
			return nil, fmt.Errorf("profile %q: initializing plugin %q: %w", profile.SchedulerName, name, err)
		}
		instances[name] = p
		return p, nil
	}
	for _, n := range multi {
		if _, err := get(n.name); err != nil {
			return nil, err
		}
	}
	for name := range args {
		if _, ok := registry[name]; !ok {
			return nil, fmt.Errorf("profile %q: pluginConfig for plugin %q which does not exist", profile.SchedulerName, name)
		}
	}

	// resolve returns the plugins enabled at one extension point.
	resolve := func(point string, set config.PluginSet, implements func(Plugin) bool) ([]namedWeight, error) {
		var list []namedWeight
		for _, n := range multi {
			if implements(instances[n.name]) {
				list = append(list, n)
			}
		}
		list = applySet(list, set)
		for _, n := range list {
			p, err := get(n.name)
			if err != nil {
				return nil, err
			}
			if !implements(p) {
				return nil, fmt.Errorf("profile %q: plugin %q does not extend %s", profile.SchedulerName, n.name, point)
			}
		}
		return list, nil
	}
	is := func(check func(Plugin) bool) func(Plugin) bool { return check }

	qs, err := resolve(ExtensionQueueSort, plugins.QueueSort, is(func(p Plugin) bool { _, ok := p.(QueueSortPlugin); return ok }))
	if err != nil {
		return nil, err
	}
	if len(qs) != 1 {
		return nil, fmt.Errorf("profile %q: exactly one queue sort plugin must be enabled, got %d", profile.SchedulerName, len(qs))
	}
	f.queueSort = instances[qs[0].name].(QueueSortPlugin)

	pf, err := resolve(ExtensionPreFilter, plugins.PreFilter, is(func(p Plugin) bool { _, ok := p.(PreFilterPlugin); return ok }))
	if err != nil {
		return nil, err
	}
	for _, n := range pf {
		f.preFilter = append(f.preFilter, instances[n.name].(PreFilterPlugin))
	}
	fl, err := resolve(ExtensionFilter, plugins.Filter, is(func(p Plugin) bool { _, ok := p.(FilterPlugin); return ok }))
	if err != nil {
		return nil, err
	}
	for _, n := range fl {
		f.filter = append(f.filter, instances[n.name].(FilterPlugin))
	}
	post, err := resolve(ExtensionPostFilter, plugins.PostFilter, is(func(p Plugin) bool { _, ok := p.(PostFilterPlugin); return ok }))
	if err != nil {
		return nil, err
	}
	for _, n := range post {
		f.postFilter = append(f.postFilter, instances[n.name].(PostFilterPlugin))
	}
	ps, err := resolve(ExtensionPreScore, plugins.PreScore, is(func(p Plugin) bool { _, ok := p.(PreScorePlugin); return ok }))
	if err != nil {
		return nil, err
	}
	for _, n := range ps {
		f.preScore = append(f.preScore, instances[n.name].(PreScorePlugin))
	}
	sc, err := resolve(ExtensionScore, plugins.Score, is(func(p Plugin) bool { _, ok := p.(ScorePlugin); return ok }))
	if err != nil {
		return nil, err
	}
	for _, n := range sc {
		w := int64(n.weight)
		if w == 0 {
			w = 1
		}
		if w < 0 {
			return nil, fmt.Errorf("profile %q: score plugin %q has negative weight %d", profile.SchedulerName, n.name, w)
		}
		f.score = append(f.score, weightedScorePlugin{instances[n.name].(ScorePlugin), w})
	}
	rs, err := resolve(ExtensionReserve, plugins.Reserve, is(func(p Plugin) bool { _, ok := p.(ReservePlugin); return ok }))
	if err != nil {
		return nil, err
	}
	for _, n := range rs {
		f.reserve = append(f.reserve, instances[n.name].(ReservePlugin))
	}
	pm, err := resolve(ExtensionPermit, plugins.Permit, is(func(p Plugin) bool { _, ok := p.(PermitPlugin); return ok }))
	if err != nil {
		return nil, err
	}
	for _, n := range pm {
		f.permit = append(f.permit, instances[n.name].(PermitPlugin))
	}
	pb, err := resolve(ExtensionPreBind, plugins.PreBind, is(func(p Plugin) bool { _, ok := p.(PreBindPlugin); return ok }))
	if err != nil {
		return nil, err
	}
	for _, n := range pb {
		f.preBind = append(f.preBind, instances[n.name].(PreBindPlugin))
	}
	pob, err := resolve(ExtensionPostBind, plugins.PostBind, is(func(p Plugin) bool { _, ok := p.(PostBindPlugin); return ok }))
	if err != nil {
		return nil, err
	}
	for _, n := range pob {
		f.postBind = append(f.postBind, instances[n.name].(PostBindPlugin))
	}
	for _, p := range instances {
		if e, ok := p.(EnqueueExtensions); ok {
			f.enqueueExts = append(f.enqueueExts, e)
		}
	}
	slices.SortFunc(f.enqueueExts, func(a, b EnqueueExtensions) int {
		if a.Name() < b.Name() {
			return -1
		}
		return 1
	})
	return f, nil
}

// ProfileName is the profile's schedulerName.
func (f *Framework) ProfileName() string { return f.profileName }

// PercentageOfNodesToScore is the profile's override, nil if none.
func (f *Framework) PercentageOfNodesToScore() *int32 { return f.percentageOfNodesToScore }

// QueueSortFunc returns the queue order.
func (f *Framework) QueueSortFunc() LessFunc { return f.queueSort.Less }

// SnapshotSharedLister implements Handle.
func (f *Framework) SnapshotSharedLister() SharedLister { return f.snapshot }

// SetSnapshotSharedLister sets the snapshot (before the first cycle).
func (f *Framework) SetSnapshotSharedLister(s SharedLister) { f.snapshot = s }

// SetPodNominator sets the nominated pods source.
func (f *Framework) SetPodNominator(n PodNominator) { f.nominator = n }

// NamespaceLabels implements Handle.
func (f *Framework) NamespaceLabels(namespace string) labels.Set {
	if f.nsLabels == nil {
		return nil
	}
	return f.nsLabels(namespace)
}

// DefaultSelector implements Handle.
func (f *Framework) DefaultSelector(pod *v1.Pod) labels.Selector {
	if f.defaultSel == nil {
		return labels.NewSelector()
	}
	return f.defaultSel(pod)
}

// Extenders implements Handle.
func (f *Framework) Extenders() []PreemptionExtender { return f.extenders }

// PodDisruptionBudgets implements Handle.
func (f *Framework) PodDisruptionBudgets() ([]*policyv1.PodDisruptionBudget, error) {
	if f.pdbs == nil {
		return nil, nil
	}
	return f.pdbs()
}

// Parallelizer implements Handle.
func (f *Framework) Parallelizer() Parallelizer { return f.parallelizer }

// HasFilterPlugins, HasScorePlugins and HasPostFilterPlugins say whether
// those points have plugins.
func (f *Framework) HasFilterPlugins() bool     { return len(f.filter) > 0 }
func (f *Framework) HasScorePlugins() bool      { return len(f.score) > 0 }
func (f *Framework) HasPostFilterPlugins() bool { return len(f.postFilter) > 0 }

// EnqueueExtensions returns the plugins that declared cluster events.
func (f *Framework) EnqueueExtensions() []EnqueueExtensions { return f.enqueueExts }

// ListPlugins returns the enabled plugin names by extension point.
func (f *Framework) ListPlugins() map[string][]string {
	m := map[string][]string{ExtensionQueueSort: {f.queueSort.Name()}}
	for _, p := range f.preFilter {
		m[ExtensionPreFilter] = append(m[ExtensionPreFilter], p.Name())
	}
	for _, p := range f.filter {
		m[ExtensionFilter] = append(m[ExtensionFilter], p.Name())
	}
	for _, p := range f.postFilter {
		m[ExtensionPostFilter] = append(m[ExtensionPostFilter], p.Name())
	}
	for _, p := range f.preScore {
		m[ExtensionPreScore] = append(m[ExtensionPreScore], p.Name())
	}
	for _, p := range f.score {
		m[ExtensionScore] = append(m[ExtensionScore], fmt.Sprintf("%s:%d", p.Name(), p.weight))
	}
	for _, p := range f.reserve {
		m[ExtensionReserve] = append(m[ExtensionReserve], p.Name())
	}
	for _, p := range f.permit {
		m[ExtensionPermit] = append(m[ExtensionPermit], p.Name())
	}
	for _, p := range f.preBind {
		m[ExtensionPreBind] = append(m[ExtensionPreBind], p.Name())
	}
	for _, p := range f.postBind {
		m[ExtensionPostBind] = append(m[ExtensionPostBind], p.Name())
	}
	return m
}

func (f *Framework) observe(point string, start time.Time, s *Status) {
	if f.metrics != nil {
		f.metrics.ObserveExtensionPoint(point, s, f.profileName, time.Since(start))
	}
}

// ObserveExtensionPoint records a duration measured by the caller.
func (f *Framework) ObserveExtensionPoint(point string, start time.Time, s *Status) {
	f.observe(point, start, s)
}

// RunPreFilterPlugins runs PreFilter. A rejection applies to every node;
// plugins that return Skip are remembered in state.SkipFilterPlugins.
func (f *Framework) RunPreFilterPlugins(ctx context.Context, state *CycleState, pod *v1.Pod) (status *Status) {
	start := time.Now()
	defer func() { f.observe(ExtensionPreFilter, start, status) }()
	skip := map[string]bool{}
	for _, p := range f.preFilter {
		s := p.PreFilter(ctx, state, pod)
		switch {
		case s.IsSuccess():
		case s.IsSkip():
			skip[p.Name()] = true
		case s.IsRejected():
			return s.WithPlugin(p.Name())
		default:
			return AsStatus(fmt.Errorf("running PreFilter plugin %q: %w", p.Name(), s.AsError())).WithPlugin(p.Name())
		}
	}
	state.SkipFilterPlugins = skip
	state.filters = make([]FilterPlugin, 0, len(f.filter))
	for _, p := range f.filter {
		if !skip[p.Name()] {
			state.filters = append(state.filters, p)
		}
	}
	return nil
}

// RunFilterPlugins runs the filters on one node, stopping at the first that
// does not succeed.
func (f *Framework) RunFilterPlugins(ctx context.Context, state *CycleState, pod *v1.Pod, nodeInfo *NodeInfo) *Status {
	filters := state.filters
	if filters == nil && state.SkipFilterPlugins == nil {
		filters = f.filter // PreFilter did not run (tests calling Filter directly)
	}
	for _, p := range filters {
		if s := p.Filter(ctx, state, pod, nodeInfo); !s.IsSuccess() {
			if !s.IsRejected() {
				return AsStatus(fmt.Errorf("running Filter plugin %q: %w", p.Name(), s.AsError())).WithPlugin(p.Name())
			}
			return s.WithPlugin(p.Name())
		}
	}
	return nil
}

// RunFilterPluginsWithNominatedPods runs the filters counting pods that are
// nominated to the node with priority at least the pod's (so that a pod
// waiting for its victims to leave keeps its place), and then, if there
// were such pods, once more without them (so that affinity to a nominated
// pod that may never arrive is not relied on). Both runs must pass.
func (f *Framework) RunFilterPluginsWithNominatedPods(ctx context.Context, state *CycleState, pod *v1.Pod, info *NodeInfo) *Status {
	added, stateWith, infoWith, err := f.addNominatedPods(ctx, state, pod, info)
	if err != nil {
		return AsStatus(err)
	}
	if s := f.RunFilterPlugins(ctx, stateWith, pod, infoWith); !s.IsSuccess() || !added {
		return s
	}
	return f.RunFilterPlugins(ctx, state, pod, info)
}

func (f *Framework) addNominatedPods(ctx context.Context, state *CycleState, pod *v1.Pod, info *NodeInfo) (bool, *CycleState, *NodeInfo, error) {
	// Only the NodeInfo is read (its node's name is kept in it): with
	// nothing nominated anywhere the nominator answers without a lookup.
	if f.nominator == nil || info.Node() == nil {
		return false, state, info, nil
	}
	nominated := f.nominator.NominatedPodsForNode(info.Name())
	if len(nominated) == 0 {
		return false, state, info, nil
	}
	prio := corev1helpers.PodPriority(pod)
	var stateOut *CycleState
	var infoOut *NodeInfo
	for _, np := range nominated {
		if np.Pod.UID == pod.UID || corev1helpers.PodPriority(np.Pod) < prio {
			continue
		}
		if infoOut == nil {
			stateOut, infoOut = state.Clone(), info.Clone()
		}
		infoOut.AddPodInfo(np)
		if s := f.RunPreFilterExtensionAddPod(ctx, stateOut, pod, np, infoOut); !s.IsSuccess() {
			return false, state, info, s.AsError()
		}
	}
	if infoOut == nil {
		return false, state, info, nil
	}
	return true, stateOut, infoOut, nil
}

// RunPreFilterExtensionAddPod tells every PreFilter plugin with extensions
// that podInfoToAdd now runs on nodeInfo.
func (f *Framework) RunPreFilterExtensionAddPod(ctx context.Context, state *CycleState, podToSchedule *v1.Pod, podInfoToAdd *PodInfo, nodeInfo *NodeInfo) *Status {
	for _, p := range f.preFilter {
		ext := p.PreFilterExtensions()
		if ext == nil || state.SkipFilterPlugins[p.Name()] {
			continue
		}
		if s := ext.AddPod(ctx, state, podToSchedule, podInfoToAdd, nodeInfo); !s.IsSuccess() {
			return AsStatus(fmt.Errorf("running AddPod on PreFilter plugin %q: %w", p.Name(), s.AsError()))
		}
	}
	return nil
}

// RunPreFilterExtensionRemovePod tells every PreFilter plugin with
// extensions that podInfoToRemove no longer runs on nodeInfo.
func (f *Framework) RunPreFilterExtensionRemovePod(ctx context.Context, state *CycleState, podToSchedule *v1.Pod, podInfoToRemove *PodInfo, nodeInfo *NodeInfo) *Status {
	for _, p := range f.preFilter {
		ext := p.PreFilterExtensions()
		if ext == nil || state.SkipFilterPlugins[p.Name()] {
			continue
		}
		if s := ext.RemovePod(ctx, state, podToSchedule, podInfoToRemove, nodeInfo); !s.IsSuccess() {
			return AsStatus(fmt.Errorf("running RemovePod on PreFilter plugin %q: %w", p.Name(), s.AsError()))
		}
	}
	return nil
}

// RunPostFilterPlugins runs PostFilter plugins until one succeeds.
func (f *Framework) RunPostFilterPlugins(ctx context.Context, state *CycleState, pod *v1.Pod, statuses NodeToStatus) (res *PostFilterResult, status *Status) {
	start := time.Now()
	defer func() { f.observe(ExtensionPostFilter, start, status) }()
	var reasons []string
	var rejector string
	for _, p := range f.postFilter {
		r, s := p.PostFilter(ctx, state, pod, statuses)
		if s.IsSuccess() {
			return r, s
		}
		if !s.IsRejected() {
			return nil, AsStatus(fmt.Errorf("running PostFilter plugin %q: %w", p.Name(), s.AsError())).WithPlugin(p.Name())
		}
		reasons = append(reasons, s.Reasons()...)
		if rejector == "" {
			rejector = p.Name()
		}
	}
	return nil, NewStatus(Unschedulable, reasons...).WithPlugin(rejector)
}

// RunPreScorePlugins runs PreScore over the feasible nodes.
func (f *Framework) RunPreScorePlugins(ctx context.Context, state *CycleState, pod *v1.Pod, nodes []*NodeInfo) (status *Status) {
	start := time.Now()
	defer func() { f.observe(ExtensionPreScore, start, status) }()
	skip := map[string]bool{}
	for _, p := range f.preScore {
		s := p.PreScore(ctx, state, pod, nodes)
		if s.IsSkip() {
			skip[p.Name()] = true
			continue
		}
		if !s.IsSuccess() {
			return AsStatus(fmt.Errorf("running PreScore plugin %q: %w", p.Name(), s.AsError())).WithPlugin(p.Name())
		}
	}
	state.SkipScorePlugins = skip
	return nil
}

var (
	scoreBuffers    = sync.Pool{New: func() any { return new([]NodeScoreList) }}
	scoreErrBuffers = sync.Pool{New: func() any { return new([]*Status) }}
)

// RunScorePlugins scores every node with every score plugin (in parallel
// across nodes), normalizes, applies weights and returns the weighted sum
// per node, in the order of nodes.
func (f *Framework) RunScorePlugins(ctx context.Context, state *CycleState, pod *v1.Pod, nodes []*NodeInfo) (total []int64, status *Status) {
	start := time.Now()
	defer func() { f.observe(ExtensionScore, start, status) }()
	var active []weightedScorePlugin
	for _, p := range f.score {
		if !state.SkipScorePlugins[p.Name()] {
			active = append(active, p)
		}
	}
	total = make([]int64, len(nodes))
	if len(active) == 0 {
		return total, nil
	}
	// The per-plugin score lists are scratch space: reused across cycles
	// (they were a third of the scheduler's allocations), never handed
	// out beyond NormalizeScore.
	buf := scoreBuffers.Get().(*[]NodeScoreList)
	defer scoreBuffers.Put(buf)
	for len(*buf) < len(active) {
		*buf = append(*buf, nil)
	}
	scores := (*buf)[:len(active)]
	for i := range scores {
		if cap(scores[i]) < len(nodes) {
			scores[i] = make(NodeScoreList, len(nodes))
		}
		scores[i] = scores[i][:len(nodes)]
	}
	// The per-node errors are scratch space too (nil again before reuse).
	eb := scoreErrBuffers.Get().(*[]*Status)
	defer scoreErrBuffers.Put(eb)
	if cap(*eb) < len(nodes) {
		*eb = make([]*Status, len(nodes))
	}
	errs := (*eb)[:len(nodes)]
	clear(errs)
	defer clear(errs) // no Status kept alive in the pool
	f.parallelizer.Until(ctx, len(nodes), func(n int) {
		for i, p := range active {
			s, st := p.Score(ctx, state, pod, nodes[n])
			if !st.IsSuccess() {
				errs[n] = AsStatus(fmt.Errorf("running Score plugin %q: %w", p.Name(), st.AsError()))
				return
			}
			scores[i][n] = NodeScore{Name: nodes[n].Name(), Score: s}
		}
	})
	for _, e := range errs {
		if e != nil {
			return nil, e
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, AsStatus(err)
	}
	for i, p := range active {
		if ext := p.ScoreExtensions(); ext != nil {
			if s := ext.NormalizeScore(ctx, state, pod, scores[i]); !s.IsSuccess() {
				return nil, AsStatus(fmt.Errorf("running NormalizeScore of plugin %q: %w", p.Name(), s.AsError()))
			}
		}
		for n := range nodes {
			s := scores[i][n].Score
			if s < MinNodeScore || s > MaxNodeScore {
				return nil, AsStatus(fmt.Errorf("plugin %q returned score %d for node %q outside [%d, %d]", p.Name(), s, nodes[n].Name(), MinNodeScore, MaxNodeScore))
			}
			total[n] += s * p.weight
		}
	}
	return total, nil
}
