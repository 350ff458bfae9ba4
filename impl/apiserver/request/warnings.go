package request

import (
	"context"
	"sync"
)

// Warnings collects the warnings one request gets (admission plugins':
// PodSecurity's warn level, webhooks' response warnings; a kind's own on
// create or update); the endpoint that serves the request sends them as
// Warning headers.
type Warnings struct {
	mu   sync.Mutex
	msgs []string
}

type warningsKey struct{}

// WithWarnings returns a context whose plugins' warnings land in the
// returned Warnings.
func WithWarnings(ctx context.Context) (context.Context, *Warnings) {
	w := &Warnings{}
	return CollectWarnings(ctx, w), w
}

// CollectWarnings returns a context whose plugins' warnings land in w: ctx
// itself when it is the request's context node (request.SetValue keeps w
// there), so that the request need not be copied.
func CollectWarnings(ctx context.Context, w *Warnings) context.Context {
	return SetValue(ctx, warningsKey{}, w)
}

// AuthenticationWarnings returns the context to authenticate a request
// with and the collector of the warnings its authenticators add (a legacy
// service account token's). When ctx is the request chain's node (or
// below it) the collector is the node's own: no allocation and no request
// copy, and the node's value slot stays free for the endpoint's collector
// (SetValue), which then takes over. Else a new collector in a new
// context.
func AuthenticationWarnings(ctx context.Context) (context.Context, *Warnings) {
	if s, ok := ctx.Value(stateKey).(*stateCtx); ok {
		return ctx, &s.warnings
	}
	return WithWarnings(ctx)
}

// AddWarning records a warning for the request of ctx; without a
// collector (WithWarnings) it is dropped. Repeated messages are kept once.
func AddWarning(ctx context.Context, msg string) {
	w, ok := ctx.Value(warningsKey{}).(*Warnings)
	if !ok || msg == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, m := range w.msgs {
		if m == msg {
			return
		}
	}
	w.msgs = append(w.msgs, msg)
}

// List returns the warnings recorded so far, in order.
func (w *Warnings) List() []string {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.msgs...)
}
