package etcd3_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/storage/embedded"
	"github.com/kubeproof/kubeproof/impl/storage/etcd3"
	"github.com/kubeproof/kubeproof/impl/storage/storagetest"
)

var benchNoFsync = flag.Bool("etcd.nofsync", false, "benchmarks: run the embedded etcd with UnsafeNoFsync")

// benchEtcd starts a dedicated embedded etcd for a benchmark.
func benchEtcd(b *testing.B) *embedded.Etcd {
	b.Helper()
	dir, err := os.MkdirTemp("", "etcd3-bench")
	if err != nil {
		b.Fatal(err)
	}
	e, err := embedded.Start(context.Background(), embedded.Config{DataDir: dir, UnsafeNoFsync: *benchNoFsync})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close(); os.RemoveAll(dir) })
	return e
}

// runConcurrent runs op b.N times from workers goroutines and reports
// creates/s and latency percentiles.
func runConcurrent(b *testing.B, workers int, op func(i int64) error) {
	var next atomic.Int64
	lat := make([][]time.Duration, workers)
	var wg sync.WaitGroup
	var failed atomic.Value
	b.ResetTimer()
	start := time.Now()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				t0 := time.Now()
				if err := op(i); err != nil {
					failed.Store(err)
					return
				}
				lat[w] = append(lat[w], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if err, ok := failed.Load().(error); ok {
		b.Fatal(err)
	}
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "creates/s")
	if len(all) > 0 {
		b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99-ms")
	}
}

// configMap1KiB is a ConfigMap whose stored form is about 1 KiB.
func configMap1KiB(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: name, Labels: map[string]string{"app": "bench"}},
		Data:       map[string]string{"payload": strings.Repeat("x", 900)},
	}
}

var benchRun atomic.Int64

// BenchmarkCreate compares raw etcd Txn creates with store.Create of a
// 1 KiB ConfigMap at several concurrencies, on one embedded etcd.
func BenchmarkCreate(b *testing.B) {
	e := benchEtcd(b)
	res := storagetest.ConfigMaps()
	store, err := etcd3.New(etcd3.Config{Client: e.Client(), Resource: res})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	var raw bytes.Buffer
	if err := store.Codec().Encode(configMap1KiB("sample"), &raw); err != nil {
		b.Fatal(err)
	}
	value := raw.String()
	for _, workers := range []int{1, 16, 64, 256} {
		b.Run(fmt.Sprintf("raw-txn/clients=%d", workers), func(b *testing.B) {
			run := benchRun.Add(1)
			kv := e.Client().KV
			runConcurrent(b, workers, func(i int64) error {
				k := fmt.Sprintf("/registry/bench-raw/%d/cm-%d", run, i)
				resp, err := kv.Txn(context.Background()).
					If(clientv3.Compare(clientv3.ModRevision(k), "=", 0)).
					Then(clientv3.OpPut(k, value)).Commit()
				if err == nil && !resp.Succeeded {
					err = fmt.Errorf("key %s exists", k)
				}
				return err
			})
		})
		b.Run(fmt.Sprintf("store/clients=%d", workers), func(b *testing.B) {
			run := benchRun.Add(1)
			runConcurrent(b, workers, func(i int64) error {
				name := fmt.Sprintf("cm-%d-%d", run, i)
				return store.Create(context.Background(), res.ResourcePrefix+"/bench/"+name, configMap1KiB(name), &corev1.ConfigMap{})
			})
		})
	}
}

func benchPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-7d4b9c8f5-x2k9p", UID: "0f6a2c1e-9b1d-4a53-8d5e-3c2b1a0f9e8d",
			Labels:          map[string]string{"app": "web", "pod-template-hash": "7d4b9c8f5"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d4b9c8f5", UID: "1a2b"}}},
		Spec: corev1.PodSpec{
			NodeName: "node-17",
			Containers: []corev1.Container{{
				Name: "web", Image: "nginx:1.27",
				Ports: []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}},
			}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.244.17.5"},
	}
}

// BenchmarkCodecPod measures the storage encoding of a typical Pod.
func BenchmarkCodecPod(b *testing.B) {
	codec := etcd3.NewCodec(nil, corev1.SchemeGroupVersion)
	pod := benchPod()
	var buf bytes.Buffer
	if err := codec.Encode(pod, &buf); err != nil {
		b.Fatal(err)
	}
	data := append([]byte(nil), buf.Bytes()...)
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			buf.Reset()
			if err := codec.Encode(pod, &buf); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, _, err := codec.Decode(data, nil, &corev1.Pod{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
