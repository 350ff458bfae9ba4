package prober

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubeproof/kubeproof/impl/kubelet/podstate"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestDueHonoursInitialDelayAndPeriod(t *testing.T) {
	p := &v1.Probe{InitialDelaySeconds: 5, PeriodSeconds: 3}
	st := Initial(runtime.ProbeReadiness)
	if due, at := Due(p, st, t0, t0.Add(4*time.Second)); due || !at.Equal(t0.Add(5*time.Second)) {
		t.Fatalf("due during initial delay (next %v)", at)
	}
	if due, _ := Due(p, st, t0, t0.Add(5*time.Second)); !due {
		t.Fatal("not due after initial delay")
	}
	st = Record(p, st, true, t0.Add(5*time.Second))
	if due, at := Due(p, st, t0, t0.Add(7*time.Second)); due || !at.Equal(t0.Add(8*time.Second)) {
		t.Fatalf("period not honoured: next %v", at)
	}
}

func TestThresholds(t *testing.T) {
	p := &v1.Probe{SuccessThreshold: 2, FailureThreshold: 3}
	st := Initial(runtime.ProbeReadiness)
	if st.Result != podstate.ProbeFailure {
		t.Fatal("readiness must start as failure")
	}
	if Initial(runtime.ProbeLiveness).Result != podstate.ProbeSuccess || Initial(runtime.ProbeStartup).Result != podstate.ProbeUnknown {
		t.Fatal("initial results")
	}
	seq := []struct {
		ok   bool
		want podstate.ProbeResult
	}{
		{true, podstate.ProbeFailure}, {true, podstate.ProbeSuccess}, {false, podstate.ProbeSuccess},
		{false, podstate.ProbeSuccess}, {true, podstate.ProbeSuccess}, {false, podstate.ProbeSuccess},
		{false, podstate.ProbeSuccess}, {false, podstate.ProbeFailure},
	}
	for i, s := range seq {
		st = Record(p, st, s.ok, t0)
		if st.Result != s.want {
			t.Fatalf("step %d: %v, want %v", i, st.Result, s.want)
		}
	}
}

// netRuntime is a runtime without a NetworkProber, so probes go over the
// network; only the methods Run needs are used.
type netRuntime struct{ runtime.Runtime }

func TestNetworkProbes(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/bad" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	host, portStr, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ := strconv.Atoi(portStr)
	c := &v1.Container{Name: "c", Ports: []v1.ContainerPort{{Name: "http", ContainerPort: int32(port)}}}
	target := Target{Container: c, PodIP: host}
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		probe *v1.Probe
		want  bool
	}{
		{"http ok by name", &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/", Port: intstr.FromString("http")}}}, true},
		{"http 503", &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/bad", Port: intstr.FromInt32(int32(port))}}}, false},
		{"tcp open", &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(int32(port))}}}, true},
		{"unknown port name", &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromString("nope")}}}, false},
	} {
		if ok, msg := Run(ctx, netRuntime{}, runtime.ProbeReadiness, tc.probe, target); ok != tc.want {
			t.Errorf("%s: %v (%s)", tc.name, ok, msg)
		}
	}
}
