package eviction

import (
	"context"
	"errors"
	"time"

	v1 "k8s.io/api/core/v1"
)

// Node-level reclaim: before evicting pods for a disk signal, the
// eviction manager removes dead containers and unused images (the
// kubelet's garbage collection, impl/kubelet/gc), observes the node again
// and evicts only if a threshold is still met, as upstream's eviction
// manager does.

// NodeReclaimer frees node-level resources.
type NodeReclaimer interface {
	// DeleteDeadContainers removes dead containers the kubelet no longer
	// needs (terminated pods' too) and returns how many.
	DeleteDeadContainers(ctx context.Context, now time.Time) (int, error)
	// DeleteUnusedImages removes every image no container uses (and old
	// enough) and returns the bytes freed.
	DeleteUnusedImages(ctx context.Context, now time.Time) (int64, error)
}

// DedicatedImageFsReporter is implemented by providers that can tell
// whether images live on a filesystem of their own (not the kubelet root
// directory's). Providers that cannot are taken to share one.
type DedicatedImageFsReporter interface {
	DedicatedImageFs(ctx context.Context) bool
}

// Reclaim is what a node-level reclaim did.
type Reclaim struct {
	ContainersRemoved int
	ImageBytesFreed   int64
	// Err collects the reclaim's errors (it goes on despite them).
	Err error
	// Sufficed: after it no threshold is met, so no pod is evicted.
	Sufficed bool
}

// ReclaimsNodeLevel reports whether dead containers and unused images are
// reclaimed before pods are evicted for signal: for the disk signals of
// the filesystem holding images — nodefs and imagefs alike when images
// are on the node filesystem, only imagefs when they have their own
// (removing images does not help the node filesystem then). Pure.
func ReclaimsNodeLevel(s Signal, dedicatedImageFs bool) bool {
	switch s {
	case SignalImageFsAvailable, SignalImageFsInodesFree:
		return true
	case SignalNodeFsAvailable, SignalNodeFsInodesFree:
		return !dedicatedImageFs
	}
	return false
}

// ReclaimSuffices reports whether, observed after a reclaim, no threshold
// is met any more, minimum reclaims included and grace periods ignored:
// then no pod needs evicting. Pure.
func ReclaimSuffices(cfg Config, obs Observations) bool {
	return len(thresholdsMet(cfg.Thresholds, obs, true)) == 0
}

// reclaim runs the reclaimer, then observes the node again.
func (m *Manager) reclaim(ctx context.Context, provider Provider, r NodeReclaimer, pods []*v1.Pod, now time.Time) *Reclaim {
	out := &Reclaim{}
	var errs []error
	n, err := r.DeleteDeadContainers(ctx, now)
	out.ContainersRemoved = n
	errs = append(errs, err)
	freed, err := r.DeleteUnusedImages(ctx, now)
	out.ImageBytesFreed = freed
	errs = append(errs, err)
	obs, _, err := provider.Observe(ctx, pods)
	if err == nil {
		out.Sufficed = ReclaimSuffices(m.cfg, obs)
	}
	out.Err = errors.Join(append(errs, err)...)
	return out
}
