package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
)

// PluginTruncate is the truncating backend's plugin name.
const PluginTruncate = "truncate"

// Truncate defaults (--audit-*-truncate-max-batch-size, -max-event-size).
const (
	DefaultTruncateMaxBatchSize = 10 * 1024 * 1024
	DefaultTruncateMaxEventSize = 100 * 1024
)

// TruncatedAnnotation marks an event whose request and response objects
// were dropped to fit --audit-*-truncate-max-event-size.
const TruncatedAnnotation = "audit.k8s.io/truncated"

// TruncateConfig are the --audit-*-truncate-* flags.
type TruncateConfig struct {
	Enabled bool
	// MaxEventSize is the most bytes an event may take encoded; a larger
	// one at level Request or above loses its request and response
	// objects, and is dropped if still too large.
	MaxEventSize int64
	// MaxBatchSize bounds the bytes of the events handed on together.
	// WithAudit hands events one by one, so it never splits anything
	// here.
	MaxBatchSize int64
}

// DefaultTruncateConfig is kube-apiserver's: off, 100KiB events, 10MiB
// batches.
func DefaultTruncateConfig() TruncateConfig {
	return TruncateConfig{MaxEventSize: DefaultTruncateMaxEventSize, MaxBatchSize: DefaultTruncateMaxBatchSize}
}

func validateTruncate(plugin string, c TruncateConfig) error {
	if c.MaxEventSize <= 0 {
		return fmt.Errorf("invalid audit truncate %s max event size %v, must be a positive number", plugin, c.MaxEventSize)
	}
	if c.MaxBatchSize < c.MaxEventSize {
		return fmt.Errorf("invalid audit truncate %s max batch size %v, must be greater than max event size (%v)", plugin, c.MaxBatchSize, c.MaxEventSize)
	}
	return nil
}

// truncating is kube-apiserver's truncate backend in front of delegate.
type truncating struct {
	delegate Backend
	cfg      TruncateConfig
	metrics  *Metrics
}

// wrapTruncate puts delegate behind a truncating backend when enabled.
func wrapTruncate(delegate Backend, cfg TruncateConfig, m *Metrics) Backend {
	if !cfg.Enabled {
		return delegate
	}
	return &truncating{delegate: delegate, cfg: cfg, metrics: m}
}

// eventSize is the bytes ev takes as a JSON line.
func eventSize(ev *Event) (int64, error) {
	b, err := json.Marshal(ev)
	if err != nil {
		return 0, fmt.Errorf("encoding audit event: %w", err)
	}
	return int64(len(b)) + 1, nil
}

// fit is ev as it may be sent: itself when small enough; at level
// Request or above, without its request and response objects (annotated
// audit.k8s.io/truncated) when that makes it small enough; else an
// error (the event is dropped).
func (t *truncating) fit(ev *Event) (*Event, error) {
	size, err := eventSize(ev)
	if err == nil && size > t.cfg.MaxEventSize && !ev.Level.Less(LevelRequest) {
		cut := *ev
		cut.RequestObject, cut.ResponseObject = nil, nil
		cut.Annotations = maps.Clone(ev.Annotations)
		if cut.Annotations == nil {
			cut.Annotations = map[string]string{}
		}
		cut.Annotations[TruncatedAnnotation] = "true"
		ev = &cut
		size, err = eventSize(ev)
	}
	if err != nil {
		return nil, err
	}
	if size > t.cfg.MaxEventSize {
		return nil, errors.New("event is too large even after truncating")
	}
	return ev, nil
}

// ProcessEvent implements Backend: a dropped event is a plugin
// "truncate" error and does not fail the request.
func (t *truncating) ProcessEvent(ev *Event) bool {
	fitted, err := t.fit(ev)
	if err != nil {
		pluginError(t.metrics, PluginTruncate, err, ev)
		return true
	}
	return t.delegate.ProcessEvent(fitted)
}

// Close closes the delegate when it is an io.Closer.
func (t *truncating) Close() error {
	if c, ok := t.delegate.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
