package bench

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// WriteCheckersTable prints a checkers run as two Markdown tables: the
// model checker per configuration and porcupine's check time per history
// size.
func WriteCheckersTable(w io.Writer, m Machine, r CheckersResult) {
	writeMachine(w, m)
	if len(r.Model) > 0 {
		fmt.Fprintln(w, "Model checker (symmetry on, every property of the configuration including liveness):")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| configuration | workers | distinct states | transitions | depth | time | distinct states/s | bytes/state |")
		fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|")
		for _, x := range r.Model {
			fmt.Fprintf(w, "| %s | %d | %d | %d | %d | %s | %.0f | %.1f |\n", x.Config, x.Workers, x.Distinct, x.Transitions, x.Depth,
				x.Duration.Round(time.Millisecond), x.StatesPerSecond, x.BytesPerState)
		}
		fmt.Fprintln(w)
	}
	if len(r.Porcupine) > 0 {
		fmt.Fprintln(w, "Linearizability check of generated linearizable histories (create/update/get/delete, porcupine per-key model plus the revision and read checks):")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| operations | clients | keys | check time (median) | fastest | slowest | checks | operations/s |")
		fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|---:|")
		for _, x := range r.Porcupine {
			fmt.Fprintf(w, "| %d | %d | %d | %s | %s | %s | %d | %.0f |\n", x.Ops, x.Clients, x.Keys, ms(x.CheckTime), ms(x.MinCheckTime), ms(x.MaxCheckTime), x.Checks, x.OpsPerSecond)
		}
	}
}

// checkersMetrics adds the checkers runs' metrics (for --repeat and
// --compare) through add.
func checkersMetrics(runs []CheckersResult, add func(name, unit string, higher bool, v float64)) {
	for _, r := range runs {
		for _, x := range r.Model {
			add(fmt.Sprintf("checkers model %s distinct states/s", x.Config), "states/s", true, x.StatesPerSecond)
			add(fmt.Sprintf("checkers model %s bytes/state", x.Config), "B", false, x.BytesPerState)
		}
		for _, x := range r.Porcupine {
			add(fmt.Sprintf("checkers porcupine %dops check time", x.Ops), "ms", false, msOf(x.CheckTime))
		}
	}
}

// checkersCharts draws the model checker's distinct states/s per
// configuration as bars (the median over runs) and porcupine's check time
// against history size (one line per run).
func checkersCharts(runs []CheckersResult) []NamedChart {
	var out []NamedChart
	var configs []string
	rates := map[string][]float64{}
	for _, r := range runs {
		for _, x := range r.Model {
			if _, ok := rates[x.Config]; !ok {
				configs = append(configs, x.Config)
			}
			rates[x.Config] = append(rates[x.Config], x.StatesPerSecond)
		}
	}
	if len(configs) > 0 {
		b := BarChart{Title: "Model checker: distinct states/s per configuration (median of runs)", YLabel: "distinct states/s"}
		for _, c := range configs {
			b.Bars = append(b.Bars, Bar{Label: c, Value: Metric{Values: rates[c]}.Spread().Median})
		}
		out = append(out, NamedChart{File: "checkers-model-states", Chart: b})
	}
	c := LineChart{Title: "Linearizability check time against history size", XLabel: "operations in the history", YLabel: "check time (ms)", YMin0: true}
	for i, r := range runs {
		if len(r.Porcupine) == 0 {
			continue
		}
		ser := Series{Name: fmt.Sprintf("run %d (%d clients)", i+1, r.Porcupine[0].Clients)}
		for _, x := range r.Porcupine {
			ser.Points = append(ser.Points, Point{X: float64(x.Ops), Y: msOf(x.CheckTime)})
		}
		c.Series = append(c.Series, ser)
	}
	if len(c.Series) > 0 {
		out = append(out, NamedChart{File: "checkers-porcupine-time", Chart: c})
	}
	return out
}

