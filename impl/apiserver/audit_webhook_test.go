package apiserver_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/apiserver/audit"
)

// auditService is a remote audit service over TLS: it keeps the
// EventLists it is sent, or answers fail when set.
type auditService struct {
	srv   *httptest.Server
	mu    sync.Mutex
	lists []audit.EventList
	fail  bool
}

func newAuditService(t *testing.T) *auditService {
	s := &auditService{}
	s.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.fail {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		var l audit.EventList
		if r.Method != http.MethodPost || r.URL.Path != "/events" || json.Unmarshal(body, &l) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		s.lists = append(s.lists, l)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// kubeconfig is the --audit-webhook-config-file naming the service, its
// CA given inline.
func (s *auditService) kubeconfig(t *testing.T) string {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.srv.Certificate().Raw})
	p := filepath.Join(t.TempDir(), "audit-webhook.kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: audit
  cluster:
    server: %s/events
    certificate-authority-data: %s
users:
- name: kube-apiserver
contexts:
- name: audit
  context: {cluster: audit, user: kube-apiserver}
current-context: audit
`, s.srv.URL, base64.StdEncoding.EncodeToString(ca))
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestAuditWebhookBatchReceivesEventLists: with --audit-webhook-config-file
// (batch mode, the default) the API server's audit events reach the
// remote service as audit.k8s.io/v1 EventLists at the levels the policy
// gives (configmaps with bodies, namespaces metadata only, secrets not
// at all), and closing the backend (server shutdown) sends the events
// still buffered.
func TestAuditWebhookBatchReceivesEventLists(t *testing.T) {
	svc := newAuditService(t)
	policy, err := audit.ParsePolicy([]byte(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  resources: [{group: "", resources: [secrets]}]
- level: RequestResponse
  resources: [{group: "", resources: [configmaps]}]
- level: Metadata
  resources: [{group: "", resources: [namespaces]}]
- level: None
`))
	if err != nil {
		t.Fatal(err)
	}
	backend, err := audit.NewBackends(audit.LogOptions{}, audit.WebhookOptions{ConfigFile: svc.kubeconfig(t)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(c *apiserver.Config) { c.AuditPolicy, c.AuditBackend = policy, backend })
	ctx := context.Background()
	// JSON, as kubectl sends (protobuf bodies are not recorded).
	jsonCfg := rest.CopyConfig(e.rest)
	jsonCfg.ContentType, jsonCfg.AcceptContentTypes = "application/json", "application/json"
	cs, err := kubernetes.NewForConfig(jsonCfg)
	if err != nil {
		t.Fatal(err)
	}
	cms := cs.CoreV1().ConfigMaps("default")
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "audited"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Get(ctx, "audited", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "audited", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "hidden"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	// Batch mode: nothing has to have been sent yet (30s max wait);
	// closing the backend sends everything buffered.
	if err := backend.(io.Closer).Close(); err != nil {
		t.Fatal(err)
	}
	svc.mu.Lock()
	defer svc.mu.Unlock()
	seen := map[string]audit.Event{}
	for _, l := range svc.lists {
		if l.Kind != "EventList" || l.APIVersion != "audit.k8s.io/v1" {
			t.Errorf("sent a %s %s", l.APIVersion, l.Kind)
		}
		for _, ev := range l.Items {
			if ev.ObjectRef == nil {
				t.Errorf("non-resource request audited: %s %s", ev.Verb, ev.RequestURI)
				continue
			}
			if ev.User.Username == apiserver.APIServerUser {
				// The server's own controllers (the legacy token tracking
				// ConfigMap's informer watches, at ResponseStarted too).
				continue
			}
			if ev.Stage != audit.StageResponseComplete {
				t.Errorf("%s %s at stage %s (RequestReceived is omitted)", ev.Verb, ev.RequestURI, ev.Stage)
			}
			if ev.ObjectRef.Resource == "secrets" {
				t.Errorf("secret request audited: %s %s", ev.Verb, ev.RequestURI)
			}
			seen[ev.Verb+" "+ev.ObjectRef.Resource+"/"+ev.ObjectRef.Name] = ev
		}
	}
	for _, k := range []string{"create configmaps/audited", "get configmaps/audited", "delete configmaps/audited"} {
		ev, ok := seen[k]
		if !ok {
			t.Errorf("no event for %s (got %d lists)", k, len(svc.lists))
			continue
		}
		if ev.Level != audit.LevelRequestResponse || len(ev.ResponseObject) == 0 {
			t.Errorf("%s: level %s, response object %d bytes", k, ev.Level, len(ev.ResponseObject))
		}
	}
	if ev := seen["create configmaps/audited"]; !strings.Contains(string(ev.RequestObject), `"k":"v"`) {
		t.Errorf("create's request object %s", ev.RequestObject)
	}
	ns, ok := seen["get namespaces/default"]
	if !ok || ns.Level != audit.LevelMetadata || ns.RequestObject != nil || ns.ResponseObject != nil || ns.ResponseStatus == nil || ns.ResponseStatus.Code != 200 {
		t.Errorf("namespace get event %+v (found %v)", ns, ok)
	}
}

// TestAuditWebhookBlockingStrictFailsRequests: with
// --audit-webhook-mode=blocking-strict a request whose RequestReceived
// event the service does not take (after the retries) is not served: a
// 500, and the object is not created.
func TestAuditWebhookBlockingStrictFailsRequests(t *testing.T) {
	svc := newAuditService(t)
	svc.fail = true
	policy, err := audit.ParsePolicy([]byte(`apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: Metadata
  resources: [{group: "", resources: [configmaps]}]
- level: None
`))
	if err != nil {
		t.Fatal(err)
	}
	w := audit.DefaultWebhookOptions()
	w.ConfigFile, w.Mode, w.InitialBackoff = svc.kubeconfig(t), audit.ModeBlockingStrict, time.Millisecond
	backend, err := audit.NewBackends(audit.LogOptions{}, w, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(c *apiserver.Config) { c.AuditPolicy, c.AuditBackend = policy, backend })
	r := e.do(http.MethodPost, "/api/v1/namespaces/default/configmaps", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"refused"}}`))
	if r.code != http.StatusInternalServerError || !strings.Contains(string(r.body), "failed to store audit event") {
		t.Fatalf("create with the audit service down: %d %s", r.code, r.body)
	}
	svc.mu.Lock()
	svc.fail = false
	svc.mu.Unlock()
	if r := e.do(http.MethodGet, "/api/v1/namespaces/default/configmaps/refused", nil); r.code != http.StatusNotFound {
		t.Errorf("refused create was served: get %d %s", r.code, r.body)
	}
	svc.mu.Lock()
	defer svc.mu.Unlock()
	// The server's own requests (the legacy token tracking ConfigMap's
	// informer and writes, as system:apiserver) are audited too: left aside.
	var lists []audit.EventList
	for _, l := range svc.lists {
		if len(l.Items) > 0 && l.Items[0].User.Username != apiserver.APIServerUser {
			lists = append(lists, l)
		}
	}
	if len(lists) != 2 || len(lists[0].Items) != 1 || lists[0].Items[0].Stage != audit.StageRequestReceived {
		t.Errorf("after recovery the service got %d lists of the client's requests, want 2 single-event ones (RequestReceived, ResponseComplete)", len(lists))
	}
}
