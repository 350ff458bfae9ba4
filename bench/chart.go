package bench

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// Point is one (x, y) of a chart series.
type Point struct{ X, Y float64 }

// Series is one line of a chart.
type Series struct {
	Name   string
	Points []Point
}

// Tick is an axis tick at a value with a label.
type Tick struct {
	Value float64
	Label string
}

// LineChart is a plain SVG line chart: titled axes, one polyline per
// series, a legend. No scripts, so the file opens anywhere.
type LineChart struct {
	Title, XLabel, YLabel string
	Series                []Series
	// XTicks, if set, replace the computed x ticks (e.g. client counts on
	// a log axis).
	XTicks []Tick
	// YMin0 starts the y axis at zero.
	YMin0 bool
}

const (
	chartW, chartH                         = 640, 360
	marginL, marginR, marginT, marginB     = 64, 16, 36, 48
	plotW, plotH                           = chartW - marginL - marginR, chartH - marginT - marginB
	legendLineHeight                       = 16
	chartFont                              = `font-family="sans-serif" font-size="12"`
	chartAxisColor, chartGridColor, noData = "#333", "#ddd", "no data"
)

var chartColors = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"}

// SVG renders the chart as a standalone SVG document.
func (c LineChart) SVG() string {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" %s>`+"\n", chartW, chartH, chartW, chartH, chartFont)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", chartW, chartH)
	fmt.Fprintf(&b, `<text x="%d" y="20" font-size="14" font-weight="bold">%s</text>`+"\n", marginL, esc(c.Title))
	xmin, xmax, ymin, ymax, ok := c.bounds()
	if !ok {
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text></svg>`+"\n", chartW/2-20, chartH/2, noData)
		return b.String()
	}
	if c.YMin0 {
		ymin = math.Min(0, ymin)
	}
	yt := niceTicks(ymin, ymax, 5)
	ymin, ymax = math.Min(ymin, yt[0].Value), math.Max(ymax, yt[len(yt)-1].Value)
	xt := c.XTicks
	if len(xt) == 0 {
		xt = niceTicks(xmin, xmax, 6)
		xmin, xmax = math.Min(xmin, xt[0].Value), math.Max(xmax, xt[len(xt)-1].Value)
	}
	if xmax == xmin {
		xmin, xmax = xmin-1, xmax+1
	}
	if ymax == ymin {
		ymin, ymax = ymin-1, ymax+1
	}
	px := func(x float64) float64 { return marginL + (x-xmin)/(xmax-xmin)*plotW }
	py := func(y float64) float64 { return marginT + plotH - (y-ymin)/(ymax-ymin)*plotH }
	for _, t := range yt {
		y := py(t.Value)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s"/>`+"\n", marginL, y, marginL+plotW, y, chartGridColor)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", marginL-6, y+4, esc(t.Label))
	}
	for _, t := range xt {
		x := px(t.Value)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s"/>`+"\n", x, marginT+plotH, x, marginT+plotH+4, chartAxisColor)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x, marginT+plotH+18, esc(t.Label))
	}
	fmt.Fprintf(&b, `<polyline points="%d,%d %d,%d %d,%d" fill="none" stroke="%s"/>`+"\n", marginL, marginT, marginL, marginT+plotH, marginL+plotW, marginT+plotH, chartAxisColor)
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n", marginL+plotW/2, chartH-8, esc(c.XLabel))
	fmt.Fprintf(&b, `<text transform="translate(14,%d) rotate(-90)" text-anchor="middle">%s</text>`+"\n", marginT+plotH/2, esc(c.YLabel))
	for i, s := range c.Series {
		color := chartColors[i%len(chartColors)]
		var pts []string
		for _, p := range s.Points {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(p.X), py(p.Y)))
		}
		fmt.Fprintf(&b, `<polyline class="series" points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.Join(pts, " "), color)
		if len(s.Points) == 1 {
			fmt.Fprintf(&b, `<circle cx="%s" r="3" fill="%s"/>`+"\n", strings.Replace(pts[0], ",", `" cy="`, 1), color)
		}
		ly := marginT + 8 + i*legendLineHeight
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/>`+"\n", marginL+plotW-230, ly, marginL+plotW-210, ly, color)
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", marginL+plotW-205, ly+4, esc(s.Name))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func (c LineChart) bounds() (xmin, xmax, ymin, ymax float64, ok bool) {
	xmin, ymin = math.Inf(1), math.Inf(1)
	xmax, ymax = math.Inf(-1), math.Inf(-1)
	for _, s := range c.Series {
		for _, p := range s.Points {
			if math.IsNaN(p.X) || math.IsNaN(p.Y) || math.IsInf(p.X, 0) || math.IsInf(p.Y, 0) {
				continue
			}
			xmin, xmax = math.Min(xmin, p.X), math.Max(xmax, p.X)
			ymin, ymax = math.Min(ymin, p.Y), math.Max(ymax, p.Y)
			ok = true
		}
	}
	return xmin, xmax, ymin, ymax, ok
}

// niceTicks returns about n ticks at round steps (1, 2 or 5 × 10^k)
// covering [lo, hi].
func niceTicks(lo, hi float64, n int) []Tick {
	if hi <= lo {
		hi = lo + 1
	}
	raw := (hi - lo) / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	first := math.Floor(lo / step)
	var ticks []Tick
	for i := 0.0; len(ticks) < 2 || ticks[len(ticks)-1].Value < hi-step*1e-9; i++ {
		v := (first + i) * step
		ticks = append(ticks, Tick{Value: v, Label: tickLabel(v, step)})
	}
	return ticks
}

func tickLabel(v, step float64) string {
	if math.Abs(v) < step*1e-9 {
		return "0"
	}
	if step >= 1 {
		return fmt.Sprintf("%.0f", v)
	}
	decimals := int(math.Ceil(-math.Log10(step)))
	return fmt.Sprintf("%.*f", decimals, v)
}

func esc(s string) string { return html.EscapeString(s) }
