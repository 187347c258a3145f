package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Chart geometry, in SVG user units: every chart of a deploy shares the time
// axis, so the same second is at the same x in each.
const (
	gutter    = 120.0 // left margin for row labels
	plotWidth = 880.0 // width of the time axis
	rightPad  = 16.0
	svgWidth  = gutter + plotWidth + rightPad
	axisH     = 18.0 // tick labels under a chart
	rowH      = 22.0 // one host or version row
	rowGap    = 4.0
)

// axis maps times of one deploy to x.
type axis struct {
	start time.Time
	span  float64 // seconds, > 0
}

func newAxis(start, end time.Time) axis {
	span := end.Sub(start).Seconds()
	if span < 1 {
		span = 1
	}
	return axis{start: start, span: span}
}

// x is the abscissa of t seconds after the axis start, clamped to the plot.
func (a axis) x(t float64) float64 {
	t = math.Max(0, math.Min(a.span, t))
	return gutter + plotWidth*t/a.span
}

// at is the seconds from the axis start to t.
func (a axis) at(t time.Time) float64 { return t.Sub(a.start).Seconds() }

// tick is one labelled grid line.
type tick struct {
	X     float64
	Label string
}

// ticks are grid lines at a round step, about ten across the axis.
func (a axis) ticks() []tick {
	step := niceStep(a.span / 10)
	var out []tick
	for t := 0.0; t <= a.span+1e-9; t += step {
		out = append(out, tick{X: a.x(t), Label: secondsLabel(t, step)})
	}
	return out
}

// niceStep rounds raw up to 1, 2 or 5 times a power of ten, or to 15, 30,
// 60, 120 or 300 seconds above ten.
func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	if raw > 10 {
		for _, s := range []float64{15, 30, 60, 120, 300, 600, 1800, 3600} {
			if raw <= s {
				return s
			}
		}
		return 3600
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if raw <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// niceMax rounds v up to a value with one or two significant digits, for a
// y axis's top.
func niceMax(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func secondsLabel(t, step float64) string {
	if step >= 60 && math.Mod(t, 60) == 0 {
		return fmt.Sprintf("%.0fm", t/60)
	}
	return strconv.FormatFloat(t, 'f', -1, 64) + "s"
}

// pathBuilder writes compact SVG path data: coordinates with one decimal.
type pathBuilder struct{ b strings.Builder }

func (p *pathBuilder) rect(x, y, w, h float64) {
	if w <= 0 || h <= 0 {
		return
	}
	fmt.Fprintf(&p.b, "M%s %sh%sv%sh-%sz", num(x), num(y), num(w), num(h), num(w))
}

func (p *pathBuilder) move(x, y float64) { fmt.Fprintf(&p.b, "M%s %s", num(x), num(y)) }
func (p *pathBuilder) line(x, y float64) { fmt.Fprintf(&p.b, "L%s %s", num(x), num(y)) }
func (p *pathBuilder) String() string    { return p.b.String() }

// num writes v with at most one decimal.
func num(v float64) string {
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
}

// round3 rounds to milliseconds, for the data the page's script reads.
func round3(v float64) float64 { return math.Round(v*1000) / 1000 }
