package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
)

// Backend receives finished audit events.
type Backend interface {
	// ProcessEvent records ev; ev must not be modified afterwards. It
	// reports whether the event was handled: false only from a backend in
	// blocking-strict mode (or a union holding one) that failed, which
	// makes WithAudit fail a request at stage RequestReceived, as
	// kube-apiserver's Sink.ProcessEvents.
	ProcessEvent(ev *Event) bool
}

// Log formats (--audit-log-format).
const (
	// FormatJSON is one audit.k8s.io/v1 Event JSON object per line.
	FormatJSON = "json"
	// FormatLegacy is kube-apiserver's one-line text format (legacyLine).
	FormatLegacy = "legacy"
)

// WriterBackend writes each event as one line (JSON or legacy text) to a
// writer, synchronously: the log backend of kube-apiserver, which
// WrapMode then makes blocking (the default), blocking-strict or batch.
type WriterBackend struct {
	mu     sync.Mutex
	w      io.Writer
	closer io.Closer
	format string
	// errs counts events that could not be written.
	errs int
	// OnError, when set, is told of write failures (which are also
	// logged and counted as plugin "log" errors).
	OnError func(error)
	metrics *Metrics
}

// NewFileBackend appends to the file at path (created 0600 if missing),
// never rotated; "-" writes to standard output.
func NewFileBackend(path string) (*WriterBackend, error) {
	if path == "-" {
		return &WriterBackend{w: os.Stdout}, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening audit log: %w", err)
	}
	return &WriterBackend{w: f, closer: f}, nil
}

// NewLogBackend is --audit-log-path's backend: "-" is standard output;
// another path is a RotatingFile (created 0600 in a directory made 0700
// when missing, as kube-apiserver ensures before handing the path to its
// rotating writer), with o's rotation limits and format.
func NewLogBackend(o LogOptions, m *Metrics) (*WriterBackend, error) {
	format := o.Format
	if format == "" {
		format = FormatJSON
	}
	if o.Path == "-" {
		return &WriterBackend{w: os.Stdout, format: format, metrics: m}, nil
	}
	if err := ensureLogFile(o.Path); err != nil {
		return nil, fmt.Errorf("ensureLogFile: %w", err)
	}
	rf := &RotatingFile{Filename: o.Path, MaxSize: o.MaxSize, MaxBackups: o.MaxBackups, MaxAge: o.MaxAge, Compress: o.Compress}
	return &WriterBackend{w: rf, closer: rf, format: format, metrics: m}, nil
}

// ensureLogFile makes the log's directory (0700) and the file (0600)
// when missing.
func ensureLogFile(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	return f.Close()
}

// NewWriterBackend writes JSON lines to w.
func NewWriterBackend(w io.Writer) *WriterBackend { return &WriterBackend{w: w} }

// ProcessEvent implements Backend: false when the line could not be
// written.
func (b *WriterBackend) ProcessEvent(ev *Event) bool {
	var line []byte
	var err error
	if b.format == FormatLegacy {
		line = []byte(legacyLine(ev) + "\n")
	} else if line, err = json.Marshal(ev); err == nil {
		line = append(line, '\n')
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err == nil {
		if b.w == nil {
			err = errors.New("audit log closed")
		} else {
			_, err = b.w.Write(line)
		}
	}
	if err == nil {
		return true
	}
	b.errs++
	pluginError(b.metrics, PluginLog, err, ev)
	if b.OnError != nil {
		b.OnError(fmt.Errorf("writing audit event %s: %w", ev.AuditID, err))
	}
	return false
}

// Errors returns how many events could not be written.
func (b *WriterBackend) Errors() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.errs
}

// Close closes the file; later events are counted as errors.
func (b *WriterBackend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.w = nil
	if b.closer != nil {
		return b.closer.Close()
	}
	return nil
}

// union sends every event to all its backends (kube-apiserver's
// audit.Union: the log backend and the webhook backend side by side).
type union []Backend

// Union is one backend sending each event to every non-nil backend; nil
// when there is none, the backend itself when there is one.
func Union(backends ...Backend) Backend {
	var u union
	for _, b := range backends {
		if b != nil {
			u = append(u, b)
		}
	}
	switch len(u) {
	case 0:
		return nil
	case 1:
		return u[0]
	}
	return u
}

// ProcessEvent implements Backend: true only when every backend handled
// ev (each is given it whatever the others answered).
func (u union) ProcessEvent(ev *Event) bool {
	ok := true
	for _, b := range u {
		ok = b.ProcessEvent(ev) && ok
	}
	return ok
}

// Close closes every backend that is an io.Closer, returning their
// errors joined.
func (u union) Close() error {
	var errs []error
	for _, b := range u {
		if c, ok := b.(io.Closer); ok {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}

// ignoreErrors is a blocking-mode backend: its delegate's failures are
// logged by the delegate and never fail the request.
type ignoreErrors struct{ Backend }

func (b ignoreErrors) ProcessEvent(ev *Event) bool {
	b.Backend.ProcessEvent(ev)
	return true
}

// Close closes the delegate when it is an io.Closer.
func (b ignoreErrors) Close() error {
	if c, ok := b.Backend.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
