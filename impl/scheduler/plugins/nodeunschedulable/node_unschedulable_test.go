package nodeunschedulable

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"

	fw "github.com/kubeproof/kubeproof/impl/scheduler/framework"
	tu "github.com/kubeproof/kubeproof/impl/scheduler/testutil"
)

func TestFilter(t *testing.T) {
	tolerate := v1.Toleration{Key: v1.TaintNodeUnschedulable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}
	tests := []struct {
		name string
		pod  *v1.Pod
		node *v1.Node
		want *fw.Status
	}{
		{"schedulable node", tu.Pod("p").Obj(), tu.Node("n").Obj(), nil},
		{"cordoned node", tu.Pod("p").Obj(), tu.Node("n").Unschedulable().Obj(), fw.NewStatus(fw.UnschedulableAndUnresolvable, ErrReasonUnschedulable)},
		{"cordoned node, pod tolerates", tu.Pod("p").Toleration(tolerate).Obj(), tu.Node("n").Unschedulable().Obj(), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := (&NodeUnschedulable{}).Filter(context.Background(), fw.NewCycleState(), tt.pod, tu.NodeInfo(tt.node))
			if got.Code() != tt.want.Code() || got.Message() != tt.want.Message() {
				t.Errorf("Filter = %v, want %v", got, tt.want)
			}
		})
	}
}
