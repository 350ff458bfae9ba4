package gc

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

// Runtime is what the collector needs of a container runtime.
type Runtime interface {
	runtime.ImageManager
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	RemoveContainer(ctx context.Context, containerID string) error
	StopContainer(ctx context.Context, containerID string, timeout int64) error
	ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error)
	StopPodSandbox(ctx context.Context, podSandboxID string) error
	RemovePodSandbox(ctx context.Context, podSandboxID string) error
}

// SandboxImager is implemented by runtimes that name the image pod
// sandboxes run from (containerd before 1.7 does not pin it): the
// collector counts it as in use, as upstream's kubelet did with its
// --pod-infra-container-image.
type SandboxImager interface {
	SandboxImage(ctx context.Context) (string, error)
}

// EventFunc records an event about the node (upstream's image GC events
// are on the Node).
type EventFunc func(eventType, reason, message string)

// Event reasons, as upstream's kubelet.
const (
	ReasonImageGCFailed       = "ImageGCFailed"
	ReasonFreeDiskSpaceFailed = "FreeDiskSpaceFailed"
	ReasonInvalidDiskCapacity = "InvalidDiskCapacity"
)

// Collector removes unused images and dead containers from a runtime.
// Safe for concurrent use; one collection runs at a time.
type Collector struct {
	rt     Runtime
	policy Policy
	event  EventFunc
	log    *slog.Logger

	mu           sync.Mutex
	records      map[string]ImageRecord
	detected     bool      // a detection has run (later new images are new)
	started      time.Time // of the first detection (AgedOut)
	lastRun      time.Time // of the periodic collection
	failedBefore bool      // the last periodic collection failed
	postGC       PostGCHook

	// Container collection (SetContainerGC); cmu serializes collections.
	cmu             sync.Mutex
	containerPolicy ContainerPolicy
	podState        func(uid string) PodGCState
	podLogsDir      string
	lastContainerGC time.Time
	// killUnknown kills a container in the unknown state before its
	// removal (SetUnknownKill); nil: stopped with StopTimeout.
	killUnknown UnknownKill
}

// UnknownKill kills container c, in the unknown state, before the
// collector removes it, as upstream's killContainer does without the
// pod: its Killing event, its preStop hook, its stop (the kubelet's,
// from what it wrote on the container). An error keeps c.
type UnknownKill func(ctx context.Context, c *runtimeapi.Container) error

// SetUnknownKill sets how containers in the unknown state are killed
// before their removal. Call it before the first collection.
func (c *Collector) SetUnknownKill(kill UnknownKill) {
	c.cmu.Lock()
	defer c.cmu.Unlock()
	c.killUnknown = kill
}

// NewCollector returns a collector for rt. event and log may be nil.
func NewCollector(rt Runtime, policy Policy, event EventFunc, log *slog.Logger) *Collector {
	if event == nil {
		event = func(string, string, string) {}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Collector{rt: rt, policy: policy, event: event, log: log, records: map[string]ImageRecord{},
		containerPolicy: DefaultContainerPolicy}
}

// SetContainerGC sets the container collection's policy, what tells the
// state of each pod (nil: every pod counts as active), and the pod logs
// directory whose removable pods' directories go ("": none). Call it
// before the first collection.
func (c *Collector) SetContainerGC(policy ContainerPolicy, podState func(uid string) PodGCState, podLogsDir string) {
	c.cmu.Lock()
	defer c.cmu.Unlock()
	c.containerPolicy, c.podState, c.podLogsDir = policy, podState, podLogsDir
}

// PostGCHook is told, after a collection that removed images to free
// space (GarbageCollect over the high threshold, DeleteUnusedImages) with
// no removal failing, the images freeSpace left and when the collection
// began, as upstream 1.37's post image GC hooks (realImageGCManager's
// GarbageCollect and DeleteUnusedImages call runPostGCHooks with the
// images freeSpace returns): the kubelet's image pull records forget every
// image not told (pullrecords.Store.PruneUnknownRecords, upstream's
// PullManager.PruneUnknownRecords). freeSpace goes over the images of
// imagesInEvictionOrder (not in use, not pinned) and returns those it
// skipped (too young, used at or after the collection began) until it
// has freed enough; so, as upstream, the images in use, pinned ones and
// the candidates after the one that freed enough are not told although
// present, and their records go too (those last updated before the
// collection began: PruneUnknownRecords keeps newer ones). Pull intents
// (images being pulled) are not touched.
type PostGCHook func(ctx context.Context, remaining []string, began time.Time)

// SetPostGCHook sets the hook run after each collection that freed space.
func (c *Collector) SetPostGCHook(h PostGCHook) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.postGC = h
}

