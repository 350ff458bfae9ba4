package faults

import (
	"context"
	"errors"
	"sort"
	"sync"
	"sync/atomic"
)

// Crash points: named places between the writes of one reconcile where a
// test can make the component crash (the intermediate-state fault class of
// issue 6). The component's code calls
//
//	if faults.CrashPoint(ctx, faults.CrashReplicaSetMidBatch) {
//		return faults.ErrCrashed
//	}
//
// Unarmed, CrashPoint is one atomic load and returns false. A test arms a
// point with ArmCrash and a crash function; the next time the point is
// reached (after skip passes), the crash function runs — it must not block:
// it typically cancels the component's context so that its run stops and
// its memory is lost, and tells the test to start a fresh instance — and
// CrashPoint returns true so that the reconcile writes nothing more.
const (
	// CrashReplicaSetMidBatch: the ReplicaSet controller has created some
	// pods of a slow-start batch; the rest and the status are not written.
	CrashReplicaSetMidBatch = "replicaset/mid-create-batch-before-status"
	// CrashDeploymentAfterNewRS: the deployment controller created the new
	// ReplicaSet; old ones are not scaled, revision and status not written.
	CrashDeploymentAfterNewRS = "deployment/after-create-new-replicaset"
	// CrashGCAfterOrphaning: the garbage collector removed the owner
	// reference from the dependents of an owner deleted with
	// propagationPolicy Orphan; the owner's orphan finalizer is not removed.
	CrashGCAfterOrphaning = "garbagecollector/after-orphaning-before-finalizer"
	// CrashSchedulerAfterAssume: the scheduler assumed a pod on a node; the
	// binding is not posted.
	CrashSchedulerAfterAssume = "scheduler/after-assume-before-bind"
	// CrashKubeletAfterSandbox: the kubelet started a pod's sandbox; its
	// containers are not started and the pod status is not written.
	CrashKubeletAfterSandbox = "kubelet/after-sandbox-before-status"
)

// CrashPoints lists every crash point with a hook in the implementation,
// by the component that crashes there.
var CrashPoints = map[string]string{
	CrashReplicaSetMidBatch:   "controller-manager",
	CrashDeploymentAfterNewRS: "controller-manager",
	CrashGCAfterOrphaning:     "controller-manager",
	CrashSchedulerAfterAssume: "scheduler",
	CrashKubeletAfterSandbox:  "kubelet",
}

// ErrCrashed is what a reconcile returns after its crash point fired.
var ErrCrashed = errors.New("component crashed at an armed crash point")

type armedCrash struct {
	skip  int
	crash func(point, component string)
}

type componentKey struct{}

// WithComponent names the component whose run ctx belongs to; the crash
// function of a point learns which instance reached it (e.g. which
// kubelet).
func WithComponent(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, componentKey{}, name)
}

// ComponentOf returns the name WithComponent put into ctx, or "".
func ComponentOf(ctx context.Context) string {
	s, _ := ctx.Value(componentKey{}).(string)
	return s
}

var (
	crashAny  atomic.Bool
	crashMu   sync.Mutex
	crashes   = map[string]*armedCrash{}
	crashHits = map[string]int{}
)

// ArmCrash arms point: after it has been reached skip times, the next time
// runs crash (once) with the point and the component named in the
// reconcile's context (WithComponent), and makes CrashPoint return true.
// disarm undoes it if it has not fired.
func ArmCrash(point string, skip int, crash func(point, component string)) (disarm func()) {
	a := &armedCrash{skip: skip, crash: crash}
	crashMu.Lock()
	crashes[point] = a
	crashAny.Store(true)
	crashMu.Unlock()
	return func() {
		crashMu.Lock()
		defer crashMu.Unlock()
		if crashes[point] == a {
			delete(crashes, point)
			crashAny.Store(len(crashes) > 0)
		}
	}
}

// CrashPoint reports whether the component must crash here (see the
// constants). ctx is the reconcile's context; it names the component.
func CrashPoint(ctx context.Context, point string) bool {
	if !crashAny.Load() {
		return false
	}
	crashMu.Lock()
	a := crashes[point]
	if a == nil {
		crashMu.Unlock()
		return false
	}
	if a.skip > 0 {
		a.skip--
		crashMu.Unlock()
		return false
	}
	delete(crashes, point)
	crashAny.Store(len(crashes) > 0)
	crashHits[point]++
	crashMu.Unlock()
	a.crash(point, ComponentOf(ctx))
	return true
}

// CrashHits returns how many times each point fired, as "point=n" sorted.
func CrashHits() map[string]int {
	crashMu.Lock()
	defer crashMu.Unlock()
	out := make(map[string]int, len(crashHits))
	for k, v := range crashHits {
		out[k] = v
	}
	return out
}

// Armed lists the armed crash points, sorted.
func Armed() []string {
	crashMu.Lock()
	defer crashMu.Unlock()
	out := make([]string, 0, len(crashes))
	for k := range crashes {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// DropFirst returns s without its first element for which counts is true:
// the one-event loss a mutation hook re-introduces.
func DropFirst[T any](s []T, counts func(T) bool) []T {
	for i, e := range s {
		if counts(e) {
			return append(s[:i:i], s[i+1:]...)
		}
	}
	return s
}
