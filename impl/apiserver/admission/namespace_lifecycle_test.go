package admission

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func lifecycle(nss ...*corev1.Namespace) (*NamespaceLifecycle, *int) {
	fresh := new(int)
	get := func(_ context.Context, name string, isFresh bool) (*corev1.Namespace, error) {
		if isFresh {
			*fresh++
		}
		for _, ns := range nss {
			if ns.Name == name {
				return ns, nil
			}
		}
		return nil, apierrors.NewNotFound(corev1.Resource("namespaces"), name)
	}
	return &NamespaceLifecycle{Get: get, Immortal: map[string]bool{"default": true}}, fresh
}

func createIn(ns string) *Attributes {
	return &Attributes{Operation: Create, Resource: corev1.SchemeGroupVersion.WithResource("pods"), Namespace: ns, Name: "p"}
}

func TestNamespaceLifecycle(t *testing.T) {
	active := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "active"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
	now := metav1.Now()
	gone := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gone", DeletionTimestamp: &now}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}}
	p, fresh := lifecycle(active, gone)
	ctx := context.Background()

	if err := p.Admit(ctx, createIn("active")); err != nil {
		t.Fatalf("active: %v", err)
	}
	err := p.Admit(ctx, createIn("missing"))
	if !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), `namespaces "missing" not found`) {
		t.Fatalf("missing: %v", err)
	}
	if *fresh != 1 {
		t.Fatalf("a miss must be confirmed with a fresh read; fresh reads: %d", *fresh)
	}
	err = p.Admit(ctx, createIn("gone"))
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "unable to create new content in namespace gone because it is being terminated") {
		t.Fatalf("terminating: %v", err)
	}
	// updates and deletes in a terminating namespace are allowed.
	upd := createIn("gone")
	upd.Operation = Update
	if err := p.Admit(ctx, upd); err != nil {
		t.Fatalf("update in terminating namespace: %v", err)
	}
	del := &Attributes{Operation: Delete, Resource: corev1.SchemeGroupVersion.WithResource("namespaces"), Name: "default"}
	if err := p.Admit(ctx, del); !apierrors.IsForbidden(err) {
		t.Fatalf("deleting an immortal namespace: %v", err)
	}
	// cluster-scoped objects are not namespaced.
	if err := p.Admit(ctx, &Attributes{Operation: Create, Resource: corev1.SchemeGroupVersion.WithResource("nodes"), Name: "n"}); err != nil {
		t.Fatalf("cluster-scoped: %v", err)
	}
}

// TestNamespaceLifecycleTerminatingByPhase: what refuses creates is the
// namespace's phase, Terminating, not its deletionTimestamp (kube-apiserver's
// lifecycle plugin reads Status.Phase only; both are set by the same
// delete, so a namespace marked deleted but still Active is one whose phase
// the plugin has yet to see change).
func TestNamespaceLifecycleTerminatingByPhase(t *testing.T) {
	now := metav1.Now()
	marked := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "marked", DeletionTimestamp: &now}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
	terminating := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "terminating"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}}
	p, _ := lifecycle(marked, terminating)
	if err := p.Admit(context.Background(), createIn("marked")); err != nil {
		t.Fatalf("an Active namespace with a deletionTimestamp: %v", err)
	}
	err := p.Admit(context.Background(), createIn("terminating"))
	if !apierrors.IsForbidden(err) || !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		t.Fatalf("a Terminating namespace: %v", err)
	}
}

type recorder struct {
	calls *[]string
	name  string
	err   error
}

func (r recorder) Admit(context.Context, *Attributes) error {
	*r.calls = append(*r.calls, "admit "+r.name)
	return r.err
}

func (r recorder) Validate(context.Context, *Attributes) error {
	*r.calls = append(*r.calls, "validate "+r.name)
	return r.err
}

func TestChainOrderAndStop(t *testing.T) {
	var calls []string
	boom := errors.New("boom")
	c := &Chain{
		Mutators:   []Mutator{recorder{&calls, "a", nil}, recorder{&calls, "b", boom}, recorder{&calls, "c", nil}},
		Validators: []Validator{recorder{&calls, "x", nil}},
	}
	if err := c.Admit(context.Background(), &Attributes{}); !errors.Is(err, boom) {
		t.Fatalf("admit: %v", err)
	}
	if err := c.Validate(context.Background(), &Attributes{}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(calls, ",") != "admit a,admit b,validate x" {
		t.Fatalf("calls %v", calls)
	}
	var nilChain *Chain
	if nilChain.Admit(context.Background(), &Attributes{}) != nil || nilChain.Validate(context.Background(), &Attributes{}) != nil {
		t.Fatal("nil chain must admit everything")
	}
}

// NamespaceLifecycle is a mutating plugin in kube-apiserver, the first of
// the chain: a pod created in a namespace that does not exist gets the 404
// for the namespace at once, not ServiceAccount's 403 after it has waited
// about a second for the namespace's "default" account.
func TestNamespaceLifecycleRefusesBeforeOtherMutators(t *testing.T) {
	mut, _, _, err := NewPlugins(DefaultPlugins(), newFuzzStores())
	if err != nil {
		t.Fatal(err)
	}
	if len(mut) == 0 {
		t.Fatal("no mutating plugins")
	}
	if _, ok := any(mut[0]).(*NamespaceLifecycle); !ok {
		t.Fatalf("the first mutating plugin is a %T, want NamespaceLifecycle", mut[0])
	}
	err = (&Chain{Mutators: mut}).Admit(context.Background(), podCreate(newPod("p")))
	if !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), `namespaces "ns" not found`) {
		t.Fatalf("a pod in a missing namespace: %v, want the namespace's NotFound", err)
	}
}

