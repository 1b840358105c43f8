package chart

import (
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// points draws every run's figure of one series as a dot over its bar, spread across the bar's
// width in the order given so that equal figures do not hide one another.
type points struct {
	sets       []pointSet
	horizontal bool
	// offset is the series' bar offset, and width the bar's width across the category axis.
	offset, width vg.Length
}

type pointSet struct {
	pos    float64
	values []float64
}

// pointRadius is a dot's radius: small enough for a dozen to sit on one bar.
const pointRadius = vg.Length(2.6)

func (p *points) add(pos float64, values []float64) {
	p.sets = append(p.sets, pointSet{pos, values})
}

// Plot implements plot.Plotter.
func (p *points) Plot(c draw.Canvas, pl *plot.Plot) {
	trX, trY := pl.Transforms(&c)
	trCat, trVal := trX, trY
	if p.horizontal {
		trCat, trVal = trY, trX
	}
	for _, s := range p.sets {
		for i, v := range s.values {
			if math.IsNaN(v) {
				continue
			}
			cat := trCat(s.pos) + p.offset + p.spread(i, len(s.values))
			at := vg.Point{X: cat, Y: trVal(v)}
			if p.horizontal {
				at = vg.Point{X: trVal(v), Y: cat}
			}
			dot(c, at)
		}
	}
}

// spread places the i-th of n dots across the middle half of the bar.
func (p *points) spread(i, n int) vg.Length {
	if n < 2 {
		return 0
	}
	return p.width * (vg.Length(i)/vg.Length(n-1) - 0.5) / 2
}

// dot is a filled circle with a pale rim, visible on a bar of any color and on the background.
func dot(c draw.Canvas, at vg.Point) {
	var circle vg.Path
	circle.Move(vg.Point{X: at.X + pointRadius, Y: at.Y})
	circle.Arc(at, pointRadius, 0, 2*math.Pi)
	circle.Close()
	c.SetColor(ink)
	c.Fill(circle)
	c.SetLineStyle(draw.LineStyle{Color: pointRim, Width: 0.8})
	c.Stroke(circle)
}

// DataRange implements plot.DataRanger, so that the value axis reaches every dot.
func (p *points) DataRange() (xmin, xmax, ymin, ymax float64) {
	catMin, catMax := math.Inf(1), math.Inf(-1)
	valMin, valMax := math.Inf(1), math.Inf(-1)
	for _, s := range p.sets {
		for _, v := range s.values {
			if math.IsNaN(v) {
				continue
			}
			catMin, catMax = math.Min(catMin, s.pos), math.Max(catMax, s.pos)
			valMin, valMax = math.Min(valMin, v), math.Max(valMax, v)
		}
	}
	if p.horizontal {
		return valMin, valMax, catMin, catMax
	}
	return catMin, catMax, valMin, valMax
}

// Thumbnail implements plot.Thumbnailer for the legend: one dot.
func (p *points) Thumbnail(c *draw.Canvas) {
	dot(*c, c.Center())
}
