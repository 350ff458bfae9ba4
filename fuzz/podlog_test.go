package fuzz

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
	kubeletserver "github.com/kubeproof/kubeproof/impl/kubelet/server"
)

// podLogNamespace holds FuzzPodLog's pods; no other target writes to it.
const podLogNamespace = "fuzz-log"

// podLogNode is the node whose kubelet API (an in-process
// kubeletserver.Mux over TLS) serves FuzzPodLog's bound pod.
const podLogNode = "fuzz-log-node"

// podLogPods are FuzzPodLog's pods: two containers and an init container,
// pending; one container, bound to podLogNode; and a missing one.
var podLogPods = []string{"two", "bound", "missing"}

// podLogParams are the PodLogOptions query parameters, in the order
// kube-apiserver's generated conversion decodes them, and values tried
// besides fuzzed strings.
var podLogParams = []struct {
	name   string
	values []string
}{
	{"container", []string{"app", "side", "init", "", "nope"}},
	{"follow", []string{"true", "false", "0", "1", "", "yes", "FALSE"}},
	{"previous", []string{"true", "false", "0", "", "x"}},
	{"sinceSeconds", []string{"1", "0", "-1", "60", "3600", "9223372036854775807", "99999999999999999999", "1.5", ""}},
	{"sinceTime", []string{"2020-01-01T00:00:00Z", "", "null", "2020-01-01", "2999-01-01T00:00:00+01:00", "0001-01-01T00:00:00Z"}},
	{"timestamps", []string{"true", "false", "", "0"}},
	{"tailLines", []string{"0", "1", "2", "-1", "10", "x", ""}},
	{"limitBytes", []string{"1", "0", "-1", "5", "40", "1000", "0x10", ""}},
	{"insecureSkipTLSVerifyBackend", []string{"true", "false", ""}},
}

// FuzzPodLog sends GET pods/{name}/log with fuzzed PodLogOptions —
// container, follow, previous, sinceSeconds, sinceTime, timestamps,
// tailLines, limitBytes, insecureSkipTLSVerifyBackend: absent, known or
// fuzzed values, sometimes repeated — to a pending pod, a missing one, and
// a pod bound to a node whose kubelet API is served in-process (a fake
// kubelet with a fixed log). Properties: the answer is the one
// kube-apiserver 1.37 gives (podLogOracle): a value its query conversion
// cannot decode is a 400 BadRequest with the decoder's message, options
// ValidatePodLogOptions refuses a 422 PodLogOptions "<name>" is invalid
// with its causes, both before the pod is read (404); booleans are true
// for any value but "0" and "false"; a container the pod lacks, or none
// named for a pod of two, a 400; a pending pod a 204 No Content (no log
// location, as kube-apiserver's LogLocation and StreamObject); and the bound
// pod's log is exactly the lines the options select (sinceTime and
// sinceSeconds as the kubelet's runtime filters them, tailLines,
// timestamps, limitBytes), previous a 400 with the kubelet's message.
// Never a 5xx, a panic or a hang.
func FuzzPodLog(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 1, 0, 1, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{1, 1, 2, 1, 0, 1, 1, 2, 2, 1, 2, 3, 0, 1, 1, 2, 0, 2, 0})
	f.Add([]byte{0, 1, 1, 1, 6, 1, 2, 1, 4, 0, 1, 3, 1, 2, 1})
	f.Add([]byte{1, 1, 0, 1, 0, 0, 0, 1, 1, 1, 4, 0, 1, 0, 1, 0, 1, 2})
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 3, 2, 5, 'a', 'b', 'c', 'd', 'e'})
	f.Fuzz(func(t *testing.T, data []byte) {
		s := server(t)
		h := podLogHarness(t, s)
		in := &input{data: data}
		pod := pick(in, podLogPods)
		q := url.Values{}
		for _, p := range podLogParams {
			switch in.intn(4) {
			case 0, 1: // absent
			case 2:
				q.Add(p.name, pick(in, p.values))
			default:
				q.Add(p.name, in.string(24))
				if in.intn(4) == 0 {
					q.Add(p.name, pick(in, p.values))
				}
			}
		}
		path := "/api/v1/namespaces/" + podLogNamespace + "/pods/" + pod + "/log"
		if len(q) > 0 {
			path += "?" + q.Encode()
		}
		before := time.Now()
		code, header, body := h.get(t, s, path)
		after := time.Now()
		want := podLogOracle(q, pod, before, after)
		if code >= 500 {
			t.Fatalf("GET %s: %d %s", path, code, body)
		}
		if code != want.code {
			t.Fatalf("GET %s: %d %s, kube-apiserver answers %d %s", path, code, body, want.code, want.message)
		}
		if code == http.StatusNoContent {
			if len(body) != 0 {
				t.Fatalf("GET %s: 204 with a body %q", path, body)
			}
			return
		}
		if code != http.StatusOK {
			var st metav1.Status
			if err := json.Unmarshal(body, &st); err != nil || st.Kind != "Status" {
				t.Fatalf("GET %s: %d answer is not a Status: %s", path, code, body)
			}
			if want.message != "" && st.Message != want.message {
				t.Fatalf("GET %s: %d %q, kube-apiserver's message is %q", path, code, st.Message, want.message)
			}
			if want.reason != "" && string(st.Reason) != want.reason {
				t.Fatalf("GET %s: reason %q, kube-apiserver's is %q", path, st.Reason, want.reason)
			}
			return
		}
		if ct := header.Get("Content-Type"); ct != "text/plain" {
			t.Fatalf("GET %s: 200 with Content-Type %q", path, ct)
		}
		if want.bodies != nil && !containsString(want.bodies, string(body)) {
			t.Fatalf("GET %s: log %q, want one of %q", path, body, want.bodies)
		}
	})
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// podLogAnswer is what kube-apiserver answers a pods/log request: a code,
// for errors the Status reason and message (empty: not checked), and for
// a 200 of the bound pod the bodies it may send (nil: not checked; more
// than one when sinceSeconds falls on a line's time during the request).
type podLogAnswer struct {
	code            int
	reason, message string
	bodies          []string
}

