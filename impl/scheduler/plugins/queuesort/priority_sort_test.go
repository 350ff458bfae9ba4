package queuesort

import (
	"testing"
	"time"

	fw "github.com/kubeproof/kubeproof/impl/scheduler/framework"
	tu "github.com/kubeproof/kubeproof/impl/scheduler/testutil"
)

func TestLess(t *testing.T) {
	t0 := time.Unix(1000, 0)
	qi := func(prio int32, at time.Time) *fw.QueuedPodInfo {
		return &fw.QueuedPodInfo{PodInfo: fw.NewPodInfo(tu.Pod("p").Priority(prio).Obj()), Timestamp: at}
	}
	pl := &PrioritySort{}
	if !pl.Less(qi(10, t0.Add(time.Hour)), qi(1, t0)) {
		t.Error("higher priority must come first regardless of arrival")
	}
	if !pl.Less(qi(5, t0), qi(5, t0.Add(time.Second))) {
		t.Error("equal priority: earlier arrival first")
	}
	if pl.Less(qi(5, t0.Add(time.Second)), qi(5, t0)) {
		t.Error("equal priority: later arrival must not come first")
	}
	noPrio := &fw.QueuedPodInfo{PodInfo: fw.NewPodInfo(tu.Pod("q").Obj()), Timestamp: t0}
	if !pl.Less(qi(1, t0.Add(time.Second)), noPrio) {
		t.Error("a pod without priority counts as priority 0")
	}
}
