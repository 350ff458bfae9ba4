package props

import (
	"context"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Change is one observed write, as a watch delivered it.
type Change struct {
	Kind, Name, Type, ResourceVersion string
	Summary                           string
}

// Recorder watches every pod, ReplicaSet and deployment change of a
// namespace (client-go informers: one watch per resource, relisting on a
// break) and checks the step properties on each consecutive pair of versions
// of an object it receives:
//   - SCHED-1: spec.nodeName, once set, never changes (bound at most once);
//   - KUBELET-5: a pod's phase never leaves Succeeded or Failed;
//   - RS-2: no version of a pod has two controller owners.
type Recorder struct {
	mu         sync.Mutex
	changes    []Change
	total      int
	violations []Violation
	pods       map[string]*v1.Pod // uid -> last version seen
	deleted    map[string]bool    // uids whose deletion was seen
	cancel     context.CancelFunc
	done       chan struct{}
	hist       *History
	lists      map[string]int       // list requests per resource: more than one is a relist
	arrived    map[string]time.Time // resourceVersion -> when the recorder received it
}

// MaxChanges bounds the change log a Recorder keeps for reports.
const MaxChanges = 400

// StartRecorder starts watching namespace and returns once the informers
// have synced.
func StartRecorder(ctx context.Context, client kubernetes.Interface, namespace string) (*Recorder, error) {
	ctx, cancel := context.WithCancel(ctx)
	r := &Recorder{pods: map[string]*v1.Pod{}, cancel: cancel, done: make(chan struct{}), hist: newHistory(), lists: map[string]int{},
		arrived: map[string]time.Time{}}
	countLists := func(resource string) informers.SharedInformerOption {
		return informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			if !o.Watch {
				r.mu.Lock()
				r.lists[resource]++
				r.mu.Unlock()
			}
		})
	}
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(namespace), countLists("namespaced"))
	nf := informers.NewSharedInformerFactoryWithOptions(client, 0, countLists("nodes"))
	podInf := f.Core().V1().Pods().Informer()
	rsInf := f.Apps().V1().ReplicaSets().Informer()
	depInf := f.Apps().V1().Deployments().Informer()
	nodeInf := nf.Core().V1().Nodes().Informer()
	if _, err := podInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { r.pod("ADDED", nil, o.(*v1.Pod)) },
		UpdateFunc: func(o, n any) { r.pod("MODIFIED", o.(*v1.Pod), n.(*v1.Pod)) },
		DeleteFunc: func(o any) {
			if p, ok := o.(*v1.Pod); ok {
				r.pod("DELETED", nil, p)
			}
		},
	}); err != nil {
		cancel()
		return nil, fmt.Errorf("pod handler: %w", err)
	}
	nodeSeen := func(o any) {
		if n, ok := o.(*v1.Node); ok {
			r.mu.Lock()
			r.arrive(n.ResourceVersion)
			r.hist.node(n, time.Now())
			r.mu.Unlock()
		}
	}
	if _, err := nodeInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: nodeSeen, UpdateFunc: func(_, n any) { nodeSeen(n) },
	}); err != nil {
		cancel()
		return nil, fmt.Errorf("node handler: %w", err)
	}
	rsLog := func(typ string) func(any) {
		return func(o any) {
			if rs, ok := o.(*appsv1.ReplicaSet); ok {
				rep := int32(-1)
				if rs.Spec.Replicas != nil {
					rep = *rs.Spec.Replicas
				}
				r.log(Change{"ReplicaSet", rs.Name, typ, rs.ResourceVersion,
					fmt.Sprintf("replicas=%d ready=%d available=%d deleting=%v", rep, rs.Status.ReadyReplicas, rs.Status.AvailableReplicas, rs.DeletionTimestamp != nil)})
				if typ != "DELETED" {
					r.mu.Lock()
					r.hist.replicaSet(rs, time.Now())
					r.mu.Unlock()
				}
			}
		}
	}
	depLog := func(typ string) func(any) {
		return func(o any) {
			if d, ok := o.(*appsv1.Deployment); ok {
				r.mu.Lock()
				if typ == "DELETED" {
					delete(r.hist.deps, d.Name)
				} else {
					r.hist.deps[d.Name] = d
				}
				r.mu.Unlock()
				rep := int32(-1)
				if d.Spec.Replicas != nil {
					rep = *d.Spec.Replicas
				}
				r.log(Change{"Deployment", d.Name, typ, d.ResourceVersion,
					fmt.Sprintf("gen=%d observed=%d replicas=%d image=%s paused=%v available=%d", d.Generation,
						d.Status.ObservedGeneration, rep, image(&d.Spec.Template.Spec), d.Spec.Paused, d.Status.AvailableReplicas)})
			}
		}
	}
	for inf, lg := range map[cache.SharedIndexInformer]func(string) func(any){rsInf: rsLog, depInf: depLog} {
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    lg("ADDED"),
			UpdateFunc: func(_, n any) { lg("MODIFIED")(n) },
			DeleteFunc: lg("DELETED"),
		}); err != nil {
			cancel()
			return nil, fmt.Errorf("handler: %w", err)
		}
	}
	go func() {
		defer close(r.done)
		f.Start(ctx.Done())
		nf.Start(ctx.Done())
		<-ctx.Done()
		f.Shutdown()
		nf.Shutdown()
	}()
	syncCtx, cancelSync := context.WithTimeout(ctx, time.Minute)
	defer cancelSync()
	if !cache.WaitForCacheSync(syncCtx.Done(), podInf.HasSynced, rsInf.HasSynced, depInf.HasSynced, nodeInf.HasSynced) {
		r.Stop()
		return nil, fmt.Errorf("recorder informers did not sync")
	}
	return r, nil
}

