package replicaset

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/kubeproof/kubeproof/impl/controller/internal/fakeapi"
)

// TestCreateInBatchesReturnsTheFirstError: a failing batch reports one
// error, the first, as upstream's slowStartBatch (the ReplicaFailure
// condition's message is that error, not every failure of the batch).
func TestCreateInBatchesReturnsTheFirstError(t *testing.T) {
	var calls atomic.Int32
	_, err := CreateInBatches(5, func() error {
		if n := calls.Add(1); n > 1 {
			return errors.New("exceeded quota")
		}
		return nil
	})
	if err == nil || err.Error() != "exceeded quota" {
		t.Fatalf("err = %q, want the first failure alone", err)
	}
}

// TestFailedDeleteCondition: failing pod deletions set ReplicaFailure
// FailedDelete with upstream's message, "unable to delete pods: <the first
// error>".
func TestFailedDeleteCondition(t *testing.T) {
	rs := newRS("web", 1)
	client := fakeapi.NewClientset(rs, newPod("a", ownedBy(rs), labelled("app", "web")), newPod("b", ownedBy(rs), labelled("app", "web")))
	client.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("etcd is down")
	})
	factory := informers.NewSharedInformerFactory(client, 0)
	c := New(client, factory.Apps().V1().ReplicaSets(), factory.Core().V1().Pods(), record.NewFakeRecorder(100), clock.RealClock{})
	ctx, cancel := context.WithCancel(context.Background())
	factory.Start(ctx.Done())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = c.Run(ctx, 1) }()
	defer func() { cancel(); wg.Wait(); factory.Shutdown() }()

	var cond *appsv1.ReplicaSetCondition
	waitFor(t, "a ReplicaFailure condition", func() bool {
		got, err := client.AppsV1().ReplicaSets("ns").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false
		}
		for i := range got.Status.Conditions {
			if got.Status.Conditions[i].Type == appsv1.ReplicaSetReplicaFailure {
				cond = &got.Status.Conditions[i]
				return true
			}
		}
		return false
	})
	if cond.Reason != ReasonFailedDelete || cond.Message != "unable to delete pods: etcd is down" {
		t.Fatalf("condition %s %q, want %s %q", cond.Reason, cond.Message, ReasonFailedDelete, "unable to delete pods: etcd is down")
	}
}
