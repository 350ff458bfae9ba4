package apiserver_test

import (
	"crypto/tls"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/apiserver/componentstatus"
)

// componentsEnv is a server whose componentstatuses probe a healthy
// scheduler, a controller manager answering 500, a port nothing listens
// on and the test etcd; refused is that port's URL.
func componentsEnv(t *testing.T) (e *env, refused string) {
	t.Helper()
	healthy := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" || !strings.HasPrefix(r.UserAgent(), "kube-probe/") {
			http.Error(w, "unexpected probe "+r.URL.Path+" "+r.UserAgent(), http.StatusBadRequest)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(healthy.Close)
	failing := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "secret details", http.StatusInternalServerError)
	}))
	t.Cleanup(failing.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused = "https://" + ln.Addr().String() + "/healthz"
	ln.Close()
	insecure := &tls.Config{InsecureSkipVerify: true}
	ua := componentstatus.UserAgent(apiserver.VersionInfo(apiserver.DefaultGitVersion))
	e = newEnv(t, func(cfg *apiserver.Config) {
		cfg.ComponentStatuses = []componentstatus.Component{
			{Name: "scheduler", Prober: componentstatus.NewHTTP(healthy.URL+"/healthz", insecure, ua)},
			{Name: "controller-manager", Prober: componentstatus.NewHTTP(failing.URL+"/healthz", insecure, ua)},
			{Name: "gone", Prober: componentstatus.NewHTTP(refused, insecure, ua)},
			{Name: "etcd-0", Prober: componentstatus.Etcd{KV: etcdServer.Client(), Prefix: "/registry"}},
		}
	})
	return e, refused
}

