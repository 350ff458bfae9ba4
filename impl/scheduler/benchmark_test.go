package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// BenchmarkScheduleOne1000NodesCold is BenchmarkScheduleOne5000Nodes's
// decision path at startup-1000x30000's scale (1,000 nodes, 15 pods each
// already placed), but with the caches cold for every pod, as they are in
// the running process: there the cluster's other work (GC, 1,000 kubelets,
// the API server) runs for the 10 ms between two pods and evicts the
// scheduler's per-node data, so each pod's filter and score pass over
// ~420 nodes takes a cache (and TLB) miss per node and per object it
// touches. BenchmarkScheduleOne5000Nodes keeps all of it in the caches and
// does not see that cost. Here the nodes are decoded from JSON one by one
// with other live allocations in between, as an informer leaves them
// scattered over the heap, and before each pod (timer stopped) the
// benchmark reads a buffer of 64 MiB, more than this machine's L2 and L3
// (2 + 35.8 MiB) and its TLBs cover. Only the decision is timed; cpu-us/pod
// is the process's CPU over the same stretches.
func BenchmarkScheduleOne1000NodesCold(b *testing.B) {
	const nodes, podsPerNode = 1000, 15
	c := schedcache.New(0, nil)
	var ballast [][]byte
	for i := 0; i < nodes; i++ {
		raw, err := json.Marshal(kubeletNode(i))
		if err != nil {
			b.Fatal(err)
		}
		n := &v1.Node{}
		if err := json.Unmarshal(raw, n); err != nil {
			b.Fatal(err)
		}
		c.AddNode(n)
		ballast = append(ballast, make([]byte, 8<<10+(i*4099)%(24<<10)))
	}
	for i := 0; i < nodes*podsPerNode; i++ {
		p := perfPod(i)
		p.Spec.NodeName = fmt.Sprintf("node-%05d", i%nodes)
		if err := c.AddPod(p); err != nil {
			b.Fatal(err)
		}
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
		pods[i] = perfPod(nodes*podsPerNode + i)
	}
	if err := c.UpdateSnapshot(snap); err != nil {
		b.Fatal(err)
	}
	evict := make([]byte, 64<<20)
	for i := range evict {
		evict[i] = byte(i)
	}
	var sink byte
	var cpu time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		for j := 0; j < len(evict); j += 64 {
			sink += evict[j]
		}
		b.StartTimer()
		cpuBefore := processCPU()
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
		cpu += processCPU() - cpuBefore
	}
	b.StopTimer()
	// The process's CPU while deciding (the parallel filter and score
	// workers included), less sensitive than ns/op to waiting for a core
	// on a shared machine; GC work that the eviction's pauses let run
	// lands in both.
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/pod")
	runtime.KeepAlive(ballast)
	runtime.KeepAlive(sink)
}

// kubeletNode is perfNode as a kubelet reports it: its labels, the four
// conditions, addresses and system info (what makes a v1.Node ~1.5 KB and
// spreads its name, spec and status over many cache lines).
func kubeletNode(i int) *v1.Node {
	n := perfNode(i)
	n.Labels[v1.LabelHostname] = n.Name
	n.Labels[v1.LabelOSStable] = "linux"
	n.Labels[v1.LabelArchStable] = "amd64"
	n.UID = types.UID(fmt.Sprintf("node-uid-%05d", i))
	n.ResourceVersion = fmt.Sprint(1000 + i)
	now := metav1.Now()
	for _, t := range []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure, v1.NodeReady} {
		st := v1.ConditionFalse
		if t == v1.NodeReady {
			st = v1.ConditionTrue
		}
		n.Status.Conditions = append(n.Status.Conditions, v1.NodeCondition{Type: t, Status: st,
			LastHeartbeatTime: now, LastTransitionTime: now, Reason: "Kubelet" + string(t), Message: "kubelet reports " + string(t)})
	}
	n.Status.Addresses = []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: fmt.Sprintf("10.0.%d.%d", i/250, i%250+1)}, {Type: v1.NodeHostName, Address: n.Name}}
	n.Status.NodeInfo = v1.NodeSystemInfo{MachineID: fmt.Sprintf("m-%05d", i), KernelVersion: "6.1.0", OSImage: "kubeproof sim",
		ContainerRuntimeVersion: "sim://1", KubeletVersion: "v1.34.0", OperatingSystem: "linux", Architecture: "amd64"}
	return n
}
