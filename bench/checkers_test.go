package bench

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// TestCheckersWorkloadSmall runs the checkers workload on the Small model
// configuration and a 200-operation history, then renders its table,
// metrics and charts (the bench-smoke coverage of the workload).
func TestCheckersWorkloadSmall(t *testing.T) {
	res, err := RunCheckers(context.Background(), CheckersConfig{Configs: []string{"Small"}, Workers: 2, HistorySizes: []int{200}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Model) != 1 || len(res.Porcupine) != 1 {
		t.Fatalf("got %d model and %d porcupine results, want 1 and 1", len(res.Model), len(res.Porcupine))
	}
	m := res.Model[0]
	if m.Config != "Small" || m.Distinct < 10 || m.Depth < 2 || m.Transitions < m.Distinct-1 || m.Duration <= 0 || m.StatesPerSecond <= 0 || m.BytesPerState <= 0 || m.Workers != 2 {
		t.Errorf("implausible model result %+v", m)
	}
	p := res.Porcupine[0]
	if p.Ops != 200 || p.Clients != 16 || p.Keys != 5 || p.CheckTime <= 0 || p.OpsPerSecond <= 0 || p.Checks != 3 || p.MinCheckTime > p.CheckTime || p.CheckTime > p.MaxCheckTime {
		t.Errorf("implausible porcupine result %+v", p)
	}

	var md strings.Builder
	WriteCheckersTable(&md, Machine{Cores: 2}, res)
	for _, want := range []string{"| Small | 2 |", "| 200 | 16 | 5 |", "distinct states/s"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, md.String())
		}
	}
	names := map[string]bool{}
	checkersMetrics([]CheckersResult{res, res}, func(name, unit string, higher bool, v float64) {
		names[name] = true
		if v <= 0 {
			t.Errorf("metric %s = %v", name, v)
		}
	})
	for _, want := range []string{"checkers model Small distinct states/s", "checkers model Small bytes/state", "checkers porcupine 200ops check time"} {
		if !names[want] {
			t.Errorf("no metric %q in %v", want, names)
		}
	}
	charts := checkersCharts([]CheckersResult{res})
	if len(charts) != 2 || charts[0].File != "checkers-model-states" || charts[1].File != "checkers-porcupine-time" {
		t.Fatalf("charts %+v", charts)
	}
	if svg := charts[0].Chart.SVG(); strings.Count(svg, `class="bar"`) != 1 || !strings.Contains(svg, ">Small<") {
		t.Errorf("bar chart lacks the Small bar:\n%s", svg)
	}
	var html strings.Builder
	writeCheckersHTML(&html, []CheckersResult{res})
	if !strings.Contains(html.String(), "<td>Small</td>") || !strings.Contains(html.String(), "<td>200</td>") {
		t.Errorf("HTML lacks the runs:\n%s", html.String())
	}
}

func TestCheckersRejectsUnknownConfigAndBadSize(t *testing.T) {
	if _, err := RunCheckers(context.Background(), CheckersConfig{Configs: []string{"NoSuchConfig"}, HistorySizes: []int{}}); err == nil {
		t.Error("unknown configuration accepted")
	}
	if _, err := RunCheckers(context.Background(), CheckersConfig{Configs: []string{}, HistorySizes: []int{0}}); err == nil {
		t.Error("history size 0 accepted")
	}
}

func TestBarChartScalesBarsToValues(t *testing.T) {
	svg := BarChart{Title: "t", YLabel: "y", Bars: []Bar{{"a", 100}, {"b", 50}}}.SVG()
	if strings.Count(svg, `class="bar"`) != 2 || !strings.Contains(svg, ">a<") || !strings.Contains(svg, ">b<") {
		t.Fatalf("bars missing:\n%s", svg)
	}
	heights := []float64{}
	for _, line := range strings.Split(svg, "\n") {
		if i := strings.Index(line, `height="`); strings.Contains(line, `class="bar"`) && i >= 0 {
			var h float64
			if _, err := fmtSscan(line[i+len(`height="`):], &h); err != nil {
				t.Fatal(err)
			}
			heights = append(heights, h)
		}
	}
	if len(heights) != 2 || heights[0] < 1.99*heights[1] || heights[0] > 2.01*heights[1] {
		t.Errorf("bar heights %v, want the first twice the second", heights)
	}
	if empty := (BarChart{Title: "t"}).SVG(); !strings.Contains(empty, noData) {
		t.Errorf("empty chart does not say %q", noData)
	}
}

func fmtSscan(s string, h *float64) (int, error) {
	return fmt.Sscanf(strings.SplitN(s, `"`, 2)[0], "%g", h)
}

func TestCheckerProgressPassesTheLineText(t *testing.T) {
	var got []string
	w := checkerProgress(func(s string) { got = append(got, s) })
	fmt.Fprintf(w, "  progress: %d distinct states, %.0f states/s\n", 12, 3.0)
	if len(got) != 1 || got[0] != "12 distinct states, 3 states/s" {
		t.Fatalf("got %q", got)
	}
}