// TestComponentStatuses: core/v1 componentstatuses, computed on each read
// as kube-apiserver's componentstatus REST: one Healthy condition per
// component (True with the endpoint's body, False with the HTTP status or
// the request's error as message, etcd "ok"), listed and got with client-go,
// selected by label and field selectors, shown by kubectl's table columns,
// with the kind's deprecation warning; get and list only.
func TestComponentStatuses(t *testing.T) {
	e, refused := componentsEnv(t)
	c := ctx(t)
	warned := &warningsSeen{}
	cfg := *e.rest
	cfg.WarningHandler = warned
	cs, err := kubernetes.NewForConfig(&cfg)
	if err != nil {
		t.Fatal(err)
	}

	list, err := cs.CoreV1().ComponentStatuses().List(c, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	byName := map[string]corev1.ComponentCondition{}
	var names []string
	for _, item := range list.Items {
		names = append(names, item.Name)
		if len(item.Conditions) != 1 || item.Conditions[0].Type != corev1.ComponentHealthy {
			t.Fatalf("%s: conditions %+v, want one Healthy", item.Name, item.Conditions)
		}
		byName[item.Name] = item.Conditions[0]
	}
	if !slices.Equal(names, []string{"controller-manager", "etcd-0", "gone", "scheduler"}) {
		t.Fatalf("listed %v", names)
	}
	want := map[string]corev1.ComponentCondition{
		"scheduler":          {Type: corev1.ComponentHealthy, Status: corev1.ConditionTrue, Message: "ok"},
		"etcd-0":             {Type: corev1.ComponentHealthy, Status: corev1.ConditionTrue, Message: "ok"},
		"controller-manager": {Type: corev1.ComponentHealthy, Status: corev1.ConditionFalse, Message: "HTTP probe failed with statuscode: 500"},
	}
	for name, w := range want {
		if byName[name] != w {
			t.Errorf("%s: %+v, want %+v", name, byName[name], w)
		}
	}
	gone := byName["gone"]
	if gone.Status != corev1.ConditionFalse || gone.Error != "" ||
		!strings.HasPrefix(gone.Message, `Get "`+refused+`": dial tcp `) || !strings.Contains(gone.Message, "connection refused") {
		t.Errorf("gone: %+v, want False with the refused request as message", gone)
	}
	if w := warned.list(); len(w) == 0 || w[0] != "v1 ComponentStatus is deprecated in v1.19+" {
		t.Errorf("warnings %q, want the deprecation", w)
	}

	got, err := cs.CoreV1().ComponentStatuses().Get(c, "scheduler", metav1.GetOptions{})
	if err != nil || got.Name != "scheduler" || got.Conditions[0].Status != corev1.ConditionTrue {
		t.Fatalf("get scheduler: %v %+v", err, got)
	}
	if _, err := cs.CoreV1().ComponentStatuses().Get(c, "nope", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get of an unknown component: %v, want 404", err)
	}

	// Selectors: the objects have no labels; their names are fields.
	for sel, wantNames := range map[[2]string][]string{
		{"", "metadata.name=etcd-0"}:  {"etcd-0"},
		{"", "metadata.name!=etcd-0"}: {"controller-manager", "gone", "scheduler"},
		{"a=b", ""}:                   nil,
		{"!a", "metadata.name=gone"}:  {"gone"},
	} {
		l, err := cs.CoreV1().ComponentStatuses().List(c, metav1.ListOptions{LabelSelector: sel[0], FieldSelector: sel[1]})
		if err != nil {
			t.Fatalf("list %v: %v", sel, err)
		}
		var got []string
		for _, item := range l.Items {
			got = append(got, item.Name)
		}
		if !slices.Equal(got, wantNames) {
			t.Errorf("list %v: %v, want %v", sel, got, wantNames)
		}
	}
	r := e.do("GET", "/api/v1/componentstatuses?fieldSelector=spec.x%3Dy", nil)
	expectStatus(t, r, http.StatusBadRequest, metav1.StatusReasonBadRequest, "spec.x")

	// kubectl get cs: NAME STATUS MESSAGE ERROR.
	r = e.do("GET", "/api/v1/componentstatuses", nil, "Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	if r.code != http.StatusOK {
		t.Fatalf("table: %d %s", r.code, r.body)
	}
	var table metav1.Table
	if err := json.Unmarshal(r.body, &table); err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, col := range table.ColumnDefinitions {
		cols = append(cols, col.Name)
	}
	if !slices.Equal(cols, []string{"Name", "Status", "Message", "Error"}) || len(table.Rows) != 4 {
		t.Fatalf("table columns %v, %d rows", cols, len(table.Rows))
	}
	cells := map[string][]any{}
	for _, row := range table.Rows {
		cells[row.Cells[0].(string)] = row.Cells
	}
	if got := cells["controller-manager"]; got[1] != "Unhealthy" || got[2] != "HTTP probe failed with statuscode: 500" || got[3] != "" {
		t.Errorf("controller-manager row %v", got)
	}
	if got := cells["etcd-0"]; got[1] != "Healthy" || got[2] != "ok" {
		t.Errorf("etcd-0 row %v", got)
	}
	if h := r.header.Get("Warning"); !strings.Contains(h, "v1 ComponentStatus is deprecated in v1.19+") {
		t.Errorf("Warning header %q", h)
	}

	// get and list only: kube-apiserver's router answers the rest, and
	// its list handler refuses a watch.
	for _, tc := range []struct {
		method, path string
		code         int
		msg          string
	}{
		{"POST", "/api/v1/componentstatuses", http.StatusMethodNotAllowed, ""},
		{"DELETE", "/api/v1/componentstatuses", http.StatusMethodNotAllowed, ""},
		{"PUT", "/api/v1/componentstatuses/etcd-0", http.StatusMethodNotAllowed, ""},
		{"PATCH", "/api/v1/componentstatuses/etcd-0", http.StatusMethodNotAllowed, ""},
		{"DELETE", "/api/v1/componentstatuses/etcd-0", http.StatusMethodNotAllowed, ""},
		{"GET", "/api/v1/componentstatuses?watch=true", http.StatusMethodNotAllowed, `watch is not supported on resources of kind \"componentstatuses\"`},
		{"GET", "/api/v1/watch/componentstatuses", http.StatusNotFound, ""},
		{"GET", "/api/v1/watch/componentstatuses/etcd-0", http.StatusNotFound, ""},
		{"GET", "/api/v1/namespaces/default/componentstatuses", http.StatusNotFound, ""},
		{"GET", "/api/v1/componentstatuses/etcd-0/status", http.StatusNotFound, ""},
	} {
		r := e.do(tc.method, tc.path, []byte(`{}`))
		if r.code != tc.code || !strings.Contains(string(r.body), tc.msg) {
			t.Errorf("%s %s: %d %s, want %d %q", tc.method, tc.path, r.code, r.body, tc.code, tc.msg)
		}
	}

	// Discovery: cluster-scoped, short name cs, get and list.
	rl, err := e.cs.Discovery().ServerResourcesForGroupVersion("v1")
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(rl.APIResources, func(r metav1.APIResource) bool { return r.Name == "componentstatuses" })
	if i < 0 {
		t.Fatal("componentstatuses not discovered")
	}
	d := rl.APIResources[i]
	if d.Namespaced || d.Kind != "ComponentStatus" || d.SingularName != "componentstatus" ||
		!slices.Equal(d.ShortNames, []string{"cs"}) || !slices.Equal(d.Verbs, []string{"get", "list"}) {
		t.Errorf("discovery: %+v", d)
	}
}
