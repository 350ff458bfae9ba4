package certificates

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeproof/kubeproof/impl/controller/workloop"
)

// TestApproverRetriesUntilAllowed: a kubelet client request that no
// SubjectAccessReview allows is retried with back-off for as long as it
// is refused, as upstream's certificate controller requeues (rate-limited,
// no retry cap), so one refused more than workloop.MaxRetries times is
// approved once a SubjectAccessReview allows it (RBAC granted later). The
// back-off follows the loop's clock, here a fake one stepped by the
// longest back-off (1000 s) whenever the request waits for its retry.
// Before, the key was dropped after workloop.MaxRetries retries and the
// request stayed pending until the next informer event.
func TestApproverRetriesUntilAllowed(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	csr := csrFor(t, "system:bootstrap:abcdef", joiner)
	client := fake.NewClientset(csr)
	refusals := int64(workloop.MaxRetries + 5)
	var reviews atomic.Int64
	client.PrependReactor("create", "subjectaccessreviews", func(action k8stesting.Action) (bool, runtime.Object, error) {
		sar := action.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		sar.Status.Allowed = reviews.Add(1) > refusals
		return true, sar, nil
	})
	clk := clocktesting.NewFakeClock(time.Now())
	factory := informers.NewSharedInformerFactory(client, 0)
	l, err := newLoop("csrapproving", client, factory.Certificates().V1().CertificateSigningRequests(), clk)
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

	approved := func() bool {
		got, err := client.CertificatesV1().CertificateSigningRequests().Get(ctx, csr.Name, metav1.GetOptions{})
		return err == nil && len(got.Status.Conditions) == 1 && got.Status.Conditions[0].Type == certificatesv1.CertificateApproved
	}
	// Each refusal asks nodeclient once. While the request is pending,
	// wait for its review count to settle (the key waits for its
	// back-off), then step the clock past the longest back-off.
	err = wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		if approved() {
			return true, nil
		}
		if a.l.queue.Len() == 0 && reviews.Load() > 0 {
			clk.Step(1000 * time.Second)
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("not approved after %d reviews (%d refused): %v", reviews.Load(), refusals, err)
	}
	if got := reviews.Load(); got != refusals+1 {
		t.Errorf("%d reviews, want %d refused and one allowed", got, refusals+1)
	}
}
