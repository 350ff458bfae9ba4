package deployment

import (
	"fmt"
	"math"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeproof/kubeproof/impl/faults"
)

// Observed is everything one sync of a Deployment looks at.
type Observed struct {
	Deployment *appsv1.Deployment
	// ReplicaSets are all ReplicaSets in the Deployment's namespace.
	ReplicaSets []*appsv1.ReplicaSet
	// Pods are the pods the Deployment's selector matches (others are
	// ignored); only Recreate looks at them (it waits until no old pod is
	// running).
	Pods []*corev1.Pod
	Now  time.Time
}

// ActionKind is the kind of a ReplicaSet write.
type ActionKind string

// The ReplicaSet writes a Deployment sync can intend.
const (
	CreateReplicaSet ActionKind = "create"
	UpdateReplicaSet ActionKind = "update"
	DeleteReplicaSet ActionKind = "delete"
)

// Event is an event to record on the Deployment.
type Event struct {
	Type, Reason, Message string
}

// Action is one ReplicaSet write, with the event to record once it succeeds.
type Action struct {
	Kind ActionKind
	// ReplicaSet is the intended object (create, update) or the one to delete.
	ReplicaSet *appsv1.ReplicaSet
	Event      *Event
}

// Plan is the writes one Deployment sync intends, as data. The executor
// performs them in order: adopt, release, Actions, rollback, then revision
// and status in one status update.
type Plan struct {
	Adopt, Release []*appsv1.ReplicaSet
	Actions        []Action
	// Revision is the new value of the Deployment's revision annotation, or
	// "" (also when Rollback's write carries it).
	Revision string
	// Status is the Deployment's new status, or nil when unchanged.
	Status *appsv1.DeploymentStatus
	// Events are recorded regardless of writes.
	Events []Event
	// RequeueAfter asks for a resync to check the progress deadline.
	RequeueAfter time.Duration
	// Rollback is the handling of a deprecated.deployment.rollback.to
	// annotation (rollback.go), or nil.
	Rollback *Rollback
}

// Rollback is the outcome of a rollback annotation: the Deployment to write
// back with an Update, the annotation removed and, when the rollback was
// performed, the template and annotations of the target revision's
// ReplicaSet in place. Warning is recorded before that write (once the
// ReplicaSet writes succeeded), Done once it succeeded.
type Rollback struct {
	Deployment    *appsv1.Deployment
	Warning, Done *Event
}

// Condition reasons and event reasons, as upstream.
const (
	ReasonNewReplicaSetCreated       = "NewReplicaSetCreated"
	ReasonFoundNewReplicaSet         = "FoundNewReplicaSet"
	ReasonReplicaSetUpdated          = "ReplicaSetUpdated"
	ReasonNewReplicaSetAvailable     = "NewReplicaSetAvailable"
	ReasonProgressDeadlineExceeded   = "ProgressDeadlineExceeded"
	ReasonReplicaSetCreateError      = "ReplicaSetCreateError"
	ReasonDeploymentPaused           = "DeploymentPaused"
	ReasonDeploymentResumed          = "DeploymentResumed"
	ReasonMinimumReplicasAvailable   = "MinimumReplicasAvailable"
	ReasonMinimumReplicasUnavailable = "MinimumReplicasUnavailable"
	EventScalingReplicaSet           = "ScalingReplicaSet"
	ReasonRollbackDone               = "DeploymentRollback"
	ReasonRollbackRevisionNotFound   = "DeploymentRollbackRevisionNotFound"
	ReasonRollbackTemplateUnchanged  = "DeploymentRollbackTemplateUnchanged"
	EventSelectingAll                = "SelectingAll"
)

type planner struct {
	now      time.Time
	d        *appsv1.Deployment // working copy; its status and annotations evolve
	selector labels.Selector    // the Deployment's
	pods     []*corev1.Pod
	plan     Plan
}

