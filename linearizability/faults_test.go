package linearizability

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// fault is a negative control: a client-side transport that breaks one
// consistency guarantee the way a faulty API server would, so a test can
// show the checker notices. It works against any server.
type fault int

const (
	// staleQuorumGet answers a few quorum gets with an older response of
	// the same object, as a server serving them from a stale cache would.
	staleQuorumGet fault = iota
	// dropWatchEvent removes one event from one watch stream.
	dropWatchEvent
	// reorderWatchEvents swaps two consecutive events of one watch stream.
	reorderWatchEvents
	// ackUnwrittenCreate answers one create with 201 Created without
	// sending it to the server.
	ackUnwrittenCreate
)

func (f fault) String() string {
	return [...]string{"stale-quorum-get", "drop-watch-event", "reorder-watch-events", "ack-unwritten-create"}[f]
}

// faultyTransport injects fault once the history is under way (after
// `after` requests of the kind it corrupts).
type faultyTransport struct {
	next  http.RoundTripper
	fault fault
	after int64

	seen  atomic.Int64
	fired atomic.Bool

	mu     sync.Mutex
	bodies map[string][]byte // first body seen per object path (stale gets)
	stale  int               // stale answers still to give
	lastRV int64
}

func newFaultyTransport(f fault, next http.RoundTripper) *faultyTransport {
	return &faultyTransport{next: next, fault: f, after: 20, bodies: map[string][]byte{}, stale: 20}
}

func isQuorumGet(req *http.Request) bool {
	if req.Method != http.MethodGet || req.URL.Query().Get("watch") != "" || req.URL.Query().Get("resourceVersion") != "" {
		return false
	}
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	return len(parts) == 6 && parts[4] == "configmaps" // api/v1/namespaces/ns/configmaps/name
}

func (t *faultyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	switch {
	case t.fault == staleQuorumGet && isQuorumGet(req):
		return t.staleGet(req)
	case (t.fault == dropWatchEvent || t.fault == reorderWatchEvents) && req.URL.Query().Get("watch") == "true" && req.URL.Query().Get("sendInitialEvents") == "":
		resp, err := t.next.RoundTrip(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			return resp, err
		}
		resp.Body = &eventFilter{src: bufio.NewReader(resp.Body), closer: resp.Body, t: t}
		return resp, nil
	case t.fault == ackUnwrittenCreate && req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/configmaps"):
		if t.seen.Add(1) > t.after && t.fired.CompareAndSwap(false, true) {
			return t.fakeCreated(req)
		}
	}
	resp, err := t.next.RoundTrip(req)
	if err == nil && t.fault == ackUnwrittenCreate {
		t.noteRV(resp)
	}
	return resp, err
}

// staleGet forwards the get; once armed, it answers with the first body it
// ever saw for that object if that differs from the current one.
func (t *faultyTransport) staleGet(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	old, ok := t.bodies[req.URL.Path]
	if !ok {
		t.bodies[req.URL.Path] = body
	}
	if ok && t.seen.Add(1) > t.after && t.stale > 0 && !bytes.Equal(old, body) {
		t.stale--
		t.fired.Store(true)
		body = old
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	return resp, nil
}

func (t *faultyTransport) noteRV(resp *http.Response) {
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	var m struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if err == nil && json.Unmarshal(body, &m) == nil {
		if rv, err := strconv.ParseInt(m.Metadata.ResourceVersion, 10, 64); err == nil {
			t.mu.Lock()
			if rv > t.lastRV {
				t.lastRV = rv
			}
			t.mu.Unlock()
		}
	}
}

// fakeCreated answers a create with the request's object, a plausible
// resourceVersion and 201, without forwarding it.
func (t *faultyTransport) fakeCreated(req *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	var obj map[string]any
	if err := json.Unmarshal(body, &obj); err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.lastRV++
	rv := t.lastRV
	t.mu.Unlock()
	meta, _ := obj["metadata"].(map[string]any)
	meta["resourceVersion"] = strconv.FormatInt(rv, 10)
	meta["uid"] = "00000000-0000-0000-0000-000000000000"
	out, _ := json.Marshal(obj)
	return &http.Response{
		StatusCode: http.StatusCreated, Status: "201 Created", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:  http.Header{"Content-Type": []string{"application/json"}},
		Body:    io.NopCloser(bytes.NewReader(out)),
		Request: req, ContentLength: int64(len(out)),
	}, nil
}

// eventFilter rewrites a JSON watch stream (one event per line): it drops
// or swaps one event once enough events have passed.
type eventFilter struct {
	src    *bufio.Reader
	closer io.Closer
	t      *faultyTransport
	out    []byte
	held   []byte
}

func (f *eventFilter) Read(p []byte) (int, error) {
	for len(f.out) == 0 {
		line, err := f.src.ReadBytes('\n')
		if len(line) > 0 {
			f.filter(line)
		}
		if err != nil {
			if f.held != nil {
				// The stream ended right after the chosen event: deliver it
				// and corrupt a later stream instead.
				f.out = append(f.out, f.held...)
				f.held = nil
				f.t.fired.Store(false)
			}
			if len(f.out) == 0 {
				return 0, err
			}
			break
		}
	}
	n := copy(p, f.out)
	f.out = f.out[n:]
	return n, nil
}

func (f *eventFilter) filter(line []byte) {
	if f.held != nil {
		// The held event is mid-stream: drop it, or deliver it after the
		// event that followed it.
		f.out = append(f.out, line...)
		if f.t.fault == reorderWatchEvents {
			f.out = append(f.out, f.held...)
		}
		f.held = nil
		return
	}
	isChange := bytes.HasPrefix(line, []byte(`{"type":"ADDED"`)) || bytes.HasPrefix(line, []byte(`{"type":"MODIFIED"`))
	if f.t.fault == reorderWatchEvents {
		isChange = isChange || bytes.HasPrefix(line, []byte(`{"type":"DELETED"`))
	}
	// The drop fault removes an ADDED or MODIFIED event: the checker knows
	// every such change from the writers' responses. A DELETED is known only
	// from watch events (the API does not return a delete's revision), so a
	// DELETED that no other watch saw is a documented blind spot (package
	// doc), not something this control can demand be caught.
	if isChange && f.t.seen.Add(1) > f.t.after && f.t.fired.CompareAndSwap(false, true) {
		f.held = append([]byte(nil), line...)
		return
	}
	f.out = append(f.out, line...)
}

func (f *eventFilter) Close() error { return f.closer.Close() }
