package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

type memBackend struct {
	mu     sync.Mutex
	events []*Event
}

func (b *memBackend) ProcessEvent(ev *Event) bool {
	b.mu.Lock()
	b.events = append(b.events, ev)
	b.mu.Unlock()
	return true
}

func policyAt(level Level, omit ...Stage) *Policy {
	return &Policy{TypeMeta: metav1.TypeMeta{APIVersion: APIVersion, Kind: PolicyKind},
		Rules: []PolicyRule{{Level: level, OmitStages: omit}}}
}

var testUser = &request.User{Name: "alice", UID: "u1", Groups: []string{"devs", "system:authenticated"},
	Extra: map[string][]string{"scope": {"a"}}}

// serve runs req through WithAudit (after a stand-in for authentication
// and request info) to handler, returning the recorded events.
func serve(t *testing.T, p *Policy, req *http.Request, handler http.HandlerFunc) ([]*Event, *httptest.ResponseRecorder) {
	t.Helper()
	b := &memBackend{}
	clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	h := WithAudit(handler, Config{Policy: p, Backend: b, Now: func() time.Time { clock = clock.Add(time.Millisecond); return clock }})
	chain := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := request.WithInfo(r.Context(), request.Parse(r))
		h.ServeHTTP(w, r.WithContext(request.WithUser(ctx, testUser)))
	})
	rec := httptest.NewRecorder()
	chain.ServeHTTP(rec, req)
	return b.events, rec
}