// runPostGC runs the hook with the images freeSpace left and began, as
// upstream's runPostGCHooks. c.mu is held.
func (c *Collector) runPostGC(ctx context.Context, left []string, began time.Time) {
	if c.postGC == nil {
		return
	}
	c.postGC(ctx, left, began)
}

// Policy returns the collector's policy.
func (c *Collector) Policy() Policy { return c.policy }

// Records returns what the collector knows of each image (for tests and
// status).
func (c *Collector) Records() map[string]ImageRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]ImageRecord, len(c.records))
	for id, r := range c.records {
		out[id] = r
	}
	return out
}

// detect lists images and containers and updates the records; it
// returns the ids of the images in use. c.mu is held.
func (c *Collector) detect(ctx context.Context, now time.Time) (map[string]bool, error) {
	images, err := c.rt.ListImages(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("detecting images: %w", err)
	}
	containers, err := c.rt.ListContainers(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("detecting images in use: %w", err)
	}
	inUse := ImagesInUse(containers)
	if si, ok := c.rt.(SandboxImager); ok {
		image, err := si.SandboxImage(ctx)
		if err != nil {
			return nil, fmt.Errorf("detecting the sandbox image: %w", err)
		}
		if image != "" {
			inUse[image], inUse[NormalizeImage(image)] = true, true
		}
	}
	firstSeen := now
	if !c.detected {
		// Images there before the kubelet: age unknown, counted as old.
		firstSeen = time.Time{}
		c.started = now
	}
	var used map[string]bool
	c.records, used = Detect(c.records, images, inUse, now, firstSeen)
	c.detected = true
	return used, nil
}

// Detect records the images present and in use now without removing
// any (the kubelet calls it at start, as upstream's image manager does).
func (c *Collector) Detect(ctx context.Context, now time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, err := c.detect(ctx, now)
	return err
}

// freeSpace goes over the images in eviction order (EvictionOrder of
// the records and used, the images in use, as the caller's detect found
// them), removing the Removable ones until at least bytes are freed, as
// upstream's freeSpace: it returns the images it went over and did not
// remove (not Removable, or whose removal failed) before it had freed
// enough, the bytes freed (always) and the removal errors (the images
// left are then nil, as upstream's). c.mu is held.
func (c *Collector) freeSpace(ctx context.Context, bytes int64, used map[string]bool, now time.Time) ([]string, int64, error) {
	var left []string
	var freed int64
	var errs []error
	for _, r := range EvictionOrder(c.records, used) {
		if !Removable(r, now, c.policy.MinAge) {
			left = append(left, r.ID)
			continue
		}
		c.log.Info("removing unused image", "image", r.ID, "size", r.Size)
		if err := c.rt.RemoveImage(ctx, &runtimeapi.ImageSpec{Image: r.ID}); err != nil {
			errs = append(errs, err)
			left = append(left, r.ID)
			continue
		}
		delete(c.records, r.ID)
		freed += r.Size
		if freed >= bytes {
			break
		}
	}
	if len(errs) > 0 {
		return nil, freed, fmt.Errorf("wanted to free %d bytes, but freed %d bytes space with errors in image deletion: %w", bytes, freed, errors.Join(errs...))
	}
	return left, freed, nil
}

// GarbageCollect is one image garbage collection with the image
// filesystem's capacity and available bytes given (collect).
func (c *Collector) GarbageCollect(ctx context.Context, capacity, available int64, now time.Time) error {
	return c.collect(ctx, func(context.Context) (int64, int64, error) { return capacity, available, nil }, now)
}

// collect is one image garbage collection as upstream's GarbageCollect:
// the images are listed once (detect; a failure ends the collection
// there), those unused for longer than the policy's MaxAge go
// (removeAgedOut; a failure ends it too), then the image filesystem is
// measured with fs (c.mu not held: fs may take locks of its own) and, if
// used at or above the high threshold, unused images are removed, among
// those that one listing found, until it would be below the low one. Not
// freeing enough is an error, recorded as a FreeDiskSpaceFailed event.
func (c *Collector) collect(ctx context.Context, fs FsStats, now time.Time) error {
	c.mu.Lock()
	used, err := c.detect(ctx, now)
	if err == nil {
		err = c.removeAgedOut(ctx, used, now)
	}
	c.mu.Unlock()
	if err != nil {
		return err
	}
	capacity, available, err := fs(ctx)
	if err != nil {
		return err
	}
	if capacity <= 0 {
		err := fmt.Errorf("invalid capacity %d on image filesystem", capacity)
		c.event(v1.EventTypeWarning, ReasonInvalidDiskCapacity, err.Error())
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	amount, usage := AmountToFree(c.policy, capacity, available)
	if amount <= 0 {
		return nil
	}
	c.log.Info("image filesystem over the high threshold, freeing images down to the low threshold",
		"usage", usage, "highThreshold", c.policy.HighThresholdPercent, "lowThreshold", c.policy.LowThresholdPercent, "amountToFree", amount)
	left, freed, err := c.freeSpace(ctx, amount, used, now)
	if err != nil {
		return err
	}
	c.runPostGC(ctx, left, now)
	if freed < amount {
		// Upstream's text since 1.35 (kubernetes PR 132578): the disk is
		// mostly full of something other than unused images.
		err := fmt.Errorf("Insufficient free disk space on the node's image filesystem (%d%% of %s used). "+ //nolint:staticcheck // upstream's message
			"Failed to free sufficient space by deleting unused images (freed %d bytes). "+
			"Investigate disk usage, as it could be used by active images, logs, volumes, or other data.", usage, formatSize(capacity), freed)
		c.event(v1.EventTypeWarning, ReasonFreeDiskSpaceFailed, err.Error())
		return err
	}
	return nil
}

// formatSize is a byte count as FreeDiskSpaceFailed events print the image
// filesystem's capacity: in the largest binary unit it reaches, with one
// decimal ("26.4 GiB"; bytes below 1 KiB as such). Upstream's helper is
// not in the sources we could read; this follows the texts its kubelets
// publish.
func formatSize(bytes int64) string {
	const units = "KMGTPE"
	if bytes < 1024 {
		return fmt.Sprintf("%d B", bytes)
	}
	v, i := float64(bytes)/1024, 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, units[i])
}

