package storage

import "context"

// watchInitializedKey carries the function a watch calls once its initial
// events are delivered.
type watchInitializedKey struct{}

// WithWatchInitialized returns ctx carrying initialized, which the store
// serving a Watch with that context calls once the watch's initial events
// (the synthetic ADDED events of its starting state, the end-of-initial-
// events bookmark, and the buffered events it replays) have been handed to
// its reader, as kube-apiserver's storage signals API Priority and
// Fairness: the watch holds its seat until then. The watch cache calls it
// after the initial events; a watch straight from etcd calls it as soon as
// it starts (its initial events come from etcd in the background), as
// kube-apiserver's etcd3 store does. initialized must be safe to call more
// than once and from any goroutine.
func WithWatchInitialized(ctx context.Context, initialized func()) context.Context {
	return context.WithValue(ctx, watchInitializedKey{}, initialized)
}

// WatchInitialized calls the function WithWatchInitialized put in ctx, if
// any.
func WatchInitialized(ctx context.Context) {
	if f, ok := ctx.Value(watchInitializedKey{}).(func()); ok && f != nil {
		f()
	}
}
