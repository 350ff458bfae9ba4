package server

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

// logQuery is the query of /containerLogs (the fields of v1.PodLogOptions
// the kubelet serves).
type logQuery struct {
	follow, previous, timestamps bool
	tailLines, limitBytes        *int64
	since                        time.Time
}

func parseLogQuery(req *http.Request, now time.Time) (logQuery, error) {
	q := req.URL.Query()
	var lq logQuery
	var err error
	boolParam := func(name string, out *bool) {
		if v := q.Get(name); v != "" && err == nil {
			if *out, err = strconv.ParseBool(v); err != nil {
				err = fmt.Errorf("%s: %q is not a boolean", name, v)
			}
		}
	}
	intParam := func(name string, min int64) *int64 {
		v := q.Get(name)
		if v == "" || err != nil {
			return nil
		}
		n, perr := strconv.ParseInt(v, 10, 64)
		if perr != nil {
			err = fmt.Errorf("%s: %q is not an integer", name, v)
			return nil
		}
		if n < min {
			err = fmt.Errorf("%s: Invalid value: %d: must be greater than or equal to %d", name, n, min)
			return nil
		}
		return &n
	}
	boolParam("follow", &lq.follow)
	boolParam("previous", &lq.previous)
	boolParam("timestamps", &lq.timestamps)
	lq.tailLines = intParam("tailLines", 0)
	lq.limitBytes = intParam("limitBytes", 1)
	sinceSeconds := intParam("sinceSeconds", 1)
	if err != nil {
		return lq, err
	}
	if v := q.Get("sinceTime"); v != "" {
		if sinceSeconds != nil {
			return lq, fmt.Errorf("at most one of sinceTime or sinceSeconds may be specified")
		}
		if lq.since, err = time.Parse(time.RFC3339, v); err != nil {
			return lq, fmt.Errorf("sinceTime: %q is not an RFC 3339 time", v)
		}
	}
	if sinceSeconds != nil {
		lq.since = now.Add(-time.Duration(*sinceSeconds) * time.Second)
	}
	return lq, nil
}

// serveContainerLogs writes a container's log as text/plain, optionally
// following it (polling the runtime) until the container stops running or
// the client goes away.
func (m *Mux) serveContainerLogs(w http.ResponseWriter, req *http.Request, namespace, pod, container string) {
	lq, err := parseLogQuery(req, time.Now())
	if err != nil {
		http.Error(w, err.Error(), http.StatusUnprocessableEntity)
		return
	}
	k, _, _, ok := m.lookupContainer(func(code int, msg string) { http.Error(w, msg, code) }, namespace, pod, container)
	if !ok {
		return
	}
	ctx := req.Context()
	opts := runtime.LogOptions{Since: lq.since}
	lines, err := k.ContainerLogs(ctx, namespace, pod, container, lq.previous, opts)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	sent := len(lines)
	if lq.tailLines != nil && int64(len(lines)) > *lq.tailLines {
		lines = lines[int64(len(lines))-*lq.tailLines:]
	}
	w.Header().Set("Content-Type", "text/plain")
	w.Header().Set("Transfer-Encoding", "chunked")
	w.WriteHeader(http.StatusOK)
	out := &logWriter{w: w, timestamps: lq.timestamps, remaining: -1}
	if lq.limitBytes != nil {
		out.remaining = *lq.limitBytes
	}
	if !out.write(lines) || !lq.follow || lq.previous {
		return
	}
	out.flush()
	ticker := time.NewTicker(m.opts.FollowPollInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		running := k.ContainerRunning(ctx, namespace, pod, container)
		all, err := k.ContainerLogs(ctx, namespace, pod, container, false, opts)
		if err != nil {
			return
		}
		if len(all) > sent {
			if !out.write(all[sent:]) {
				return
			}
			sent = len(all)
			out.flush()
		}
		if !running {
			return
		}
	}
}

// logWriter writes log lines, with timestamps if asked, up to a byte limit.
type logWriter struct {
	w          http.ResponseWriter
	timestamps bool
	remaining  int64 // -1: no limit
}

// write writes lines and reports whether more may be written.
func (l *logWriter) write(lines []runtime.LogLine) bool {
	for _, line := range lines {
		s := line.Text + "\n"
		if l.timestamps {
			s = line.Time.UTC().Format(time.RFC3339Nano) + " " + s
		}
		if l.remaining >= 0 && int64(len(s)) >= l.remaining {
			_, _ = l.w.Write([]byte(s[:l.remaining]))
			l.remaining = 0
			return false
		}
		if _, err := l.w.Write([]byte(s)); err != nil {
			return false
		}
		if l.remaining >= 0 {
			l.remaining -= int64(len(s))
		}
	}
	return true
}

func (l *logWriter) flush() {
	if f, ok := l.w.(http.Flusher); ok {
		f.Flush()
	}
}
