package apiserver_test

import (
	"encoding/json"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/apiserver/audit"
)

// TestAuditRequestObjectIsTheDecodedObject: as kube-apiserver's
// LogRequestObject, a create's or an update's requestObject is the object
// the body decoded to, defaulted as its decoder defaults it, encoded again
// as JSON in the body's group version (kind first, fields in the type's
// order, maps sorted), whatever the body's media type: a protobuf body is
// recorded too. The fields the create fills later (namespace from the
// path, uid, creationTimestamp) are not in it.
func TestAuditRequestObjectIsTheDecodedObject(t *testing.T) {
	b := &auditEvents{evs: map[string][]*audit.Event{}}
	policy, err := audit.ParsePolicy([]byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Request\n"))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(c *apiserver.Config) { c.AuditPolicy, c.AuditBackend = policy, b })
	e.waitReady()
	send := func(id, method, path, ct string, body []byte, code int) string {
		t.Helper()
		if r := e.do(method, path, body, "Audit-ID", id, "Content-Type", ct); r.code != code {
			t.Fatalf("%s %s: code %d, want %d: %s", method, path, r.code, code, r.body)
		}
		ev := b.stage(id, audit.StageResponseComplete)
		if ev == nil {
			t.Fatalf("%s: no ResponseComplete event", id)
		}
		return string(ev.RequestObject)
	}

	got := send("json", http.MethodPost, "/api/v1/namespaces/default/configmaps", "application/json",
		[]byte(`{"metadata": {"name": "ro"}, "data": {"b": "2", "a": "1"}, "apiVersion": "v1", "kind": "ConfigMap"}`), 201)
	if want := `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"ro"},"data":{"a":"1","b":"2"}}`; got != want {
		t.Errorf("JSON create: requestObject %s, want %s", got, want)
	}

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ro-pb"}, Data: map[string]string{"k": "v"}}
	raw, err := cm.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	env, err := (&runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, Raw: raw}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	got = send("protobuf", http.MethodPost, "/api/v1/namespaces/default/configmaps", "application/vnd.kubernetes.protobuf",
		append([]byte("k8s\x00"), env...), 201)
	if want := `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"ro-pb"},"data":{"k":"v"}}`; got != want {
		t.Errorf("protobuf create: requestObject %s, want %s", got, want)
	}

	got = send("update", http.MethodPut, "/api/v1/namespaces/default/configmaps/ro", "application/json",
		[]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"ro"},"data":{"z":"1"}}`), 200)
	if want := `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"ro"},"data":{"z":"1"}}`; got != want {
		t.Errorf("update: requestObject %s, want %s", got, want)
	}

	// A pod's defaults (kube-apiserver's decoder applies them) are in it.
	got = send("pod", http.MethodPost, "/api/v1/namespaces/default/pods", "application/json",
		[]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"ro"},"spec":{"containers":[{"name":"c","image":"busybox:1.36"}]}}`), 201)
	var pod map[string]any
	if err := json.Unmarshal([]byte(got), &pod); err != nil {
		t.Fatalf("pod requestObject %s: %v", got, err)
	}
	spec, _ := pod["spec"].(map[string]any)
	containers, _ := spec["containers"].([]any)
	if len(containers) != 1 {
		t.Fatalf("pod requestObject %s: no container", got)
	}
	c := containers[0].(map[string]any)
	for k, want := range map[string]any{"restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "schedulerName": "default-scheduler",
		"terminationGracePeriodSeconds": 30.0, "enableServiceLinks": true} {
		if spec[k] != want {
			t.Errorf("pod requestObject spec.%s = %v, want %v", k, spec[k], want)
		}
	}
	for k, want := range map[string]any{"imagePullPolicy": "IfNotPresent", "terminationMessagePath": "/dev/termination-log",
		"terminationMessagePolicy": "File"} {
		if c[k] != want {
			t.Errorf("pod requestObject container %s = %v, want %v", k, c[k], want)
		}
	}
	if md := pod["metadata"].(map[string]any); md["namespace"] != nil || md["uid"] != nil || md["creationTimestamp"] != nil {
		t.Errorf("pod requestObject metadata %v: want only what the body set", md)
	}
	if pod["kind"] != "Pod" || pod["apiVersion"] != "v1" {
		t.Errorf("pod requestObject kind %v apiVersion %v", pod["kind"], pod["apiVersion"])
	}
}
