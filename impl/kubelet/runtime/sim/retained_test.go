package sim

import (
	"context"
	"fmt"
	goruntime "runtime"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

// runtimeBytesPerPod is the heap the simulated runtimes of 100 nodes keep
// for each of their 3,000 running pods (a sandbox and one container, made
// as the kubelet makes them), beyond what the kubelet's configs hold
// themselves (the test keeps those alive throughout).
func runtimeBytesPerPod(t *testing.T) float64 {
	const nodes, podsPerNode = 100, 30
	ctx := context.Background()
	type podConfig struct {
		sandbox   *runtimeapi.PodSandboxConfig
		container *runtimeapi.ContainerConfig
	}
	img := &runtimeapi.ImageSpec{Image: "registry.k8s.io/pause:3.10"}
	configs := make([]podConfig, 0, nodes*podsPerNode)
	for i := range nodes * podsPerNode {
		name, uid := fmt.Sprintf("web-%05d", i), fmt.Sprintf("0b6b0b3c-6d1e-4c55-9c1b-%012d", i)
		podLabels := map[string]string{runtime.LabelPodName: name, runtime.LabelPodNamespace: "default", runtime.LabelPodUID: uid}
		sandboxLabels := map[string]string{"app": "web"}
		containerLabels := map[string]string{runtime.LabelContainerName: "app"}
		for k, v := range podLabels {
			sandboxLabels[k], containerLabels[k] = v, v
		}
		configs = append(configs, podConfig{
			sandbox: &runtimeapi.PodSandboxConfig{
				Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: uid},
				Labels:   sandboxLabels,
			},
			container: &runtimeapi.ContainerConfig{
				Metadata: &runtimeapi.ContainerMetadata{Name: "app"}, Image: img, Labels: containerLabels,
				Mounts: []*runtimeapi.Mount{{
					ContainerPath: "/var/run/secrets/kubernetes.io/serviceaccount",
					HostPath:      "/var/lib/kubelet/pods/" + uid + "/volumes/kubernetes.io~projected/kube-api-access-" + name[4:],
				}},
			},
		})
	}
	// One pod first, in a runtime of its own: what the first use of the
	// CRI types initializes once per process is not the pods'.
	warm, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := warm.PullImage(ctx, img); err != nil {
		t.Fatal(err)
	}
	if sb, err := warm.RunPodSandbox(ctx, configs[0].sandbox, ""); err != nil {
		t.Fatal(err)
	} else if _, err := warm.CreateContainer(ctx, sb, configs[0].container, configs[0].sandbox); err != nil {
		t.Fatal(err)
	}
	runtimes := make([]*Runtime, nodes)
	for i := range runtimes {
		r, err := New(Config{PodCIDR: fmt.Sprintf("10.244.%d.0/24", i)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.PullImage(ctx, img); err != nil {
			t.Fatal(err)
		}
		runtimes[i] = r
	}
	var before, after goruntime.MemStats
	goruntime.GC()
	goruntime.ReadMemStats(&before)
	for i, pc := range configs {
		r := runtimes[i/podsPerNode]
		sb, err := r.RunPodSandbox(ctx, pc.sandbox, "")
		if err != nil {
			t.Fatal(err)
		}
		id, err := r.CreateContainer(ctx, sb, pc.container, pc.sandbox)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.StartContainer(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	goruntime.GC()
	goruntime.ReadMemStats(&after)
	goruntime.KeepAlive(configs)
	goruntime.KeepAlive(runtimes)
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(len(configs))
}

// The simulated runtimes keep a running pod in a few hundred bytes: a
// sandbox and a container record, their IDs kept as numbers (ids.go), and
// the indexes that find them.
func TestRuntimeRetainedBytesPerPod(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates some megabytes")
	}
	got := runtimeBytesPerPod(t)
	t.Logf("%.0f heap bytes per pod", got)
	const bound = 600
	if got > bound {
		t.Errorf("%.0f heap bytes per pod, want <= %d", got, bound)
	}
}
