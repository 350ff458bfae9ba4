package apiserver_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
)

// BenchmarkConfigMapCreate measures 1 KiB ConfigMap creates through the
// full HTTPS stack (filters, admission, validation, etcd Txn) at several
// client concurrencies; compare with the raw etcd Txn rate in bench/.
func BenchmarkConfigMapCreate(b *testing.B) {
	for _, clients := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			e := newEnv(b, nil)
			value := strings.Repeat("x", 1024)
			var seq atomic.Int64
			b.SetParallelism(max(1, clients/runtime.GOMAXPROCS(0)))
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					n := seq.Add(1)
					body := []byte(fmt.Sprintf(`{"metadata":{"name":"cm-%d"},"data":{"v":%q}}`, n, value))
					req, _ := http.NewRequest("POST", e.url+"/api/v1/namespaces/default/configmaps", bytes.NewReader(body))
					req.Header.Set("Content-Type", "application/json")
					resp, err := e.client.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusCreated {
						b.Errorf("create: %d", resp.StatusCode)
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates/s")
		})
	}
}
