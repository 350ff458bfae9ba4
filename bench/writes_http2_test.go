package bench

import (
	"context"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubeproof/kubeproof/impl/cluster/clustertest"
)

// TestHTTP2ClientCreatesRealObjects runs the lean HTTP/2 client briefly
// against an in-process cluster and checks that every create it counted is
// an object the API server stored, and that its objects are the ones
// client-go's creates make (same admission, defaulting and storage: only
// name, uid, resourceVersion and times differ).
func TestHTTP2ClientCreatesRealObjects(t *testing.T) {
	c, cs := clustertest.Start(t, clustertest.Options{})
	ctx := context.Background()
	const ns = "lean"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const clients = 3
	before := runtime.NumGoroutine()
	r, err := APICreatesHTTP2(ctx, c.AdminConfig, ns, "lean", clients, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if r.Ops == 0 || r.Errors != 0 || r.Target != targetAPIProtobufHTTP2 || r.Client != clientHTTP2 || r.Latencies.P99 <= 0 {
		t.Fatalf("implausible result %+v", r)
	}
	// The transport's connections are closed (slack for the cluster's own
	// goroutines; TestHTTP2ClientChecksAnswers checks without).
	checkNoGoroutineLeak(t, before)

	// Every counted create is stored; calls cut off by the deadline (at
	// most one per client) may have been stored too.
	list, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var lean []corev1.ConfigMap
	for _, cm := range list.Items {
		if strings.HasPrefix(cm.Name, "lean-") {
			lean = append(lean, cm)
		}
	}
	if n := int64(len(lean)); n < r.Ops || n > r.Ops+clients {
		t.Fatalf("%d lean objects stored, the client counted %d creates (%d clients)", n, r.Ops, clients)
	}
	for _, cm := range lean {
		if cm.Data["payload"] != payload1KiB || cm.UID == "" || cm.ResourceVersion == "" || len(cm.Name) != len("lean-")+numberWidth {
			t.Fatalf("stored object %s: %+v", cm.Name, cm.ObjectMeta)
		}
	}

	// The same object created by client-go (the benchmark's protobuf
	// clientset).
	goClient, err := kubernetes.NewForConfig(APIClientConfig(c.AdminConfig, k8sruntime.ContentTypeProtobuf))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := goClient.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "by-client-go"}, Data: map[string]string{"payload": payload1KiB},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	byGo, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "by-client-go", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	byLean, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, lean[0].Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a, b := comparable(byGo), comparable(byLean); !equalObjects(t, a, b) {
		t.Fatalf("client-go's object and the lean client's differ:\nclient-go: %+v\nlean:      %+v", a, b)
	}
	if len(byLean.ManagedFields) == 0 {
		t.Errorf("no managedFields on the lean client's object: %+v", byLean.ObjectMeta)
	}
}

// comparable is cm without what differs between two creates of the same
// object: name, uid, resourceVersion and times.
func comparable(cm *corev1.ConfigMap) *corev1.ConfigMap {
	c := cm.DeepCopy()
	c.Name, c.UID, c.ResourceVersion = "", "", ""
	c.CreationTimestamp = metav1.Time{}
	for i := range c.ManagedFields {
		c.ManagedFields[i].Time = nil
	}
	return c
}

func equalObjects(t *testing.T, a, b *corev1.ConfigMap) bool {
	t.Helper()
	ea, err := encodeProtobuf(a)
	if err != nil {
		t.Fatal(err)
	}
	eb, err := encodeProtobuf(b)
	if err != nil {
		t.Fatal(err)
	}
	return ea == eb
}

