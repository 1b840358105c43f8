package chart

import (
	"image/color"
	"slices"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/recorder"
)

// Sizes of the layout, in points.
const (
	// horizontalWidth is wide enough for long category labels and bar labels side by side.
	horizontalWidth = vg.Length(900)
	// verticalHeight is the height of a vertical panel, title and axes included.
	verticalHeight = vg.Length(320)
	// minVerticalWidth keeps a panel of one group from being narrower than its axis and title.
	minVerticalWidth = vg.Length(190)
	// panelGap separates panels; hGroupGap and vGroupGap separate the groups of one panel.
	panelGap  = vg.Length(16)
	hGroupGap = vg.Length(10)
	vGroupGap = vg.Length(30)
	lineGap   = vg.Length(6)
)

// layout is where everything goes: the PNG's size and each panel's plot and rectangle.
type layout struct {
	width, height vg.Length
	plots         []*plot.Plot
	panels        []vg.Rectangle
}

// layout sizes the chart from its content: each panel is as long as its groups need along the
// stacking direction, and the whole is at least as wide as its title, legend and caption.
func (c *Chart) layout() layout {
	l := layout{plots: make([]*plot.Plot, len(c.Panels))}
	lengths := make([]vg.Length, len(c.Panels))
	total := panelGap * vg.Length(len(c.Panels)-1)
	for i, pn := range c.Panels {
		l.plots[i] = c.plotPanel(pn)
		lengths[i] = c.panelLength(l.plots[i], pn)
		total += lengths[i]
	}
	header, footer := c.headerHeight(), c.footerHeight()
	if c.Orientation == Horizontal {
		l.width = max(c.textWidth(), horizontalWidth) + 2*margin
		l.height = header + total + footer
	} else {
		l.width = max(c.textWidth(), total) + 2*margin
		l.height = header + verticalHeight + footer
		// A caption wider than the panels widens them, evenly.
		stretch := (l.width - 2*margin - total) / vg.Length(len(lengths))
		for i := range lengths {
			lengths[i] += stretch
		}
	}
	at := vg.Point{X: margin, Y: l.height - header}
	for _, n := range lengths {
		if c.Orientation == Vertical {
			l.panels = append(l.panels, vg.Rectangle{Min: vg.Point{X: at.X, Y: footer}, Max: vg.Point{X: at.X + n, Y: at.Y}})
			at.X += n + panelGap
			continue
		}
		l.panels = append(l.panels, vg.Rectangle{Min: vg.Point{X: margin, Y: at.Y - n}, Max: vg.Point{X: l.width - margin, Y: at.Y}})
		at.Y -= n + panelGap
	}
	if c.Orientation == Horizontal {
		l.alignLeft()
	}
	return l
}

// alignLeft moves stacked panels right so that their value axes all start where the one with the
// widest category labels starts: the eye compares bars of different panels from a common zero.
func (l *layout) alignLeft() {
	lefts := make([]vg.Length, len(l.plots))
	for i, p := range l.plots {
		trial := draw.Canvas{Canvas: new(recorder.Canvas), Rectangle: l.panels[i]}
		lefts[i] = p.DataCanvas(trial).Min.X - trial.Min.X
	}
	widest := slices.Max(lefts)
	for i := range l.panels {
		l.panels[i].Min.X += widest - lefts[i]
	}
}

// panelLength is the extent of a panel along the stacking direction: what its title, axes and
// labels take, measured on a trial canvas, plus a fixed pitch per group.
func (c *Chart) panelLength(p *plot.Plot, pn Panel) vg.Length {
	n := vg.Length(len(pn.Groups))
	if c.Orientation == Horizontal {
		bars := n * (vg.Length(len(c.Series))*hBarThickness + hGroupGap)
		trial := draw.NewCanvas(new(recorder.Canvas), horizontalWidth, bars+200)
		return trial.Size().Y - p.DataCanvas(trial).Size().Y + bars
	}
	bars := n * (vg.Length(len(c.Series))*vBarWidth + vGroupGap)
	trial := draw.NewCanvas(new(recorder.Canvas), bars+200, verticalHeight)
	title := p.Title.TextStyle.Width(pn.Title) + 8
	return max(trial.Size().X-p.DataCanvas(trial).Size().X+bars, minVerticalWidth, title)
}

// draw draws the title and legend on top, the panels, and the caption and notes at the bottom.
func (c *Chart) draw(dc draw.Canvas, l layout) {
	top := dc.Max.Y - margin
	title := aligned(style(titleSize, true, ink), draw.XCenter, draw.YTop)
	dc.FillText(title, vg.Point{X: dc.Center().X, Y: top}, c.Title)
	c.drawLegend(dc, top-title.Height(c.Title)-lineGap)
	for i, p := range l.plots {
		p.Draw(draw.Canvas{Canvas: dc.Canvas, Rectangle: l.panels[i]})
	}
	y := margin
	for _, t := range []struct {
		text  string
		color color.Color
	}{{c.Notes, muted}, {c.caption(), ink}} {
		if t.text == "" {
			continue
		}
		s := aligned(style(captionSize, false, t.color), draw.XLeft, draw.YBottom)
		dc.FillText(s, vg.Point{X: margin, Y: y}, t.text)
		y += s.Height(t.text) + lineGap/2
	}
}

// caption is the line that says where and when the figures were measured, also when the caller
// did not.
func (c *Chart) caption() string {
	machine, date := c.Machine, "date not recorded"
	if machine == "" {
		machine = "machine not recorded"
	}
	if !c.Measured.IsZero() {
		date = c.Measured.UTC().Format(time.DateOnly + " 15:04 MST")
	}
	return machine + " — measured " + date
}

func (c *Chart) headerHeight() vg.Length {
	title := style(titleSize, true, ink)
	return margin + title.Height(c.Title) + lineGap + legendStyle().Height("M") + 2*lineGap
}

func (c *Chart) footerHeight() vg.Length {
	h := margin + style(captionSize, false, ink).Height(c.caption()) + lineGap
	if c.Notes != "" {
		h += style(captionSize, false, muted).Height(c.Notes) + lineGap/2
	}
	return h
}

// textWidth is the width that the title, legend and caption need.
func (c *Chart) textWidth() vg.Length {
	small := style(captionSize, false, ink)
	return max(style(titleSize, true, ink).Width(c.Title), c.legendWidth(), small.Width(c.caption()), small.Width(c.Notes))
}
