package replicaset

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/kubeproof/kubeproof/impl/controller/internal/fakeapi"
)

// TestNamespaceTerminatingCreateIsNoFailure: a pod create refused because
// the namespace is terminating is no ReplicaFailure, as upstream's
// manageReplicas (its slowStartBatch function returns nil for
// NamespaceTerminatingCause): the status gets no FailedCreate condition.
func TestNamespaceTerminatingCreateIsNoFailure(t *testing.T) {
	rs := newRS("web", 3)
	client := fakeapi.NewClientset(rs)
	var creates atomic.Int32
	client.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		creates.Add(1)
		err := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", nil)
		err.ErrStatus.Message = `pods "web-x" is forbidden: unable to create new content in namespace ns because it is being terminated`
		err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
			Type: corev1.NamespaceTerminatingCause, Message: "namespace ns is being terminated", Field: "metadata.namespace"})
		return true, nil, err
	})
	factory := informers.NewSharedInformerFactory(client, 0)
	c := New(client, factory.Apps().V1().ReplicaSets(), factory.Core().V1().Pods(), record.NewFakeRecorder(100), clock.RealClock{})
	ctx, cancel := context.WithCancel(context.Background())
	factory.Start(ctx.Done())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = c.Run(ctx, 1) }()
	defer func() { cancel(); wg.Wait(); factory.Shutdown() }()

	// The first sync tries to create, then writes status.
	var got *appsv1.ReplicaSet
	waitFor(t, "a status written after a create attempt", func() bool {
		var err error
		got, err = client.AppsV1().ReplicaSets("ns").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && creates.Load() > 0 && got.Status.ObservedGeneration == rs.Generation
	})
	for _, cond := range got.Status.Conditions {
		if cond.Type == appsv1.ReplicaSetReplicaFailure {
			t.Fatalf("ReplicaFailure %s %q for a terminating namespace; upstream sets none", cond.Reason, cond.Message)
		}
	}
}
