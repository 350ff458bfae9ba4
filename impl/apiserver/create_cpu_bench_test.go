package apiserver_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/kubeproof/kubeproof/impl/apiserver"
)

// createRun is what one variant of BenchmarkCreateCost measured.
type createRun struct {
	perSecond  float64
	cpuPerOp   time.Duration // process CPU (user+system) per create
	p99        time.Duration
	iterations int
}

// processCPU is the CPU time (user plus system) this process has used.
// The API server, the embedded etcd and the clients all run in the test
// process, so a difference of two readings is the whole stack's cost of
// the work in between; unlike wall-clock rates it barely moves with the
// load other processes put on the machine.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// runCreates POSTs n 1 KiB ConfigMaps with the given number of concurrent
// clients and returns the measurements; every create must answer 201.
func runCreates(b *testing.B, e *env, prefix string, n, clients int) createRun {
	value := strings.Repeat("x", 1024)
	var seq atomic.Int64
	latencies := make([]time.Duration, n)
	var failed atomic.Bool
	var wg sync.WaitGroup
	startCPU, start := processCPU(b), time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(seq.Add(1)) - 1
				if i >= n || failed.Load() {
					return
				}
				body := []byte(fmt.Sprintf(`{"metadata":{"name":"%s-%d"},"data":{"v":%q}}`, prefix, i, value))
				req, _ := http.NewRequest("POST", e.url+"/api/v1/namespaces/default/configmaps", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				t0 := time.Now()
				resp, err := e.client.Do(req)
				if err != nil {
					failed.Store(true)
					b.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				latencies[i] = time.Since(t0)
				if resp.StatusCode != http.StatusCreated {
					failed.Store(true)
					b.Errorf("create %s-%d: %d", prefix, i, resp.StatusCode)
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed, cpu := time.Since(start), processCPU(b)-startCPU
	slices.Sort(latencies)
	return createRun{
		perSecond:  float64(n) / elapsed.Seconds(),
		cpuPerOp:   cpu / time.Duration(n),
		p99:        latencies[(len(latencies)*99)/100],
		iterations: n,
	}
}

// BenchmarkCreateCost measures 1 KiB ConfigMap creates over HTTPS
// (HTTP/2, admin client certificate) at 64 concurrent clients against the
// embedded etcd, without the authorization and admission chain
// (AlwaysAllow, NamespaceLifecycle only) and with the full one of
// `kubeproof up` (Node,RBAC over the bootstrap policy, default admission
// plugins). Besides creates/s and p99 it reports the process CPU per
// create, which is what to compare on a loaded machine, and the ratio
// sub-benchmark reports full/none for both (issue 8: within 15%).
//
//	go test ./impl/apiserver -run '^$' -bench CreateCost -benchtime 5000x
func BenchmarkCreateCost(b *testing.B) {
	const clients = 64
	results := map[string]createRun{}
	for _, chain := range []struct {
		name      string
		configure func(*apiserver.Config)
	}{{"none", nil}, {"full", fullChain}} {
		b.Run("chain="+chain.name, func(b *testing.B) {
			e := newEnv(b, chain.configure)
			// Warm connections, caches and the etcd client before measuring.
			runCreates(b, e, "warm", 2*clients, clients)
			b.ResetTimer()
			r := runCreates(b, e, fmt.Sprintf("cm%d", b.N), b.N, clients)
			b.StopTimer()
			b.ReportMetric(r.perSecond, "creates/s")
			b.ReportMetric(float64(r.cpuPerOp.Microseconds()), "cpu-µs/create")
			b.ReportMetric(float64(r.p99.Microseconds())/1000, "p99-ms")
			results[chain.name] = r
		})
	}
	b.Run("ratio", func(b *testing.B) {
		none, full := results["none"], results["full"]
		if none.iterations == 0 || full.iterations == 0 {
			b.Skip("needs both chain variants (run without a -bench filter on them)")
		}
		b.ReportMetric(full.perSecond/none.perSecond, "full/none-creates/s")
		b.ReportMetric(float64(full.cpuPerOp)/float64(none.cpuPerOp), "full/none-cpu")
	})
}
