package kubelet

import (
	"errors"
	"math"
	"time"
)

// syncBackOffJitter is the largest fraction by which a back-off is
// lengthened at random (upstream's workerBackOffPeriodJitterFactor), so
// pods that failed together are not retried together.
const syncBackOffJitter = 0.5

// syncRetryDelay decides when a pod worker syncs a pod again of its own
// accord after a sync that returned hint (when the pod next needs a sync
// even if nothing happens — a probe due, a CrashLoopBackOff or grace
// period ending; 0: none) and err. r, in [0, 1), draws the jitter.
//
// A sync that succeeded is woken at its hint (and by the full resync). One
// that failed waits backOff, at most syncFrequency, lengthened by up to
// syncBackOffJitter of itself — or less, if its hint comes first: a failed sync is not retried sooner
// for having failed. As upstream's pod workers, unlike the 1 s retry that
// was here before: under an API server too busy to answer, every failed
// sync resent its status write each second (10.9 writes per pod in
// session 10's overloaded run), adding load just when there was too much.
// Upstream's status manager retries a failed write on its 10 s sync
// period; here the status is written by the sync, so its back-off is the
// write's. (Upstream retries a sync that failed because the pod network is
// not ready after about a second; `kubeproof kubelet --runtime cri` waits
// for the runtime's NetworkReady before it runs, and the simulated runtime
// is always ready, so no sync here fails that way.)
//
// A sync that failed setting up the pod's volumes (volumeSetUpError) is
// retried on the volume back-off instead (mountRetryDelay: 0.5 s doubling
// to 2 min 2 s, no jitter), or at its hint if that comes first: upstream's
// pod worker waits in WaitForAttachAndMount while the volume manager
// retries the mount on that back-off, so a ConfigMap, Secret or token that
// is missing or refused for a moment delays the pod by about as long, not
// by the pod workers' 10 s.
//
// A sync whose status write was refused (statusRefusedError) is retried on
// the same schedule, or sooner if its volume back-off or hint says so.
func syncRetryDelay(hint time.Duration, err error, backOff, syncFrequency time.Duration, r float64) time.Duration {
	if err == nil {
		return hint
	}
	var retry time.Duration
	if ve, ok := errors.AsType[*volumeSetUpError](err); ok {
		retry = ve.retryAfter
	}
	if se, ok := errors.AsType[*statusRefusedError](err); ok && (retry == 0 || se.retryAfter < retry) {
		retry = se.retryAfter
	}
	if retry > 0 {
		if hint > 0 && hint < retry {
			return hint
		}
		return retry
	}
	base := min(backOff, syncFrequency)
	d := base + time.Duration(r*syncBackOffJitter*float64(base))
	if hint > 0 && hint < d {
		return hint
	}
	return d
}

// The volume back-off: upstream's volume operations (nestedpendingoperations'
// exponential back-off) wait 0.5 s after a failed mount, twice as long
// after each further failure, at most 2 min 2 s.
const (
	mountRetryInitial = 500 * time.Millisecond
	mountRetryMax     = 2*time.Minute + 2*time.Second
)

// mountRetryDelay is how long after its failures-th consecutive failed
// volume set-up (failures ≥ 1) a pod's volumes are set up again.
func mountRetryDelay(failures uint8) time.Duration {
	d := mountRetryInitial
	for i := uint8(1); i < failures && d < mountRetryMax; i++ {
		d *= 2
	}
	return min(d, mountRetryMax)
}

// nextRetryDelay counts one more consecutive failure in *failures
// (saturating at 255) and returns the volume back-off after it
// (mountRetryDelay): the schedule of failed volume set-ups
// (podRecord.mountFailures) and refused status writes
// (podRecord.statusRefusals).
func nextRetryDelay(failures *uint8) time.Duration {
	if *failures < math.MaxUint8 {
		*failures++
	}
	return mountRetryDelay(*failures)
}

// volumeSetUpError is a sync's failure to set up the pod's volumes, with
// when to try again (mountRetryDelay). Its message is the set-up error's.
type volumeSetUpError struct {
	err        error
	retryAfter time.Duration
}

func (e *volumeSetUpError) Error() string { return e.err.Error() }
func (e *volumeSetUpError) Unwrap() error { return e.err }

// statusRefusedError is a sync whose status write the API server refused
// (403 Forbidden), with when to write again. The Node authorizer answers so
// for a pod its graph does not hold on the node yet, which lasts as long as
// the graph lags the pod's binding, usually well under a second; so the
// write is retried on the volume back-off's schedule (0.5 s doubling to
// 2 min 2 s, counted in podRecord.statusRefusals), not after the pod
// workers' 10 s. Upstream's status manager retries a failed write on its
// 10-s sync period; a refusal that lasts is retried here less often than
// that once the back-off has passed 10 s.
type statusRefusedError struct {
	err        error
	retryAfter time.Duration
}

func (e *statusRefusedError) Error() string { return e.err.Error() }
func (e *statusRefusedError) Unwrap() error { return e.err }
