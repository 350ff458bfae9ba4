package resourcequota

import "context"

// SyncOnce recounts the quota with key (namespace/name) once, as a worker
// does, so that a test can recount at a moment of its choosing.
func SyncOnce(ctx context.Context, c *Controller, key string) error { return c.sync(ctx, key) }
