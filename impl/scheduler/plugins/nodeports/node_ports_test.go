package nodeports

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"

	fw "github.com/kubeproof/kubeproof/impl/scheduler/framework"
	tu "github.com/kubeproof/kubeproof/impl/scheduler/testutil"
)

func TestFilter(t *testing.T) {
	node := tu.Node("n").Obj()
	tests := []struct {
		name     string
		pod      *v1.Pod
		existing []*v1.Pod
		want     fw.Code
	}{
		{"no host ports", tu.Pod("p").Obj(), []*v1.Pod{tu.Pod("e").HostPort(80, v1.ProtocolTCP, "").Obj()}, fw.Success},
		{"free port", tu.Pod("p").HostPort(8080, v1.ProtocolTCP, "").Obj(), []*v1.Pod{tu.Pod("e").HostPort(80, v1.ProtocolTCP, "").Obj()}, fw.Success},
		{"same port", tu.Pod("p").HostPort(80, v1.ProtocolTCP, "").Obj(), []*v1.Pod{tu.Pod("e").HostPort(80, v1.ProtocolTCP, "").Obj()}, fw.Unschedulable},
		{"same port other protocol", tu.Pod("p").HostPort(53, v1.ProtocolUDP, "").Obj(), []*v1.Pod{tu.Pod("e").HostPort(53, v1.ProtocolTCP, "").Obj()}, fw.Success},
		{"different IPs", tu.Pod("p").HostPort(80, v1.ProtocolTCP, "10.0.0.1").Obj(), []*v1.Pod{tu.Pod("e").HostPort(80, v1.ProtocolTCP, "10.0.0.2").Obj()}, fw.Success},
		{"wildcard conflicts with specific IP", tu.Pod("p").HostPort(80, v1.ProtocolTCP, "0.0.0.0").Obj(), []*v1.Pod{tu.Pod("e").HostPort(80, v1.ProtocolTCP, "10.0.0.2").Obj()}, fw.Unschedulable},
		{"specific IP conflicts with wildcard", tu.Pod("p").HostPort(80, v1.ProtocolTCP, "10.0.0.1").Obj(), []*v1.Pod{tu.Pod("e").HostPort(80, v1.ProtocolTCP, "").Obj()}, fw.Unschedulable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl := &NodePorts{}
			state := fw.NewCycleState()
			if s := pl.PreFilter(context.Background(), state, tt.pod); s.IsSkip() {
				if tt.want != fw.Success {
					t.Fatal("PreFilter skipped a pod with host ports")
				}
				return
			}
			got := pl.Filter(context.Background(), state, tt.pod, tu.NodeInfo(node, tt.existing...))
			if got.Code() != tt.want {
				t.Errorf("Filter = %v, want %v", got, tt.want)
			}
			if tt.want == fw.Unschedulable && got.Message() != ErrReason {
				t.Errorf("reason %q", got.Message())
			}
		})
	}
}
