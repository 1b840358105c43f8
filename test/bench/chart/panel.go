package chart

import (
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// plotPanel builds a panel's plot: band and grid first, then bars, whiskers and labels on top.
func (c *Chart) plotPanel(pn Panel) *plot.Plot {
	p := plot.New()
	p.Title.Text = pn.Title
	p.Title.TextStyle = aligned(style(panelSize, true, ink), draw.XCenter, draw.YTop)
	p.Title.Padding = 6
	value, category := &p.Y, &p.X
	if c.Orientation == Horizontal {
		value, category = &p.X, &p.Y
	}
	n := len(pn.Groups)
	if b := pn.Band; b != nil {
		p.Add(c.band(*b, n))
	}
	p.Add(c.grid())
	for s := range c.Series {
		c.addSeries(p, pn.Groups, s)
	}
	labels := make([]string, n)
	for i, g := range pn.Groups {
		labels[c.position(i, n)] = g.Label
	}
	if c.Orientation == Horizontal {
		p.NominalY(labels...)
	} else {
		p.NominalX(labels...)
	}
	styleAxis(value, pn.ValueAxis)
	styleAxis(category, "")
	// Bars start at zero and each group gets a whole unit of the category axis, so that the
	// outermost bars are as far from the edges as from each other.
	value.Min = math.Min(0, value.Min)
	value.Max = roundUp(value.Min, value.Max)
	value.Tick.Marker = plot.TickerFunc(valueTicks)
	category.Min, category.Max = -0.5, float64(n)-0.5
	return p
}

// styleAxis sets the fonts, and draws the category axis's line, which plot's nominal axes hide,
// as the baseline of the bars.
func styleAxis(a *plot.Axis, label string) {
	a.Label.Text = label
	a.Label.TextStyle = aligned(style(textSize, false, ink), draw.XCenter, draw.YBottom)
	a.Label.Padding = 4
	a.Tick.Label = aligned(style(textSize, false, ink), a.Tick.Label.XAlign, a.Tick.Label.YAlign)
	a.LineStyle = draw.LineStyle{Color: ink, Width: 0.8}
	a.Padding = 0
}

func (c *Chart) grid() *plotter.Grid {
	g := plotter.NewGrid()
	g.Vertical.Color, g.Horizontal.Color = gridColor, gridColor
	g.Vertical.Dashes, g.Horizontal.Dashes = nil, nil
	if c.Orientation == Horizontal {
		g.Horizontal.Color = nil
	} else {
		g.Vertical.Color = nil
	}
	return g
}

// band is a rectangle across the whole category axis.
func (c *Chart) band(b Band, groups int) *plotter.Polygon {
	lo, hi := -0.5, float64(groups)-0.5
	xys := plotter.XYs{{X: b.Low, Y: lo}, {X: b.High, Y: lo}, {X: b.High, Y: hi}, {X: b.Low, Y: hi}}
	if c.Orientation == Vertical {
		for i := range xys {
			xys[i].X, xys[i].Y = xys[i].Y, xys[i].X
		}
	}
	// The points are finite (validated), so NewPolygon cannot fail.
	poly, _ := plotter.NewPolygon(xys)
	poly.Color = bandColor
	poly.Width = 0
	return poly
}

// position maps a group's reading order to its place on the category axis: left to right, but
// top to bottom, whereas plot counts upwards.
func (c *Chart) position(i, groups int) int {
	if c.Orientation == Horizontal {
		return groups - 1 - i
	}
	return i
}

// offset is where series s sits within its group, from the group's center: the first series on
// the left, or on top.
func (c *Chart) offset(s int) vg.Length {
	mid := float64(len(c.Series)-1) / 2
	if c.Orientation == Horizontal {
		return hBarThickness * vg.Length(mid-float64(s))
	}
	return vBarWidth * vg.Length(float64(s)-mid)
}

// addSeries adds the bars of series s in every group, with their whiskers and labels.
func (c *Chart) addSeries(p *plot.Plot, groups []Group, s int) {
	n := len(groups)
	values := make(plotter.Values, n)
	var ws whiskers
	var ps points
	var labels plotter.XYLabels
	var styles []text.Style
	for i, g := range groups {
		if s >= len(g.Bars) {
			continue
		}
		at, b := c.position(i, n), g.Bars[s]
		pos := float64(at)
		if !math.IsNaN(b.Value) {
			values[at] = b.Value
		}
		end := b.Value
		if b.High > b.Low {
			ws.add(pos, b.Low, b.High)
			end = math.Max(end, b.High)
		}
		if len(b.Points) > 0 {
			ps.add(pos, b.Points)
			end = math.Max(end, maxOf(b.Points))
		}
		if math.IsNaN(end) {
			end = 0
		}
		labels.XYs = append(labels.XYs, c.xy(pos, end))
		labels.Labels = append(labels.Labels, labelOf(b))
		styles = append(styles, c.labelStyle(b.Highlight))
	}
	width := vBarWidth
	if c.Orientation == Horizontal {
		width = hBarThickness
	}
	// The values are finite (validated, missing ones zero), so NewBarChart cannot fail.
	bars, _ := plotter.NewBarChart(values, width)
	bars.Horizontal = c.Orientation == Horizontal
	bars.Offset = c.offset(s)
	bars.Color = seriesColors[s]
	bars.LineStyle.Width = 0
	p.Add(bars)
	ws.horizontal, ws.offset, ws.cap = bars.Horizontal, bars.Offset, width/2
	p.Add(&ws)
	if len(ps.sets) > 0 {
		ps.horizontal, ps.offset, ps.width = bars.Horizontal, bars.Offset, width
		p.Add(&ps)
	}
	if len(labels.XYs) > 0 {
		// Every label has a finite place, so NewLabels cannot fail either.
		l, _ := plotter.NewLabels(labels)
		l.TextStyle, l.Offset = styles, c.labelOffset(s)
		p.Add(l)
	}
}

// maxOf is the largest of xs that is a number, NaN when none is.
func maxOf(xs []float64) float64 {
	m := math.NaN()
	for _, x := range xs {
		if !math.IsNaN(x) && (math.IsNaN(m) || x > m) {
			m = x
		}
	}
	return m
}

// xy turns a category position and a value into plot coordinates.
func (c *Chart) xy(pos, v float64) plotter.XY {
	if c.Orientation == Horizontal {
		return plotter.XY{X: v, Y: pos}
	}
	return plotter.XY{X: pos, Y: v}
}

// labelOffset moves a label from the end of its bar to just past it, beside the bar's center.
func (c *Chart) labelOffset(s int) vg.Point {
	if c.Orientation == Horizontal {
		return vg.Point{X: 4, Y: c.offset(s)}
	}
	return vg.Point{X: c.offset(s), Y: 3}
}

func (c *Chart) labelStyle(highlight bool) text.Style {
	col := ink
	if highlight {
		col = alert
	}
	s := style(textSize, highlight, col)
	if c.Orientation == Horizontal {
		return aligned(s, draw.XLeft, draw.YCenter)
	}
	return aligned(s, draw.XCenter, draw.YBottom)
}

func labelOf(b Bar) string {
	if b.Label != "" || math.IsNaN(b.Value) {
		return b.Label
	}
	return number(b.Value)
}

// number writes v with three or four significant digits, as bar labels do by default: 0.964,
// 9.71, 30.3, 1027.
func number(v float64) string {
	a := math.Abs(v)
	switch {
	case math.IsNaN(v):
		return "-"
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}