// Decide is the Deployment controller's decision for one sync: from the
// observed Deployment, ReplicaSets and pods, the ReplicaSet writes, revision
// and status it intends. It follows upstream's sync step for step; writes a
// step depends on are applied to in-memory copies so later steps see them.
func Decide(obs Observed) (Plan, error) {
	p := &planner{now: obs.Now, d: obs.Deployment.DeepCopy(), pods: obs.Pods}
	d := p.d
	if d.Spec.Replicas == nil {
		d.Spec.Replicas = ptr(int32(1))
	}
	sel := d.Spec.Selector
	if sel == nil || (len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0) {
		p.plan.Events = append(p.plan.Events, Event{corev1.EventTypeWarning, EventSelectingAll, "This deployment is selecting all pods. A non-empty selector is required."})
		if d.Status.ObservedGeneration < d.Generation {
			d.Status.ObservedGeneration = d.Generation
		}
		p.finish(obs.Deployment)
		return p.plan, nil
	}
	selector, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return Plan{}, fmt.Errorf("parsing selector of deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	p.selector = selector
	var rsList []*appsv1.ReplicaSet
	p.plan.Adopt, p.plan.Release, rsList = ClaimReplicaSets(d, selector, obs.ReplicaSets)

	switch {
	case d.DeletionTimestamp != nil:
		newRS, oldRSs := p.newAndOld(rsList)
		p.syncDeploymentStatus(append(oldRSs, newRS), newRS)
	default:
		p.checkPausedConditions()
		revision, rollingBack := rollbackTo(d)
		switch {
		case d.Spec.Paused:
			p.sync(rsList)
		case rollingBack:
			// Before any scaling or rollout, as upstream: the next sync
			// sees the rolled-back template (or the annotation gone).
			p.rollback(rsList, revision)
		case p.isScalingEvent(rsList):
			p.sync(rsList)
		case d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType:
			p.rolloutRecreate(rsList)
		default:
			p.rolloutRolling(rsList)
		}
	}
	p.finish(obs.Deployment)
	return p.plan, nil
}

func (p *planner) finish(orig *appsv1.Deployment) {
	if !equality.Semantic.DeepEqual(p.d.Status, orig.Status) {
		st := p.d.Status
		p.plan.Status = &st
	}
	// A rollback's Update carries the revision annotation itself.
	if r := p.d.Annotations[RevisionAnnotation]; r != orig.Annotations[RevisionAnnotation] && p.plan.Rollback == nil {
		p.plan.Revision = r
	}
}

// ClaimReplicaSets splits the namespace's ReplicaSets into orphans to adopt,
// owned ones to release and the ones the Deployment controls afterwards
// (deep copies, safe to modify), with the same rules as pod claiming.
func ClaimReplicaSets(d *appsv1.Deployment, selector labels.Selector, rss []*appsv1.ReplicaSet) (adopt, release, owned []*appsv1.ReplicaSet) {
	for _, rs := range rss {
		if rs.Namespace != d.Namespace {
			continue
		}
		matches := selector.Matches(labels.Set(rs.Labels))
		ref := metav1.GetControllerOf(rs)
		switch {
		case ref != nil && ref.UID == d.UID:
			if matches {
				owned = append(owned, rs.DeepCopy())
			} else if d.DeletionTimestamp == nil {
				release = append(release, rs)
			}
		case ref != nil:
		case matches && d.DeletionTimestamp == nil && rs.DeletionTimestamp == nil:
			adopt = append(adopt, rs)
			owned = append(owned, rs.DeepCopy())
		}
	}
	return adopt, release, owned
}

// ControllerRef is the owner reference a Deployment puts on its ReplicaSets.
func ControllerRef(d *appsv1.Deployment) metav1.OwnerReference {
	t := true
	return metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: d.Name, UID: d.UID, Controller: &t, BlockOwnerDeletion: &t}
}

func ptr[T any](v T) *T { return &v }

func replicas(rs *appsv1.ReplicaSet) int32 {
	if rs == nil || rs.Spec.Replicas == nil {
		return 0
	}
	return *rs.Spec.Replicas
}

