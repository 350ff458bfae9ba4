package apiserver_test

import (
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/apiserver/audit"
)

// At the RequestResponse level a protobuf client's answers are recorded
// as JSON, as kube-apiserver's audit encodes the response object with
// its JSON serializer whatever the wire format: a create's, a get's and a
// list's object, each of its kind and with its fields.
func TestAuditResponseObjectOfProtobufClient(t *testing.T) {
	if testing.Short() {
		t.Skip("API server on embedded etcd: skipped with -short")
	}
	b := &auditEvents{evs: map[string][]*audit.Event{}}
	policy, err := audit.ParsePolicy([]byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: RequestResponse\n  resources:\n  - group: \"\"\n    resources: [configmaps]\n"))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(c *apiserver.Config) { c.AuditPolicy, c.AuditBackend = policy, b })
	cfg := rest.CopyConfig(e.rest)
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := ctx(t)
	cms := cs.CoreV1().ConfigMaps("default")
	if _, err := cms.Create(c, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "pb"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Get(c, "pb", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.List(c, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	find := func(verb string) *audit.Event {
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, evs := range b.evs {
			for _, ev := range evs {
				if ev.Stage == audit.StageResponseComplete && ev.Verb == verb && ev.UserAgent != "" &&
					ev.ObjectRef != nil && ev.ObjectRef.Namespace == "default" && ev.User.Username == "admin" {
					return ev
				}
			}
		}
		return nil
	}
	for _, tc := range []struct{ verb, kind string }{{"create", "ConfigMap"}, {"get", "ConfigMap"}, {"list", "ConfigMapList"}} {
		var ev *audit.Event
		for deadline := time.Now().Add(5 * time.Second); ev == nil && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			ev = find(tc.verb)
		}
		if ev == nil {
			t.Errorf("%s: no ResponseComplete event", tc.verb)
			continue
		}
		var obj struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Data  map[string]string  `json:"data"`
			Items []corev1.ConfigMap `json:"items"`
		}
		if err := json.Unmarshal(ev.ResponseObject, &obj); err != nil {
			t.Errorf("%s: responseObject %q: %v", tc.verb, ev.ResponseObject, err)
			continue
		}
		if obj.APIVersion != "v1" || obj.Kind != tc.kind {
			t.Errorf("%s: responseObject of %s %s, want v1 %s: %s", tc.verb, obj.APIVersion, obj.Kind, tc.kind, ev.ResponseObject)
		}
		switch {
		case tc.kind == "ConfigMap" && (obj.Metadata.Name != "pb" || obj.Data["k"] != "v"):
			t.Errorf("%s: responseObject %s, want configmap pb with k=v", tc.verb, ev.ResponseObject)
		case tc.kind == "ConfigMapList" && (len(obj.Items) == 0 || obj.Items[len(obj.Items)-1].Data["k"] != "v"):
			t.Errorf("%s: responseObject %s, want the list with configmap pb", tc.verb, ev.ResponseObject)
		}
	}
}
