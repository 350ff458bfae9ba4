package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// TestLabelsComeFromServedResourcesOnly: request paths never become label
// values, so a client cannot make the server panic (non-UTF-8 labels) or
// grow its metrics without bound (one series per made-up name).
func TestLabelsComeFromServedResourcesOnly(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := New(reg, []string{"pods", "replicasets"})
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range []*request.Info{
		{IsResourceRequest: true, Verb: "get", Resource: "replicasets", Subresource: "x.00/0000\x800"},
		{IsResourceRequest: true, Verb: "get", Resource: "no-such-\xff", Subresource: "status"},
		{IsResourceRequest: true, Verb: "get", Resource: "pods", Subresource: "status"},
		{IsResourceRequest: true, Verb: "list", Resource: "made-up-1"},
		{IsResourceRequest: true, Verb: "list", Resource: "made-up-2"},
		nil,
	} {
		m.Observe(info, 404, time.Millisecond) // must not panic
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for _, mf := range families {
		if mf.GetName() == "apiserver_request_total" {
			got = len(mf.GetMetric())
		}
	}
	// replicasets/"" (bad subresource dropped), ""/"" (unserved: twice for GET,
	// both LISTs share one series), pods/status, and the nil request.
	if got != 5 {
		var b strings.Builder
		for _, mf := range families {
			b.WriteString(mf.String())
		}
		t.Fatalf("%d series, want 5:\n%s", got, b.String())
	}
	done := m.WatchStarted(&request.Info{IsResourceRequest: true, Verb: "watch", Resource: "bogus\xff"})
	done()
}

// Requests with the same labels count in the same series (the server
// keeps each series' children); a watch counts but has no latency.
func TestObserveCountsPerSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := New(reg, []string{"configmaps"})
	if err != nil {
		t.Fatal(err)
	}
	create := &request.Info{IsResourceRequest: true, Verb: "create", Resource: "configmaps"}
	watch := &request.Info{IsResourceRequest: true, Verb: "watch", Resource: "configmaps"}
	for range 3 {
		m.Observe(create, 201, 2*time.Millisecond)
	}
	m.Observe(create, 409, time.Millisecond)
	m.Observe(watch, 200, time.Minute)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]float64{}
	for _, mf := range families {
		for _, mt := range mf.GetMetric() {
			var labels []string
			for _, l := range mt.GetLabel() {
				labels = append(labels, l.GetValue())
			}
			key := mf.GetName() + "{" + strings.Join(labels, ",") + "}"
			switch {
			case mt.GetCounter() != nil:
				counts[key] = mt.GetCounter().GetValue()
			case mt.GetHistogram() != nil:
				counts[key] = float64(mt.GetHistogram().GetSampleCount())
			}
		}
	}
	want := map[string]float64{
		"apiserver_request_total{201,configmaps,,POST}":       3,
		"apiserver_request_total{409,configmaps,,POST}":       1,
		"apiserver_request_total{200,configmaps,,WATCH}":      1,
		"apiserver_request_duration_seconds{configmaps,POST}": 4,
	}
	for k, v := range want {
		if counts[k] != v {
			t.Errorf("%s = %v, want %v (all: %v)", k, counts[k], v, counts)
		}
	}
	if len(counts) != len(want) {
		t.Errorf("series %v, want %v", counts, want)
	}
}