const podJSON = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"ns"}}`

func createPod(body, contentType string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/api/v1/namespaces/ns/pods?fieldManager=kubectl", strings.NewReader(body))
	r.Header.Set("Content-Type", contentType)
	r.Header.Set("User-Agent", "kubectl/v1.37")
	r.Header.Set("X-Forwarded-For", "10.0.0.1, 10.0.0.2")
	r.RemoteAddr = "192.0.2.7:5555"
	return r
}

// created answers 201 with the request body, after reading all of it, as
// an API object (LogResponseObject).
func created(t *testing.T) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil || len(body) == 0 {
			t.Errorf("handler read %q, %v: the audit filter lost the body", body, err)
		}
		LogResponseObject(r.Context())
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		w.Write(body)
	}
}

func TestMetadataLevel(t *testing.T) {
	events, rec := serve(t, policyAt(LevelMetadata), createPod(podJSON, "application/json"), created(t))
	if len(events) != 2 || events[0].Stage != StageRequestReceived || events[1].Stage != StageResponseComplete {
		t.Fatalf("events %v, want RequestReceived then ResponseComplete", stagesOf(events))
	}
	ev := events[1]
	if ev.Kind != "Event" || ev.APIVersion != "audit.k8s.io/v1" || ev.Level != LevelMetadata {
		t.Errorf("type/level %s %s %s", ev.APIVersion, ev.Kind, ev.Level)
	}
	if ev.AuditID == "" || ev.AuditID != events[0].AuditID || rec.Header().Get("Audit-Id") != string(ev.AuditID) {
		t.Errorf("audit IDs %q %q, response header %q: want one ID everywhere", events[0].AuditID, ev.AuditID, rec.Header().Get("Audit-Id"))
	}
	if ev.Verb != "create" || ev.RequestURI != "/api/v1/namespaces/ns/pods?fieldManager=kubectl" || ev.UserAgent != "kubectl/v1.37" {
		t.Errorf("verb %q uri %q agent %q", ev.Verb, ev.RequestURI, ev.UserAgent)
	}
	if strings.Join(ev.SourceIPs, ",") != "10.0.0.1,10.0.0.2,192.0.2.7" {
		t.Errorf("sourceIPs %v", ev.SourceIPs)
	}
	if ev.User.Username != "alice" || ev.User.UID != "u1" || len(ev.User.Groups) != 2 || ev.User.Extra["scope"][0] != "a" {
		t.Errorf("user %+v", ev.User)
	}
	want := ObjectReference{Resource: "pods", Namespace: "ns", APIVersion: "v1"}
	if ev.ObjectRef == nil || *ev.ObjectRef != want {
		t.Errorf("objectRef %+v, want %+v", ev.ObjectRef, want)
	}
	if ev.ResponseStatus == nil || ev.ResponseStatus.Code != 201 || events[0].ResponseStatus != nil {
		t.Errorf("responseStatus %+v / %+v, want only the last event's with code 201", ev.ResponseStatus, events[0].ResponseStatus)
	}
	if ev.RequestObject != nil || ev.ResponseObject != nil {
		t.Error("bodies recorded at Metadata level")
	}
	if !ev.StageTimestamp.After(ev.RequestReceivedTimestamp.Time) || !ev.RequestReceivedTimestamp.Equal(&events[0].RequestReceivedTimestamp) {
		t.Errorf("timestamps received %v stage %v", ev.RequestReceivedTimestamp, ev.StageTimestamp)
	}
}

// decodedCreate is created(t) after logging the decoded body, as the
// create and update handlers do (the object encoded again is podJSON).
func decodedCreate(t *testing.T) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		LogRequestObject(r.Context(), &metav1.ObjectMeta{}, func(bool) ([]byte, error) { return []byte(podJSON), nil })
		created(t)(w, r)
	}
}

func TestRequestAndRequestResponseLevels(t *testing.T) {
	events, _ := serve(t, policyAt(LevelRequest), createPod(podJSON, "application/json"), decodedCreate(t))
	if len(events) != 2 || events[0].RequestObject != nil {
		t.Errorf("Request level: %v events, RequestReceived requestObject %s: want none (the body is not decoded yet)", len(events), events[0].RequestObject)
	}
	if ev := events[len(events)-1]; string(ev.RequestObject) != podJSON || ev.ResponseObject != nil {
		t.Errorf("Request level %s: requestObject %s responseObject %s", ev.Stage, ev.RequestObject, ev.ResponseObject)
	}
	events, _ = serve(t, policyAt(LevelRequestResponse), createPod(podJSON, "application/json"), decodedCreate(t))
	last := events[len(events)-1]
	if string(last.RequestObject) != podJSON || string(last.ResponseObject) != podJSON {
		t.Errorf("RequestResponse: requestObject %s responseObject %s", last.RequestObject, last.ResponseObject)
	}
	// A YAML apply body is recorded as JSON; protobuf is not recorded.
	yamlBody := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  namespace: ns\n"
	apply := func(body, contentType string) *http.Request {
		r := httptest.NewRequest(http.MethodPatch, "/api/v1/namespaces/ns/pods/web?fieldManager=kubectl", strings.NewReader(body))
		r.Header.Set("Content-Type", contentType)
		return r
	}
	events, _ = serve(t, policyAt(LevelRequest), apply(yamlBody, "application/apply-patch+yaml"), created(t))
	if got := string(events[len(events)-1].RequestObject); got != podJSON {
		t.Errorf("yaml body recorded as %s, want %s", got, podJSON)
	}
	events, _ = serve(t, policyAt(LevelRequest), apply("k8s\x00binary", "application/vnd.kubernetes.protobuf"), created(t))
	if events[len(events)-1].RequestObject != nil {
		t.Errorf("protobuf body recorded as %q", events[len(events)-1].RequestObject)
	}
}

// TestRequestObjectOnlyOnceHandled: as kube-apiserver, a create's or an
// update's body is recorded once the handler has decoded it (not when it
// is refused before), a delete's or deletecollection's once the handler
// has decoded it to DeleteOptions (LogRequestOptions: what its encoder
// returns, not the body as sent), a patch's as sent, and
// the body of a connect request (proxy, exec, attach, portforward) never.
func TestRequestObjectOnlyOnceHandled(t *testing.T) {
	events, _ := serve(t, policyAt(LevelRequest), createPod(podJSON, "application/json"), created(t))
	if ev := events[len(events)-1]; ev.RequestObject != nil {
		t.Errorf("create not decoded: requestObject %s, want none", ev.RequestObject)
	}
	const opts = `{"kind":"DeleteOptions","apiVersion":"meta.k8s.io/__internal"}`
	decoding := func(w http.ResponseWriter, r *http.Request) {
		LogRequestOptions(r.Context(), func(bool) ([]byte, error) { return []byte(opts), nil })
		created(t)(w, r)
	}
	for _, tc := range []struct {
		method, path string
		decoded      bool
		want         bool
	}{
		{http.MethodPatch, "/api/v1/namespaces/ns/pods/web", false, true},
		{http.MethodDelete, "/api/v1/namespaces/ns/pods/web", false, false},
		{http.MethodDelete, "/api/v1/namespaces/ns/pods/web", true, true},
		{http.MethodDelete, "/api/v1/namespaces/ns/pods", false, false},
		{http.MethodDelete, "/api/v1/namespaces/ns/pods", true, true},
		{http.MethodPost, "/api/v1/namespaces/ns/services/web/proxy/x", false, false},
		{http.MethodPut, "/api/v1/namespaces/ns/pods/web/proxy", false, false},
		{http.MethodPatch, "/api/v1/nodes/n/proxy/x", false, false},
		{http.MethodPost, "/api/v1/namespaces/ns/pods/web/exec", false, false},
	} {
		r := httptest.NewRequest(tc.method, tc.path, strings.NewReader(`{"a":1}`))
		r.Header.Set("Content-Type", "application/json")
		h := created(t)
		if tc.decoded {
			h = decoding
		}
		events, _ := serve(t, policyAt(LevelRequest), r, h)
		if got := events[len(events)-1].RequestObject != nil; got != tc.want {
			t.Errorf("%s %s (decoded %v): requestObject %s, recorded %v want %v", tc.method, tc.path, tc.decoded, events[len(events)-1].RequestObject, got, tc.want)
		}
		if got := string(events[len(events)-1].RequestObject); tc.decoded && tc.want && got != opts {
			t.Errorf("%s %s: requestObject %s, want the encoder's %s", tc.method, tc.path, got, opts)
		}
	}
}

func TestFailureStatusAtMetadataLevel(t *testing.T) {
	events, _ := serve(t, policyAt(LevelMetadata), httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/ns/pods/missing", nil),
		func(w http.ResponseWriter, r *http.Request) {
			LogResponseObject(r.Context())
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
				Message: `pods "missing" not found`, Reason: metav1.StatusReasonNotFound, Code: 404,
				Details: &metav1.StatusDetails{Name: "missing", Kind: "pods"}})
		})
	st := events[len(events)-1].ResponseStatus
	if st == nil || st.Code != 404 || st.Reason != metav1.StatusReasonNotFound || st.Message != `pods "missing" not found` || st.Status != "Failure" {
		t.Errorf("responseStatus %+v", st)
	}
	if events[len(events)-1].ObjectRef.Name != "missing" {
		t.Errorf("objectRef %+v", events[len(events)-1].ObjectRef)
	}
}

func TestWatchHasResponseStarted(t *testing.T) {
	events, _ := serve(t, policyAt(LevelRequestResponse), httptest.NewRequest(http.MethodGet, "/api/v1/pods?watch=true", nil),
		func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			w.Write([]byte(`{"type":"ADDED","object":{}}` + "\n"))
		})
	if got := strings.Join(stageNames(stagesOf(events)), ","); got != "RequestReceived,ResponseStarted,ResponseComplete" {
		t.Fatalf("stages %s", got)
	}
	if events[1].ResponseStatus == nil || events[1].ResponseStatus.Code != 200 || events[2].ResponseObject != nil || events[2].Verb != "watch" {
		t.Errorf("watch events: started %+v, complete body %s verb %s", events[1].ResponseStatus, events[2].ResponseObject, events[2].Verb)
	}
}

func TestNoneAndOmittedStages(t *testing.T) {
	ran := false
	events, rec := serve(t, policyAt(LevelNone), createPod(podJSON, "application/json"), func(w http.ResponseWriter, r *http.Request) {
		ran = true
		w.WriteHeader(http.StatusCreated)
	})
	if len(events) != 0 || !ran || rec.Code != http.StatusCreated || rec.Header().Get("Audit-Id") != "" {
		t.Errorf("level None: %d events, handler ran %v, code %d", len(events), ran, rec.Code)
	}
	events, _ = serve(t, policyAt(LevelMetadata, StageRequestReceived), createPod(podJSON, "application/json"), created(t))
	if got := stageNames(stagesOf(events)); len(got) != 1 || got[0] != "ResponseComplete" {
		t.Errorf("omitStages RequestReceived: stages %v", got)
	}
}

func TestClientAuditIDAnnotationsAndImpersonation(t *testing.T) {
	req := httptest.NewRequest(http.MethodDelete, "/apis/apps/v1/namespaces/ns/deployments/web", nil)
	req.Header.Set("Audit-ID", "client-chosen")
	events, _ := serve(t, policyAt(LevelMetadata), req, func(w http.ResponseWriter, r *http.Request) {
		AddAnnotation(r.Context(), "authorization.k8s.io/decision", "allow")
		AddAnnotation(r.Context(), "authorization.k8s.io/decision", "forbid") // first value wins
		SetImpersonatedUser(r.Context(), &request.User{Name: "bob", Groups: []string{"ops"}})
		w.WriteHeader(http.StatusOK)
	})
	last := events[len(events)-1]
	if last.AuditID != "client-chosen" {
		t.Errorf("auditID %q, want the client's", last.AuditID)
	}
	if last.Annotations["authorization.k8s.io/decision"] != "allow" || events[0].Annotations != nil {
		t.Errorf("annotations %v / %v", events[0].Annotations, last.Annotations)
	}
	if last.ImpersonatedUser == nil || last.ImpersonatedUser.Username != "bob" || last.User.Username != "alice" {
		t.Errorf("user %+v impersonated %+v", last.User, last.ImpersonatedUser)
	}
	if last.Verb != "delete" || last.ObjectRef.APIGroup != "apps" || last.ObjectRef.Resource != "deployments" {
		t.Errorf("verb %s objectRef %+v", last.Verb, last.ObjectRef)
	}
}

func TestPanicIsRecorded(t *testing.T) {
	b := &memBackend{}
	h := WithAudit(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }), Config{Policy: policyAt(LevelMetadata), Backend: b})
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the panic did not propagate")
			}
		}()
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/api/v1/pods", nil))
	}()
	if got := stageNames(stagesOf(b.events)); strings.Join(got, ",") != "RequestReceived,Panic" || b.events[1].ResponseStatus.Code != 500 {
		t.Errorf("stages %v", got)
	}
}

func TestFileBackendWritesJSONLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	fb, err := NewFileBackend(path)
	if err != nil {
		t.Fatal(err)
	}
	h := WithAudit(created(t), Config{Policy: policyAt(LevelRequestResponse), Backend: fb})
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.ServeHTTP(httptest.NewRecorder(), createPod(podJSON, "application/json"))
		}()
	}
	wg.Wait()
	if err := fb.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	info, _ := f.Stat()
	if info.Mode().Perm() != 0o600 {
		t.Errorf("audit log mode %v, want 0600", info.Mode().Perm())
	}
	lines := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("line %d is not JSON: %v: %s", lines, err, sc.Bytes())
		}
		for _, k := range []string{"kind", "apiVersion", "level", "auditID", "stage", "requestURI", "verb", "user", "requestReceivedTimestamp", "stageTimestamp"} {
			if _, ok := ev[k]; !ok {
				t.Errorf("line %d lacks %q", lines, k)
			}
		}
		lines++
	}
	if lines != 16 {
		t.Errorf("%d lines, want 16 (8 requests × 2 stages)", lines)
	}
	fb.ProcessEvent(&Event{})
	if fb.Errors() != 1 {
		t.Errorf("event after Close: %d errors, want 1", fb.Errors())
	}
	var buf bytes.Buffer
	NewWriterBackend(&buf).ProcessEvent(&Event{AuditID: "x"})
	if !strings.HasSuffix(buf.String(), "}\n") {
		t.Errorf("writer backend wrote %q", buf.String())
	}
}

func stagesOf(evs []*Event) []Stage {
	out := make([]Stage, len(evs))
	for i, e := range evs {
		out[i] = e.Stage
	}
	return out
}

func TestFailedAuthenticationAudit(t *testing.T) {
	b := &memBackend{}
	unauthorized := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
	})
	h := WithFailedAuthenticationAudit(unauthorized, Config{Policy: policyAt(LevelMetadata), Backend: b})
	req := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/ns/secrets/s", nil)
	req.Header.Set("Authorization", "Bearer not-a-token")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusUnauthorized || len(b.events) != 1 {
		t.Fatalf("code %d, %d events", rec.Code, len(b.events))
	}
	ev := b.events[0]
	if ev.Stage != StageResponseStarted || ev.ResponseStatus.Code != 401 ||
		ev.ResponseStatus.Message != "Authentication failed, attempted: bearer" || ev.User.Username != "" ||
		ev.ObjectRef.Resource != "secrets" || ev.Verb != "get" {
		t.Errorf("event %+v status %+v", ev, ev.ResponseStatus)
	}
	none := WithFailedAuthenticationAudit(unauthorized, Config{Policy: policyAt(LevelNone), Backend: b})
	none.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/api", nil))
	if len(b.events) != 1 {
		t.Errorf("level None recorded a failed authentication")
	}
}
