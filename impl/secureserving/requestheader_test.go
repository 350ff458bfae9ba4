package secureserving

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubeproof/kubeproof/impl/pki"
)

func clientCert(t *testing.T, ca *pki.CA, user string, groups ...string) tls.Certificate {
	t.Helper()
	kp, err := ca.IssueClient(user, groups)
	if err != nil {
		t.Fatal(err)
	}
	c, err := kp.TLSCertificate()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func writeCA(t *testing.T, name string) (*pki.CA, string) {
	t.Helper()
	ca, err := pki.NewCA(name)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), name+".crt")
	if err := os.WriteFile(file, ca.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return ca, file
}

// alwaysSending is a client that sends cert whatever CAs the server
// names as acceptable (as curl does).
func alwaysSending(cert tls.Certificate) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		InsecureSkipVerify:   true, //nolint:gosec // a test of a self-signed server
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil },
	}}}
}

// recordingAccess allows everything and records the reviews' specs.
type recordingAccess struct {
	asked []authorizationv1.SubjectAccessReviewSpec
}

func (r *recordingAccess) Create(_ context.Context, sar *authorizationv1.SubjectAccessReview, _ metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error) {
	r.asked = append(r.asked, sar.Spec)
	sar.Status.Allowed = true
	return sar, nil
}

