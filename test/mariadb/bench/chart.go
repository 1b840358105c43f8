package main

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"slices"
)

// Colors of the chart: one per variant, in the order the variants run.
var (
	background = color.RGBA{0xff, 0xff, 0xff, 0xff}
	ink        = color.RGBA{0x22, 0x22, 0x22, 0xff}
	grid       = color.RGBA{0xdd, 0xdd, 0xdd, 0xff}
	barColors  = map[string]color.RGBA{
		"tmpfs": {0x2b, 0x6c, 0xb0, 0xff},
		"disk":  {0xe0, 0x8a, 0x1e, 0xff},
	}
	dotColor = color.RGBA{0x00, 0x00, 0x00, 0xff}
)

// panel is one measure: a bar per variant at its median, a dot per run.
type panel struct {
	title string
	note  string
	value func(runResult) float64
	kind  string
	unit  string
}

var panels = []panel{
	{"temp: time", "lower is better", func(r runResult) float64 { return r.Seconds }, "temp", "s"},
	{"mixed: transactions/s", "higher is better", func(r runResult) float64 { return r.TPS }, "mixed", ""},
	{"mixed: p95 latency", "lower is better", func(r runResult) float64 { return r.P95Millis }, "mixed", "ms"},
	{"mixed: p99 latency", "lower is better", func(r runResult) float64 { return r.P99Millis }, "mixed", "ms"},
}

const (
	chartWidth  = 1200
	chartHeight = 520
	panelTop    = 120
	panelBottom = 420
)

// chart draws the medians and every run of each variant, panel by panel, as a PNG.
func (r *results) chart(w io.Writer) error {
	img := image.NewRGBA(image.Rect(0, 0, chartWidth, chartHeight))
	draw.Draw(img, img.Bounds(), &image.Uniform{background}, image.Point{}, draw.Src)
	drawTextCentered(img, chartWidth/2, 16, "MariaDB "+r.Machine.MariaDB+": tmpdir on tmpfs vs on disk", 3, ink)
	type entry struct {
		label string
		color color.RGBA
	}
	legend := make([]entry, 0, len(r.order)+1)
	for _, name := range r.order {
		legend = append(legend, entry{name, barColors[name]})
	}
	legend = append(legend, entry{"dots: single runs", dotColor})
	total := 0
	for _, e := range legend {
		total += 26 + textWidth(e.label, 2) + 40
	}
	x := chartWidth/2 - total/2
	for _, e := range legend {
		fill(img, image.Rect(x, 56, x+18, 70), e.color)
		drawText(img, x+26, 56, e.label, 2, ink)
		x += 26 + textWidth(e.label, 2) + 40
	}
	width := chartWidth / len(panels)
	for i, p := range panels {
		r.drawPanel(img, image.Rect(i*width+20, panelTop, (i+1)*width-20, panelBottom), p)
	}
	drawTextCentered(img, chartWidth/2, chartHeight-26, fmt.Sprintf("bars: median of %d runs", r.Settings.RunsPerMeasurement), 2, ink)
	return png.Encode(w, img)
}

func (r *results) drawPanel(img *image.RGBA, area image.Rectangle, p panel) {
	drawTextCentered(img, area.Min.X+area.Dx()/2, area.Min.Y-26, p.title, 2, ink)
	drawTextCentered(img, area.Min.X+area.Dx()/2, area.Max.Y+36, p.note, 2, ink)
	top := 0.0
	runs := map[string][]float64{}
	for _, name := range r.order {
		for _, run := range r.Runs[name] {
			if run.Workload == p.kind {
				runs[name] = append(runs[name], p.value(run))
				top = max(top, p.value(run))
			}
		}
	}
	if top <= 0 {
		return
	}
	plot := image.Rect(area.Min.X, area.Min.Y+24, area.Max.X, area.Max.Y)
	scale := func(v float64) int { return plot.Max.Y - int(v/top*float64(plot.Dy())*0.9) }
	fill(img, image.Rect(plot.Min.X, plot.Max.Y, plot.Max.X, plot.Max.Y+2), ink)
	for _, frac := range []float64{0.25, 0.5, 0.75, 1} {
		y := scale(top * frac)
		fill(img, image.Rect(plot.Min.X, y, plot.Max.X, y+1), grid)
	}
	slot := plot.Dx() / len(r.order)
	for i, name := range r.order {
		med := median(runs[name])
		x0, x1 := plot.Min.X+i*slot+slot/5, plot.Min.X+(i+1)*slot-slot/5
		if len(runs[name]) == 0 {
			continue
		}
		fill(img, image.Rect(x0, scale(med), x1, plot.Max.Y), barColors[name])
		drawTextCentered(img, (x0+x1)/2, scale(max(med, slices.Max(runs[name])))-22, formatValue(med, p.unit), 2, ink)
		for j, v := range runs[name] {
			cx := x0 + (x1-x0)*(j+1)/(len(runs[name])+1)
			fill(img, image.Rect(cx-3, scale(v)-3, cx+3, scale(v)+3), dotColor)
		}
		drawTextCentered(img, (x0+x1)/2, plot.Max.Y+10, name, 2, ink)
	}
}

func formatValue(v float64, unit string) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f%s", v, unit)
	case v >= 10:
		return fmt.Sprintf("%.1f%s", v, unit)
	}
	return fmt.Sprintf("%.2f%s", v, unit)
}

func fill(img *image.RGBA, r image.Rectangle, c color.Color) {
	draw.Draw(img, r.Intersect(img.Bounds()), &image.Uniform{c}, image.Point{}, draw.Src)
}
