package storage

import "context"

// Stats are what a store tells of its resource's stored objects, as
// kube-apiserver's storage.Stats: the API server polls them for
// apiserver_resource_objects, apiserver_resource_size_estimate_bytes and
// API Priority and Fairness's list work estimates.
type Stats struct {
	// ObjectCount is the number of stored objects.
	ObjectCount int64
	// EstimatedAverageObjectSizeBytes is their average stored size (the
	// bytes of their etcd values), 0 when the store does not know it.
	EstimatedAverageObjectSizeBytes int64
}

// StatsReporter is a store that can report Stats.
type StatsReporter interface {
	Stats(ctx context.Context) (Stats, error)
}

// ValueSizes receives the sizes of the etcd values a store reads for one
// GetList or Watch (WithValueSizes): added is the length of a value read
// (a listed key's, a watch's initial state's, a put event's new value; 0
// for a delete event), removed the length of the value an event replaces
// or deletes (0 when etcd gave none). Their running sum over a list and
// the watch that continues it is the stored bytes of the objects at the
// watch's revision: the watch cache keeps it (Cacher.Stats).
type ValueSizes func(added, removed int)

// valueSizesKey carries a ValueSizes.
type valueSizesKey struct{}

// WithValueSizes returns ctx carrying sizes, which the etcd store serving a
// GetList or Watch with that context calls for every value it reads, on
// the goroutine that reads it: GetList's caller's, a watch's own.
func WithValueSizes(ctx context.Context, sizes ValueSizes) context.Context {
	return context.WithValue(ctx, valueSizesKey{}, sizes)
}

// ValueSizesFrom returns the ValueSizes WithValueSizes put in ctx, or nil.
func ValueSizesFrom(ctx context.Context) ValueSizes {
	f, _ := ctx.Value(valueSizesKey{}).(ValueSizes)
	return f
}