// TestRequestHeaderAuthentication: as kube-scheduler's and
// kube-controller-manager's --requestheader-* flags, a request whose client
// certificate the front-proxy CA verifies, with an allowed CommonName, is
// from the user X-Remote-User names, with X-Remote-Group's groups,
// X-Remote-Extra-<key> extras (key lower-cased and %-unescaped) and, with
// --requestheader-uid-headers, a UID; the handler does not see those
// headers. A front proxy whose name is not allowed, or a certificate of
// another CA, is 401; the front proxy's certificate without a user header
// is not the proxy's own identity (x509 against --client-ca-file refuses
// it: 401); an ordinary client certificate still authenticates.
func TestRequestHeaderAuthentication(t *testing.T) {
	proxyCA, proxyCAFile := writeCA(t, "front-proxy-ca")
	clientCA, clientCAFile := writeCA(t, "clients")
	o := NewOptions(10257, "kube-controller-manager")
	o.ClientCAFile = clientCAFile
	o.RequestHeader.ClientCAFile = proxyCAFile
	o.RequestHeader.AllowedNames = []string{"front-proxy-client"}
	o.RequestHeader.UIDHeaders = []string{"X-Remote-Uid"}
	access := &recordingAccess{}
	seen := make(chan http.Header, 10)
	base := startWith(t, o, func(s *Server) { s.authz.reviews = access }, func(mux *http.ServeMux) {
		mux.HandleFunc("/headers", func(w http.ResponseWriter, r *http.Request) { seen <- r.Header.Clone() })
	})
	proxy := insecureClient(clientCert(t, proxyCA, "front-proxy-client"))
	req := func(client *http.Client, headers map[string][]string) int {
		t.Helper()
		r, err := http.NewRequest(http.MethodGet, base+"/headers", nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, vs := range headers {
			for _, v := range vs {
				r.Header.Add(k, v)
			}
		}
		resp, err := client.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	code := req(proxy, map[string][]string{
		"X-Remote-User": {"jane"}, "X-Remote-Uid": {"1234"}, "X-Remote-Group": {"devs", "ops"},
		"X-Remote-Extra-Scopes%2fRead": {"a", "b"}, "X-Other": {"kept"},
	})
	if code != 200 {
		t.Fatalf("front proxy for jane: %d", code)
	}
	h := <-seen
	for _, gone := range []string{"X-Remote-User", "X-Remote-Uid", "X-Remote-Group", "X-Remote-Extra-Scopes%2fRead"} {
		if h.Get(gone) != "" {
			t.Errorf("handler saw %s: %q", gone, h.Get(gone))
		}
	}
	if h.Get("X-Other") != "kept" {
		t.Errorf("X-Other: %q", h.Get("X-Other"))
	}
	if len(access.asked) != 1 {
		t.Fatalf("reviews: %+v", access.asked)
	}
	got := access.asked[0]
	if got.User != "jane" || got.UID != "1234" || !slices.Equal(got.Groups, []string{"devs", "ops", "system:authenticated"}) ||
		len(got.Extra) != 1 || !slices.Equal(got.Extra["scopes/read"], []string{"a", "b"}) {
		t.Errorf("review of jane: %+v", got)
	}

	if code := req(insecureClient(clientCert(t, proxyCA, "someone-else")), map[string][]string{"X-Remote-User": {"jane"}}); code != 401 {
		t.Errorf("front proxy not in allowed names: %d, want 401", code)
	}
	other, _ := writeCA(t, "other")
	if code := req(alwaysSending(clientCert(t, other, "front-proxy-client")), map[string][]string{"X-Remote-User": {"jane"}}); code != 401 {
		t.Errorf("front proxy of another CA: %d, want 401", code)
	}
	if code := req(proxy, nil); code != 401 {
		t.Errorf("front proxy without user headers: %d, want 401", code)
	}
	access.asked = nil
	if code := req(insecureClient(clientCert(t, clientCA, "carol", "g")), map[string][]string{"X-Remote-User": {"jane"}}); code != 200 {
		t.Errorf("ordinary client certificate: %d", code)
	}
	if len(access.asked) != 1 || access.asked[0].User != "carol" {
		t.Errorf("ordinary client certificate reviewed as %+v, want carol (headers not trusted)", access.asked)
	}
}

// TestLookupFillsWhatFlagsLeaveOut: as the delegating authentication
// options, the client CA and the front-proxy configuration missing from
// the flags come from kube-system/extension-apiserver-authentication (the
// header lists replacing the flags'); given flags win; a missing
// ConfigMap leaves them off without an error; a forbidden read is an
// error.
func TestLookupFillsWhatFlagsLeaveOut(t *testing.T) {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "extension-apiserver-authentication"},
		Data: map[string]string{
			"client-ca-file":                     "CLIENT CA",
			"requestheader-client-ca-file":       "PROXY CA",
			"requestheader-allowed-names":        `["front-proxy-client"]`,
			"requestheader-username-headers":     `["X-Remote-User"]`,
			"requestheader-uid-headers":          `[]`,
			"requestheader-group-headers":        `["X-Remote-Group"]`,
			"requestheader-extra-headers-prefix": `["X-Remote-Extra-"]`,
		},
	}
	log := slog.New(slog.DiscardHandler)
	o := NewOptions(10259, "kube-scheduler")
	tr, err := loadTrust(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.lookup(context.Background(), fake.NewClientset(cm), log); err != nil {
		t.Fatal(err)
	}
	want := RequestHeaderOptions{
		ClientCAFile: "extension-apiserver-authentication", AllowedNames: []string{"front-proxy-client"},
		UsernameHeaders: []string{"X-Remote-User"}, UIDHeaders: []string{}, GroupHeaders: []string{"X-Remote-Group"},
		ExtraHeaderPrefixes: []string{"X-Remote-Extra-"},
	}
	if string(tr.clientCA) != "CLIENT CA" || string(tr.requestHeaderCA) != "PROXY CA" || !equalJSON(tr.requestHeader, want) {
		t.Errorf("looked up: %q %q %+v", tr.clientCA, tr.requestHeaderCA, tr.requestHeader)
	}

	_, proxyFile := writeCA(t, "proxy")
	o.RequestHeader.ClientCAFile = proxyFile
	o.RequestHeader.UsernameHeaders = []string{"X-User"}
	if tr, err = loadTrust(o); err != nil {
		t.Fatal(err)
	}
	if err := tr.lookup(context.Background(), fake.NewClientset(cm), log); err != nil {
		t.Fatal(err)
	}
	if string(tr.clientCA) != "CLIENT CA" || strings.Contains(string(tr.requestHeaderCA), "PROXY CA") || !slices.Equal(tr.requestHeader.UsernameHeaders, []string{"X-User"}) {
		t.Errorf("with --requestheader-client-ca-file: %q %+v", tr.clientCA, tr.requestHeader)
	}

	o = NewOptions(10259, "kube-scheduler")
	tr, _ = loadTrust(o)
	if err := tr.lookup(context.Background(), fake.NewClientset(), log); err != nil || tr.clientCA != nil || tr.requestHeaderCA != nil {
		t.Errorf("no ConfigMap: %v %q %q", err, tr.clientCA, tr.requestHeaderCA)
	}
	forbidden := fake.NewClientset()
	forbidden.PrependReactor("get", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "extension-apiserver-authentication", nil)
	})
	if err := tr.lookup(context.Background(), forbidden, log); err == nil || !apierrors.IsForbidden(err) {
		t.Errorf("forbidden: %v", err)
	}
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// TestIdentityHeadersNeverReachHandler: as k8s.io/apiserver's
// authentication filter, once a request is authenticated (by a client
// certificate, a token, or as anonymous) the handler sees neither its
// Authorization header nor any front-proxy identity header: the standard
// X-Remote-User, -Uid, -Group and X-Remote-Extra-* and the configured
// --requestheader-* ones, whoever sent them. Only the front proxy's own
// request makes them the user (TestRequestHeaderAuthentication).
func TestIdentityHeadersNeverReachHandler(t *testing.T) {
	proxyCA, proxyCAFile := writeCA(t, "front-proxy-ca")
	clientCA, clientCAFile := writeCA(t, "clients")
	o := NewOptions(10259, "kube-scheduler")
	o.ClientCAFile = clientCAFile
	o.RequestHeader.ClientCAFile = proxyCAFile
	o.RequestHeader.UsernameHeaders = []string{"X-Proxy-User"}
	o.RequestHeader.UIDHeaders = []string{"X-Proxy-Uid"}
	o.RequestHeader.GroupHeaders = []string{"X-Proxy-Group"}
	o.RequestHeader.ExtraHeaderPrefixes = []string{"X-Proxy-Extra-"}
	access := &recordingAccess{}
	seen := make(chan http.Header, 10)
	base := startWith(t, o, func(s *Server) {
		s.authn.tokens = fakeTokens{}
		s.authz.reviews = access
	}, func(mux *http.ServeMux) {
		mux.HandleFunc("/headers", func(w http.ResponseWriter, r *http.Request) { seen <- r.Header.Clone() })
	})
	forged := map[string]string{
		"X-Remote-User": "admin", "X-Remote-Uid": "0", "X-Remote-Group": "ops", "X-Remote-Extra-Scopes": "all",
		"X-Proxy-User": "admin", "X-Proxy-Uid": "0", "X-Proxy-Group": "ops", "X-Proxy-Extra-Scopes": "all",
	}
	for _, tc := range []struct {
		name, token string
		client      *http.Client
		user        string
	}{
		{name: "client certificate", client: insecureClient(clientCert(t, clientCA, "carol")), user: "carol"},
		{name: "bearer token", client: insecureClient(), token: "good", user: "alice"},
		{name: "anonymous", client: insecureClient(), user: "system:anonymous"},
		{name: "front proxy", client: insecureClient(clientCert(t, proxyCA, "front-proxy-client")), user: "admin"},
	} {
		access.asked = nil
		r, err := http.NewRequest(http.MethodGet, base+"/headers", nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range forged {
			r.Header.Set(k, v)
		}
		if tc.token != "" {
			r.Header.Set("Authorization", "Bearer "+tc.token)
		}
		r.Header.Set("X-Other", "kept")
		resp, err := tc.client.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%s: %d", tc.name, resp.StatusCode)
			continue
		}
		if len(access.asked) != 1 || access.asked[0].User != tc.user {
			t.Errorf("%s: reviewed as %+v, want %s", tc.name, access.asked, tc.user)
		}
		h := <-seen
		for name := range forged {
			if v := h.Get(name); v != "" {
				t.Errorf("%s: handler saw %s: %q", tc.name, name, v)
			}
		}
		if v := h.Get("Authorization"); v != "" {
			t.Errorf("%s: handler saw Authorization: %q", tc.name, v)
		}
		if h.Get("X-Other") != "kept" {
			t.Errorf("%s: X-Other: %q", tc.name, h.Get("X-Other"))
		}
	}
}
