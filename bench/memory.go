package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeproof/kubeproof/impl/pki"
	"github.com/kubeproof/kubeproof/impl/storage/embedded"
)

// MemoryResult is the API server's memory after it has taken a number of
// pods.
type MemoryResult struct {
	Pods int `json:"pods"`
	// RSS is the resident set size of the API server process at the end;
	// PeakRSS its high-water mark (VmHWM).
	RSSBytes     int64         `json:"rssBytes"`
	PeakRSSBytes int64         `json:"peakRssBytes"`
	CreateTime   time.Duration `json:"createTime"`
}

// APIServerMemory starts an embedded etcd in this process and the API
// server as a separate process (binary apiserverBin, i.e. `kubeproof
// apiserver`), creates pods pods through it, and reads the API server's RSS
// from /proc. Running the API server alone in its process is what makes the
// number the API server's own and not etcd's or the load generator's.
func APIServerMemory(ctx context.Context, apiserverBin string, pods int, watchCache bool) (MemoryResult, error) {
	dir, err := os.MkdirTemp("", "kubeproof-bench-memory-")
	if err != nil {
		return MemoryResult{}, err
	}
	defer os.RemoveAll(dir)
	etcd, err := embedded.Start(ctx, embedded.Config{DataDir: filepath.Join(dir, "etcd"), UnsafeNoFsync: true})
	if err != nil {
		return MemoryResult{}, err
	}
	defer etcd.Close()

	certDir := filepath.Join(dir, "pki")
	ca, err := pki.LoadOrCreateCA(certDir, "kubeproof-ca")
	if err != nil {
		return MemoryResult{}, err
	}
	admin, err := ca.IssueClient("bench-admin", []string{"system:masters"})
	if err != nil {
		return MemoryResult{}, err
	}
	port, err := freePort()
	if err != nil {
		return MemoryResult{}, err
	}
	cmd := exec.CommandContext(ctx, apiserverBin, "apiserver",
		"--etcd-servers", strings.Join(etcd.Endpoints(), ","),
		"--cert-dir", certDir, "--secure-port", strconv.Itoa(port),
		"--watch-cache="+strconv.FormatBool(watchCache), "--log-level", "error")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	if err := cmd.Start(); err != nil {
		return MemoryResult{}, fmt.Errorf("starting %s apiserver: %w", apiserverBin, err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()

	cfg := pki.RESTConfig("https://"+net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), ca.CertPEM, admin)
	cs, err := kubernetes.NewForConfig(APIClientConfig(cfg, runtime.ContentTypeProtobuf))
	if err != nil {
		return MemoryResult{}, err
	}
	if err := waitForAPI(ctx, cs, 30*time.Second); err != nil {
		return MemoryResult{}, err
	}
	if err := ensureDefaultServiceAccount(ctx, cs, "default"); err != nil {
		return MemoryResult{}, err
	}
	start := time.Now()
	if err := createPods(ctx, cs, "default", pods, 64); err != nil {
		return MemoryResult{}, err
	}
	res := MemoryResult{Pods: pods, CreateTime: time.Since(start)}
	// Let the server settle (GC, watch cache catch-up) before reading.
	time.Sleep(2 * time.Second)
	res.RSSBytes, res.PeakRSSBytes, err = processRSS(cmd.Process.Pid)
	return res, err
}

// BenchPod is the pod the memory and scheduling workloads create: one
// container with requests, labels, as a Deployment's pods look.
func BenchPod(namespace, name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{"app": "bench", "tier": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app", Image: "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("500Mi"),
			}},
		}}},
	}
}

func createPods(ctx context.Context, cs kubernetes.Interface, ns string, n, clients int) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, clients)
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(n) {
					return
				}
				if _, err := cs.CoreV1().Pods(ns).Create(ctx, BenchPod(ns, fmt.Sprintf("pod-%d", i)), metav1.CreateOptions{}); err != nil {
					errc <- fmt.Errorf("creating pod %d: %w", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	return <-errc
}

func waitForAPI(ctx context.Context, cs kubernetes.Interface, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		_, err := cs.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("API server not ready after %s: %w", timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// processRSS reads VmRSS and VmHWM of pid from /proc, in bytes.
func processRSS(pid int) (rss, peak int64, err error) {
	st, err := processStatus(pid)
	if err != nil {
		return 0, 0, err
	}
	if st["VmRSS"] == 0 {
		return 0, 0, errors.New("no VmRSS in /proc status")
	}
	return st["VmRSS"], st["VmHWM"], nil
}

// processStatus reads the sizes /proc/PID/status gives in kB (VmRSS,
// RssAnon, …), in bytes.
func processStatus(pid int) (map[string]int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, fmt.Errorf("reading process status: %w", err)
	}
	defer f.Close()
	out := map[string]int64{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		k, v, ok := strings.Cut(s.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(v)
		if len(fields) != 2 || fields[1] != "kB" {
			continue
		}
		if kb, err := strconv.ParseInt(fields[0], 10, 64); err == nil {
			out[k] = kb * 1024
		}
	}
	return out, s.Err()
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