// writeCheckersHTML writes the checkers runs' tables for report.html.
func writeCheckersHTML(w io.Writer, runs []CheckersResult) {
	var model, porc [][]string
	for _, r := range runs {
		for _, x := range r.Model {
			model = append(model, []string{x.Config, fmt.Sprint(x.Workers), fmt.Sprint(x.Distinct), fmt.Sprint(x.Depth),
				x.Duration.Round(time.Millisecond).String(), num(x.StatesPerSecond), fmt.Sprintf("%.1f", x.BytesPerState)})
		}
		for _, x := range r.Porcupine {
			porc = append(porc, []string{fmt.Sprint(x.Ops), fmt.Sprint(x.Clients), fmt.Sprint(x.Keys), ms(x.CheckTime), ms(x.MinCheckTime), ms(x.MaxCheckTime), num(x.OpsPerSecond)})
		}
	}
	if len(model) > 0 {
		fmt.Fprintln(w, "<h2>Model checker runs</h2>")
		htmlTable(w, []string{"configuration", "workers", "distinct states", "depth", "time", "distinct states/s", "bytes/state"}, model, -1)
	}
	if len(porc) > 0 {
		fmt.Fprintln(w, "<h2>Linearizability check runs</h2>")
		htmlTable(w, []string{"operations", "clients", "keys", "check time (median)", "fastest", "slowest", "operations/s"}, porc, -1)
	}
}

// Bar is one bar of a BarChart.
type Bar struct {
	Label string
	Value float64
}

// BarChart is a plain SVG bar chart: one labelled bar per category, the
// value written above each bar, a y axis from zero.
type BarChart struct {
	Title, YLabel string
	Bars          []Bar
}

// SVG renders the chart as a standalone SVG document.
func (c BarChart) SVG() string {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" %s>`+"\n", chartW, chartH, chartW, chartH, chartFont)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", chartW, chartH)
	fmt.Fprintf(&b, `<text x="%d" y="20" font-size="14" font-weight="bold">%s</text>`+"\n", marginL, esc(c.Title))
	ymax := 0.0
	for _, bar := range c.Bars {
		if !math.IsNaN(bar.Value) && !math.IsInf(bar.Value, 0) {
			ymax = math.Max(ymax, bar.Value)
		}
	}
	if len(c.Bars) == 0 || ymax <= 0 {
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text></svg>`+"\n", chartW/2-20, chartH/2, noData)
		return b.String()
	}
	yt := niceTicks(0, ymax, 5)
	ymax = math.Max(ymax, yt[len(yt)-1].Value)
	py := func(y float64) float64 { return marginT + plotH - y/ymax*plotH }
	for _, t := range yt {
		y := py(t.Value)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s"/>`+"\n", marginL, y, marginL+plotW, y, chartGridColor)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", marginL-6, y+4, esc(t.Label))
	}
	fmt.Fprintf(&b, `<polyline points="%d,%d %d,%d %d,%d" fill="none" stroke="%s"/>`+"\n", marginL, marginT, marginL, marginT+plotH, marginL+plotW, marginT+plotH, chartAxisColor)
	fmt.Fprintf(&b, `<text transform="translate(14,%d) rotate(-90)" text-anchor="middle">%s</text>`+"\n", marginT+plotH/2, esc(c.YLabel))
	slot := float64(plotW) / float64(len(c.Bars))
	for i, bar := range c.Bars {
		v := bar.Value
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			v = 0
		}
		x := marginL + slot*float64(i) + slot*0.15
		y := py(v)
		fmt.Fprintf(&b, `<rect class="bar" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n", x, y, slot*0.7, float64(marginT+plotH)-y, chartColors[i%len(chartColors)])
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x+slot*0.35, y-4, esc(num(bar.Value)))
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x+slot*0.35, marginT+plotH+18, esc(bar.Label))
	}
	b.WriteString("</svg>\n")
	return b.String()
}
