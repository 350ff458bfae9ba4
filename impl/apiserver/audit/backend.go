package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
)

// Backend receives finished audit events.
type Backend interface {
	// ProcessEvent records ev; ev must not be modified afterwards.
	ProcessEvent(ev *Event)
}

// WriterBackend writes each event as one JSON line, synchronously (the
// "blocking" mode of kube-apiserver's log backend): an event is on its
// way to the file before the response that produced it completes.
type WriterBackend struct {
	mu     sync.Mutex
	w      io.Writer
	closer io.Closer
	// errs counts events that could not be written.
	errs int
	// OnError, when set, is told of write failures.
	OnError func(error)
}

// NewFileBackend appends to the file at path (created 0600 if missing);
// "-" writes to standard output.
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

// NewWriterBackend writes to w.
func NewWriterBackend(w io.Writer) *WriterBackend { return &WriterBackend{w: w} }

// ProcessEvent implements Backend.
func (b *WriterBackend) ProcessEvent(ev *Event) {
	line, err := json.Marshal(ev)
	if err == nil {
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
	if err != nil {
		b.errs++
		if b.OnError != nil {
			b.OnError(fmt.Errorf("writing audit event %s: %w", ev.AuditID, err))
		}
	}
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