func sumSpec(rss []*appsv1.ReplicaSet) int32 {
	var n int32
	for _, rs := range rss {
		n += replicas(rs)
	}
	return n
}

func sumStatus(rss []*appsv1.ReplicaSet, f func(appsv1.ReplicaSetStatus) int32) int32 {
	var n int32
	for _, rs := range rss {
		if rs != nil {
			n += f(rs.Status)
		}
	}
	return n
}

func filterActive(rss []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	var out []*appsv1.ReplicaSet
	for _, rs := range rss {
		if replicas(rs) > 0 {
			out = append(out, rs)
		}
	}
	return out
}

func olderFirst(a, b *appsv1.ReplicaSet) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

func sortedOldestFirst(rss []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	out := append([]*appsv1.ReplicaSet(nil), rss...)
	sort.SliceStable(out, func(i, j int) bool { return olderFirst(out[i], out[j]) })
	return out
}

// newAndOld splits rsList into the ReplicaSet whose template equals the
// Deployment's (the oldest such, if several) and the others.
func (p *planner) newAndOld(rsList []*appsv1.ReplicaSet) (*appsv1.ReplicaSet, []*appsv1.ReplicaSet) {
	var newRS *appsv1.ReplicaSet
	for _, rs := range sortedOldestFirst(rsList) {
		if EqualIgnoreHash(&rs.Spec.Template, &p.d.Spec.Template) {
			newRS = rs
			break
		}
	}
	var old []*appsv1.ReplicaSet
	for _, rs := range rsList {
		if rs != newRS {
			old = append(old, rs)
		}
	}
	return newRS, old
}

func (p *planner) update(rs *appsv1.ReplicaSet, ev *Event) {
	p.plan.Actions = append(p.plan.Actions, Action{Kind: UpdateReplicaSet, ReplicaSet: rs.DeepCopy(), Event: ev})
}

func (p *planner) hasProgressDeadline() bool { return hasProgressDeadline(p.d) }

// hasProgressDeadline reports whether d has a progress deadline: set and not
// MaxInt32 (upstream HasProgressDeadline).
func hasProgressDeadline(d *appsv1.Deployment) bool {
	pd := d.Spec.ProgressDeadlineSeconds
	return pd != nil && *pd != math.MaxInt32
}

// newAndOldSyncRevision finds (or, with create, plans to create) the new
// ReplicaSet and brings revisions up to date : the new
// ReplicaSet gets max(old revisions)+1 and the Deployment carries the same.
func (p *planner) newAndOldSyncRevision(rsList []*appsv1.ReplicaSet, create bool) (*appsv1.ReplicaSet, []*appsv1.ReplicaSet) {
	d := p.d
	existing, old := p.newAndOld(rsList)
	newRevision := maxRevision(old) + 1
	if existing != nil {
		changed := setNewReplicaSetAnnotations(d, existing, newRevision, true)
		if existing.Spec.MinReadySeconds != d.Spec.MinReadySeconds {
			existing.Spec.MinReadySeconds = d.Spec.MinReadySeconds
			changed = true
		}
		if changed {
			p.update(existing, nil)
			return existing, old
		}
		p.setDeploymentRevision(existing.Annotations[RevisionAnnotation])
		if p.hasProgressDeadline() && getCondition(d.Status, appsv1.DeploymentProgressing) == nil {
			setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonFoundNewReplicaSet,
				fmt.Sprintf("Found new replica set %q", existing.Name), p.now))
		}
		return existing, old
	}
	if !create {
		return nil, old
	}
	template := *d.Spec.Template.DeepCopy()
	hash := ComputeHash(&d.Spec.Template, d.Status.CollisionCount)
	template.Labels = withLabel(d.Spec.Template.Labels, appsv1.DefaultDeploymentUniqueLabelKey, hash)
	selector := d.Spec.Selector.DeepCopy()
	selector.MatchLabels = withLabel(selector.MatchLabels, appsv1.DefaultDeploymentUniqueLabelKey, hash)
	newRS := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:            d.Name + "-" + hash,
			Namespace:       d.Namespace,
			OwnerReferences: []metav1.OwnerReference{ControllerRef(d)},
			Labels:          template.Labels,
		},
		Spec: appsv1.ReplicaSetSpec{
			Replicas:        ptr(int32(0)),
			MinReadySeconds: d.Spec.MinReadySeconds,
			Selector:        selector,
			Template:        template,
		},
	}
	n := p.newRSNewReplicas(append(old, newRS), newRS)
	newRS.Spec.Replicas = ptr(n)
	setNewReplicaSetAnnotations(d, newRS, newRevision, false)
	var ev *Event
	if n > 0 {
		ev = &Event{corev1.EventTypeNormal, EventScalingReplicaSet, fmt.Sprintf("Scaled up replica set %s from 0 to %d", newRS.Name, n)}
	}
	p.plan.Actions = append(p.plan.Actions, Action{Kind: CreateReplicaSet, ReplicaSet: newRS.DeepCopy(), Event: ev})
	p.setDeploymentRevision(newRS.Annotations[RevisionAnnotation])
	if p.hasProgressDeadline() {
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonNewReplicaSetCreated,
			fmt.Sprintf("Created new replica set %q", newRS.Name), p.now))
	}
	return newRS, old
}

