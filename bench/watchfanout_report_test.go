package bench

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestReportShowsUpdatesAndWatchFanout: a report with CAS updates and
// watch fan-out runs yields their metrics, a chart each (creates and
// updates apart) and an HTML table of the fan-out runs.
func TestReportShowsUpdatesAndWatchFanout(t *testing.T) {
	r := Report{
		Writes: []WriteResult{
			{Target: "etcd Txn", Clients: 1, Rate: 1000},
			{Target: "etcd Txn CAS", Op: OpUpdate, Clients: 1, Rate: 900},
		},
		WatchFanout: []WatchFanoutResult{
			{Watchers: 10, Connections: 10, Rate: 100, Events: 100, Expected: 1000, Delivered: 1000, Latencies: Latencies{P50: time.Millisecond, P99: 5 * time.Millisecond}},
		},
	}
	var names []string
	for _, m := range r.Metrics() {
		names = append(names, m.Name)
	}
	all := strings.Join(names, "\n")
	for _, want := range []string{"writes etcd Txn CAS clients=1 rate", "watch-fanout watchers=10 conns=10@100/s delivery p99"} {
		if !strings.Contains(all, want) {
			t.Errorf("metric %q missing from:\n%s", want, all)
		}
	}
	var files []string
	for _, c := range r.Charts() {
		files = append(files, c.File)
	}
	if got := strings.Join(files, ","); got != "writes-clients,updates-clients,watch-fanout-latency" {
		t.Errorf("charts %s", got)
	}
	var html bytes.Buffer
	if err := WriteHTML(&html, r, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(html.String(), "Watch fan-out runs") || !strings.Contains(html.String(), "<td>1000/1000</td>") {
		t.Errorf("HTML lacks the watch fan-out table")
	}
}
