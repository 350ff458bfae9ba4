package cri

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubeproof/kubeproof/e2e/cri/images"
)

// TestPodStartupLatency measures, on real containers, pod startup latency
// the way Kubernetes' SLO does (from the create call to the pod observed
// Running with every container started, through a watch) and the latency
// from a pod's deletion to host-local releasing its IP, and prints p50 and
// p99. KUBEPROOF_E2E_STARTUP_PODS sets the number of pods (default 5 in
// the normal suite; the measurement is 50) and
// KUBEPROOF_E2E_STARTUP_QPS the creation rate (default 0: all at once,
// from 5 clients; upstream's density tests pace creations). It asserts nothing
// about the numbers: targets live in README, measured numbers in reports.
func TestPodStartupLatency(t *testing.T) {
	n := 5
	if s := os.Getenv("KUBEPROOF_E2E_STARTUP_PODS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 1 || n > 100 {
			t.Fatalf("KUBEPROOF_E2E_STARTUP_PODS=%q: want 1..100", s)
		}
	}
	qps := 0.0
	if s := os.Getenv("KUBEPROOF_E2E_STARTUP_QPS"); s != "" {
		var err error
		if qps, err = strconv.ParseFloat(s, 64); err != nil || qps < 0 {
			t.Fatalf("KUBEPROOF_E2E_STARTUP_QPS=%q: want a rate >= 0", s)
		}
	}
	ns := newNamespace(t)
	ctx := ctxFor(t, 5*time.Minute)
	w, err := env.Client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	var mu sync.Mutex
	created := map[string]time.Time{}
	running := map[string]time.Time{}
	ips := map[string]string{}
	allRunning := make(chan struct{})
	go func() {
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*v1.Pod)
			if !ok || ev.Type == watch.Deleted || !allStarted(p) {
				continue
			}
			mu.Lock()
			if _, seen := running[p.Name]; !seen {
				running[p.Name], ips[p.Name] = time.Now(), p.Status.PodIP
				if len(running) == n {
					close(allRunning)
				}
			}
			mu.Unlock()
		}
	}()

	// Create the pods from a few clients at once, as a ReplicaSet
	// controller would.
	names := make(chan string, n)
	go func() {
		defer close(names)
		for i := 0; i < n; i++ {
			names <- fmt.Sprintf("startup-%03d", i)
			if qps > 0 {
				time.Sleep(time.Duration(float64(time.Second) / qps))
			}
		}
	}()
	var wg sync.WaitGroup
	for g := 0; g < 5; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range names {
				p := &v1.Pod{
					ObjectMeta: metav1.ObjectMeta{Name: name},
					Spec: v1.PodSpec{
						TerminationGracePeriodSeconds: ptr(int64(5)),
						// The pause program exits at once on SIGTERM.
						Containers: []v1.Container{{Name: "main", Image: images.PauseRef}},
					},
				}
				start := time.Now()
				mu.Lock()
				created[name] = start
				mu.Unlock()
				if _, err := env.Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
					t.Errorf("creating %s: %v", name, err)
				}
			}
		}()
	}
	wg.Wait()
	select {
	case <-allRunning:
	case <-time.After(3 * time.Minute):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("%d of %d pods Running after 3 minutes", len(running), n)
	}
	mu.Lock()
	var startup []time.Duration
	for name, at := range running {
		startup = append(startup, at.Sub(created[name]))
	}
	mu.Unlock()

	// Delete them all; time until host-local no longer holds each IP.
	deleted := map[string]time.Time{}
	for name := range running {
		deleted[name] = time.Now()
		if err := env.Client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	released := map[string]time.Duration{}
	deadline := time.Now().Add(2 * time.Minute)
	for len(released) < n && time.Now().Before(deadline) {
		held, err := node.AllocatedIPs()
		if err != nil {
			t.Fatal(err)
		}
		for name, ip := range ips {
			if _, done := released[name]; !done && !slices.Contains(held, ip) {
				released[name] = time.Since(deleted[name])
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(released) < n {
		t.Fatalf("%d of %d pod IPs released 2 minutes after deletion", len(released), n)
	}
	var release []time.Duration
	for _, d := range released {
		release = append(release, d)
	}
	waitNoPods(t, ns, time.Minute)
	rate := "all at once"
	if qps > 0 {
		rate = fmt.Sprintf("%g pods/s", qps)
	}
	report := fmt.Sprintf("pod startup (create -> Running via watch), %d pods on 1 node created %s: p50 %s p99 %s max %s; deletion -> IP released: p50 %s p99 %s max %s",
		n, rate, pct(startup, 50), pct(startup, 99), pct(startup, 100), pct(release, 50), pct(release, 99), pct(release, 100))
	t.Log(report)
	if os.Getenv("KUBEPROOF_E2E_STARTUP_PODS") != "" {
		fmt.Println("e2e/cri:", report) // a measurement run: print without -v
	}
}

// allStarted: the pod is Running and every container is running.
func allStarted(p *v1.Pod) bool {
	if p.Status.Phase != v1.PodRunning || len(p.Status.ContainerStatuses) != len(p.Spec.Containers) {
		return false
	}
	for _, c := range p.Status.ContainerStatuses {
		if c.State.Running == nil {
			return false
		}
	}
	return true
}

// pct is the p-th percentile (nearest rank) of ds.
func pct(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	if i < 1 {
		i = 1
	}
	return s[i-1].Round(time.Millisecond)
}
