package scheduler

import (
	"context"
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	schedcache "github.com/kubeproof/kubeproof/impl/scheduler/cache"
	"github.com/kubeproof/kubeproof/impl/scheduler/config"
	fw "github.com/kubeproof/kubeproof/impl/scheduler/framework"
	"github.com/kubeproof/kubeproof/impl/scheduler/plugins"
	tu "github.com/kubeproof/kubeproof/impl/scheduler/testutil"
)

// The scheduler_perf SchedulingBasic shapes: nodes of 4 cpu / 32Gi / 110
// pods, pods requesting 100m / 500Mi.
func perfNode(i int) *v1.Node {
	return tu.Node(fmt.Sprintf("node-%05d", i)).Capacity("cpu", "4", "memory", "32Gi", "pods", "110").
		Label(v1.LabelTopologyZone, fmt.Sprintf("zone-%d", i%3)).Obj()
}

func perfPod(i int) *v1.Pod {
	p := tu.Pod(fmt.Sprintf("pod-%06d", i)).Req("cpu", "100m", "memory", "500Mi").Obj()
	p.UID = types.UID(fmt.Sprintf("uid-%06d", i))
	return p
}

// BenchmarkFilterScorePerNode measures the default plugins' Filter and
// Score on one node holding 30 pods.
func BenchmarkFilterScorePerNode(b *testing.B) {
	node := perfNode(0)
	var pods []*v1.Pod
	for i := 0; i < 30; i++ {
		p := perfPod(i)
		p.Spec.NodeName = node.Name
		pods = append(pods, p)
	}
	snap := schedcache.NewSnapshot(pods, []*v1.Node{node})
	f, err := fw.NewFramework(context.Background(), plugins.NewInTreeRegistry(),
		&config.KubeSchedulerProfile{SchedulerName: config.DefaultSchedulerName}, fw.WithSnapshotSharedLister(snap), fw.WithParallelism(1))
	if err != nil {
		b.Fatal(err)
	}
	pod := perfPod(1_000_000)
	ctx := context.Background()
	state := fw.NewCycleState()
	if s := f.RunPreFilterPlugins(ctx, state, pod); !s.IsSuccess() {
		b.Fatal(s)
	}
	ni, _ := snap.Get(node.Name)
	nodes := []*fw.NodeInfo{ni}
	if s := f.RunPreScorePlugins(ctx, state, pod, nodes); !s.IsSuccess() {
		b.Fatal(s)
	}
	b.ReportAllocs()
	for b.Loop() {
		if s := f.RunFilterPlugins(ctx, state, pod, ni); !s.IsSuccess() {
			b.Fatal(s)
		}
		if _, s := f.RunScorePlugins(ctx, state, pod, nodes); !s.IsSuccess() {
			b.Fatal(s)
		}
	}
}

// BenchmarkScheduleOne5000Nodes is the scheduling decision path of
// SchedulingBasic without an API server: for each pod, refresh the
// snapshot, run the default profile (filter, score, select) and assume the
// pod in the cache, so every decision sees the previous ones.
func BenchmarkScheduleOne5000Nodes(b *testing.B) {
	c := schedcache.New(0, nil)
	for i := 0; i < 5000; i++ {
		c.AddNode(perfNode(i))
	}
	snap := schedcache.NewEmptySnapshot()
	f, err := fw.NewFramework(context.Background(), plugins.NewInTreeRegistry(),
		&config.KubeSchedulerProfile{SchedulerName: config.DefaultSchedulerName}, fw.WithSnapshotSharedLister(snap))
	if err != nil {
		b.Fatal(err)
	}
	algo := NewAlgorithm(0, 1)
	ctx := context.Background()
	pods := make([]*v1.Pod, b.N)
	for i := range pods {
		pods[i] = perfPod(i)
	}
	b.ReportAllocs()
	cpuBefore := processCPU()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := c.UpdateSnapshot(snap); err != nil {
			b.Fatal(err)
		}
		res, err := algo.SchedulePod(ctx, f, fw.NewCycleState(), pods[i], snap)
		if err != nil {
			b.Fatal(err)
		}
		assumed := pods[i].DeepCopy()
		assumed.Spec.NodeName = res.SuggestedHost
		if err := c.AssumePod(assumed); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pods/s")
	// On a shared machine wall time includes waiting for a core; pods per
	// CPU-second of this process is the throughput one core would give.
	if cpu := (processCPU() - cpuBefore).Seconds(); cpu > 0 {
		b.ReportMetric(float64(b.N)/cpu, "pods/cpu-s")
	}
	// Live heap of the cache and snapshot holding 5000 nodes and b.N pods
	// (the informers' object caches come on top in a running scheduler).
	b.StopTimer()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "heap-MiB")
	runtime.KeepAlive(c)
	runtime.KeepAlive(snap)
}

// processCPU is the user+system CPU time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