func withLabel(m map[string]string, k, v string) map[string]string {
	out := make(map[string]string, len(m)+1)
	for a, b := range m {
		out[a] = b
	}
	out[k] = v
	return out
}

func (p *planner) setDeploymentRevision(rev string) {
	if rev == "" || p.d.Annotations[RevisionAnnotation] == rev {
		return
	}
	if p.d.Annotations == nil {
		p.d.Annotations = map[string]string{}
	}
	p.d.Annotations[RevisionAnnotation] = rev
}

// newRSNewReplicas is the size the new ReplicaSet may grow to now: for
// Recreate the full count, for RollingUpdate as far as maxSurge allows
// (DEP-1: the sum of replicas never exceeds replicas+maxSurge).
func (p *planner) newRSNewReplicas(all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) int32 {
	d := p.d
	if !isRollingUpdate(d) {
		return *d.Spec.Replicas
	}
	current := sumSpec(all)
	maxTotal := *d.Spec.Replicas + MaxSurge(d)
	if faults.Enabled(faults.DeploymentIgnoresMaxSurge) { // mutation: scale up without the surge bound (DEP-1)
		return *d.Spec.Replicas
	}
	if current >= maxTotal {
		return replicas(newRS)
	}
	up := min(maxTotal-current, *d.Spec.Replicas-replicas(newRS))
	return replicas(newRS) + up
}

// scaleAndRecord resizes rs (if needed) and reports whether its size changed.
func (p *planner) scaleAndRecord(rs *appsv1.ReplicaSet, to int32) bool {
	if replicas(rs) == to {
		return false
	}
	return p.scaleReplicaSet(rs, to)
}

// scaleReplicaSet resizes rs and refreshes its replica annotations; its
// event says "up" or "down" by rs's own change, as upstream's (proportional
// scaling may shrink a ReplicaSet while the Deployment grows).
func (p *planner) scaleReplicaSet(rs *appsv1.ReplicaSet, to int32) bool {
	d := p.d
	from := replicas(rs)
	sizeChanges := from != to
	probe := rs.DeepCopy()
	annotationsChange := setReplicasAnnotations(probe, *d.Spec.Replicas, *d.Spec.Replicas+MaxSurge(d))
	if !sizeChanges && !annotationsChange {
		return false
	}
	rs.Spec.Replicas = ptr(to)
	setReplicasAnnotations(rs, *d.Spec.Replicas, *d.Spec.Replicas+MaxSurge(d))
	var ev *Event
	if sizeChanges {
		op := "down"
		if from < to {
			op = "up"
		}
		ev = &Event{corev1.EventTypeNormal, EventScalingReplicaSet, fmt.Sprintf("Scaled %s replica set %s from %d to %d", op, rs.Name, from, to)}
	}
	p.update(rs, ev)
	return sizeChanges
}

