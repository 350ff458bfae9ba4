// Package gc is the kubelet's garbage collection of node-level resources:
// unused images (upstream's image GC manager, with the same flags
// --image-gc-high-threshold, --image-gc-low-threshold,
// --minimum-image-ttl-duration and --image-maximum-gc-age) and dead
// containers, sandboxes and pod log directories (upstream's container GC,
// with --minimum-container-ttl-duration,
// --maximum-dead-containers-per-container and --maximum-dead-containers).
// The eviction manager calls it to reclaim disk before it evicts pods for
// a nodefs or imagefs signal; the container collector also runs on its
// own every ContainerPeriod, the image collector every Period.
//
// The decisions are pure — which images count as in use, how much to
// free, which images, containers, sandboxes and log directories go, in
// what order — and the Collector is the thin loop doing the runtime
// calls.
package gc

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Policy is the image garbage collection policy.
type Policy struct {
	// HighThresholdPercent: when the image filesystem's usage is at or
	// above this percentage, images are collected until usage is below
	// LowThresholdPercent. 100 turns periodic collection off unless MaxAge
	// is set (upstream's StartGarbageCollection); the zero Policy is off
	// too (collection only when the eviction manager asks).
	HighThresholdPercent, LowThresholdPercent int
	// MinAge is how long an image must have been known before it may be
	// removed (it may just have been pulled for a container about to be
	// created).
	MinAge time.Duration
	// MaxAge, if positive, is how long an image may stay unused before the
	// periodic collection removes it whatever the disk usage
	// (--image-maximum-gc-age; 0, the default, turns that off). See AgedOut.
	MaxAge time.Duration
}

// Upstream's defaults.
const (
	DefaultHighThresholdPercent = 85
	DefaultLowThresholdPercent  = 80
	DefaultMinAge               = 2 * time.Minute
	// Period is how often images are detected and collected.
	Period = 5 * time.Minute
)

// DefaultPolicy is the kubelet's default image GC policy.
var DefaultPolicy = Policy{HighThresholdPercent: DefaultHighThresholdPercent, LowThresholdPercent: DefaultLowThresholdPercent, MinAge: DefaultMinAge}

// Enabled reports whether images are collected periodically: a high
// threshold below 100, or one of 100 with a maximum age (the collection
// then removes images unused for longer, and frees space only from a
// full disk). Pure.
func (p Policy) Enabled() bool {
	return p.HighThresholdPercent > 0 && (p.HighThresholdPercent < 100 || p.MaxAge > 0)
}

// Validate checks the policy as the kubelet validates its configuration.
func (p Policy) Validate() error {
	if p == (Policy{}) {
		return nil
	}
	if p.HighThresholdPercent < 0 || p.HighThresholdPercent > 100 {
		return fmt.Errorf("imageGCHighThresholdPercent (--image-gc-high-threshold) %d must be between 0 and 100, inclusive", p.HighThresholdPercent)
	}
	if p.LowThresholdPercent < 0 || p.LowThresholdPercent > 100 {
		return fmt.Errorf("imageGCLowThresholdPercent (--image-gc-low-threshold) %d must be between 0 and 100, inclusive", p.LowThresholdPercent)
	}
	if p.LowThresholdPercent >= p.HighThresholdPercent {
		return fmt.Errorf("imageGCLowThresholdPercent (--image-gc-low-threshold) %d must be less than imageGCHighThresholdPercent (--image-gc-high-threshold) %d", p.LowThresholdPercent, p.HighThresholdPercent)
	}
	if p.MinAge < 0 {
		return fmt.Errorf("--minimum-image-ttl-duration %s must not be negative", p.MinAge)
	}
	if p.MaxAge < 0 {
		return fmt.Errorf("--image-maximum-gc-age %s must not be negative", p.MaxAge)
	}
	if p.MaxAge > 0 && p.MaxAge <= p.MinAge {
		return fmt.Errorf("imageMaximumGCAge (--image-maximum-gc-age) %s must be greater than imageMinimumGCAge (--minimum-image-ttl-duration) %s", p.MaxAge, p.MinAge)
	}
	return nil
}

// ImageRecord is what the collector remembers of one image.
type ImageRecord struct {
	ID     string
	Size   int64
	Pinned bool
	// FirstDetected is when the image was first listed (the zero time for
	// images already there when the kubelet started: their age is
	// unknown, so they count as old).
	FirstDetected time.Time
	// LastUsed is the last detection at which a container used it.
	LastUsed time.Time
}

// ImagesInUse are the images some container (running or not) was
// created from, by image id, name and digest: an image is in use if any
// of its id, repo tags or repo digests is in the set. Names are there as
// given and normalized ("nginx" also as "docker.io/library/nginx:latest").
func ImagesInUse(containers []*runtimeapi.Container) map[string]bool {
	out := map[string]bool{}
	for _, c := range containers {
		if c.ImageRef != "" {
			out[c.ImageRef] = true
		}
		if n := c.GetImage().GetImage(); n != "" {
			out[n], out[NormalizeImage(n)] = true, true
		}
	}
	return out
}

