package main

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"math"
	"strings"
)

// Chart layout in pixels.
const (
	chartColumns = 3
	panelWidth   = 480
	panelHeight  = 330
	chartMargin  = 20
	headerHeight = 110
	barWidth     = 56
	barGap       = 8
	textScale    = 2
)

var (
	colBackground = color.RGBA{0xff, 0xff, 0xff, 0xff}
	colText       = color.RGBA{0x20, 0x20, 0x20, 0xff}
	colMuted      = color.RGBA{0x70, 0x70, 0x70, 0xff}
	colAxis       = color.RGBA{0xa0, 0xa0, 0xa0, 0xff}
	colOurs       = color.RGBA{0x2b, 0x6c, 0xb0, 0xff}
	colReference  = color.RGBA{0xe0, 0x8a, 0x1e, 0xff}
	colBand       = color.RGBA{0xdc, 0xee, 0xdc, 0xff}
	colPass       = color.RGBA{0x1e, 0x7d, 0x32, 0xff}
	colFail       = color.RGBA{0xc6, 0x28, 0x28, 0xff}
	colPanel      = color.RGBA{0xf6, 0xf6, 0xf6, 0xff}
)

// Panel is one metric compared on every target: one bar pair per target.
type Panel struct {
	Title string
	Tool  string
	Unit  string
	Pairs []Comparison
}

// panels groups comparisons by series and metric, in the order they were run, so that the tmpfs
// and disk pairs of one metric share a panel and a scale.
func panels(cs []Comparison) []Panel {
	var out []Panel
	index := map[string]int{}
	for _, c := range cs {
		key := c.Series + "|" + c.Metric + "|" + c.ReferenceTool
		i, ok := index[key]
		if !ok {
			i = len(out)
			index[key] = i
			out = append(out, Panel{Title: c.MetricLabel, Tool: c.ReferenceTool, Unit: displayUnit(c.Unit)})
		}
		out[i].Pairs = append(out[i].Pairs, c)
	}
	return out
}

func displayUnit(unit string) string {
	switch unit {
	case unitBytes:
		return "MiB/s"
	case unitMicros:
		return "us"
	}
	return unit
}

// displayValue converts a raw figure to the panel's unit.
func displayValue(v float64, unit string) float64 {
	if unit == unitBytes {
		return v / (1 << 20)
	}
	return v
}

// barHeight scales v to a bar of at most full pixels against the panel's largest value.
func barHeight(v, largest float64, full int) int {
	if !(v > 0) || !(largest > 0) {
		return 0
	}
	return int(math.Round(math.Min(v/largest, 1) * float64(full)))
}