// isScalingEvent reports whether spec.replicas changed since the active
// ReplicaSets were last sized (their desired-replicas annotation differs).
func (p *planner) isScalingEvent(rsList []*appsv1.ReplicaSet) bool {
	for _, rs := range filterActive(rsList) {
		if desired, ok := intAnnotation(rs, DesiredReplicasAnnotation); ok && desired != *p.d.Spec.Replicas {
			return true
		}
	}
	return false
}

// sync handles scaling events and paused Deployments: resize, clean up (if
// paused and no rollback is pending) and report status, without rolling
// anything out.
func (p *planner) sync(rsList []*appsv1.ReplicaSet) {
	newRS, oldRSs := p.newAndOldSyncRevision(rsList, false)
	p.scale(newRS, oldRSs)
	// Not while a rollback waits for the resume: its revision must stay.
	if _, rollingBack := rollbackTo(p.d); p.d.Spec.Paused && !rollingBack {
		p.cleanup(oldRSs)
	}
	p.syncDeploymentStatus(append(oldRSs, newRS), newRS)
}

// scale resizes the ReplicaSets to a new spec.replicas. With one active
// ReplicaSet it takes the whole count; with a saturated new ReplicaSet the
// old ones go to zero; otherwise, mid-rollout, the change is spread over the
// active ReplicaSets in proportion to their size .
func (p *planner) scale(newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) {
	d := p.d
	if rs := activeOrLatest(newRS, oldRSs); rs != nil {
		if replicas(rs) != *d.Spec.Replicas {
			p.scaleAndRecord(rs, *d.Spec.Replicas)
		}
		return
	}
	if p.isSaturated(newRS) {
		for _, old := range filterActive(oldRSs) {
			p.scaleAndRecord(old, 0)
		}
		return
	}
	if !isRollingUpdate(d) {
		return
	}
	all := filterActive(append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS))
	allowed := int32(0)
	if *d.Spec.Replicas > 0 {
		allowed = *d.Spec.Replicas + MaxSurge(d)
	}
	toAdd := allowed - sumSpec(all)
	switch {
	case toAdd > 0:
		sort.SliceStable(all, func(i, j int) bool { return largerNewerFirst(all[i], all[j]) })
	case toAdd < 0:
		sort.SliceStable(all, func(i, j int) bool { return largerOlderFirst(all[i], all[j]) })
	}
	added := int32(0)
	size := map[string]int32{}
	for _, rs := range all {
		if toAdd != 0 {
			prop := p.proportion(rs, toAdd, added)
			size[rs.Name] = replicas(rs) + prop
			added += prop
		} else {
			size[rs.Name] = replicas(rs)
		}
	}
	for i, rs := range all {
		if i == 0 && toAdd != 0 {
			// Leftovers from rounding go to the largest ReplicaSet.
			size[rs.Name] = max(size[rs.Name]+toAdd-added, 0)
		}
		p.scaleReplicaSet(rs, size[rs.Name])
	}
}

func largerNewerFirst(a, b *appsv1.ReplicaSet) bool {
	if replicas(a) != replicas(b) {
		return replicas(a) > replicas(b)
	}
	return olderFirst(b, a)
}

func largerOlderFirst(a, b *appsv1.ReplicaSet) bool {
	if replicas(a) != replicas(b) {
		return replicas(a) > replicas(b)
	}
	return olderFirst(a, b)
}

// proportion is rs's share of toAdd: its size scaled by the ratio of the new
// to the old allowed maximum, bounded by what is left to hand out.
func (p *planner) proportion(rs *appsv1.ReplicaSet, toAdd, added int32) int32 {
	if replicas(rs) == 0 || toAdd == 0 || toAdd == added {
		return 0
	}
	fraction := p.fraction(rs)
	allowed := toAdd - added
	if toAdd > 0 {
		return min(fraction, allowed)
	}
	return max(fraction, allowed)
}

