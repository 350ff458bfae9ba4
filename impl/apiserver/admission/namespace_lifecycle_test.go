package admission

import (
	"context"
	"errors"
	"strings"
	"testing"

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

	if err := p.Validate(ctx, createIn("active")); err != nil {
		t.Fatalf("active: %v", err)
	}
	err := p.Validate(ctx, createIn("missing"))
	if !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), `namespaces "missing" not found`) {
		t.Fatalf("missing: %v", err)
	}
	if *fresh != 1 {
		t.Fatalf("a miss must be confirmed with a fresh read; fresh reads: %d", *fresh)
	}
	err = p.Validate(ctx, createIn("gone"))
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "unable to create new content in namespace gone because it is being terminated") {
		t.Fatalf("terminating: %v", err)
	}
	// updates and deletes in a terminating namespace are allowed.
	upd := createIn("gone")
	upd.Operation = Update
	if err := p.Validate(ctx, upd); err != nil {
		t.Fatalf("update in terminating namespace: %v", err)
	}
	del := &Attributes{Operation: Delete, Resource: corev1.SchemeGroupVersion.WithResource("namespaces"), Name: "default"}
	if err := p.Validate(ctx, del); !apierrors.IsForbidden(err) {
		t.Fatalf("deleting an immortal namespace: %v", err)
	}
	// cluster-scoped objects are not namespaced.
	if err := p.Validate(ctx, &Attributes{Operation: Create, Resource: corev1.SchemeGroupVersion.WithResource("nodes"), Name: "n"}); err != nil {
		t.Fatalf("cluster-scoped: %v", err)
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
