package chart

import (
	"image/color"

	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// seriesColors tell up to five series apart, also for the color-blind (blue and orange first).
var seriesColors = []color.Color{
	color.RGBA{0x2b, 0x6c, 0xb0, 0xff}, // blue
	color.RGBA{0xe0, 0x8a, 0x1e, 0xff}, // orange
	color.RGBA{0x4d, 0x9a, 0x6a, 0xff}, // green
	color.RGBA{0x8e, 0x5e, 0xa2, 0xff}, // purple
	color.RGBA{0x80, 0x80, 0x80, 0xff}, // gray
}

var (
	ink       = color.RGBA{0x22, 0x22, 0x22, 0xff}
	muted     = color.RGBA{0x60, 0x60, 0x60, 0xff}
	alert     = color.RGBA{0xc6, 0x28, 0x28, 0xff}
	gridColor = color.RGBA{0xd4, 0xd4, 0xd4, 0xff}
	// pointRim keeps a dot apart from a dark bar and from its neighbors.
	pointRim = color.RGBA{0xff, 0xff, 0xff, 0xff}
	// bandColor is pale enough for the grid lines drawn over it to show.
	bandColor = color.RGBA{0xd4, 0xec, 0xd4, 0xff}
)

// Sizes, in points (a point is 4/3 of a pixel at the chart's resolution).
const (
	titleSize   = 15
	panelSize   = 11
	textSize    = 10
	captionSize = 9
	margin      = vg.Length(14)
	// A horizontal bar is as thick as a line of text, and a vertical one wide enough for its label.
	hBarThickness = vg.Length(12)
	vBarWidth     = vg.Length(40)
)

// style returns text in the sans-serif face of the charts (plot defaults to a serif one).
func style(size vg.Length, bold bool, c color.Color) text.Style {
	f := font.Font{Typeface: "Liberation", Variant: "Sans", Size: size}
	if bold {
		f.Weight = xfont.WeightBold
	}
	return text.Style{Color: c, Font: f, Handler: plot.DefaultTextHandler}
}

func aligned(s text.Style, x draw.XAlignment, y draw.YAlignment) text.Style {
	s.XAlign, s.YAlign = x, y
	return s
}
