package prober

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// grpc probes against a real grpc.health.v1 server over the network.
func TestGRPCProbeOverTheNetwork(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus("db", healthpb.HealthCheckResponse_NOT_SERVING)
	healthpb.RegisterHealthServer(srv, hs)
	go srv.Serve(ln)
	defer srv.Stop()
	port, _ := strconv.Atoi(strings.TrimPrefix(ln.Addr().String(), "127.0.0.1:"))

	target := Target{Container: &v1.Container{Name: "c"}, PodIP: "127.0.0.1"}
	probe := func(service *string, port int) *v1.Probe {
		return &v1.Probe{ProbeHandler: v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: int32(port), Service: service}}, TimeoutSeconds: 2}
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		p    *v1.Probe
		want bool
		msg  string
	}{
		{"serving", probe(nil, port), true, ""},
		{"not serving", probe(ptr.To("db"), port), false, `service unhealthy (responded with "NOT_SERVING")`},
		{"unknown service", probe(ptr.To("nope"), port), false, "health rpc probe failed"},
	} {
		ok, msg := Run(ctx, netRuntime{}, runtime.ProbeLiveness, tc.p, target)
		if ok != tc.want || !strings.Contains(msg, tc.msg) {
			t.Errorf("%s: %v %q", tc.name, ok, msg)
		}
	}
	// Nothing listening: the probe fails within its timeout.
	free, _ := net.Listen("tcp", "127.0.0.1:0")
	freePort, _ := strconv.Atoi(strings.TrimPrefix(free.Addr().String(), "127.0.0.1:"))
	free.Close()
	p := probe(nil, freePort)
	p.TimeoutSeconds = 1
	if ok, msg := Run(ctx, netRuntime{}, runtime.ProbeLiveness, p, target); ok || !strings.Contains(msg, "timeout") {
		t.Errorf("closed port: %v %q", ok, msg)
	}
}

// The simulated runtime answers grpc probes from its annotation.
func TestGRPCProbeSimulated(t *testing.T) {
	for _, tc := range []struct {
		status string
		want   bool
	}{{"", true}, {"NOT_SERVING", false}, {"SERVICE_UNKNOWN", false}} {
		rt, err := sim.New(sim.Config{})
		if err != nil {
			t.Fatal(err)
		}
		ann := map[string]string{}
		if tc.status != "" {
			ann[sim.AnnotationGRPCStatus] = tc.status
		}
		id := startSimContainer(t, rt, ann)
		p := &v1.Probe{ProbeHandler: v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: 9000}}}
		ok, msg := Run(context.Background(), rt, runtime.ProbeReadiness, p, Target{Container: &v1.Container{Name: "app"}, ContainerID: id, PodIP: "10.244.0.2"})
		if ok != tc.want {
			t.Errorf("grpc-status %q: %v %q", tc.status, ok, msg)
		}
	}
}

// startSimContainer runs a sandbox with the pod annotations ann and starts
// a container "app" in it.
func startSimContainer(t *testing.T, rt *sim.Runtime, ann map[string]string) string {
	t.Helper()
	ctx := context.Background()
	sbCfg := &runtimeapi.PodSandboxConfig{
		Metadata:    &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "ns", Uid: "uid-p"},
		Labels:      map[string]string{runtime.LabelPodUID: "uid-p"},
		Annotations: ann,
	}
	sb, err := rt.RunPodSandbox(ctx, sbCfg, "")
	if err != nil {
		t.Fatal(err)
	}
	img := &runtimeapi.ImageSpec{Image: "grpc-server:1"}
	if _, err := rt.PullImage(ctx, img); err != nil {
		t.Fatal(err)
	}
	id, err := rt.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "app"}, Image: img}, sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestGRPCProbeUserAgent: a grpc probe's user agent is upstream's
// prober's, "kube-probe/1.37" (gRPC appends its own after it). Before,
// "kube-probe/kubeproof".
func TestGRPCProbeUserAgent(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	agents := make(chan []string, 1)
	srv := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		select {
		case agents <- md.Get("user-agent"):
		default:
		}
		return h(ctx, req)
	}))
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go srv.Serve(ln)
	defer srv.Stop()
	p := &v1.Probe{ProbeHandler: v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: int32(ln.Addr().(*net.TCPAddr).Port)}}, TimeoutSeconds: 2}
	if ok, msg := Run(context.Background(), netRuntime{}, runtime.ProbeLiveness, p, Target{Container: &v1.Container{Name: "c"}, PodIP: "127.0.0.1"}); !ok {
		t.Fatalf("probe: %s", msg)
	}
	if got := <-agents; len(got) != 1 || !strings.HasPrefix(got[0], "kube-probe/1.37 ") {
		t.Errorf("user agent %q, want kube-probe/1.37 first", got)
	}
}
