package certificates

import (
	"context"
	"fmt"
	"math"
	"time"

	"golang.org/x/time/rate"
	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certinformers "k8s.io/client-go/informers/certificates/v1"
	"k8s.io/client-go/kubernetes"
	certlisters "k8s.io/client-go/listers/certificates/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/kubeproof/kubeproof/impl/controller/workloop"
)

// loop is the shared shape of both controllers: CSR events enqueue names,
// workers call sync.
type loop struct {
	name   string
	client kubernetes.Interface
	lister certlisters.CertificateSigningRequestLister
	synced cache.InformerSynced
	queue  workqueue.TypedRateLimitingInterface[string]
	now    func() time.Time
}

// queueName names both controllers' work queues (their workqueue_*
// metrics' name label): upstream builds csrapproving and csrsigning on one
// certificate controller, whose queue is named "certificate" whichever
// controller it serves.
const queueName = "certificate"

// newLoop returns the loop named name (in its logs; its work queue is
// named queueName) over csrs; its queue's delayed retries follow clk.
// A failed sync is retried for as long as it fails
// (run), with upstream's certificate controller's back-off: per request
// exponential from 200 ms doubling to at most 1000 s, and all retries
// together at most 10 per second after a burst of 100.
func newLoop(name string, client kubernetes.Interface, csrs certinformers.CertificateSigningRequestInformer, clk clock.WithTicker) (*loop, error) {
	limiter := workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](200*time.Millisecond, 1000*time.Second),
		&workqueue.TypedBucketRateLimiter[string]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
	)
	queue := workqueue.NewTypedRateLimitingQueueWithConfig(limiter, workqueue.TypedRateLimitingQueueConfig[string]{Name: queueName, Clock: clk})
	l := &loop{name: name, client: client, lister: csrs.Lister(), synced: csrs.Informer().HasSynced, queue: queue, now: clk.Now}
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			l.queue.Add(key)
		}
	}
	if _, err := csrs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		// As upstream's: a deleted request is synced at once, so a key
		// waiting for its retry is forgotten with its back-off now, not
		// when the back-off (up to 1000 s) ends.
		DeleteFunc: enqueue,
	}); err != nil {
		return nil, fmt.Errorf("%s: adding event handler: %w", name, err)
	}
	return l, nil
}

func (l *loop) run(ctx context.Context, workers int, sync func(context.Context, *certificatesv1.CertificateSigningRequest) error) error {
	if err := workloop.WaitForSync(ctx, l.name, l.queue, l.synced); err != nil {
		return err
	}
	// No retry cap, as upstream's: a request RBAC refuses now may be
	// allowed later (its requester granted nodeclient), and is approved
	// then without a new CSR event.
	workloop.RunWithMaxRetries(ctx, l.name, l.queue, workers, math.MaxInt, func(ctx context.Context, key string) error {
		csr, err := l.lister.Get(key)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return sync(ctx, csr)
	})
	return nil
}

// Approver is the csrapproving controller.
type Approver struct{ l *loop }

// NewApprover returns the approver writing with client.
func NewApprover(client kubernetes.Interface, csrs certinformers.CertificateSigningRequestInformer) (*Approver, error) {
	l, err := newLoop("csrapproving", client, csrs, clock.RealClock{})
	if err != nil {
		return nil, err
	}
	return &Approver{l: l}, nil
}

// Run approves until ctx ends.
func (a *Approver) Run(ctx context.Context, workers int) error {
	return a.l.run(ctx, workers, a.sync)
}

func (a *Approver) sync(ctx context.Context, csr *certificatesv1.CertificateSigningRequest) error {
	checks := DecideApproval(csr)
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range csr.Spec.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	for _, check := range checks {
		sar, err := a.l.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{
				User: csr.Spec.Username, UID: csr.Spec.UID, Groups: csr.Spec.Groups, Extra: extra,
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Group: certificatesv1.GroupName, Resource: "certificatesigningrequests", Subresource: check.Subresource, Verb: "create",
				},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("csrapproving: reviewing access of %q for %s: %w", csr.Spec.Username, csr.Name, err)
		}
		if !sar.Status.Allowed {
			continue
		}
		if _, err := a.l.client.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, approveWith(csr, check.Message, a.l.now()), metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("csrapproving: approving %s: %w", csr.Name, err)
		}
		return nil
	}
	if len(checks) > 0 {
		// Retried with back-off, as upstream's ignorable error: the
		// requester may be allowed later.
		tried := make([]string, len(checks))
		for i, c := range checks {
			tried[i] = c.Subresource
		}
		return fmt.Errorf("recognized csr %q as %v but subject access review was not approved", csr.Name, tried)
	}
	return nil
}

// Signer is the csrsigning controller for the signers of signerChecks.
type Signer struct {
	l           *loop
	ca          *CA
	maxDuration time.Duration
}

// NewSigner returns the signer issuing with ca; maxDuration caps the
// lifetime (kube-controller-manager's --cluster-signing-duration, default
// one year when 0).
func NewSigner(client kubernetes.Interface, csrs certinformers.CertificateSigningRequestInformer, ca *CA, maxDuration time.Duration) (*Signer, error) {
	l, err := newLoop("csrsigning", client, csrs, clock.RealClock{})
	if err != nil {
		return nil, err
	}
	return &Signer{l: l, ca: ca, maxDuration: maxDuration}, nil
}

// Run signs until ctx ends.
func (s *Signer) Run(ctx context.Context, workers int) error {
	return s.l.run(ctx, workers, s.sync)
}

func (s *Signer) sync(ctx context.Context, csr *certificatesv1.CertificateSigningRequest) error {
	now := s.l.now()
	d, err := DecideSigning(csr, s.ca, s.maxDuration, now)
	if err != nil || d == nil {
		return err
	}
	if _, err := s.l.client.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, Apply(csr, d, now), metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("csrsigning: updating %s: %w", csr.Name, err)
	}
	return nil
}
