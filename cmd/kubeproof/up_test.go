package main

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

func TestHeapFloorBytes(t *testing.T) {
	for _, tc := range []struct {
		perNode string
		nodes   int
		want    uint64
		wantErr bool
	}{
		{"0", 1000, 0, false},
		{"1Mi", 1000, 1000 << 20, false},
		{"1Mi", 0, 0, false},
		{"512Ki", 2, 1 << 20, false},
		{"1M", 1, 1_000_000, false},
		{heapFloorDefault(), 1, sim.HostHeapFloorPerNode, false}, // the default, as it prints
		{"-1Mi", 10, 0, true},
		{"0.5", 10, 0, true},
		{"one", 10, 0, true},
	} {
		got, err := heapFloorBytes(tc.perNode, tc.nodes)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("heapFloorBytes(%q, %d) = %d, %v; want %d (error %v)", tc.perNode, tc.nodes, got, err, tc.want, tc.wantErr)
		}
	}
}

// TestSimRuntimeHandlersFlag: --sim-runtime-handlers (of `kubeproof up`
// and `kubeproof kubelet`) is the simulated runtime's handler set: unset,
// any handler is accepted (nil); set, those besides the default, and set
// empty, the default alone.
func TestSimRuntimeHandlersFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, nil},
		{[]string{"--sim-runtime-handlers=runsc,kata-qemu"}, []string{"runsc", "kata-qemu"}},
		{[]string{"--sim-runtime-handlers", "runsc", "--sim-runtime-handlers", "crun"}, []string{"runsc", "crun"}},
		{[]string{"--sim-runtime-handlers="}, []string{}},
	} {
		var handlers []string
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		addSimRuntimeHandlersFlag(fs, &handlers)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if got := simRuntimeHandlers(fs, handlers); (got == nil) != (tc.want == nil) || !slices.Equal(got, tc.want) {
			t.Errorf("%v: handlers %#v, want %#v", tc.args, got, tc.want)
		}
	}
	for _, cmd := range []*cobra.Command{newUpCommand(), newKubeletCommand()} {
		if cmd.Flags().Lookup("sim-runtime-handlers") == nil {
			t.Errorf("kubeproof %s has no --sim-runtime-handlers", cmd.Name())
		}
	}
}

// syncBuffer is a bytes.Buffer safe for a command writing and a test
// reading at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestUpSimRuntimeHandlers: `kubeproof up --sim-runtime-handlers runsc`
// gives its simulated nodes that handler set: a pod whose RuntimeClass
// names runsc runs; one whose class names a handler the node lacks gets no
// sandbox and FailedCreatePodSandBox with containerd's words and the gRPC
// status they reach the kubelet with over CRI, as on a containerd node
// without that runtime, and stays ContainerCreating.
func TestUpSimRuntimeHandlers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs kubeproof up")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs := runUp(t, ctx, "--nodes", "1", "--no-scheduler", "--no-controller-manager", "--sim-runtime-handlers", "runsc")
	for name, handler := range map[string]string{"gvisor": "runsc", "kata": "kata-qemu"} {
		if _, err := cs.NodeV1().RuntimeClasses().Create(ctx, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Handler: handler},
			metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: v1.PodSpec{
			NodeName: "node-1", RuntimeClassName: ptr.To(name), Containers: []v1.Container{{Name: "app", Image: "nginx"}}}}
		if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	refused := regexp.MustCompile(`^Failed to create pod sandbox: rpc error: code = Unknown desc = unable to get OCI runtime for sandbox "[0-9a-f]{64}": no runtime for "kata-qemu" is configured$`)
	waitFor(t, time.Minute, "the gvisor pod running and the kata pod refused", func() bool {
		p, err := cs.CoreV1().Pods("default").Get(ctx, "gvisor", metav1.GetOptions{})
		if err != nil || p.Status.Phase != v1.PodRunning {
			return false
		}
		evs, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=kata,reason=FailedCreatePodSandBox"})
		if err != nil || len(evs.Items) == 0 {
			return false
		}
		if ev := evs.Items[0]; ev.Type != v1.EventTypeWarning || !refused.MatchString(ev.Message) {
			t.Fatalf("event %s %s, want one matching %s", ev.Type, ev.Message, refused)
		}
		return true
	})
	p, err := cs.CoreV1().Pods("default").Get(ctx, "kata", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Status.Phase != v1.PodPending || len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].State.Waiting == nil ||
		p.Status.ContainerStatuses[0].State.Waiting.Reason != "ContainerCreating" {
		t.Errorf("kata pod status %+v, want Pending in ContainerCreating", p.Status)
	}
}

