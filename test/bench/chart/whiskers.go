package chart

import (
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// whiskers draws a line with caps from Low to High across each bar of one series. plot's
// YErrorBars cannot be shifted to the series' place within a group the way its bars can.
type whiskers struct {
	ends       []whisker
	horizontal bool
	// offset is the series' bar offset, and cap the length of the caps.
	offset, cap vg.Length
}

type whisker struct{ pos, low, high float64 }

func (w *whiskers) add(pos, low, high float64) {
	w.ends = append(w.ends, whisker{pos, low, high})
}

// Plot implements plot.Plotter.
func (w *whiskers) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	trCat, trVal := trX, trY
	if w.horizontal {
		trCat, trVal = trY, trX
	}
	line := draw.LineStyle{Color: ink, Width: 1.2}
	for _, e := range w.ends {
		cat := trCat(e.pos) + w.offset
		lo, hi := trVal(e.low), trVal(e.high)
		c.StrokeLines(line, w.points([2]vg.Length{cat, cat}, [2]vg.Length{lo, hi}))
		for _, v := range []vg.Length{lo, hi} {
			c.StrokeLines(line, w.points([2]vg.Length{cat - w.cap/2, cat + w.cap/2}, [2]vg.Length{v, v}))
		}
	}
}

// points makes a segment from category and value coordinates.
func (w *whiskers) points(cat, val [2]vg.Length) []vg.Point {
	if w.horizontal {
		return []vg.Point{{X: val[0], Y: cat[0]}, {X: val[1], Y: cat[1]}}
	}
	return []vg.Point{{X: cat[0], Y: val[0]}, {X: cat[1], Y: val[1]}}
}

// DataRange implements plot.DataRanger, so that the value axis reaches the highest whisker.
func (w *whiskers) DataRange() (xmin, xmax, ymin, ymax float64) {
	catMin, catMax := math.Inf(1), math.Inf(-1)
	valMin, valMax := math.Inf(1), math.Inf(-1)
	for _, e := range w.ends {
		catMin, catMax = math.Min(catMin, e.pos), math.Max(catMax, e.pos)
		valMin, valMax = math.Min(valMin, e.low), math.Max(valMax, e.high)
	}
	if w.horizontal {
		return valMin, valMax, catMin, catMax
	}
	return catMin, catMax, valMin, valMax
}

// Thumbnail implements plot.Thumbnailer for the legend: an upright whisker.
func (w *whiskers) Thumbnail(c *draw.Canvas) {
	line := draw.LineStyle{Color: ink, Width: 1.2}
	x := c.Center().X
	c.StrokeLine2(line, x, c.Min.Y, x, c.Max.Y)
	c.StrokeLine2(line, x-4, c.Min.Y, x+4, c.Min.Y)
	c.StrokeLine2(line, x-4, c.Max.Y, x+4, c.Max.Y)
}
