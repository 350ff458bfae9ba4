package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// A create the API server failed without a verdict may still have been
// stored: etcd may commit a proposal after the server gave up waiting for
// it (the server answers 500 InternalError, as kube-apiserver does), and a
// client that sent it again then hears 409 AlreadyExists for its own pod.
// The startup workload's pod names are unique to the run, so it settles
// such a create the way a controller would: it reads the pod back, counts
// it created if it is there, and sends the create again if it is not. The
// pod's create→Running still runs from the first send. Every such create
// is counted in StartupResult.CreateErrors, so a run that needed this says
// so; a create refused with a verdict (422 Invalid, 403 Forbidden, …)
// still stops the run.

// maxCreateAttempts bounds how often one pod's create is sent when the
// server keeps failing it without a verdict.
const maxCreateAttempts = 5

// createOutcome classifies a failed create: whether its outcome is
// unknown (the pod may or may not be stored, or was stored by an earlier
// attempt of the same client), and a label for the count in the results:
// the Status reason, or "transport" for an error with no Status.
func createOutcome(err error) (unknown bool, label string) {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		var nerr net.Error
		if errors.As(err, &nerr) || errors.Is(err, context.DeadlineExceeded) {
			return true, "transport"
		}
		return false, "transport"
	}
	reason := string(apierrors.ReasonForError(err))
	if reason == "" {
		reason = fmt.Sprint(status.Status().Code)
	}
	switch {
	case apierrors.IsAlreadyExists(err),
		apierrors.IsInternalError(err),
		apierrors.IsServerTimeout(err),
		apierrors.IsTimeout(err),
		apierrors.IsServiceUnavailable(err),
		apierrors.IsTooManyRequests(err),
		status.Status().Code >= 500:
		return true, reason
	}
	return false, reason
}

// createBenchPod creates the startup workload's pod name, settling a
// create whose outcome is unknown (see above) and counting what it had to
// settle in tr. It returns nil once the pod is stored.
func createBenchPod(ctx context.Context, cs kubernetes.Interface, ns, name string, tr *startupTracker) error {
	for attempt := 1; ; attempt++ {
		_, err := cs.CoreV1().Pods(ns).Create(ctx, BenchPod(ns, name), metav1.CreateOptions{})
		if err == nil {
			return nil
		}
		unknown, label := createOutcome(err)
		if !unknown || ctx.Err() != nil {
			return fmt.Errorf("creating pod %s: %w", name, err)
		}
		stored, gerr := podStored(ctx, cs, ns, name)
		if gerr != nil {
			return fmt.Errorf("creating pod %s: %w; reading it back: %w", name, err, gerr)
		}
		if stored {
			tr.createError(label + ", stored")
			return nil
		}
		if apierrors.IsAlreadyExists(err) {
			// Nothing deletes the workload's pods during the run.
			return fmt.Errorf("creating pod %s: %w, yet reading it back finds no such pod", name, err)
		}
		tr.createError(label + ", not stored, sent again")
		if attempt == maxCreateAttempts {
			return fmt.Errorf("creating pod %s: %d attempts failed, the last with %w", name, attempt, err)
		}
	}
}

// podStored reads pod name back, retrying reads that fail for up to a
// minute (the server that just failed a write may be as busy for reads).
func podStored(ctx context.Context, cs kubernetes.Interface, ns, name string) (bool, error) {
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		switch {
		case err == nil:
			return true, nil
		case apierrors.IsNotFound(err):
			return false, nil
		case time.Now().After(deadline):
			return false, err
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
