package bench

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestRequestCountsKeys: requestCounts keys resource requests by verb and
// resource[/subresource], and the non-resource paths kube-apiserver
// counts (subresource label the path, no resource) by verb and path.
func TestRequestCountsKeys(t *testing.T) {
	reg := prometheus.NewRegistry()
	total := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "apiserver_request_total"},
		[]string{"verb", "resource", "subresource", "code"})
	reg.MustRegister(total)
	total.WithLabelValues("POST", "pods", "", "201").Add(2)
	total.WithLabelValues("POST", "pods", "binding", "201").Inc()
	total.WithLabelValues("GET", "", "/readyz", "200").Add(3)
	total.WithLabelValues("GET", "", "openapi/v3", "200").Inc()
	got := requestCounts(reg, func(string) bool { return true })
	want := map[string]int{"POST pods": 2, "POST pods/binding": 1, "GET /readyz": 3, "GET /openapi/v3": 1}
	if len(got) != len(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%q: %d, want %d (all: %v)", k, got[k], n, got)
		}
	}
}