// podLogLines is the fake kubelet's log of container "app" of the bound
// pod, at times relative to podLogEpoch.
var podLogLines = []struct {
	ago  time.Duration
	text string
}{
	{10 * time.Hour, "first line"},
	{3 * time.Hour, ""},
	{time.Hour, "ünïcödé ☃"},
	{10 * time.Minute, "a longer line with spaces    and tabs\t"},
	{90 * time.Second, "last-but-one"},
	{20 * time.Second, "last"},
}

// podLogEpoch is the time the fake log's line times are counted back from.
var podLogEpoch = time.Now().Truncate(time.Second)

// podLogOracle is kube-apiserver's answer to GET pods/{pod}/log?q, sent
// between before and after.
func podLogOracle(q url.Values, pod string, before, after time.Time) podLogAnswer {
	bad := func(msg string) podLogAnswer {
		return podLogAnswer{code: http.StatusBadRequest, reason: string(metav1.StatusReasonBadRequest), message: msg}
	}
	// The query conversion, field by field in its order: integers and
	// times must parse, booleans are anything.
	boolOf := func(name string) bool {
		v, ok := q[name]
		return ok && len(v) > 0 && v[0] != "0" && !strings.EqualFold(v[0], "false")
	}
	ints := map[string]*int64{}
	var sinceTime *time.Time
	for _, p := range podLogParams {
		v, ok := q[p.name]
		if !ok || len(v) == 0 {
			continue
		}
		switch p.name {
		case "sinceSeconds", "tailLines", "limitBytes":
			n, err := strconv.ParseInt(v[0], 10, 64)
			if err != nil {
				return bad(err.Error())
			}
			ints[p.name] = &n
		case "sinceTime":
			t := time.Time{}
			if v[0] != "" && v[0] != "null" {
				var err error
				if t, err = time.Parse(time.RFC3339, v[0]); err != nil {
					return bad(err.Error())
				}
			}
			sinceTime = &t
		}
	}
	var errs field.ErrorList
	if n := ints["tailLines"]; n != nil && *n < 0 {
		errs = append(errs, field.Invalid(field.NewPath("tailLines"), *n, "must be greater than or equal to 0"))
	}
	if n := ints["limitBytes"]; n != nil && *n < 1 {
		errs = append(errs, field.Invalid(field.NewPath("limitBytes"), *n, "must be greater than 0"))
	}
	sinceSeconds := ints["sinceSeconds"]
	switch {
	case sinceSeconds != nil && sinceTime != nil:
		errs = append(errs, field.Forbidden(field.NewPath(""), "at most one of `sinceTime` or `sinceSeconds` may be specified"))
	case sinceSeconds != nil && *sinceSeconds < 1:
		errs = append(errs, field.Invalid(field.NewPath("sinceSeconds"), *sinceSeconds, "must be greater than 0"))
	}
	if len(errs) > 0 {
		st := apierrors.NewInvalid(schema.GroupKind{Kind: "PodLogOptions"}, pod, errs).ErrStatus
		return podLogAnswer{code: http.StatusUnprocessableEntity, reason: string(st.Reason), message: st.Message}
	}
	container := ""
	if v := q["container"]; len(v) > 0 {
		container = v[0]
	}
	switch pod {
	case "missing":
		return podLogAnswer{code: http.StatusNotFound, reason: string(metav1.StatusReasonNotFound), message: `pods "missing" not found`}
	case "two":
		switch container {
		case "":
			return podLogAnswer{code: http.StatusBadRequest, reason: string(metav1.StatusReasonBadRequest)}
		case "app", "side", "init":
			// A pod on no node has no log location: no content.
			return podLogAnswer{code: http.StatusNoContent}
		}
		return podLogAnswer{code: http.StatusBadRequest, reason: string(metav1.StatusReasonBadRequest)}
	}
	if container != "" && container != "app" {
		return podLogAnswer{code: http.StatusBadRequest, reason: string(metav1.StatusReasonBadRequest)}
	}
	if boolOf("previous") {
		return podLogAnswer{code: http.StatusBadRequest, reason: string(metav1.StatusReasonBadRequest)}
	}
	// The bound pod's log as its kubelet gives it for the options.
	bodyAt := func(now time.Time) string {
		var since time.Time
		switch {
		case sinceTime != nil:
			// Sent on to the kubelet in whole seconds.
			since = sinceTime.Truncate(time.Second)
		case sinceSeconds != nil:
			since = now.Add(-time.Duration(*sinceSeconds) * time.Second)
		}
		var lines []string
		for _, l := range podLogLines {
			at := podLogEpoch.Add(-l.ago)
			if !since.IsZero() && at.Before(since) {
				continue
			}
			s := l.text + "\n"
			if boolOf("timestamps") {
				s = at.UTC().Format(time.RFC3339Nano) + " " + s
			}
			lines = append(lines, s)
		}
		if n := ints["tailLines"]; n != nil && int64(len(lines)) > *n {
			lines = lines[int64(len(lines))-*n:]
		}
		out := strings.Join(lines, "")
		if n := ints["limitBytes"]; n != nil && int64(len(out)) > *n {
			out = out[:*n]
		}
		return out
	}
	return podLogAnswer{code: http.StatusOK, bodies: []string{bodyAt(before), bodyAt(after)}}
}

