package chart

import (
	"image/color"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// The legend is one centered row under the title, for the whole chart: plot's own legend belongs
// to one panel and stacks its entries.
const (
	swatchWidth = vg.Length(16)
	swatchGap   = vg.Length(5)
	entryGap    = vg.Length(18)
)

type legendEntry struct {
	thumb plot.Thumbnailer
	text  string
}

// legend lists the series, then each distinct band label, then the whiskers and the points if any
// bar has them.
func (c *Chart) legend() []legendEntry {
	var out []legendEntry
	for i, s := range c.Series {
		out = append(out, legendEntry{swatch{seriesColors[i]}, s})
	}
	var bands []string
	whiskered, dotted := false, false
	for _, p := range c.Panels {
		if b := p.Band; b != nil && b.Label != "" && !slices.Contains(bands, b.Label) {
			bands = append(bands, b.Label)
			out = append(out, legendEntry{swatch{bandColor}, b.Label})
		}
		for _, g := range p.Groups {
			for _, b := range g.Bars {
				whiskered = whiskered || b.High > b.Low
				dotted = dotted || len(b.Points) > 0
			}
		}
	}
	if whiskered && c.WhiskerLabel != "" {
		out = append(out, legendEntry{&whiskers{}, c.WhiskerLabel})
	}
	if dotted && c.PointLabel != "" {
		out = append(out, legendEntry{&points{}, c.PointLabel})
	}
	return out
}

func legendStyle() text.Style {
	return aligned(style(textSize, false, ink), draw.XLeft, draw.YTop)
}

func (c *Chart) legendWidth() vg.Length {
	var w vg.Length
	for _, e := range c.legend() {
		w += swatchWidth + swatchGap + legendStyle().Width(e.text) + entryGap
	}
	return w - entryGap
}

// drawLegend draws the legend's row with its top at y.
func (c *Chart) drawLegend(dc draw.Canvas, y vg.Length) {
	s := legendStyle()
	h := s.Height("M")
	x := dc.Center().X - c.legendWidth()/2
	for _, e := range c.legend() {
		thumb := draw.Canvas{Canvas: dc.Canvas, Rectangle: vg.Rectangle{
			Min: vg.Point{X: x, Y: y - h + 1}, Max: vg.Point{X: x + swatchWidth, Y: y - 1},
		}}
		e.thumb.Thumbnail(&thumb)
		x += swatchWidth + swatchGap
		dc.FillText(s, vg.Point{X: x, Y: y}, e.text)
		x += s.Width(e.text) + entryGap
	}
}

// swatch is a legend thumbnail of one color.
type swatch struct{ color.Color }

// Thumbnail implements plot.Thumbnailer.
func (s swatch) Thumbnail(c *draw.Canvas) {
	c.SetColor(s.Color)
	c.Fill(c.Path())
}