// NormalizeImage is an image name in the full form runtimes list
// (domain, path, tag): "busybox" is "docker.io/library/busybox:latest".
// Ids and digests stay as they are.
func NormalizeImage(name string) string {
	if name == "" || strings.HasPrefix(name, "sha256:") {
		return name
	}
	domain, rest := "docker.io", name
	if first, after, ok := strings.Cut(name, "/"); ok && (strings.ContainsAny(first, ".:") || first == "localhost") {
		domain, rest = first, after
	}
	if domain == "docker.io" && !strings.Contains(rest, "/") {
		rest = "library/" + rest
	}
	last := rest[strings.LastIndexByte(rest, '/')+1:]
	if !strings.Contains(last, ":") && !strings.Contains(last, "@") {
		rest += ":latest"
	}
	return domain + "/" + rest
}

// imageUsed reports whether inUse names the image.
func imageUsed(img *runtimeapi.Image, inUse map[string]bool) bool {
	if inUse[img.Id] {
		return true
	}
	for _, n := range append(slices.Clone(img.RepoTags), img.RepoDigests...) {
		if inUse[n] {
			return true
		}
	}
	return false
}

// Detect is one detection pass: the records of the images listed now
// (images gone are forgotten), a new image first detected at firstSeen,
// an image in use last used at now. Pure.
func Detect(prev map[string]ImageRecord, images []*runtimeapi.Image, inUse map[string]bool, now, firstSeen time.Time) (map[string]ImageRecord, map[string]bool) {
	out := make(map[string]ImageRecord, len(images))
	used := map[string]bool{}
	for _, img := range images {
		r, ok := prev[img.Id]
		if !ok {
			r = ImageRecord{ID: img.Id, FirstDetected: firstSeen}
		}
		r.Size, r.Pinned = int64(img.Size), img.Pinned
		if imageUsed(img, inUse) {
			r.LastUsed = now
			used[img.Id] = true
		}
		out[img.Id] = r
	}
	return out, used
}

// AmountToFree is how many bytes of images to remove given the image
// filesystem's capacity and available bytes: nothing while usage is below
// the high threshold, otherwise enough to bring it down to the low one.
// usagePercent is the usage as upstream rounds it. Pure.
func AmountToFree(p Policy, capacity, available int64) (bytes int64, usagePercent int) {
	if capacity <= 0 {
		return 0, 0
	}
	available = min(available, capacity)
	usagePercent = 100 - int(available*100/capacity)
	if usagePercent < p.HighThresholdPercent {
		return 0, usagePercent
	}
	return capacity*int64(100-p.LowThresholdPercent)/100 - available, usagePercent
}

// EvictionOrder are the images an image collection goes over, in the
// order it goes: not in use, not pinned; least recently used first, then
// first detected first (then by id), as upstream's imagesInEvictionOrder.
// Which of them may go now is Removable's. Pure.
func EvictionOrder(records map[string]ImageRecord, inUse map[string]bool) []ImageRecord {
	var out []ImageRecord
	for _, r := range records {
		if inUse[r.ID] || r.Pinned {
			continue
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if !a.LastUsed.Equal(b.LastUsed) {
			return a.LastUsed.Before(b.LastUsed)
		}
		if !a.FirstDetected.Equal(b.FirstDetected) {
			return a.FirstDetected.Before(b.FirstDetected)
		}
		return a.ID < b.ID
	})
	return out
}

// Removable reports whether an image of EvictionOrder may be removed at
// now: not used at or after now, known for at least minAge (it may just
// have been pulled for a container about to be created), as upstream's
// freeSpace, which skips the others and reports them left. Pure.
func Removable(r ImageRecord, now time.Time, minAge time.Duration) bool {
	return r.LastUsed.Before(now) && now.Sub(r.FirstDetected) >= minAge
}

// Candidates are the images that may be removed at now, in the order to
// remove them: EvictionOrder's that are Removable. Pure.
func Candidates(records map[string]ImageRecord, inUse map[string]bool, now time.Time, minAge time.Duration) []ImageRecord {
	var out []ImageRecord
	for _, r := range EvictionOrder(records, inUse) {
		if Removable(r, now, minAge) {
			out = append(out, r)
		}
	}
	return out
}

// AgedOut are the images to remove at now because they have been unused
// for more than maxAge, whatever the disk usage, least recently used
// first: not in use, not pinned, and unused since their last use or, if
// never seen used, since they were first detected (images there before
// the kubelet started: since started, its first detection). None until
// the kubelet has run for more than maxAge: it cannot know whether an
// image was used before it started. Pure.
func AgedOut(records map[string]ImageRecord, inUse map[string]bool, now, started time.Time, maxAge time.Duration) []ImageRecord {
	if maxAge <= 0 || now.Sub(started) <= maxAge {
		return nil
	}
	var out []ImageRecord
	for _, r := range Candidates(records, inUse, now, 0) {
		since := r.LastUsed
		if since.IsZero() {
			since = r.FirstDetected
		}
		if since.Before(started) {
			since = started
		}
		if now.Sub(since) > maxAge {
			out = append(out, r)
		}
	}
	return out
}