// A namespace deleted through this server may still read Active in the
// watch-fed cache for a moment: as kube-apiserver's plugin (its
// forceLiveLookupCache), a create in it within 30 s of the delete reads
// the namespace fresh when the cache says Active, and is refused.
func TestNamespaceLifecycleLiveLookupAfterDelete(t *testing.T) {
	cached := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
	now := metav1.Now()
	stored := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", DeletionTimestamp: &now}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}}
	fresh := 0
	clock := time.Unix(1000, 0)
	p := &NamespaceLifecycle{
		Get: func(_ context.Context, _ string, isFresh bool) (*corev1.Namespace, error) {
			if isFresh {
				fresh++
				return stored, nil
			}
			return cached, nil
		},
		now: func() time.Time { return clock },
	}
	ctx := context.Background()
	if err := p.Admit(ctx, createIn("team")); err != nil || fresh != 0 {
		t.Fatalf("before any delete: %v, %d fresh reads (want the cache only)", err, fresh)
	}
	del := &Attributes{Operation: Delete, Resource: corev1.SchemeGroupVersion.WithResource("namespaces"), Name: "team"}
	if err := p.Admit(ctx, del); err != nil {
		t.Fatal(err)
	}
	err := p.Admit(ctx, createIn("team"))
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "unable to create new content in namespace team because it is being terminated") || fresh != 1 {
		t.Fatalf("right after the delete: %v, %d fresh reads; want the stored namespace's refusal", err, fresh)
	}
	// Another namespace is read from the cache.
	if err := p.Admit(ctx, createIn("other")); err != nil || fresh != 1 {
		t.Fatalf("another namespace: %v, %d fresh reads", err, fresh)
	}
	// A cached copy already Terminating needs no fresh read.
	cached = stored
	if err := p.Admit(ctx, createIn("team")); !apierrors.IsForbidden(err) || fresh != 1 {
		t.Fatalf("cache terminating: %v, %d fresh reads", err, fresh)
	}
	// Past 30 s the entry is gone, and the map with it.
	cached = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
	clock = clock.Add(30*time.Second + time.Millisecond)
	if err := p.Admit(ctx, createIn("team")); err != nil || fresh != 1 {
		t.Fatalf("past 30 s after the delete: %v, %d fresh reads (want the cache only)", err, fresh)
	}
	if n := p.liveLookups.Load(); n != 0 {
		t.Fatalf("%d namespaces still forced to live lookups", n)
	}
	// At most 100 namespaces are remembered, the oldest dropped first.
	for i := range 101 {
		clock = clock.Add(time.Millisecond)
		del.Name = fmt.Sprintf("ns-%d", i)
		if err := p.Admit(ctx, del); err != nil {
			t.Fatal(err)
		}
	}
	if n := p.liveLookups.Load(); n != forceLiveLookupMax {
		t.Fatalf("%d namespaces remembered, want %d", n, forceLiveLookupMax)
	}
	if _, ok := p.forced["ns-0"]; ok {
		t.Fatal("the oldest entry was kept")
	}
}

// As kube-apiserver's plugin (it handles CREATE, UPDATE and DELETE), an
// update of an object in a namespace that does not exist is refused with
// the namespace's 404, after a fresh read confirms the miss; an update or
// a delete in a terminating namespace, and a delete in a missing one, are
// allowed.
func TestNamespaceLifecycleUpdateInMissingNamespace(t *testing.T) {
	now := metav1.Now()
	gone := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gone", DeletionTimestamp: &now}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}}
	p, fresh := lifecycle(gone)
	ctx := context.Background()

	upd := createIn("missing")
	upd.Operation = Update
	err := p.Admit(ctx, upd)
	if !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), `namespaces "missing" not found`) {
		t.Fatalf("update in a missing namespace: %v, want the namespace's NotFound", err)
	}
	if *fresh != 1 {
		t.Fatalf("a miss must be confirmed with a fresh read; fresh reads: %d", *fresh)
	}
	upd.Subresource = "status"
	if err := p.Admit(ctx, upd); !apierrors.IsNotFound(err) {
		t.Fatalf("status update in a missing namespace: %v, want the namespace's NotFound", err)
	}
	del := createIn("missing")
	del.Operation = Delete
	if err := p.Admit(ctx, del); err != nil {
		t.Fatalf("delete in a missing namespace: %v", err)
	}
	upd = createIn("gone")
	upd.Operation = Update
	if err := p.Admit(ctx, upd); err != nil {
		t.Fatalf("update in a terminating namespace: %v", err)
	}
}

// An update (a pod's status write) in a cached Active namespace costs no
// allocation in the plugin.
func TestNamespaceLifecycleUpdateAllocs(t *testing.T) {
	active := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "active"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
	p, _ := lifecycle(active)
	upd := createIn("active")
	upd.Operation = Update
	upd.Subresource = "status"
	ctx := context.Background()
	if n := testing.AllocsPerRun(100, func() {
		if err := p.Admit(ctx, upd); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("%v allocations per update, want 0", n)
	}
}