func (r *Recorder) log(c Change) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.changes = append(r.changes, c)
	r.arrive(c.ResourceVersion)
	r.total++
	if len(r.changes) > MaxChanges {
		r.changes = r.changes[len(r.changes)-MaxChanges:]
	}
}

func (r *Recorder) pod(typ string, old, p *v1.Pod) {
	r.log(Change{"Pod", p.Name, typ, p.ResourceVersion, fmt.Sprintf("uid=%s node=%q phase=%s ready=%v deleting=%v",
		p.UID, p.Spec.NodeName, p.Status.Phase, PodReady(p), p.DeletionTimestamp != nil)})
	r.mu.Lock()
	defer r.mu.Unlock()
	prev := r.pods[string(p.UID)]
	if old != nil && old.UID == p.UID && (prev == nil || old.ResourceVersion != prev.ResourceVersion) {
		// The informer's own previous version is authoritative for the pair.
		prev = old
	}
	if prev != nil {
		if prev.Spec.NodeName != "" && p.Spec.NodeName != prev.Spec.NodeName {
			r.violations = append(r.violations, Violation{"SCHED-1", fmt.Sprintf(
				"pod %s (uid %s) bound to %q at resourceVersion %s, then to %q at %s",
				p.Name, p.UID, prev.Spec.NodeName, prev.ResourceVersion, p.Spec.NodeName, p.ResourceVersion)})
		}
		if Terminal(prev.Status.Phase) && p.Status.Phase != prev.Status.Phase {
			r.violations = append(r.violations, Violation{"KUBELET-5", fmt.Sprintf(
				"pod %s (uid %s) phase %s at resourceVersion %s, then %s at %s",
				p.Name, p.UID, prev.Status.Phase, prev.ResourceVersion, p.Status.Phase, p.ResourceVersion)})
		}
	}
	if n := len(ControllerOwners(p.OwnerReferences)); n > 1 {
		r.violations = append(r.violations, Violation{"RS-2", fmt.Sprintf(
			"pod %s (uid %s) at resourceVersion %s has %d controller owners", p.Name, p.UID, p.ResourceVersion, n)})
	}
	r.pods[string(p.UID)] = p
	r.hist.pod(p, typ == "DELETED", time.Now())
	if typ == "DELETED" {
		if r.deleted == nil {
			r.deleted = map[string]bool{}
		}
		r.deleted[string(p.UID)] = true
	}
}

// arrive records when a resourceVersion first reached the recorder; r.mu
// is held.
func (r *Recorder) arrive(rv string) {
	if r.arrived == nil {
		r.arrived = map[string]time.Time{}
	}
	if _, ok := r.arrived[rv]; !ok {
		r.arrived[rv] = time.Now()
	}
}

// ArrivedAt returns when the recorder received the write of resourceVersion
// rv, if it did.
func (r *Recorder) ArrivedAt(rv string) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	at, ok := r.arrived[rv]
	return at, ok
}

// SetWindow sets how stale a component's view may be for the history's
// step checks (at least LagWindow).
func (r *Recorder) SetWindow(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hist.window = max(LagWindow, d)
}

// Window returns the history checks' current window.
func (r *Recorder) Window() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hist.window
}

// Deleted reports whether the recorder saw the pod with this uid removed.
func (r *Recorder) Deleted(uid string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.deleted[uid]
}

// Relisted reports whether an informer of the recorder listed again (its
// watch broke and could not resume): versions may then be missing, and the
// History's step checks are not sound any more.
func (r *Recorder) Relisted() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lists["namespaced"] > 3 || r.lists["nodes"] > 1
}

// HistoryViolations returns the step violations of the recorded history
// (SCHED-3, the taint manager's GC-1, RS-1 when checkRS1, SCHED-2 at each
// binding when checkSched2) among the changes received historySettle ago
// or earlier; nothing once an informer relisted.
func (r *Recorder) HistoryViolations(checkRS1, checkSched2 bool) []Violation {
	if r.Relisted() {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hist.violations(checkRS1, checkSched2, time.Now())
}

// DEP2Candidates returns the DEP-2 suspects so far; nothing once an
// informer relisted.
func (r *Recorder) DEP2Candidates() []Candidate {
	if r.Relisted() {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Candidate(nil), r.hist.dep2...)
}

// Violations returns the step violations seen so far.
func (r *Recorder) Violations() []Violation {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Violation(nil), r.violations...)
}

// Pods returns the last version of every pod seen (deleted ones included).
func (r *Recorder) Pods() []*v1.Pod {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*v1.Pod, 0, len(r.pods))
	for _, p := range r.pods {
		out = append(out, p)
	}
	return out
}

// Changes returns the most recent changes, oldest first.
func (r *Recorder) Changes() []Change {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Change(nil), r.changes...)
}

// Count is the number of changes recorded.
func (r *Recorder) Count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.total
}

// Stop stops the informers and waits for them.
func (r *Recorder) Stop() {
	r.cancel()
	<-r.done
}