// removeAgedOut removes the images unused for more than the policy's
// MaxAge (AgedOut of the records and used, as the caller's detect found
// them), as upstream's freeOldImages; nothing without one. It returns
// the removal errors. c.mu is held.
func (c *Collector) removeAgedOut(ctx context.Context, used map[string]bool, now time.Time) error {
	if c.policy.MaxAge <= 0 {
		return nil
	}
	var errs []error
	for _, r := range AgedOut(c.records, used, now, c.started, c.policy.MaxAge) {
		c.log.Info("removing image unused for longer than the maximum age", "image", r.ID, "size", r.Size, "lastUsed", r.LastUsed, "maxAge", c.policy.MaxAge)
		if err := c.rt.RemoveImage(ctx, &runtimeapi.ImageSpec{Image: r.ID}); err != nil {
			errs = append(errs, fmt.Errorf("removing image %s unused for longer than %s: %w", r.ID, c.policy.MaxAge, err))
			continue
		}
		delete(c.records, r.ID)
	}
	return errors.Join(errs...)
}

// FsStats reports the image filesystem's capacity and available bytes.
type FsStats func(ctx context.Context) (capacity, available int64, err error)

// MaybeCollect runs the periodic image garbage collection if the policy
// enables it and Period has passed since the last run (the first call
// runs it): collect, which lists the images once, removes those unused
// for longer than the policy's MaxAge and, if they all went, reads the
// disk usage and frees down to the low threshold if needed. A failure
// twice in a row is recorded as an ImageGCFailed event, as upstream (the
// first may be stats not being ready yet).
func (c *Collector) MaybeCollect(ctx context.Context, fs FsStats, now time.Time) {
	if !c.policy.Enabled() {
		return
	}
	c.mu.Lock()
	due := c.lastRun.IsZero() || now.Sub(c.lastRun) >= Period
	if due {
		c.lastRun = now
	}
	c.mu.Unlock()
	if !due {
		return
	}
	err := c.collect(ctx, fs, now)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil {
		c.failedBefore = false
		return
	}
	if c.failedBefore {
		c.log.Warn("image garbage collection failed multiple times in a row", "err", err)
		c.event(v1.EventTypeWarning, ReasonImageGCFailed, err.Error())
	} else {
		c.log.Info("image garbage collection failed once (stats may not be ready yet)", "err", err)
	}
	c.failedBefore = true
}

// DeleteUnusedImages removes every image that may be removed (not in use,
// not pinned, older than the minimum age), as the eviction manager asks
// before evicting pods for disk. It returns the bytes freed.
func (c *Collector) DeleteUnusedImages(ctx context.Context, now time.Time) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	used, err := c.detect(ctx, now)
	if err != nil {
		return 0, err
	}
	left, freed, err := c.freeSpace(ctx, math.MaxInt64, used, now)
	if err == nil {
		c.runPostGC(ctx, left, now)
	}
	return freed, err
}

// DeleteDeadContainers is the container collection the eviction manager
// runs before evicting for disk: terminated pods' dead containers go too.
// It returns how many containers it removed.
func (c *Collector) DeleteDeadContainers(ctx context.Context, now time.Time) (int, error) {
	return c.CollectContainers(ctx, true, now)
}

