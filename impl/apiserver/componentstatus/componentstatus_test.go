package componentstatus

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/version"

	"github.com/kubeproof/kubeproof/impl/storage"
)

func TestHTTPOutcome(t *testing.T) {
	for name, tc := range map[string]struct {
		code    int
		body    string
		reqErr  error
		readErr error
		want    Outcome
	}{
		"ok":                 {code: 200, body: "ok", want: Outcome{Status: corev1.ConditionTrue, Message: "ok"}},
		"204":                {code: 204, want: Outcome{Status: corev1.ConditionTrue}},
		"redirect":           {code: 302, body: "x", want: Outcome{Status: corev1.ConditionUnknown, Message: "Probe terminated redirects, Response body: x"}},
		"500, body withheld": {code: 500, body: "secret", want: Outcome{Status: corev1.ConditionFalse, Message: "HTTP probe failed with statuscode: 500"}},
		"403":                {code: 403, want: Outcome{Status: corev1.ConditionFalse, Message: "HTTP probe failed with statuscode: 403"}},
		"refused":            {reqErr: errors.New("dial tcp: connection refused"), want: Outcome{Status: corev1.ConditionFalse, Message: "dial tcp: connection refused"}},
		"body cut":           {code: 200, readErr: errors.New("unexpected EOF"), want: Outcome{Status: corev1.ConditionUnknown, Error: "unexpected EOF"}},
	} {
		if got := httpOutcome(tc.code, []byte(tc.body), tc.reqErr, tc.readErr); got != tc.want {
			t.Errorf("%s: %+v, want %+v", name, got, tc.want)
		}
	}
}

func TestHTTPProbeFollowsRedirectsAndCapsBody(t *testing.T) {
	big := make([]byte, 20<<10)
	for i := range big {
		big[i] = 'a'
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/old" {
			http.Redirect(w, r, "/healthz", http.StatusFound)
			return
		}
		if r.Header.Get("User-Agent") != "kube-probe/1.37" || r.Header.Get("Accept") != "*/*" {
			http.Error(w, "headers", http.StatusBadRequest)
			return
		}
		_, _ = w.Write(big)
	}))
	defer srv.Close()
	got := NewHTTP(srv.URL+"/old", nil, UserAgent(version.Info{GitVersion: "v1.37.2-kubeproof", Major: "1", Minor: "37"})).Probe(context.Background())
	if got.Status != corev1.ConditionTrue || len(got.Message) != maxBodyBytes {
		t.Errorf("probe: %s with a %d-byte message, want True with %d bytes", got.Status, len(got.Message), maxBodyBytes)
	}
}

// failingKV is an etcd KV whose reads fail.
type failingKV struct{ clientv3.KV }

func (failingKV) Get(context.Context, string, ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	return nil, errors.New("etcdserver: request timed out")
}

func TestEtcdProbeFailure(t *testing.T) {
	got := Etcd{KV: failingKV{}, Prefix: "/registry"}.Probe(context.Background())
	want := Outcome{Status: corev1.ConditionFalse, Error: "error getting data from etcd: etcdserver: request timed out"}
	if got != want {
		t.Errorf("%+v, want %+v", got, want)
	}
}

type fixed Outcome

func (f fixed) Probe(context.Context) Outcome { return Outcome(f) }

func TestStore(t *testing.T) {
	s := NewStore([]Component{
		{Name: "b", Prober: fixed{Status: corev1.ConditionFalse, Message: "down"}},
		{Name: "a", Prober: fixed{Status: corev1.ConditionTrue, Message: "ok"}},
	})
	ctx := context.Background()
	var cs corev1.ComponentStatus
	if err := s.Get(ctx, "/componentstatuses/b", storage.GetOptions{}, &cs); err != nil || cs.Name != "b" ||
		cs.Conditions[0] != (corev1.ComponentCondition{Type: corev1.ComponentHealthy, Status: corev1.ConditionFalse, Message: "down"}) {
		t.Errorf("get b: %v %+v", err, cs)
	}
	if err := s.Get(ctx, "/componentstatuses/c", storage.GetOptions{}, &cs); !storage.IsNotFound(err) {
		t.Errorf("get c: %v, want not found", err)
	}
	var list corev1.ComponentStatusList
	if err := s.GetList(ctx, "/componentstatuses/", storage.ListOptions{Predicate: storage.Everything()}, &list); err != nil ||
		len(list.Items) != 2 || list.Items[0].Name != "a" || list.Items[1].Name != "b" {
		t.Errorf("list: %v %+v", err, list.Items)
	}
	p := storage.Everything()
	p.Label = labels.SelectorFromSet(labels.Set{"x": "y"})
	if err := s.GetList(ctx, "/componentstatuses/", storage.ListOptions{Predicate: p}, &list); err != nil || len(list.Items) != 0 {
		t.Errorf("list by label: %v %+v", err, list.Items)
	}
	if err := s.Create(ctx, "/componentstatuses/a", &cs, nil); err == nil {
		t.Error("create accepted")
	}
}
