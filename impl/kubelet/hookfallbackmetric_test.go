package kubelet

import (
	"net/http/httptest"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubeproof/kubeproof/impl/kubelet/server"
)

// TestHTTPFallbackMetric: an HTTPS lifecycle hook answered over plain
// HTTP and retried over HTTP counts in upstream's
// kubelet_lifecycle_handler_http_fallbacks_total (a counter, upstream's
// help text), which the kubelet API's /metrics serves per node as it
// serves kubelet_running_pods; an HTTPS hook that needed no fallback
// does not count. Before, there was no such metric.
func TestHTTPFallbackMetric(t *testing.T) {
	h, rec := eventHarness(t)
	h.krt = sandboxIPRuntime{Runtime: h.rt, ip: "127.0.0.1"}
	h.k = h.newKubelet(func(c *Config) { c.Recorder = rec })
	mux := server.NewMux(server.Options{})
	mux.Add(h.k)
	metric := func() string {
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
		var lines []string
		for _, l := range strings.Split(w.Body.String(), "\n") {
			if strings.Contains(l, "kubelet_lifecycle_handler_http_fallbacks_total") {
				lines = append(lines, l)
			}
		}
		return strings.Join(lines, "\n")
	}
	hook := func(name string, port int) {
		t.Helper()
		p := h.sync(h.create(h.pod(name, func(p *v1.Pod) {
			p.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PostStart: &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{
				Path: "/", Scheme: v1.URISchemeHTTPS, Port: intstr.FromInt32(int32(port))}}}
		})))
		if cs := cstatus(p, "app"); cs.State.Running == nil {
			t.Fatalf("%s: container %+v, want running", name, cs.State)
		}
	}
	head := "# HELP kubelet_lifecycle_handler_http_fallbacks_total [ALPHA] The number of times lifecycle handlers successfully fell back to http from https.\n" +
		"# TYPE kubelet_lifecycle_handler_http_fallbacks_total counter\n"
	node := h.k.NodeName()

	hook("tls", newHookRequests(t, true).port)
	if got, want := metric(), head+`kubelet_lifecycle_handler_http_fallbacks_total{node="`+node+`"} 0`; got != want {
		t.Errorf("after an HTTPS hook without fallback:\n%s\nwant\n%s", got, want)
	}
	hook("plain", newHookRequests(t, false).port)
	if got, want := metric(), head+`kubelet_lifecycle_handler_http_fallbacks_total{node="`+node+`"} 1`; got != want {
		t.Errorf("after an HTTPS hook that fell back to HTTP:\n%s\nwant\n%s", got, want)
	}
}