// MaybeCollectContainers runs the periodic container collection if
// ContainerPeriod has passed since the last one (the first call runs
// it). Failures are logged; the next period tries again.
func (c *Collector) MaybeCollectContainers(ctx context.Context, now time.Time) {
	c.cmu.Lock()
	due := c.lastContainerGC.IsZero() || now.Sub(c.lastContainerGC) >= ContainerPeriod
	if due {
		c.lastContainerGC = now
	}
	c.cmu.Unlock()
	if !due {
		return
	}
	if n, err := c.CollectContainers(ctx, false, now); err != nil {
		c.log.Warn("container garbage collection", "removed", n, "err", err)
	}
}

// CollectContainers is one container collection: the dead containers
// DeadContainers picks (one in the unknown state killed first,
// StopsFirst and SetUnknownKill, and left when that fails), then the sandboxes
// DeadSandboxes picks among what is left, then the log directories of
// removable pods. It goes on past errors and returns how many containers
// it removed and all the errors.
func (c *Collector) CollectContainers(ctx context.Context, evictTerminated bool, now time.Time) (int, error) {
	c.cmu.Lock()
	defer c.cmu.Unlock()
	podState := c.podState
	if podState == nil {
		podState = func(string) PodGCState { return PodActive }
	}
	// The listing comes before the pod states are read: a container the
	// listing shows was made for a pod the kubelet knew already, so an
	// unknown pod in the states read after it is one that is gone.
	containers, err := c.rt.ListContainers(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("listing containers: %w", err)
	}
	ids := DeadContainers(ContainerGCInput{Containers: containers, Policy: c.containerPolicy, PodState: podState, EvictTerminated: evictTerminated, Now: now})
	stopFirst := map[string]*runtimeapi.Container{}
	for _, ctr := range containers {
		if StopsFirst(ctr) {
			stopFirst[ctr.Id] = ctr
		}
	}
	var errs []error
	n := 0
	for _, id := range ids {
		if ctr, ok := stopFirst[id]; ok {
			if err := c.stopUnknown(ctx, ctr); err != nil && !errors.Is(err, runtime.ErrNotFound) {
				errs = append(errs, fmt.Errorf("stopping container %s in unknown state before removing it: %w", id, err))
				continue
			}
		}
		if err := c.rt.RemoveContainer(ctx, id); err != nil && !errors.Is(err, runtime.ErrNotFound) {
			errs = append(errs, fmt.Errorf("removing dead container %s: %w", id, err))
			continue
		}
		n++
	}
	if err := c.collectSandboxes(ctx, podState, evictTerminated); err != nil {
		errs = append(errs, err)
	}
	if c.podLogsDir != "" {
		if err := c.collectPodLogDirs(podState); err != nil {
			errs = append(errs, err)
		}
	}
	if n > 0 {
		c.log.Info("container garbage collection", "listed", len(containers), "removed", n, "ids", ids, "evictTerminated", evictTerminated)
	}
	return n, errors.Join(errs...)
}

// stopUnknown kills ctr, in the unknown state, before its removal: by
// killUnknown if set, else stopped with StopTimeout. c.cmu is held.
func (c *Collector) stopUnknown(ctx context.Context, ctr *runtimeapi.Container) error {
	if c.killUnknown != nil {
		return c.killUnknown(ctx, ctr)
	}
	return c.rt.StopContainer(ctx, ctr.Id, StopTimeout(ctr))
}

// collectSandboxes removes the sandboxes DeadSandboxes picks, stopping
// each first (as upstream, in case the kubelet had not). c.cmu is held.
func (c *Collector) collectSandboxes(ctx context.Context, podState func(string) PodGCState, evictTerminated bool) error {
	sandboxes, err := c.rt.ListPodSandbox(ctx, nil)
	if err != nil {
		return fmt.Errorf("listing sandboxes: %w", err)
	}
	containers, err := c.rt.ListContainers(ctx, nil)
	if err != nil {
		return fmt.Errorf("listing containers: %w", err)
	}
	var errs []error
	for _, id := range DeadSandboxes(sandboxes, containers, podState, evictTerminated) {
		if err := c.rt.StopPodSandbox(ctx, id); err != nil && !errors.Is(err, runtime.ErrNotFound) {
			errs = append(errs, fmt.Errorf("stopping sandbox %s before removing it: %w", id, err))
			continue
		}
		if err := c.rt.RemovePodSandbox(ctx, id); err != nil && !errors.Is(err, runtime.ErrNotFound) {
			errs = append(errs, fmt.Errorf("removing sandbox %s: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

// collectPodLogDirs removes the log directories of removable pods. c.cmu
// is held.
func (c *Collector) collectPodLogDirs(podState func(string) PodGCState) error {
	entries, err := os.ReadDir(c.podLogsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the pod logs directory: %w", err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	var errs []error
	for _, name := range PodLogDirsToRemove(names, podState) {
		if err := os.RemoveAll(filepath.Join(c.podLogsDir, name)); err != nil {
			errs = append(errs, fmt.Errorf("removing pod logs directory %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}
