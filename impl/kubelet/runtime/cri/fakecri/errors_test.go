package fakecri

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/cri"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// dial serves rt over CRI on a unix socket and returns the kubelet's CRI
// client of it; both end with t.
func dial(t *testing.T, rt runtime.Runtime) *cri.Runtime {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "cri.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	New(rt).Register(g)
	go g.Serve(lis)
	t.Cleanup(g.Stop)
	client, err := cri.Dial(context.Background(), "unix://"+sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	return client
}

// TestCreateContainerImageErrorsAsContainerd: a container whose image does
// not resolve is refused with containerd's CreateContainer error ("failed
// to resolve image <image>: not found", gRPC NotFound), directly by the
// simulation and through the CRI client alike: the status is in the
// error's chain with that message (what the kubelet shows, as upstream's
// startContainer shows the message alone), and the CRI client's error is
// also runtime.ErrNotFound.
func TestCreateContainerImageErrorsAsContainerd(t *testing.T) {
	ctx := context.Background()
	rt, err := sim.New(sim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	client := dial(t, rt)
	sb, err := client.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "ns", Uid: "p"},
		Labels:   map[string]string{runtime.LabelPodUID: "p"},
	}, "")
	if err != nil {
		t.Fatal(err)
	}
	const image = "sha256:0000000000000000000000000000000000000000000000000000000000000000"
	config := &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "app"},
		Image: &runtimeapi.ImageSpec{Image: image}, Labels: map[string]string{runtime.LabelPodUID: "p"}}
	const want = `failed to resolve image "` + image + `": not found`
	for _, tc := range []struct {
		via string
		rt  runtime.Runtime
	}{{"the simulation", rt}, {"CRI", client}} {
		_, err := tc.rt.CreateContainer(ctx, sb, config, nil)
		var gs interface{ GRPCStatus() *grpcstatus.Status }
		if err == nil || !errors.As(err, &gs) || gs.GRPCStatus().Code() != codes.NotFound || gs.GRPCStatus().Message() != want {
			t.Errorf("create through %s: %v; want status NotFound %q in its chain", tc.via, err, want)
		}
	}
	if _, err := client.CreateContainer(ctx, sb, config, nil); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("create through CRI: %v; want runtime.ErrNotFound", err)
	}
}
