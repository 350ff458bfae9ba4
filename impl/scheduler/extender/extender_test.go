package extender

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/scheduler/config"
)

func nodes(names ...string) []*v1.Node {
	var out []*v1.Node
	for _, n := range names {
		out = append(out, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}})
	}
	return out
}

func nodeNames(ns []*v1.Node) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.Name)
	}
	return out
}

// fakeExtender serves the verbs with handler funcs and remembers the last
// filter arguments.
func fakeExtender(t *testing.T, handle func(verb string, body []byte) (int, any)) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s %s with content type %q", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
		}
		var body json.RawMessage
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			t.Errorf("decoding request: %v", err)
		}
		code, answer := handle(strings.TrimPrefix(r.URL.Path, "/ext/"), body)
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(answer)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func newExt(t *testing.T, c config.Extender) *HTTPExtender {
	t.Helper()
	if c.HTTPTimeout.Duration == 0 {
		c.HTTPTimeout.Duration = 5 * time.Second
	}
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestFilterSendsNodesOrNamesAndReturnsWhatItKept(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}}
	for _, cacheCapable := range []bool{false, true} {
		srv := fakeExtender(t, func(verb string, body []byte) (int, any) {
			if verb != "filter" {
				t.Errorf("verb %q", verb)
			}
			var args ExtenderArgs
			if err := json.Unmarshal(body, &args); err != nil {
				t.Fatal(err)
			}
			if args.Pod == nil || args.Pod.Name != "p" {
				t.Errorf("pod %v", args.Pod)
			}
			res := ExtenderFilterResult{
				FailedNodes:                FailedNodesMap{"a": "reserved"},
				FailedAndUnresolvableNodes: FailedNodesMap{"b": "no GPU"},
			}
			if cacheCapable {
				if args.NodeNames == nil || args.Nodes != nil || !slices.Equal(*args.NodeNames, []string{"a", "b", "c", "d"}) {
					t.Errorf("cache-capable extender got names %v nodes %v", args.NodeNames, args.Nodes)
				}
				res.NodeNames = &[]string{"d", "c", "unknown"}
			} else {
				if args.Nodes == nil || args.NodeNames != nil || len(args.Nodes.Items) != 4 {
					t.Errorf("extender got names %v nodes %v", args.NodeNames, args.Nodes)
				}
				res.Nodes = &v1.NodeList{Items: []v1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, {ObjectMeta: metav1.ObjectMeta{Name: "d"}}}}
			}
			return http.StatusOK, res
		})
		e := newExt(t, config.Extender{URLPrefix: srv.URL + "/ext/", FilterVerb: "filter", NodeCacheCapable: cacheCapable})
		kept, failed, unresolvable, err := e.Filter(context.Background(), pod, nodes("a", "b", "c", "d"))
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"c", "d"}
		if cacheCapable {
			want = []string{"d", "c"} // as answered; unknown names are dropped
		}
		if got := nodeNames(kept); !slices.Equal(got, want) {
			t.Errorf("cacheCapable=%v: kept %v, want %v", cacheCapable, got, want)
		}
		if failed["a"] != "reserved" || unresolvable["b"] != "no GPU" {
			t.Errorf("failed %v unresolvable %v", failed, unresolvable)
		}
	}
}

func TestErrorsAndNonFilterExtender(t *testing.T) {
	srv := fakeExtender(t, func(verb string, _ []byte) (int, any) {
		switch verb {
		case "filter":
			return http.StatusOK, ExtenderFilterResult{Error: "quota service down"}
		case "bind":
			return http.StatusOK, ExtenderBindingResult{Error: "node gone"}
		}
		return http.StatusInternalServerError, nil
	})
	e := newExt(t, config.Extender{URLPrefix: srv.URL + "/ext", FilterVerb: "filter", PrioritizeVerb: "prioritize", Weight: 1, BindVerb: "bind"})
	if _, _, _, err := e.Filter(context.Background(), &v1.Pod{}, nodes("a")); err == nil || !strings.Contains(err.Error(), "quota service down") {
		t.Errorf("filter error %v", err)
	}
	if _, _, err := e.Prioritize(context.Background(), &v1.Pod{}, nodes("a")); err == nil || !strings.Contains(err.Error(), "code 500") {
		t.Errorf("prioritize error %v", err)
	}
	if err := e.Bind(context.Background(), &v1.Binding{}); err == nil || !strings.Contains(err.Error(), "node gone") {
		t.Errorf("bind error %v", err)
	}

	// An extender without a filter verb keeps every node without a call.
	none := newExt(t, config.Extender{URLPrefix: "http://127.0.0.1:1"})
	kept, _, _, err := none.Filter(context.Background(), &v1.Pod{}, nodes("a", "b"))
	if err != nil || len(kept) != 2 {
		t.Errorf("non-filter extender: %v %v", kept, err)
	}
	prios, weight, err := none.Prioritize(context.Background(), &v1.Pod{}, nodes("a"))
	if err != nil || weight != 0 || len(prios) != 1 || prios[0].Score != 0 {
		t.Errorf("non-prioritizer: %v %d %v", prios, weight, err)
	}
}

func TestPrioritizeAndBind(t *testing.T) {
	var bound ExtenderBindingArgs
	srv := fakeExtender(t, func(verb string, body []byte) (int, any) {
		switch verb {
		case "prioritize":
			return http.StatusOK, HostPriorityList{{Host: "a", Score: 3}, {Host: "b", Score: 10}}
		case "bind":
			_ = json.Unmarshal(body, &bound)
			return http.StatusOK, ExtenderBindingResult{}
		}
		return http.StatusNotFound, nil
	})
	e := newExt(t, config.Extender{URLPrefix: srv.URL + "/ext", PrioritizeVerb: "prioritize", Weight: 2, BindVerb: "bind"})
	prios, weight, err := e.Prioritize(context.Background(), &v1.Pod{}, nodes("a", "b"))
	if err != nil || weight != 2 || len(prios) != 2 || prios[1] != (HostPriority{Host: "b", Score: 10}) {
		t.Errorf("prioritize: %v %d %v", prios, weight, err)
	}
	b := &v1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u1"}, Target: v1.ObjectReference{Kind: "Node", Name: "b"}}
	if err := e.Bind(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if bound != (ExtenderBindingArgs{PodName: "p", PodNamespace: "ns", PodUID: "u1", Node: "b"}) {
		t.Errorf("bind args %+v", bound)
	}
}

func TestIsInterestedInPodsUsingManagedResources(t *testing.T) {
	e := newExt(t, config.Extender{URLPrefix: "http://x", ManagedResources: []config.ExtenderManagedResource{{Name: "example.com/gpu"}}})
	plain := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}}
	gpu := v1.ResourceList{"example.com/gpu": resource.MustParse("1")}
	requests := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: gpu}}}}}
	limitsInit := &v1.Pod{Spec: v1.PodSpec{InitContainers: []v1.Container{{Name: "i", Resources: v1.ResourceRequirements{Limits: gpu}}}}}
	if e.IsInterested(plain) || !e.IsInterested(requests) || !e.IsInterested(limitsInit) {
		t.Error("an extender with managed resources is interested exactly in pods using them")
	}
	all := newExt(t, config.Extender{URLPrefix: "http://x"})
	if !all.IsInterested(plain) {
		t.Error("an extender without managed resources is interested in every pod")
	}
}
