package bench

import (
	"bytes"
	"encoding/xml"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// svgDoc is what the tests read back from a chart.
type svgDoc struct {
	Polylines []struct {
		Class  string `xml:"class,attr"`
		Points string `xml:"points,attr"`
	} `xml:"polyline"`
	Texts []string `xml:"text"`
}

func parseSVG(t *testing.T, s string) svgDoc {
	t.Helper()
	var d svgDoc
	if err := xml.Unmarshal([]byte(s), &d); err != nil {
		t.Fatalf("chart is not well-formed XML: %v\n%s", err, s)
	}
	return d
}

func TestLineChartSVG(t *testing.T) {
	c := LineChart{Title: "a <b> & c", XLabel: "x", YLabel: "y", YMin0: true, Series: []Series{
		{Name: "run 1", Points: []Point{{1, 100}, {2, 300}, {3, 200}}},
		{Name: "run 2", Points: []Point{{1, 150}, {2, 250}}},
	}}
	d := parseSVG(t, c.SVG())
	var series []string
	for _, p := range d.Polylines {
		if p.Class == "series" {
			series = append(series, p.Points)
		}
	}
	if len(series) != 2 || len(strings.Fields(series[0])) != 3 || len(strings.Fields(series[1])) != 2 {
		t.Fatalf("series polylines %q", series)
	}
	// Every point lies in the plot area, and a higher y is drawn higher.
	var prevY float64
	for i, xy := range strings.Fields(series[0]) {
		xs, ys, _ := strings.Cut(xy, ",")
		x, _ := strconv.ParseFloat(xs, 64)
		y, _ := strconv.ParseFloat(ys, 64)
		if x < marginL || x > marginL+plotW || y < marginT || y > marginT+plotH {
			t.Errorf("point %s outside the plot", xy)
		}
		if i == 1 && y >= prevY {
			t.Errorf("y=300 drawn at %v, not above y=100 at %v", y, prevY)
		}
		prevY = y
	}
	joined := strings.Join(d.Texts, "|")
	for _, want := range []string{"a <b> & c", "run 1", "run 2", "0"} {
		if !strings.Contains(joined, want) {
			t.Errorf("texts %q lack %q", joined, want)
		}
	}
	if d := parseSVG(t, (LineChart{Title: "empty"}).SVG()); !strings.Contains(strings.Join(d.Texts, "|"), noData) {
		t.Error("empty chart does not say so")
	}
}

func TestNiceTicks(t *testing.T) {
	ticks := niceTicks(0, 1236, 5)
	var labels []string
	for _, tk := range ticks {
		labels = append(labels, tk.Label)
	}
	if got := strings.Join(labels, " "); got != "0 500 1000 1500" {
		t.Errorf("ticks %s", got)
	}
	if got := niceTicks(0.5, 0.9, 4); got[0].Label != "0.5" || got[len(got)-1].Label != "0.9" {
		t.Errorf("ticks %+v", got)
	}
}

func TestQuantiles(t *testing.T) {
	var ds []time.Duration
	for i := 200; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	q := quantiles(ds)
	if len(q) != 101 || q[0] != time.Millisecond || q[50] != 100*time.Millisecond || q[100] != 200*time.Millisecond {
		t.Errorf("quantiles %v %v %v (%d)", q[0], q[50], q[100], len(q))
	}
	if quantiles(nil) != nil {
		t.Error("quantiles of nothing")
	}
}

// TestWriteResultsRoundTrip writes a results directory from a report with
// two runs of a scheduling workload, a startup run and writes, then reads
// it back as a baseline and checks the charts and the HTML report.
func TestWriteResultsRoundTrip(t *testing.T) {
	r := Report{Machine: Machine{Cores: 2, Commit: "abc"}, Repeat: 2,
		Scheduling: []SchedulingResult{
			{Workload: "SchedulingBasic/50Nodes_100Pods", SchedulingThroughput: Throughput{Average: 100, Windows: []float64{80, 120}}},
			{Workload: "SchedulingBasic/50Nodes_100Pods", SchedulingThroughput: Throughput{Average: 110, Windows: []float64{100, 120}}},
		},
		Startup: []StartupResult{{Nodes: 10, Pods: 20, Rate: 100, RunningCDF: quantiles([]time.Duration{time.Millisecond, 3 * time.Millisecond})}},
		Writes: []WriteResult{
			{Target: "etcd Txn", Clients: 1, Rate: 1000}, {Target: "etcd Txn", Clients: 64, Rate: 6000},
			{Target: "apiserver (protobuf)", Clients: 1, Rate: 500}, {Target: "apiserver (protobuf)", Clients: 64, Rate: 3000},
		},
	}
	dir := t.TempDir()
	cs := Compare(r.Metrics(), r.Metrics(), DefaultNoise)
	if err := WriteResults(dir, r, []byte("# md\n"), cs); err != nil {
		t.Fatal(err)
	}
	back, err := LoadReport(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Scheduling) != 2 || len(back.Startup[0].RunningCDF) != 101 || back.Repeat != 2 {
		t.Errorf("read back %+v", back)
	}
	for file, lines := range map[string]int{"throughput-SchedulingBasic_50Nodes_100Pods": 2, "startup-cdf": 1, "writes-clients": 2} {
		data, err := os.ReadFile(filepath.Join(dir, "charts", file+".svg"))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, p := range parseSVG(t, string(data)).Polylines {
			if p.Class == "series" {
				n++
			}
		}
		if n != lines {
			t.Errorf("%s: %d lines, want %d", file, n, lines)
		}
	}
	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Against the baseline: 0 regression(s)", "2 runs of each workload", "<svg", "Scheduling runs", "Startup runs", "Write runs", `<div id="startup-cdf">`} {
		if !bytes.Contains(html, []byte(want)) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}