func (p *planner) fraction(rs *appsv1.ReplicaSet) int32 {
	d := p.d
	if *d.Spec.Replicas == 0 {
		return -replicas(rs)
	}
	deploymentMax := *d.Spec.Replicas + MaxSurge(d)
	annotated, ok := intAnnotation(rs, MaxReplicasAnnotation)
	if !ok || annotated == 0 {
		annotated = d.Status.Replicas
	}
	if annotated == 0 {
		return 0
	}
	newSize := float64(replicas(rs)*deploymentMax) / float64(annotated)
	return int32(math.Round(newSize)) - replicas(rs)
}

func activeOrLatest(newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	if newRS == nil && len(oldRSs) == 0 {
		return nil
	}
	olds := sortedOldestFirst(oldRSs)
	all := filterActive(append(append([]*appsv1.ReplicaSet(nil), olds...), newRS))
	switch len(all) {
	case 0:
		if newRS != nil {
			return newRS
		}
		return olds[len(olds)-1]
	case 1:
		return all[0]
	}
	return nil
}

func (p *planner) isSaturated(rs *appsv1.ReplicaSet) bool {
	if rs == nil {
		return false
	}
	desired, ok := intAnnotation(rs, DesiredReplicasAnnotation)
	want := *p.d.Spec.Replicas
	return ok && desired == want && replicas(rs) == want && rs.Status.AvailableReplicas == want
}

// rolloutRolling is one step of a RollingUpdate: grow the new ReplicaSet
// within maxSurge, else shrink old ones within maxUnavailable
// (DEP-1, DEP-2), else clean up; then report status.
func (p *planner) rolloutRolling(rsList []*appsv1.ReplicaSet) {
	newRS, oldRSs := p.newAndOldSyncRevision(rsList, true)
	all := append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS)
	if p.reconcileNewReplicaSet(all, newRS) {
		p.syncRolloutStatus(all, newRS)
		return
	}
	if p.reconcileOldReplicaSets(all, filterActive(oldRSs), newRS) {
		p.syncRolloutStatus(all, newRS)
		return
	}
	if deploymentComplete(p.d, &p.d.Status) {
		p.cleanup(oldRSs)
	}
	p.syncRolloutStatus(all, newRS)
}

func (p *planner) reconcileNewReplicaSet(all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) bool {
	want := *p.d.Spec.Replicas
	switch {
	case replicas(newRS) == want:
		return false
	case replicas(newRS) > want:
		return p.scaleAndRecord(newRS, want)
	}
	return p.scaleAndRecord(newRS, p.newRSNewReplicas(all, newRS))
}

func (p *planner) reconcileOldReplicaSets(all, oldActive []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) bool {
	if sumSpec(oldActive) == 0 {
		return false
	}
	d := p.d
	minAvailable := *d.Spec.Replicas - MaxUnavailable(d)
	newUnavailable := replicas(newRS)
	if newRS != nil {
		newUnavailable -= newRS.Status.AvailableReplicas
	}
	if faults.Enabled(faults.DeploymentCountsUnavailable) { // mutation: unready new pods count as available (DEP-2)
		newUnavailable = 0
	}
	maxScaledDown := sumSpec(all) - minAvailable - newUnavailable
	if maxScaledDown <= 0 {
		return false
	}
	// Unhealthy old replicas go first: removing them costs no availability.
	cleaned := int32(0)
	for _, rs := range sortedOldestFirst(oldActive) {
		if cleaned >= maxScaledDown {
			break
		}
		unhealthy := replicas(rs) - rs.Status.AvailableReplicas
		if replicas(rs) == 0 || unhealthy <= 0 {
			continue
		}
		n := min(maxScaledDown-cleaned, unhealthy)
		p.scaleAndRecord(rs, replicas(rs)-n)
		cleaned += n
	}
	// Then available ones, as long as minAvailable holds.
	// A ReplicaSet scaled down a moment ago still reports its former
	// available pods until its controller catches up; at most its replicas
	// of them stay (DEP-2; found by e2e/props: counting the stale status
	// took availability below minAvailable).
	available := int32(0)
	for _, rs := range all {
		if rs != nil {
			available += min(rs.Status.AvailableReplicas, replicas(rs))
		}
	}
	if faults.Enabled(faults.DeploymentCountsUnavailable) { // mutation: unready new pods count as available (DEP-2)
		available += replicas(newRS) - newRS.Status.AvailableReplicas
	}
	scaled := int32(0)
	if available > minAvailable {
		total := available - minAvailable
		for _, rs := range sortedOldestFirst(oldActive) {
			if scaled >= total {
				break
			}
			if replicas(rs) == 0 {
				continue
			}
			n := min(replicas(rs), total-scaled)
			p.scaleAndRecord(rs, replicas(rs)-n)
			scaled += n
		}
	}
	return cleaned+scaled > 0
}