// TestHTTP2ClientCountsServerErrors: a create the API server refuses (the
// namespace does not exist) is an error carrying the server's Status
// message, never a counted create.
func TestHTTP2ClientCountsServerErrors(t *testing.T) {
	c, _ := clustertest.Start(t, clustertest.Options{})
	r, err := APICreatesHTTP2(context.Background(), c.AdminConfig, "no-such-namespace", "lean", 2, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if r.Ops != 0 || r.Errors == 0 {
		t.Fatalf("creates in a missing namespace: %d counted, %d errors", r.Ops, r.Errors)
	}
	if !strings.Contains(r.FirstError, "404") || !strings.Contains(r.FirstError, `namespaces "no-such-namespace" not found`) {
		t.Errorf("first error %q, want the server's 404 Status message", r.FirstError)
	}
}

// TestHTTP2ClientChecksAnswers: the lean client refuses answers that are
// not a created ConfigMap of the name it sent over HTTP/2.
func TestHTTP2ClientChecksAnswers(t *testing.T) {
	otherName, err := encodeProtobuf(&corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "lean-0000000042"},
	})
	if err != nil {
		t.Fatal(err)
	}
	secret, err := encodeProtobuf(&corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: "lean-0000000000"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		http1  bool
		answer func(w http.ResponseWriter, r *http.Request)
		want   string // in the error; "" for success
	}{
		{"echo", false, echoCreate, ""},
		{"echo over HTTP/1.1", true, echoCreate, "not HTTP/2"},
		{"200 instead of 201", false, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(readBody(r))
		}, "200 OK"},
		{"another name", false, answer(http.StatusCreated, otherName), `"lean-0000000042"`},
		{"another kind", false, answer(http.StatusCreated, secret), `"Secret"`},
		{"JSON", false, answer(http.StatusCreated, `{"kind":"ConfigMap"}`), "not Kubernetes protobuf"},
		{"429 with Retry-After, then created", false, tooManyRequestsThen(2, echoCreate), ""},
		{"429 with Retry-After, always", false, tooManyRequestsThen(maxRetries+1, echoCreate), "429 Too Many Requests"},
		{"429 without Retry-After", false, answer(http.StatusTooManyRequests, ""), "429 Too Many Requests"},
		{"truncated", false, func(w http.ResponseWriter, r *http.Request) {
			b := readBody(r)
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write(b[:len(b)-10])
		}, "decoding"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var gotHeader http.Header
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				gotHeader = r.Header.Clone()
				tc.answer(w, r)
			}))
			srv.EnableHTTP2 = !tc.http1
			srv.StartTLS()
			defer srv.Close()
			cfg := &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{
				CAData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}),
			}}
			before := runtime.NumGoroutine()
			l, err := newLeanCreator(cfg, "ns", "lean")
			if err != nil {
				t.Fatal(err)
			}
			err = l.create(context.Background(), 0)
			l.Close()
			srv.Close()
			waitGoroutines(t, before)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
			} else if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			for _, h := range []string{"Content-Type", "Accept"} {
				if got := gotHeader.Get(h); got != k8sruntime.ContentTypeProtobuf {
					t.Errorf("%s %q", h, got)
				}
			}
			if got := gotHeader.Get("User-Agent"); got != rest.DefaultKubernetesUserAgent() {
				t.Errorf("User-Agent %q, want client-go's %q", got, rest.DefaultKubernetesUserAgent())
			}
		})
	}
}

// echoCreate answers a create as an API server does, with the object sent
// (a ConfigMap named as the request's).
func echoCreate(w http.ResponseWriter, r *http.Request) {
	b := readBody(r)
	var cm corev1.ConfigMap
	if r.URL.Path != "/api/v1/namespaces/ns/configmaps" || r.Method != http.MethodPost || decodeProtobuf(b, "ConfigMap", &cm) != nil || cm.Name != "lean-0000000000" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(b)
}

// tooManyRequestsThen answers the first n requests 429 with Retry-After 0
// (the lean client waits as many seconds, none), later ones with then.
func tooManyRequestsThen(n int, then http.HandlerFunc) http.HandlerFunc {
	var seen atomic.Int64
	return func(w http.ResponseWriter, r *http.Request) {
		if seen.Add(1) > int64(n) {
			then(w, r)
			return
		}
		readBody(r)
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(http.StatusTooManyRequests)
	}
}