// podLogSetup is FuzzPodLog's kubelet and the server it registered with.
type podLogSetup struct {
	kubelet *httptest.Server
}

var (
	podLogOnce  sync.Once
	podLogState *podLogSetup
	podLogErr   error
)

// podLogHarness starts the fake kubelet once per process and makes sure
// the namespace, node and pods exist (another target may have deleted
// them).
func podLogHarness(t *testing.T, s *liveServer) *podLogSetup {
	t.Helper()
	podLogOnce.Do(func() {
		mux := kubeletserver.NewMux(kubeletserver.Options{FollowPollInterval: 10 * time.Millisecond})
		mux.Add(fakeLogKubelet{})
		podLogState = &podLogSetup{kubelet: httptest.NewTLSServer(mux)}
	})
	if podLogErr != nil {
		t.Fatal(podLogErr)
	}
	ctx := context.Background()
	_, portText, err := net.SplitHostPort(podLogState.kubelet.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(portText)
	create := func(path, doc string) {
		code, body := s.do(ctx, http.MethodPost, path, "application/json", []byte(doc))
		if code != http.StatusCreated && code != http.StatusConflict {
			t.Fatalf("POST %s: %d %s", path, code, body)
		}
	}
	if code, _ := s.do(ctx, http.MethodGet, "/api/v1/namespaces/"+podLogNamespace+"/pods/bound", "", nil); code == http.StatusOK {
		return podLogState
	}
	create("/api/v1/namespaces", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"`+podLogNamespace+`"}}`)
	create("/api/v1/namespaces/"+podLogNamespace+"/serviceaccounts", `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"default"}}`)
	create("/api/v1/nodes", `{"apiVersion":"v1","kind":"Node","metadata":{"name":"`+podLogNode+`"}}`)
	status := fmt.Sprintf(`{"apiVersion":"v1","kind":"Node","metadata":{"name":%q},"status":{"addresses":[{"type":"InternalIP","address":"127.0.0.1"}],"daemonEndpoints":{"kubeletEndpoint":{"Port":%d}}}}`, podLogNode, port)
	if code, body := s.do(ctx, http.MethodPatch, "/api/v1/nodes/"+podLogNode+"/status", "application/merge-patch+json", []byte(status)); code != http.StatusOK {
		t.Fatalf("PATCH node status: %d %s", code, body)
	}
	create("/api/v1/namespaces/"+podLogNamespace+"/pods", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"two"},"spec":{"initContainers":[{"name":"init","image":"busybox"}],"containers":[{"name":"app","image":"busybox"},{"name":"side","image":"busybox"}]}}`)
	create("/api/v1/namespaces/"+podLogNamespace+"/pods", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"bound"},"spec":{"nodeName":"`+podLogNode+`","containers":[{"name":"app","image":"busybox"}]}}`)
	return podLogState
}

// get sends GET path to the API server (in-process) and returns the
// answer; a request that does not end within 20 s is a hang.
func (h *podLogSetup) get(t *testing.T, s *liveServer, path string) (int, http.Header, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req := httptest.NewRequestWithContext(ctx, http.MethodGet, path, nil)
	rec := httptest.NewRecorder()
	s.handler.ServeHTTP(rec, req)
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("GET %s did not end in 20s", path)
	}
	return rec.Code, rec.Header(), rec.Body.Bytes()
}

// fakeLogKubelet is the kubelet of podLogNode: it runs the pod "bound"
// (container "app", not running), whose log is podLogLines; it has no
// previous instance.
type fakeLogKubelet struct{}

func (fakeLogKubelet) NodeName() string { return podLogNode }

func (fakeLogKubelet) GetPodByName(namespace, name string) (*corev1.Pod, bool) {
	if namespace != podLogNamespace || name != "bound" {
		return nil, false
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       corev1.PodSpec{NodeName: podLogNode, Containers: []corev1.Container{{Name: "app", Image: "busybox"}}},
	}, true
}

func (fakeLogKubelet) ContainerLogs(_ context.Context, _, pod, container string, previous bool, opts runtime.LogOptions) ([]runtime.LogLine, error) {
	if previous {
		return nil, fmt.Errorf("previous terminated container %q in pod %q not found", container, pod)
	}
	var out []runtime.LogLine
	for _, l := range podLogLines {
		at := podLogEpoch.Add(-l.ago)
		if !opts.Since.IsZero() && at.Before(opts.Since) {
			continue
		}
		out = append(out, runtime.LogLine{Time: at, Stream: "stdout", Text: l.text})
	}
	return out, nil
}

func (fakeLogKubelet) ContainerRunning(context.Context, string, string, string) bool { return false }
func (fakeLogKubelet) Runtime() runtime.Runtime                                      { return nil }
func (fakeLogKubelet) RunningPods() int                                              { return 1 }
func (fakeLogKubelet) LifecycleHTTPFallbacks() uint64                                { return 0 }
