// Package chart draws the PNG charts of the project's benchmarks: grouped bar charts of values or
// ratios, with labeled axes, an optional shaded band (a tolerance), whiskers (an interval, or the
// spread of the runs around a median) and dots (every run's figure beside their summary), a legend, and a caption with the machine and the date of the measurement.
//
// It owns how every benchmark chart looks (fonts, colors, sizes, layout) and the drawing itself, on
// gonum.org/v1/plot; a benchmark owns what it measured and how its bars are grouped and labeled.
// A benchmark builds a [Chart] from its results and calls [Chart.WritePNG], so that a chart can be
// drawn again from a results file without measuring anything.
package chart

import (
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Orientation is the direction of a chart's bars.
type Orientation int

const (
	// Vertical bars stand on a horizontal category axis; panels sit side by side. It suits a few
	// groups per panel, such as one chart per measure.
	Vertical Orientation = iota
	// Horizontal bars grow from a vertical category axis; panels are stacked. It suits many
	// groups with long labels, such as one row per compared metric.
	Horizontal
)

// Chart is one PNG: a title, a legend, one or more panels of grouped bars and a caption.
type Chart struct {
	// Title is drawn on top, in bold.
	Title string
	// Series names the bars of every group, in order; it gives them their colors and the legend.
	Series []string
	// Orientation is the direction of the bars in every panel.
	Orientation Orientation
	// Panels are drawn side by side (Vertical) or stacked (Horizontal), each with its own scale.
	Panels []Panel
	// WhiskerLabel is the legend's text for the whiskers, such as "min–max of 5 runs"; the legend
	// shows it when some bar has whiskers.
	WhiskerLabel string
	// PointLabel is the legend's text for the dots, such as "each run"; the legend shows it when
	// some bar has points.
	PointLabel string
	// Machine describes where the figures were measured (CPU, cores, memory, kernel...), and
	// Measured says when; both go in the caption, so that a chart never travels without them.
	Machine  string
	Measured time.Time
	// Notes, if set, is printed under the caption: how to read the figures.
	Notes string
}

// Panel is one set of axes: groups of bars on a category axis against one value axis.
type Panel struct {
	// Title is printed above the panel, in bold; it may have several lines.
	Title string
	// ValueAxis labels the value axis and must carry the unit, such as "time (s)".
	ValueAxis string
	// Groups are the categories, in reading order (left to right, or top to bottom).
	Groups []Group
	// Band, if set, is shaded across the whole panel, behind the bars.
	Band *Band
}

// Group is one category: a label and up to one bar per series of the chart.
type Group struct {
	Label string
	// Bars are in the order of Chart.Series; a group may have fewer bars than series.
	Bars []Bar
}

// Bar is one bar.
type Bar struct {
	// Value is the bar's length. NaN means there is no figure: no bar is drawn, only Label.
	Value float64
	// Low and High, when High > Low, draw a whisker across the bar, such as the fastest and the
	// slowest run around a median.
	Low, High float64
	// Points, when set, are drawn as dots over the bar, such as every run's figure beside their
	// median; NaN points are left out.
	Points []float64
	// Label is printed at the end of the bar (or of its whisker, or of its farthest point); empty
	// prints Value.
	Label string
	// Highlight prints the label in red, to make a failed check stand out.
	Highlight bool
}

// Band is a range of the value axis shaded across a panel, such as a tolerance around 1.
type Band struct {
	Low, High float64
	// Label is the band's legend text; bands with the same label share one legend entry.
	Label string
}

// ErrEmpty is returned for a chart with no series, no panels or a panel with no groups.
var ErrEmpty = errors.New("chart: nothing to draw")

// dpi makes a point 4/3 of a pixel: 10-point text is about 13 pixels high, legible on a page.
const dpi = 96

// WritePNG draws the chart and writes it to w as a PNG.
func (c *Chart) WritePNG(w io.Writer) error {
	if err := c.validate(); err != nil {
		return err
	}
	l := c.layout()
	img := vgimg.NewWith(vgimg.UseWH(l.width, l.height), vgimg.UseDPI(dpi))
	c.draw(draw.New(img), l)
	_, err := vgimg.PngCanvas{Canvas: img}.WriteTo(w)
	return err
}

// Size returns the width and height in pixels of the PNG that WritePNG writes: it grows with the
// number of panels and groups so that bars never get thinner than a line of text.
func (c *Chart) Size() (width, height int, err error) {
	if err := c.validate(); err != nil {
		return 0, 0, err
	}
	l := c.layout()
	return pixels(l.width), pixels(l.height), nil
}

func (c *Chart) validate() error {
	if len(c.Series) == 0 || len(c.Panels) == 0 {
		return ErrEmpty
	}
	if len(c.Series) > len(seriesColors) {
		return fmt.Errorf("chart: %d series, at most %d can be told apart", len(c.Series), len(seriesColors))
	}
	for _, p := range c.Panels {
		if len(p.Groups) == 0 {
			return fmt.Errorf("%w: panel %q has no groups", ErrEmpty, p.Title)
		}
		if b := p.Band; b != nil && !(finite(b.Low) && finite(b.High) && b.Low < b.High) {
			return fmt.Errorf("chart: panel %q: band %v–%v is not a finite range", p.Title, b.Low, b.High)
		}
		for _, g := range p.Groups {
			if err := c.validateGroup(g); err != nil {
				return fmt.Errorf("chart: panel %q, group %q: %w", p.Title, g.Label, err)
			}
		}
	}
	return nil
}

// validateGroup refuses infinities: they have no place on an axis, and a NaN already says "no
// figure".
func (c *Chart) validateGroup(g Group) error {
	if len(g.Bars) > len(c.Series) {
		return fmt.Errorf("%d bars for %d series", len(g.Bars), len(c.Series))
	}
	for _, b := range g.Bars {
		if math.IsInf(b.Value, 0) || math.IsInf(b.Low, 0) || math.IsInf(b.High, 0) {
			return fmt.Errorf("infinite value in bar %q", b.Label)
		}
		for _, p := range b.Points {
			if math.IsInf(p, 0) {
				return fmt.Errorf("infinite point in bar %q", b.Label)
			}
		}
	}
	return nil
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// pixels rounds a length the way vgimg sizes its image.
func pixels(l vg.Length) int { return int(l.Dots(dpi) + 0.5) }