// rolloutRecreate scales every old ReplicaSet to zero, waits until none of
// their pods runs, then scales the new one up.
func (p *planner) rolloutRecreate(rsList []*appsv1.ReplicaSet) {
	newRS, oldRSs := p.newAndOldSyncRevision(rsList, false)
	all := append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS)
	scaledDown := false
	for _, rs := range filterActive(oldRSs) {
		if p.scaleAndRecord(rs, 0) {
			scaledDown = true
		}
	}
	if scaledDown || p.oldPodsRunning(newRS, oldRSs) {
		p.syncRolloutStatus(all, newRS)
		return
	}
	if newRS == nil {
		newRS, oldRSs = p.newAndOldSyncRevision(rsList, true)
		all = append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS)
	}
	p.scaleAndRecord(newRS, *p.d.Spec.Replicas)
	if deploymentComplete(p.d, &p.d.Status) {
		p.cleanup(oldRSs)
	}
	p.syncRolloutStatus(all, newRS)
}

// oldPodsRunning reports whether an old ReplicaSet still reports pods or a
// pod of one is not terminal (Unknown counts as running), as upstream's
// oldPodsRunning over getPodMapForDeployment: only the pods the
// Deployment's selector matches, by their controller reference.
func (p *planner) oldPodsRunning(newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) bool {
	if sumStatus(oldRSs, func(s appsv1.ReplicaSetStatus) int32 { return s.Replicas }) > 0 {
		return true
	}
	old := map[types.UID]bool{}
	for _, rs := range oldRSs {
		old[rs.UID] = true
	}
	for _, pod := range p.pods {
		if pod.Namespace != p.d.Namespace || !p.selector.Matches(labels.Set(pod.Labels)) {
			continue
		}
		ref := metav1.GetControllerOf(pod)
		if ref == nil || !old[ref.UID] || (newRS != nil && ref.UID == newRS.UID) {
			continue
		}
		if pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
			return true
		}
	}
	return false
}

// cleanup deletes the oldest fully scaled-down old ReplicaSets beyond
// revisionHistoryLimit .
func (p *planner) cleanup(oldRSs []*appsv1.ReplicaSet) {
	limit := p.d.Spec.RevisionHistoryLimit
	if limit == nil || *limit == math.MaxInt32 {
		return
	}
	var alive []*appsv1.ReplicaSet
	for _, rs := range oldRSs {
		if rs != nil && rs.DeletionTimestamp == nil {
			alive = append(alive, rs)
		}
	}
	diff := int32(len(alive)) - *limit
	if diff <= 0 {
		return
	}
	// By revision; by age when they are equal or either does not parse
	// (upstream ReplicaSetsByRevision).
	sort.SliceStable(alive, func(i, j int) bool {
		ri, erri := Revision(alive[i])
		rj, errj := Revision(alive[j])
		if erri != nil || errj != nil || ri == rj {
			return olderFirst(alive[i], alive[j])
		}
		return ri < rj
	})
	for _, rs := range alive[:diff] {
		if rs.Status.Replicas != 0 || replicas(rs) != 0 || rs.Generation > rs.Status.ObservedGeneration {
			continue
		}
		p.plan.Actions = append(p.plan.Actions, Action{Kind: DeleteReplicaSet, ReplicaSet: rs})
	}
}