// wrap breaks s into lines of at most width characters at spaces.
func wrap(s string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		switch {
		case line == "":
			line = w
		case len(line)+1+len(w) <= width:
			line += " " + w
		default:
			lines = append(lines, line)
			line = w
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// shortNumber writes a bar's value in at most about six characters.
func shortNumber(v float64) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case v >= 100_000:
		return fmt.Sprintf("%.0fk", v/1000)
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// writeChart draws every panel in a grid under a header with the legend and writes a PNG.
func writeChart(w io.Writer, title, subtitle string, cs []Comparison) error {
	ps := panels(cs)
	rows := max(1, (len(ps)+chartColumns-1)/chartColumns)
	width := 2*chartMargin + chartColumns*panelWidth
	height := headerHeight + rows*panelHeight + chartMargin
	img := image.NewRGBA(image.Rect(0, 0, width, height))
	draw.Draw(img, img.Bounds(), image.NewUniform(colBackground), image.Point{}, draw.Src)
	drawText(img, chartMargin, chartMargin, title, textScale, colText)
	drawText(img, chartMargin, chartMargin+24, subtitle, 1, colMuted)
	legendY := chartMargin + 46
	fill(img, chartMargin, legendY, 16, 16, colOurs)
	drawText(img, chartMargin+24, legendY+2, "probe (ours)", textScale, colText)
	fill(img, chartMargin+220, legendY, 16, 16, colReference)
	drawText(img, chartMargin+244, legendY+2, "reference tool", textScale, colText)
	fill(img, chartMargin+480, legendY, 16, 16, colBand)
	drawText(img, chartMargin+504, legendY+2, "tolerance band around the reference", textScale, colText)
	for i, p := range ps {
		x := chartMargin + (i%chartColumns)*panelWidth
		y := headerHeight + (i/chartColumns)*panelHeight
		drawPanel(img, image.Rect(x+6, y+6, x+panelWidth-6, y+panelHeight-6), p)
	}
	return png.Encode(w, img)
}

func drawPanel(img *image.RGBA, r image.Rectangle, p Panel) {
	draw.Draw(img, r, image.NewUniform(colPanel), image.Point{}, draw.Src)
	y := r.Min.Y + 8
	for _, line := range wrap(p.Title, (r.Dx()-16)/(glyphAdvance*textScale)) {
		drawText(img, r.Min.X+8, y, line, textScale, colText)
		y += lineAdvance * textScale
	}
	drawText(img, r.Min.X+8, y, "probe vs "+p.Tool+", "+p.Unit, textScale, colMuted)
	top := y + lineAdvance*textScale + 16
	baseline := r.Max.Y - 56
	largest := 0.0
	for _, c := range p.Pairs {
		for _, v := range []float64{value(c.OursMedian), value(c.ReferenceMedian) * (1 + c.Tolerance)} {
			if v > largest {
				largest = v
			}
		}
	}
	largest = displayValue(largest, p.Pairs[0].Unit)
	groupWidth := r.Dx() / max(1, len(p.Pairs))
	for i, c := range p.Pairs {
		gx := r.Min.X + i*groupWidth + groupWidth/2
		drawPair(img, gx, top, baseline, largest, c)
	}
	fill(img, r.Min.X+8, baseline, r.Dx()-16, 1, colAxis)
}

// drawPair draws one target's pair centered on gx: the tolerance band, both bars with their values,
// and under them the target, the ratio and the verdict.
func drawPair(img *image.RGBA, gx, top, baseline int, largest float64, c Comparison) {
	full := baseline - top - 14
	ours, ref := displayValue(value(c.OursMedian), c.Unit), displayValue(value(c.ReferenceMedian), c.Unit)
	left := gx - barWidth - barGap/2
	right := gx + barGap/2
	if ref > 0 {
		lo, hi := barHeight(ref*(1-c.Tolerance), largest, full), barHeight(ref*(1+c.Tolerance), largest, full)
		fill(img, left-6, baseline-hi, 2*barWidth+barGap+12, hi-lo, colBand)
	}
	for _, b := range []struct {
		x   int
		v   float64
		col color.Color
	}{{left, ours, colOurs}, {right, ref, colReference}} {
		h := barHeight(b.v, largest, full)
		fill(img, b.x, baseline-h, barWidth, h, b.col)
		label := shortNumber(b.v)
		drawText(img, b.x+(barWidth-textWidth(label, textScale))/2, baseline-h-18, label, textScale, colText)
	}
	name := c.Target
	drawText(img, gx-textWidth(name, textScale)/2, baseline+8, name, textScale, colText)
	verdictColor := colFail
	if Passed(c.Verdict) {
		verdictColor = colPass
	}
	summary := "ratio " + formatRatio(c.Ratio) + " " + strings.ToUpper(strings.Fields(c.Verdict)[0])
	if c.Verdict == ForContext {
		summary, verdictColor = formatRatio(c.Ratio)+" context", colMuted
	}
	if c.Verdict == NotMeasured {
		summary, verdictColor = "not measured", colMuted
	}
	drawText(img, gx-textWidth(summary, textScale)/2, baseline+30, summary, textScale, verdictColor)
}

func fill(img *image.RGBA, x, y, w, h int, c color.Color) {
	if w <= 0 || h <= 0 {
		return
	}
	draw.Draw(img, image.Rect(x, y, x+w, y+h), image.NewUniform(c), image.Point{}, draw.Src)
}
