package nodename

import (
	"context"
	"testing"

	fw "github.com/kubeproof/kubeproof/impl/scheduler/framework"
	tu "github.com/kubeproof/kubeproof/impl/scheduler/testutil"
)

func TestFilter(t *testing.T) {
	tests := []struct {
		name     string
		nodeName string
		want     fw.Code
	}{
		{"no node name", "", fw.Success},
		{"matching node name", "n1", fw.Success},
		{"other node name", "n2", fw.UnschedulableAndUnresolvable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := tu.Pod("p").Node(tt.nodeName).Obj()
			got := (&NodeName{}).Filter(context.Background(), fw.NewCycleState(), pod, tu.NodeInfo(tu.Node("n1").Obj()))
			if got.Code() != tt.want {
				t.Errorf("Filter = %v, want %v", got, tt.want)
			}
			if tt.want != fw.Success && got.Message() != ErrReason {
				t.Errorf("reason = %q, want %q", got.Message(), ErrReason)
			}
		})
	}
}
