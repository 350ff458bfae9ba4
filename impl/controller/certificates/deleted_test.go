package certificates

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestDeletedRequestForgottenAtOnce: a request that waits for its retry
// (refused by every SubjectAccessReview) and is then deleted is synced at
// its deletion, as upstream's certificate controller enqueues deleted
// requests, so its key and its back-off are forgotten at once rather
// than when its back-off (up to 1000 s) ends; no review is asked for it
// again. The clock never moves here, so only the deletion can bring the
// key back. Before, the loop had no delete handler and the key kept its
// failures until its delayed retry found the request gone.
func TestDeletedRequestForgottenAtOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	csr := csrFor(t, "system:bootstrap:abcdef", joiner)
	client := fake.NewClientset(csr)
	var reviews atomic.Int64
	client.PrependReactor("create", "subjectaccessreviews", func(action k8stesting.Action) (bool, runtime.Object, error) {
		reviews.Add(1)
		return true, action.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview), nil
	})
	factory := informers.NewSharedInformerFactory(client, 0)
	l, err := newLoop("csrapproving", client, factory.Certificates().V1().CertificateSigningRequests(), clocktesting.NewFakeClock(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	a := &Approver{l: l}
	factory.Start(ctx.Done())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := a.Run(ctx, 1); err != nil {
			t.Error(err)
		}
	}()
	defer func() {
		cancel()
		wg.Wait()
		factory.Shutdown()
	}()

	// The request is refused once and waits for its retry (the fake
	// clock never reaches it).
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return l.queue.NumRequeues(csr.Name) > 0, nil
	}); err != nil {
		t.Fatalf("request never refused: %v", err)
	}
	refused := reviews.Load()
	if err := client.CertificatesV1().CertificateSigningRequests().Delete(ctx, csr.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return l.queue.NumRequeues(csr.Name) == 0, nil
	}); err != nil {
		t.Fatalf("deleted request still waiting for its retry (%d failures): %v", l.queue.NumRequeues(csr.Name), err)
	}
	if got := reviews.Load(); got != refused {
		t.Errorf("%d reviews after the deletion, want none", got-refused)
	}
}
