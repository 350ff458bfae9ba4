package kubelet

import "time"

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
func syncRetryDelay(hint time.Duration, err error, backOff, syncFrequency time.Duration, r float64) time.Duration {
	if err == nil {
		return hint
	}
	base := min(backOff, syncFrequency)
	d := base + time.Duration(r*syncBackOffJitter*float64(base))
	if hint > 0 && hint < d {
		return hint
	}
	return d
}
