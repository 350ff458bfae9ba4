package podsync

import "time"

// BackoffEntry is the restart back-off of one container of one pod. As in
// client-go's flowcontrol.Backoff, the first restart is immediate and
// records Base; each further restart while the entry is live doubles it up
// to Max; an entry not updated for 2×Max has expired and starts over.
type BackoffEntry struct {
	Backoff    time.Duration
	LastUpdate time.Time
}

// BackoffConfig is a back-off schedule: CrashLoopBackOff's, or image
// pulls' (DecideImagePull).
type BackoffConfig struct {
	Base, Max time.Duration
}

// DefaultBackoff is upstream's: 10 s doubling to 5 min.
var DefaultBackoff = BackoffConfig{Base: 10 * time.Second, Max: 5 * time.Minute}

func (c BackoffConfig) expired(e BackoffEntry, now time.Time) bool {
	return e.LastUpdate.IsZero() || now.Sub(e.LastUpdate) > 2*c.Max
}

// InBackoff reports whether a container that finished at finishedAt must
// still wait at now, and until when.
func (c BackoffConfig) InBackoff(e BackoffEntry, finishedAt, now time.Time) (bool, time.Time) {
	if c.expired(e, now) {
		return false, time.Time{}
	}
	until := finishedAt.Add(e.Backoff)
	return now.Before(until), until
}

// Next is the entry after a restart at now.
func (c BackoffConfig) Next(e BackoffEntry, now time.Time) BackoffEntry {
	if c.expired(e, now) {
		return BackoffEntry{Backoff: c.Base, LastUpdate: now}
	}
	d := 2 * e.Backoff
	if d > c.Max {
		d = c.Max
	}
	return BackoffEntry{Backoff: d, LastUpdate: now}
}
