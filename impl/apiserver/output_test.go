package apiserver_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
)

const tableV1 = "application/json;as=Table;v=v1;g=meta.k8s.io"

func TestTableOutput(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	if _, err := e.cs.CoreV1().Pods("default").Create(c, pod("t1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// what kubectl get sends.
	accept := tableV1 + ",application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
	for _, path := range []string{"/api/v1/namespaces/default/pods", "/api/v1/namespaces/default/pods/t1"} {
		r := e.do("GET", path, nil, "Accept", accept)
		if r.code != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "application/json;as=Table") {
			t.Fatalf("%s: %d %q %s", path, r.code, r.header.Get("Content-Type"), r.body)
		}
		var tbl metav1.Table
		if err := json.Unmarshal(r.body, &tbl); err != nil {
			t.Fatal(err)
		}
		if tbl.Kind != "Table" || tbl.APIVersion != "meta.k8s.io/v1" || len(tbl.ColumnDefinitions) == 0 || len(tbl.Rows) != 1 || tbl.ResourceVersion == "" {
			t.Fatalf("%s: table %s", path, r.body)
		}
		var pom metav1.PartialObjectMetadata
		if err := json.Unmarshal(tbl.Rows[0].Object.Raw, &pom); err != nil || pom.Kind != "PartialObjectMetadata" || pom.Name != "t1" {
			t.Fatalf("%s: row object %s", path, tbl.Rows[0].Object.Raw)
		}
	}
	r := e.do("GET", "/api/v1/namespaces/default/pods?includeObject=Object", nil, "Accept", tableV1)
	var tbl metav1.Table
	if err := json.Unmarshal(r.body, &tbl); err != nil || !strings.Contains(string(tbl.Rows[0].Object.Raw), `"kind":"Pod"`) {
		t.Fatalf("includeObject=Object: %v %s", err, r.body)
	}
	r = e.do("GET", "/api/v1/namespaces/default/pods?includeObject=None", nil, "Accept", tableV1)
	tbl = metav1.Table{}
	if err := json.Unmarshal(r.body, &tbl); err != nil || tbl.Rows[0].Object.Raw != nil {
		t.Fatalf("includeObject=None: %v %s", err, r.body)
	}
	// Table is not offered for non-tabular endpoints: fall back or 406.
	r = e.do("GET", "/api/v1/namespaces/default/pods/t1/status", nil, "Accept", tableV1)
	expectStatus(t, r, http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable, "")
	// YAML.
	r = e.do("GET", "/api/v1/namespaces/default/pods/t1", nil, "Accept", "application/yaml")
	if r.code != 200 || !strings.Contains(string(r.body), "kind: Pod") {
		t.Fatalf("yaml: %d %s", r.code, r.body)
	}
}

func TestTableWatch(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	if _, err := e.cs.CoreV1().Pods("default").Create(c, pod("tw"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r := e.do("GET", "/api/v1/namespaces/default/pods?watch=true&resourceVersion=0&timeoutSeconds=1", nil, "Accept", tableV1)
	lines := strings.Split(strings.TrimSpace(string(r.body)), "\n")
	if r.code != 200 || len(lines) != 1 {
		t.Fatalf("table watch: %d %s", r.code, r.body)
	}
	var ev struct {
		Type   string
		Object metav1.Table
	}
	if err := json.Unmarshal([]byte(lines[0]), &ev); err != nil || ev.Type != "ADDED" || ev.Object.Kind != "Table" || len(ev.Object.Rows) != 1 || len(ev.Object.ColumnDefinitions) == 0 {
		t.Fatalf("event: %v %s", err, lines[0])
	}
}

func TestPartialObjectMetadata(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	if _, err := e.cs.CoreV1().ConfigMaps("default").Create(c, configMap("", "meta", map[string]string{"big": "data"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mc, err := metadata.NewForConfig(e.rest)
	if err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	list, err := mc.Resource(gvr).Namespace("default").List(c, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != "meta" || list.Items[0].UID == "" {
		t.Fatalf("metadata list: %v %+v", err, list)
	}
	r := e.do("GET", "/api/v1/namespaces/default/configmaps/meta", nil, "Accept", "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1")
	if r.code != 200 || !strings.Contains(string(r.body), `"kind":"PartialObjectMetadata"`) || strings.Contains(string(r.body), `"big"`) {
		t.Fatalf("partial metadata get: %d %s", r.code, r.body)
	}
	one, err := mc.Resource(gvr).Namespace("default").Get(c, "meta", metav1.GetOptions{})
	if err != nil || one.Name != "meta" || one.UID != list.Items[0].UID {
		t.Fatalf("metadata get: %v %+v", err, one)
	}
}

func TestDiscovery(t *testing.T) {
	e := newEnv(t, nil)
	dc, err := discovery.NewDiscoveryClientForConfig(e.rest)
	if err != nil {
		t.Fatal(err)
	}
	groups, resources, err := dc.ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, g := range groups {
		names[g.Name] = true
	}
	for _, want := range []string{"", "apps", "coordination.k8s.io", "rbac.authorization.k8s.io", "scheduling.k8s.io", "events.k8s.io"} {
		if !names[want] {
			t.Errorf("group %q missing from %v", want, names)
		}
	}
	found := map[string]metav1.APIResource{}
	for _, l := range resources {
		for _, r := range l.APIResources {
			found[l.GroupVersion+"/"+r.Name] = r
		}
	}
	pods, ok := found["v1/pods"]
	if !ok || !pods.Namespaced || pods.Kind != "Pod" || len(pods.ShortNames) == 0 || pods.SingularName != "pod" {
		t.Fatalf("pods: %+v", pods)
	}
	for _, sub := range []string{"v1/pods/status", "v1/pods/binding", "apps/v1/deployments/scale", "v1/namespaces/finalize"} {
		if _, ok := found[sub]; !ok {
			t.Errorf("subresource %s missing", sub)
		}
	}
	// the legacy documents, when aggregated discovery is not asked for.
	r := e.do("GET", "/api", nil, "Accept", "application/json")
	if r.code != 200 || !strings.Contains(string(r.body), `"kind":"APIVersions"`) {
		t.Fatalf("/api: %s", r.body)
	}
	r = e.do("GET", "/apis", nil)
	if !strings.Contains(string(r.body), `"kind":"APIGroupList"`) || !strings.Contains(string(r.body), `"name":"apps"`) {
		t.Fatalf("/apis: %s", r.body)
	}
	r = e.do("GET", "/apis/apps", nil)
	if !strings.Contains(string(r.body), `"kind":"APIGroup"`) || !strings.Contains(string(r.body), `"preferredVersion"`) {
		t.Fatalf("/apis/apps: %s", r.body)
	}
	r = e.do("GET", "/apis/apps/v1", nil)
	if !strings.Contains(string(r.body), `"kind":"APIResourceList"`) || !strings.Contains(string(r.body), `"name":"deployments/scale"`) {
		t.Fatalf("/apis/apps/v1: %s", r.body)
	}
	// aggregated v2beta1 (kubectl 1.27-1.29).
	r = e.do("GET", "/apis", nil, "Accept", "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json")
	if !strings.Contains(r.header.Get("Content-Type"), "v=v2beta1") || !strings.Contains(string(r.body), `"apiVersion":"apidiscovery.k8s.io/v2beta1"`) {
		t.Fatalf("v2beta1: %q %s", r.header.Get("Content-Type"), r.body)
	}
	r = e.do("GET", "/apis/nope", nil)
	expectStatus(t, r, http.StatusNotFound, metav1.StatusReasonNotFound, "")
	r = e.do("POST", "/apis", []byte(`{}`))
	expectStatus(t, r, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, "")

	v, err := dc.ServerVersion()
	if err != nil || v.GitVersion != "v1.37.2-kubeproof" || v.Major != "1" || v.Minor != "37" {
		t.Fatalf("version: %v %+v", err, v)
	}
}
