package server

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

// logQuery is the query of /containerLogs (the fields of v1.PodLogOptions
// the kubelet serves).
type logQuery struct {
	follow, previous, timestamps bool
	tailLines, limitBytes        *int64
	since                        time.Time
}

// logQueryError is a refused /containerLogs query: the status and the body
// upstream's kubelet answers it with.
type logQueryError struct {
	code int
	msg  string
}

func (e *logQueryError) Error() string { return e.msg }

// Upstream's kubelet answers a query it cannot decode, and one that does not
// validate, with these bodies (JSON-looking text, without details).
var (
	errLogQueryDecode  = &logQueryError{http.StatusBadRequest, `{"message": "Unable to decode query."}`}
	errLogQueryInvalid = &logQueryError{http.StatusUnprocessableEntity, `{"message": "Invalid request."}`}
)

// parseLogQuery reads the query of /containerLogs as upstream's kubelet
// (pkg/kubelet/server getContainerLogs): the legacy "tail" (a number, or
// "all" for no limit) stands for tailLines; the options are decoded as the
// v1 PodLogOptions query conversion decodes them (the first value of each;
// a boolean is true for anything but "0" and "false" in any case, an empty
// value too; sinceTime empty or "null" is the zero time), any that does not
// parse being errLogQueryDecode; then validated as v1 ValidatePodLogOptions
// (tailLines >= 0, limitBytes and sinceSeconds > 0, not both sinceSeconds
// and sinceTime, stream one of All, Stdout, Stderr and with tailLines only
// All), errLogQueryInvalid when not. With PodLogsQuerySplitStreams off, as
// in upstream's default, a stream other than All is a 400.
func parseLogQuery(query url.Values, now time.Time) (logQuery, error) {
	q := url.Values{}
	for k, v := range query {
		q[k] = v
	}
	if tail := q.Get("tail"); tail != "" {
		q["tailLines"] = []string{tail}
		if tail == "all" {
			delete(q, "tailLines")
		}
	}
	var lq logQuery
	var sinceSeconds *int64
	var sinceTime *metav1.Time
	var stream *string
	for _, b := range []struct {
		name string
		out  *bool
	}{{"follow", &lq.follow}, {"previous", &lq.previous}, {"timestamps", &lq.timestamps}} {
		v := q[b.name]
		if err := apiruntime.Convert_Slice_string_To_bool(&v, b.out, nil); err != nil {
			return lq, errLogQueryDecode
		}
	}
	for _, n := range []struct {
		name string
		out  **int64
	}{{"sinceSeconds", &sinceSeconds}, {"tailLines", &lq.tailLines}, {"limitBytes", &lq.limitBytes}} {
		v := q[n.name]
		if err := apiruntime.Convert_Slice_string_To_Pointer_int64(&v, n.out, nil); err != nil {
			return lq, errLogQueryDecode
		}
	}
	if v, ok := q["sinceTime"]; ok && len(v) > 0 {
		if err := metav1.Convert_Slice_string_To_Pointer_v1_Time(&v, &sinceTime, nil); err != nil {
			return lq, errLogQueryDecode
		}
	}
	if v, ok := q["stream"]; ok && len(v) > 0 {
		stream = &v[0]
	}
	switch {
	case lq.tailLines != nil && *lq.tailLines < 0,
		lq.limitBytes != nil && *lq.limitBytes < 1,
		sinceSeconds != nil && sinceTime != nil,
		sinceSeconds != nil && *sinceSeconds < 1,
		stream != nil && *stream != string(v1.LogStreamAll) && *stream != string(v1.LogStreamStdout) && *stream != string(v1.LogStreamStderr),
		stream != nil && *stream != string(v1.LogStreamAll) && lq.tailLines != nil:
		return lq, errLogQueryInvalid
	}
	if stream != nil && *stream != string(v1.LogStreamAll) {
		return lq, &logQueryError{http.StatusBadRequest, fmt.Sprintf("unable to return the given log stream: %q. Please enable PodLogsQuerySplitStreams feature gate in kubelet", *stream)}
	}
	switch {
	case sinceSeconds != nil:
		lq.since = now.Add(-time.Duration(*sinceSeconds) * time.Second)
	case sinceTime != nil:
		lq.since = sinceTime.Time
	}
	return lq, nil
}

// serveContainerLogs writes a container's log as text/plain, optionally
// following it (polling the runtime) until the container stops running or
// the client goes away.
func (m *Mux) serveContainerLogs(w http.ResponseWriter, req *http.Request, namespace, pod, container string) {
	lq, err := parseLogQuery(req.URL.Query(), time.Now())
	if err != nil {
		code := http.StatusBadRequest
		if qe := (*logQueryError)(nil); errors.As(err, &qe) {
			code = qe.code
		}
		http.Error(w, err.Error(), code)
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
