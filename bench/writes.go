package bench

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// WriteResult is one write-throughput measurement.
type WriteResult struct {
	// Target names what was written to, e.g. "etcd Txn", "apiserver
	// (protobuf)" (client-go) or "apiserver (protobuf, http2)" (the lean
	// HTTP/2 client).
	Target string `json:"target"`
	// Op is what each operation was: "" (or "create") for creates,
	// "update" for compare-and-swap updates of an existing object.
	Op string `json:"op,omitempty"`
	// Client is the client that made the calls: "clientv3" (etcd's Go
	// client) for raw etcd, "client-go" (typed clientset) or "http2" (the
	// lean HTTP/2 client, see APICreatesHTTP2) for the API server. Empty
	// in results recorded before session 8 (client-go and clientv3).
	Client  string `json:"client,omitempty"`
	Clients int    `json:"clients"`
	Ops     int64  `json:"ops"`
	Errors  int64  `json:"errors"`
	// FirstError is the first failed call's error, if any failed.
	FirstError string        `json:"first_error,omitempty"`
	Elapsed    time.Duration `json:"elapsed"`
	// Rate is successful operations per second.
	Rate      float64   `json:"rate"`
	Latencies Latencies `json:"latencies"`
	// ProcessCPUPerOp is the CPU time (user plus system) the whole
	// benchmark process spent per successful operation. When the API
	// server and etcd run in the benchmark's process (no --kubeconfig) it
	// is the whole stack's cost of one operation, which, unlike Rate,
	// barely moves with the load other processes put on the machine.
	ProcessCPUPerOp time.Duration `json:"process_cpu_per_op,omitempty"`
	// ClientCPUOnly says the API server and etcd ran in other processes
	// (--kubeconfig): ProcessCPUPerOp is the benchmark clients' alone,
	// not comparable with a stack's cost.
	ClientCPUOnly bool `json:"client_cpu_only,omitempty"`
}

// payload1KiB is the data of every benchmark ConfigMap: 1 KiB, as in the
// issue's target ("1 KiB ConfigMap creates/s").
var payload1KiB = strings.Repeat("x", 1024)

// runClients runs op from clients goroutines until d has passed, and times
// every call. op gets the client index and a sequence number unique to it.
// A call still in flight at the deadline is waited for (so that nothing it
// writes lands after the caller's cleanup) but not counted.
func runClients(ctx context.Context, target string, clients int, d time.Duration, op func(ctx context.Context, client, seq int) error) WriteResult {
	var ops, errs atomic.Int64
	var firstErr atomic.Value
	lat := make([][]time.Duration, clients)
	var wg sync.WaitGroup
	startCPU := processCPU()
	start := time.Now()
	deadline := start.Add(d)
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			for seq := 0; ctx.Err() == nil && time.Now().Before(deadline); seq++ {
				t0 := time.Now()
				err := op(ctx, c, seq)
				if ctx.Err() != nil || time.Now().After(deadline) {
					return // cut off by the deadline: neither success nor failure
				}
				if err != nil {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				lat[c] = append(lat[c], time.Since(t0))
				ops.Add(1)
			}
		}(c)
	}
	wg.Wait()
	elapsed := min(time.Since(start), d) // counted calls all ended within d
	cpu := processCPU() - startCPU
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	r := WriteResult{
		Target: target, Clients: clients, Ops: ops.Load(), Errors: errs.Load(), Elapsed: elapsed,
		Rate: float64(ops.Load()) / elapsed.Seconds(), Latencies: Summarize(all),
	}
	if e, ok := firstErr.Load().(string); ok {
		r.FirstError = e
	}
	if n := ops.Load(); n > 0 && cpu > 0 {
		r.ProcessCPUPerOp = cpu / time.Duration(n)
	}
	return r
}

// processCPU is the CPU time (user plus system) this process has used so
// far; 0 if the system does not say.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// APIClientConfig returns a copy of cfg tuned for load generation: no
// client-side rate limit, and the given content type ("application/json" or
// "application/vnd.kubernetes.protobuf").
func APIClientConfig(cfg *rest.Config, contentType string) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.QPS = -1 // no client-side throttling
	c.Burst = 0
	c.ContentType = contentType
	c.AcceptContentTypes = contentType
	return c
}

// APICreates creates 1 KiB ConfigMaps in namespace through the API server
// at cfg from clients concurrent goroutines for d. Names are unique per run
// (prefix) so runs can follow each other in one namespace.
func APICreates(ctx context.Context, cfg *rest.Config, contentType, namespace, prefix string, clients int, d time.Duration) (WriteResult, error) {
	cs, err := kubernetes.NewForConfig(APIClientConfig(cfg, contentType))
	if err != nil {
		return WriteResult{}, fmt.Errorf("building client: %w", err)
	}
	target := "apiserver (" + shortContentType(contentType) + ")"
	r := runClients(ctx, target, clients, d, func(ctx context.Context, c, seq int) error {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d-%d", prefix, c, seq)},
			Data:       map[string]string{"payload": payload1KiB},
		}
		_, err := cs.CoreV1().ConfigMaps(namespace).Create(ctx, cm, metav1.CreateOptions{})
		return err
	})
	r.Client = clientGo
	return r, nil
}

// EtcdTxnCreates writes the same 1 KiB ConfigMaps straight to etcd the way
// an API server creates objects: Txn If(ModRevision(key)==0) Then Put, with
// the object protobuf-encoded. It is the ceiling API creates are compared to.
func EtcdTxnCreates(ctx context.Context, client *clientv3.Client, keyPrefix string, clients int, d time.Duration) (WriteResult, error) {
	value, err := configMapValue()
	if err != nil {
		return WriteResult{}, err
	}
	r := runClients(ctx, "etcd Txn", clients, d, func(ctx context.Context, c, seq int) error {
		return txnCreate(ctx, client, fmt.Sprintf("%s/%d-%d", keyPrefix, c, seq), value)
	})
	r.Client = clientV3
	return r, nil
}

// configMapValue is what the raw etcd creates store: a 1 KiB ConfigMap,
// protobuf-encoded as the API server stores it.
func configMapValue() (string, error) {
	return encodeProtobuf(&corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: "bench"},
		Data:       map[string]string{"payload": payload1KiB},
	})
}

// txnCreate creates key with value as an API server creates an object:
// Txn If(ModRevision(key)==0) Then Put; a key that exists is an error.
func txnCreate(ctx context.Context, client *clientv3.Client, key, value string) error {
	resp, err := client.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, value)).
		Commit()
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		return fmt.Errorf("key %s exists", key)
	}
	return nil
}

func encodeProtobuf(obj runtime.Object) (string, error) {
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	if !ok {
		return "", fmt.Errorf("no protobuf serializer")
	}
	var b strings.Builder
	if err := info.Serializer.Encode(obj, &b); err != nil {
		return "", fmt.Errorf("encoding %T: %w", obj, err)
	}
	return b.String(), nil
}

func shortContentType(ct string) string {
	switch ct {
	case runtime.ContentTypeProtobuf:
		return "protobuf"
	case runtime.ContentTypeJSON:
		return "json"
	}
	return ct
}
