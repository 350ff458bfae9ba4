package prober

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	v1 "k8s.io/api/core/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

// runGRPC runs a grpc probe: grpc.health.v1.Health/Check for the probe's
// service on the pod IP and port, over plaintext (as upstream's kubelet:
// no TLS, no authentication); only SERVING succeeds. A simulated runtime
// (runtime.GRPCProber) answers for its containers instead.
func runGRPC(ctx context.Context, rt runtime.Runtime, g *v1.GRPCAction, timeout time.Duration, t Target) error {
	service := ""
	if g.Service != nil {
		service = *g.Service
	}
	var status string
	if gp, ok := rt.(runtime.GRPCProber); ok {
		s, err := gp.ProbeGRPC(ctx, t.ContainerID, int(g.Port), service)
		if err != nil {
			return fmt.Errorf("timeout: failed to connect service %q within %v: %w", net.JoinHostPort(t.PodIP, strconv.Itoa(int(g.Port))), timeout, err)
		}
		status = s
	} else {
		s, err := checkHealth(ctx, net.JoinHostPort(t.PodIP, strconv.Itoa(int(g.Port))), service, timeout)
		if err != nil {
			return err
		}
		status = s
	}
	if status != healthpb.HealthCheckResponse_SERVING.String() {
		return fmt.Errorf("service unhealthy (responded with %q)", status)
	}
	return nil
}

// checkHealth calls grpc.health.v1.Health/Check on addr.
func checkHealth(ctx context.Context, addr, service string, timeout time.Duration) (string, error) {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithUserAgent("kube-probe/"+userAgentVersion))
	if err != nil {
		return "", fmt.Errorf("failed to connect service %q: %w", addr, err)
	}
	defer conn.Close()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service}, grpc.WaitForReady(true))
	if err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("timeout: health rpc did not complete within %v", timeout)
		}
		return "", fmt.Errorf("error: health rpc probe failed: %w", err)
	}
	return resp.GetStatus().String(), nil
}
