package prober

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

// TestHTTPProbeRequestAsUpstream: an httpGet probe's request is upstream's
// (NewRequestForHTTPGetAction with the "probe" user agent): User-Agent
// "kube-probe/1.37" unless the probe's headers set one, which is kept;
// and an HTTPS probe does not verify the container's certificate, as
// upstream's prober's transport. Before, the user agent was
// "kube-probe/kubeproof" and replaced the probe's own, and an HTTPS probe
// of a self-signed server failed.
func TestHTTPProbeRequestAsUpstream(t *testing.T) {
	var mu sync.Mutex
	var agents []string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		agents = append(agents, r.Header.Get("User-Agent"))
		mu.Unlock()
	}))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	target := Target{Pod: &v1.Pod{}, Container: &v1.Container{Name: "app"}, ContainerID: "c1", PodIP: "127.0.0.1"}
	for _, headers := range [][]v1.HTTPHeader{nil, {{Name: "User-Agent", Value: "mine"}}} {
		p := &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/", Scheme: v1.URISchemeHTTPS,
			Port: intstr.FromInt32(int32(port)), HTTPHeaders: headers}}}
		if ok, msg := Run(context.Background(), netRuntime{}, runtime.ProbeReadiness, p, target); !ok {
			t.Errorf("HTTPS probe of a self-signed server (headers %v): %s", headers, msg)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(agents) != 2 || agents[0] != "kube-probe/1.37" || agents[1] != "mine" {
		t.Errorf("user agents %q, want kube-probe/1.37 then mine", agents)
	}
}