func answer(code int, body string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		readBody(r)
		w.WriteHeader(code)
		_, _ = w.Write([]byte(body))
	}
}

func readBody(r *http.Request) []byte {
	b, _ := io.ReadAll(r.Body)
	return b
}

func TestPutDigits(t *testing.T) {
	b := make([]byte, numberWidth)
	for _, tc := range []struct {
		n    int64
		want string
	}{{0, "0000000000"}, {7, "0000000007"}, {1234567890, "1234567890"}} {
		putDigits(b, tc.n)
		if string(b) != tc.want {
			t.Errorf("putDigits(%d) = %q, want %q", tc.n, b, tc.want)
		}
	}
}

// waitGoroutines polls until no more goroutines run than before.
func waitGoroutines(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// BenchmarkCreateCPUShareHTTP2 is BenchmarkCreateCPUShare with the lean
// HTTP/2 client next to client-go: process CPU per 1 KiB ConfigMap create
// at 64 clients, client, API server (`kubeproof up`'s, etcd in-process,
// fsync off) and etcd all in this process.
//
//	etcd-grpc  raw Txn If(ModRevision==0) Then Put, clientv3 over gRPC
//	api        client-go (protobuf, HTTPS) → API server
//	api-http2  the lean HTTP/2 client (protobuf, HTTPS) → API server
//
// share reports etcd-grpc CPU / API CPU for each client (the target is 0.6).
// Each target can run alone (e.g. -bench 'CreateCPUShareHTTP2/api-http2'
// with -cpuprofile, to see what a create costs with the lean client).
//
//	go test ./bench -run '^$' -bench CreateCPUShareHTTP2 -benchtime 20000x
func BenchmarkCreateCPUShareHTTP2(b *testing.B) {
	const clients = 64
	c, cs := clustertest.Start(b, clustertest.Options{})
	ctx := context.Background()
	goClient, err := kubernetes.NewForConfig(APIClientConfig(c.AdminConfig, k8sruntime.ContentTypeProtobuf))
	if err != nil {
		b.Fatal(err)
	}
	value, err := configMapValue()
	if err != nil {
		b.Fatal(err)
	}
	var seq atomic.Int64
	var namespaces atomic.Int64
	// Each round creates in a fresh namespace, so that every target
	// starts from the same number of objects in its namespace.
	newNamespace := func(b *testing.B) string {
		ns := fmt.Sprintf("share-%d", namespaces.Add(1))
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		return ns
	}
	targets := []struct {
		name string
		op   func(b *testing.B) (op func() error, done func())
	}{
		{"etcd-grpc", func(b *testing.B) (func() error, func()) {
			return func() error {
				return txnCreate(ctx, c.EtcdClient, fmt.Sprintf("/bench-share/%d", seq.Add(1)), value)
			}, func() {}
		}},
		{"api", func(b *testing.B) (func() error, func()) {
			ns := newNamespace(b)
			return func() error {
				_, err := goClient.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("share-%d", seq.Add(1))},
					Data:       map[string]string{"payload": payload1KiB},
				}, metav1.CreateOptions{})
				return err
			}, func() {}
		}},
		{"api-http2", func(b *testing.B) (func() error, func()) {
			l, err := newLeanCreator(c.AdminConfig, newNamespace(b), "share")
			if err != nil {
				b.Fatal(err)
			}
			return func() error { return l.create(ctx, seq.Add(1)) }, l.Close
		}},
	}
	cpu := map[string]time.Duration{}
	for _, tg := range targets {
		b.Run(tg.name, func(b *testing.B) {
			op, done := tg.op(b)
			defer done()
			cpu[tg.name] = cpuPerCreate(b, clients, op)
		})
	}
	b.Run("share", func(b *testing.B) {
		for _, api := range []string{"api", "api-http2"} {
			if cpu["etcd-grpc"] > 0 && cpu[api] > 0 {
				b.ReportMetric(float64(cpu["etcd-grpc"])/float64(cpu[api]), "etcd-grpc/"+api)
			}
		}
	})
}
