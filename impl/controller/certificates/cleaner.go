package certificates

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	certinformers "k8s.io/client-go/informers/certificates/v1"
	"k8s.io/client-go/kubernetes"
	certlisters "k8s.io/client-go/listers/certificates/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// kube-controller-manager's csrcleaner: how often it looks at every
// request, and how long a request is kept in each state.
const (
	CleanerInterval = time.Hour
	// PendingExpiration: a request with no condition at all.
	PendingExpiration = 24 * time.Hour
	// IssuedExpiration: an approved request holding its certificate,
	// counted from its Approved condition's lastUpdateTime. An approved
	// request still without a certificate waits PendingExpiration from
	// that lastUpdateTime instead.
	IssuedExpiration = time.Hour
	// DeniedExpiration: a Denied or Failed request, counted from that
	// condition's lastUpdateTime.
	DeniedExpiration = time.Hour
)

// CleanupReason says why DecideCleanup deletes a request; "" keeps it.
type CleanupReason string

const (
	CleanupKeep          CleanupReason = ""
	CleanupPending       CleanupReason = "pending"
	CleanupDenied        CleanupReason = "denied"
	CleanupFailed        CleanupReason = "failed"
	CleanupIssued        CleanupReason = "issued"
	CleanupIssuedExpired CleanupReason = "certificate expired"
	CleanupUnissued      CleanupReason = "approved, never issued"
)

// DecideCleanup is the csrcleaner's decision for csr at now, as upstream's:
//   - no condition (pending) and created more than PendingExpiration ago;
//   - a Denied, or a Failed, condition last updated more than
//     DeniedExpiration ago;
//   - an Approved condition with a certificate issued, the condition last
//     updated more than IssuedExpiration ago, or the certificate's NotAfter
//     passed;
//   - an Approved condition without a certificate, the condition last
//     updated more than PendingExpiration ago (no signer issued it: an
//     external signer that never answers leaves such requests behind).
//
// A zero timestamp never counts as old. A certificate that is not PEM or
// whose first block is not an X.509 certificate is taken as not expired
// (the request stays until its age deletes it), as upstream's cleaner
// since it stopped failing on them.
func DecideCleanup(csr *certificatesv1.CertificateSigningRequest, now time.Time) CleanupReason {
	olderThan := func(t metav1.Time, d time.Duration) bool {
		return !t.IsZero() && now.Sub(t.Time) > d
	}
	if len(csr.Status.Conditions) == 0 {
		if olderThan(csr.CreationTimestamp, PendingExpiration) {
			return CleanupPending
		}
		return CleanupKeep
	}
	issued := len(csr.Status.Certificate) > 0
	for _, c := range csr.Status.Conditions {
		switch {
		case c.Type == certificatesv1.CertificateApproved && issued && olderThan(c.LastUpdateTime, IssuedExpiration):
			return CleanupIssued
		case c.Type == certificatesv1.CertificateApproved && !issued && olderThan(c.LastUpdateTime, PendingExpiration):
			return CleanupUnissued
		case c.Type == certificatesv1.CertificateDenied && olderThan(c.LastUpdateTime, DeniedExpiration):
			return CleanupDenied
		case c.Type == certificatesv1.CertificateFailed && olderThan(c.LastUpdateTime, DeniedExpiration):
			return CleanupFailed
		}
	}
	if issued && hasCondition(csr, certificatesv1.CertificateApproved) && certificateExpired(csr.Status.Certificate, now) {
		return CleanupIssuedExpired
	}
	return CleanupKeep
}

// certificateExpired: the first PEM block parses as certificates and the
// first one's NotAfter is before now. Anything unparsable is not expired.
func certificateExpired(certPEM []byte, now time.Time) bool {
	block, _ := pem.Decode(certPEM)
	if block == nil {
		return false
	}
	certs, err := x509.ParseCertificates(block.Bytes)
	if err != nil || len(certs) == 0 {
		return false
	}
	return now.After(certs[0].NotAfter)
}

// Cleaner is the csrcleaner controller: once the request cache has synced,
// and then CleanerInterval after the end of each pass (upstream's
// wait.Until), it deletes every request DecideCleanup says to.
type Cleaner struct {
	client kubernetes.Interface
	lister certlisters.CertificateSigningRequestLister
	synced cache.InformerSynced
	clock  clock.WithTicker
}

// NewCleaner returns the cleaner deleting with client; its passes and its
// notion of now follow clk (the real clock when nil).
func NewCleaner(client kubernetes.Interface, csrs certinformers.CertificateSigningRequestInformer, clk clock.WithTicker) *Cleaner {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Cleaner{client: client, lister: csrs.Lister(), synced: csrs.Informer().HasSynced, clock: clk}
}

// Run cleans until ctx ends.
func (c *Cleaner) Run(ctx context.Context) error {
	if !cache.WaitForCacheSync(ctx.Done(), c.synced) {
		return fmt.Errorf("csrcleaner: caches did not sync: %w", ctx.Err())
	}
	for {
		if err := c.Pass(ctx); err != nil && ctx.Err() == nil {
			slog.Warn("csrcleaner", "err", err)
		}
		next := c.clock.NewTimer(CleanerInterval)
		select {
		case <-ctx.Done():
			next.Stop()
			return nil
		case <-next.C():
		}
	}
}

// Pass looks at every cached request once. A failed deletion is reported
// and left for the next pass; the others still go.
func (c *Cleaner) Pass(ctx context.Context) error {
	csrs, err := c.lister.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("csrcleaner: listing cached requests: %w", err)
	}
	now := c.clock.Now()
	var errs []error
	for _, csr := range csrs {
		reason := DecideCleanup(csr, now)
		if reason == CleanupKeep {
			continue
		}
		slog.Info("csrcleaner: deleting request", "csr", csr.Name, "reason", string(reason))
		err := c.client.CertificatesV1().CertificateSigningRequests().Delete(ctx, csr.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("csrcleaner: deleting %s (%s): %w", csr.Name, reason, err))
		}
	}
	return errors.Join(errs...)
}