// runUp runs `kubeproof up` with args (on a fresh data directory and a
// free port) until the test ends, and returns its admin client once it is
// up.
func runUp(t *testing.T, ctx context.Context, args ...string) kubernetes.Interface {
	t.Helper()
	dir := t.TempDir()
	out := new(syncBuffer)
	root := newRootCommand()
	root.SetArgs(append([]string{"up", "--data-dir", dir, "--port", "0"}, args...))
	root.SetOut(out)
	root.SetErr(out)
	upCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(upCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("kubeproof up: %v", err)
		}
	})
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(out.String(), "kubeproof is up.") {
		select {
		case err := <-done:
			done <- err
			t.Fatalf("kubeproof up ended: %v\n%s", err, out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("kubeproof up did not come up:\n%s", out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "admin.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// TestUpHugePages: `kubeproof up --hugepages` takes `kubeproof kubelet
// --hugepages`'s size=pages list and gives every simulated node those huge
// pages: capacity and allocatable hugepages-<size> of pages × size, and
// allocatable memory that much less than its capacity; a list the kubelet
// flag refuses is refused.
func TestUpHugePages(t *testing.T) {
	root := newRootCommand()
	root.SetArgs([]string{"up", "--data-dir", t.TempDir(), "--port", "0", "--hugepages", "2Mi=x"})
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	refusedCtx, refusedCancel := context.WithTimeout(t.Context(), 30*time.Second) // ends an up that started
	defer refusedCancel()
	if err := root.ExecuteContext(refusedCtx); err == nil || !strings.Contains(err.Error(), `--hugepages: huge pages "2Mi=x": pages:`) {
		t.Fatalf("up --hugepages 2Mi=x: %v, want the kubelet flag's error", err)
	}
	if testing.Short() {
		t.Skip("runs kubeproof up")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs := runUp(t, ctx, "--nodes", "2", "--no-scheduler", "--no-controller-manager", "--node-memory", "4Gi", "--hugepages", "2Mi=512,1Gi=1")
	want := map[v1.ResourceName]resource.Quantity{"hugepages-2Mi": resource.MustParse("1Gi"), "hugepages-1Gi": resource.MustParse("1Gi")}
	for _, name := range []string{"node-1", "node-2"} {
		var node *v1.Node
		waitFor(t, time.Minute, name+" registered", func() bool {
			n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			node = n
			return err == nil
		})
		for res, q := range want {
			if got := node.Status.Capacity[res]; got.Cmp(q) != 0 {
				t.Errorf("%s capacity %s = %s, want %s", name, res, got.String(), q.String())
			}
			if got := node.Status.Allocatable[res]; got.Cmp(q) != 0 {
				t.Errorf("%s allocatable %s = %s, want %s", name, res, got.String(), q.String())
			}
		}
		memCap, memAlloc := node.Status.Capacity[v1.ResourceMemory], node.Status.Allocatable[v1.ResourceMemory]
		if memCap.Cmp(resource.MustParse("4Gi")) != 0 {
			t.Errorf("%s memory capacity %s, want 4Gi", name, memCap.String())
		}
		// Less the huge pages (2Gi) and the hard eviction threshold.
		if limit := resource.MustParse("2Gi"); memAlloc.Cmp(limit) >= 0 {
			t.Errorf("%s allocatable memory %s, want less than 4Gi - 2Gi of huge pages", name, memAlloc.String())
		}
	}
}
