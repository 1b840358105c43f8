package chart

import (
	"bytes"
	"errors"
	"image"
	"image/color"
	"image/png"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// ratios is a chart like the probe benchmark's: ratios of two targets, one of them missing once.
func ratios() *Chart {
	return &Chart{
		Title: "ratios", Series: []string{"tmpfs", "disk"}, Orientation: Horizontal,
		Machine: "2 cores", Measured: time.Date(2026, 11, 30, 0, 52, 58, 0, time.UTC),
		Panels: []Panel{{
			Title: "throughput", ValueAxis: "probe / reference (ratio)",
			Groups: []Group{
				{Label: "sequential write", Bars: []Bar{{Value: 0.96}, {Value: 1.02}}},
				{Label: "device read", Bars: []Bar{{Value: math.NaN()}, {Value: 1.1, Label: "1.100 pass"}}},
			},
		}},
	}
}

// medians is a chart like the MariaDB benchmark's: medians with whiskers, panels side by side.
func medians() *Chart {
	return &Chart{
		Title: "medians", Series: []string{"tmpfs", "disk"}, WhiskerLabel: "min–max of 5 runs",
		Panels: []Panel{
			{Title: "time", ValueAxis: "time (s)", Groups: []Group{{Label: "temp", Bars: []Bar{{Value: 9.7, Low: 7.3, High: 11}, {Value: 8.3}}}}},
			{Title: "latency", ValueAxis: "latency (ms)", Groups: []Group{
				{Label: "p95", Bars: []Bar{{Value: 30}, {Value: 32}}},
				{Label: "p99", Bars: []Bar{{Value: 61}, {Value: 63}}},
			}},
		},
	}
}

func render(t *testing.T, c *Chart) image.Image {
	t.Helper()
	var buf bytes.Buffer
	if err := c.WritePNG(&buf); err != nil {
		t.Fatalf("WritePNG: %v", err)
	}
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatalf("the chart is not a PNG: %v", err)
	}
	return img
}

// count returns how many pixels of img match.
func count(img image.Image, match func(r, g, b uint8) bool) int {
	n := 0
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
			c := color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)
			if match(c.R, c.G, c.B) {
				n++
			}
		}
	}
	return n
}

func is(want color.Color) func(r, g, b uint8) bool {
	w := color.RGBAModel.Convert(want).(color.RGBA)
	return func(r, g, b uint8) bool { return r == w.R && g == w.G && b == w.B }
}

func TestWritePNGIsAPNGOfItsSize(t *testing.T) {
	for name, c := range map[string]*Chart{"horizontal": ratios(), "vertical": medians()} {
		t.Run(name, func(t *testing.T) {
			img := render(t, c)
			w, h, err := c.Size()
			if err != nil {
				t.Fatalf("Size: %v", err)
			}
			if got := img.Bounds().Size(); got != image.Pt(w, h) {
				t.Errorf("PNG is %v, Size says %dx%d", got, w, h)
			}
			if w < 600 || h < 250 {
				t.Errorf("PNG is %dx%d, too small to read", w, h)
			}
			for i, col := range seriesColors[:len(c.Series)] {
				if count(img, is(col)) == 0 {
					t.Errorf("no bar of series %d is drawn", i)
				}
			}
		})
	}
}

func TestSizeGrowsWithContent(t *testing.T) {
	few, many := ratios(), ratios()
	for range 10 {
		many.Panels[0].Groups = append(many.Panels[0].Groups, Group{Label: "more", Bars: []Bar{{Value: 1}, {Value: 1}}})
	}
	_, hFew, _ := few.Size()
	_, hMany, _ := many.Size()
	// Ten more groups of two bars need at least ten times two bar thicknesses more.
	if minimum := hFew + pixels(10*2*hBarThickness); hMany < minimum {
		t.Errorf("10 more groups: height %d, want at least %d", hMany, minimum)
	}
	one, three := medians(), medians()
	one.Panels = one.Panels[:1]
	three.Panels = append(three.Panels, three.Panels[0])
	wOne, _, _ := one.Size()
	wThree, _, _ := three.Size()
	if wThree <= wOne {
		t.Errorf("3 vertical panels are %d wide, 1 is %d", wThree, wOne)
	}
}

func TestRefusesWhatItCannotDraw(t *testing.T) {
	tests := map[string]struct {
		edit  func(*Chart)
		empty bool
	}{
		"no series":        {func(c *Chart) { c.Series = nil }, true},
		"no panels":        {func(c *Chart) { c.Panels = nil }, true},
		"a panel, no bars": {func(c *Chart) { c.Panels[0].Groups = nil }, true},
		"infinite value":   {func(c *Chart) { c.Panels[0].Groups[0].Bars[0].Value = math.Inf(1) }, false},
		"infinite whisker": {func(c *Chart) { c.Panels[0].Groups[0].Bars[0].High = math.Inf(1) }, false},
		"infinite point":   {func(c *Chart) { c.Panels[0].Groups[0].Bars[0].Points = []float64{1, math.Inf(-1)} }, false},
		"too many bars":    {func(c *Chart) { c.Panels[0].Groups[0].Bars = make([]Bar, 3) }, false},
		"inverted band":    {func(c *Chart) { c.Panels[0].Band = &Band{Low: 1.1, High: 0.9} }, false},
		"NaN band":         {func(c *Chart) { c.Panels[0].Band = &Band{Low: math.NaN(), High: 1} }, false},
		"too many series":  {func(c *Chart) { c.Series = make([]string, len(seriesColors)+1) }, false},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			c := ratios()
			tt.edit(c)
			err := c.WritePNG(&bytes.Buffer{})
			if err == nil {
				t.Fatal("WritePNG drew it")
			}
			if errors.Is(err, ErrEmpty) != tt.empty {
				t.Errorf("WritePNG: %v; want ErrEmpty: %t", err, tt.empty)
			}
			if _, _, err := c.Size(); err == nil {
				t.Error("Size accepted it")
			}
		})
	}
}

func TestBandIsShaded(t *testing.T) {
	plain, banded := ratios(), ratios()
	banded.Panels[0].Band = &Band{Low: 0.9, High: 1.1, Label: "within tolerance"}
	without, with := count(render(t, plain), is(bandColor)), count(render(t, banded), is(bandColor))
	if without != 0 {
		t.Errorf("%d pixels of the band's color without a band", without)
	}
	// The band spans a fifth of an axis of about 1.2 and both groups: far more than its legend swatch.
	if with < 5000 {
		t.Errorf("%d pixels of the band's color, want a shaded band", with)
	}
}

func TestHighlightIsRed(t *testing.T) {
	red := func(r, g, b uint8) bool { return r > 150 && g < 90 && b < 90 }
	c := ratios()
	if n := count(render(t, c), red); n != 0 {
		t.Fatalf("%d red pixels with nothing highlighted", n)
	}
	c.Panels[0].Groups[1].Bars[1].Highlight = true
	if n := count(render(t, c), red); n < 20 {
		t.Errorf("%d red pixels, want the highlighted label in red", n)
	}
}

func TestWhiskersAreDrawn(t *testing.T) {
	with, without := medians(), medians()
	// Without a legend entry, only the whisker's line and caps can tell the charts apart.
	with.WhiskerLabel, without.WhiskerLabel = "", ""
	without.Panels[0].Groups[0].Bars[0].Low, without.Panels[0].Groups[0].Bars[0].High = 0, 0
	dark := func(r, g, b uint8) bool { return r < 60 && g < 60 && b < 60 }
	a, b := count(render(t, without), dark), count(render(t, with), dark)
	if b < a+50 {
		t.Errorf("%d dark pixels with a whisker, %d without: want a whisker", b, a)
	}
}

func TestPointsAreDrawn(t *testing.T) {
	with, without := medians(), medians()
	with.PointLabel, without.PointLabel = "", ""
	with.Panels[1].Groups[0].Bars[1].Points = []float64{28, 30, 33, 35, 31}
	dark := func(r, g, b uint8) bool { return r < 60 && g < 60 && b < 60 }
	a, b := count(render(t, without), dark), count(render(t, with), dark)
	// Five dots of about 5 pixels across.
	if b < a+5*12 {
		t.Errorf("%d dark pixels with five points, %d without: want the dots", b, a)
	}
}

// A point beyond the bar and its whisker stretches the value axis so that it is drawn too.
func TestPointsStretchTheAxis(t *testing.T) {
	c := medians()
	c.Panels[0].Groups[0].Bars[1].Points = []float64{8, 8.3, 40}
	p := c.plotPanel(c.Panels[0])
	if p.Y.Max < 40 {
		t.Errorf("value axis ends at %v, below the point at 40", p.Y.Max)
	}
	c.PointLabel = "each run"
	if !slices.ContainsFunc(c.legend(), func(e legendEntry) bool { return e.text == "each run" }) {
		t.Errorf("legend %v has no entry for the points", c.legend())
	}
}

func TestWhiskersHaveALegendEntry(t *testing.T) {
	c := medians()
	if !slices.ContainsFunc(c.legend(), func(e legendEntry) bool { return e.text == c.WhiskerLabel }) {
		t.Errorf("legend %v has no whisker entry", c.legend())
	}
	c.Panels[0].Groups[0].Bars[0].High = 0
	if slices.ContainsFunc(c.legend(), func(e legendEntry) bool { return e.text == c.WhiskerLabel }) {
		t.Errorf("legend %v has a whisker entry, but no bar has whiskers", c.legend())
	}
}

func TestMissingValueDrawsNoBar(t *testing.T) {
	c := &Chart{Series: []string{"a"}, Panels: []Panel{{ValueAxis: "x (s)", Groups: []Group{{Bars: []Bar{{Value: math.NaN(), Label: "not measured"}}}}}}}
	if n := count(render(t, c), is(seriesColors[0])); n > 16*16 {
		t.Errorf("%d pixels of the series' color, want only its legend swatch", n)
	}
}

func TestCaption(t *testing.T) {
	c := ratios()
	if got, want := c.caption(), "2 cores — measured 2026-11-30 00:52 UTC"; got != want {
		t.Errorf("caption = %q, want %q", got, want)
	}
	c.Machine, c.Measured = "", time.Time{}
	if got := c.caption(); !strings.Contains(got, "machine not recorded") || !strings.Contains(got, "date not recorded") {
		t.Errorf("caption = %q, want it to say what is missing", got)
	}
}

func TestValueTicks(t *testing.T) {
	tests := []struct {
		hi     float64
		top    float64
		labels []string
	}{
		{1.463, 1.5, []string{"0.00", "0.25", "0.50", "0.75", "1.00", "1.25", "1.50"}},
		{11, 12, []string{"0", "2", "4", "6", "8", "10", "12"}},
		{1418, 1500, []string{"0", "250", "500", "750", "1000", "1250", "1500"}},
		{3.6, 4, []string{"0", "1", "2", "3", "4"}},
		{0.0042, 0.005, []string{"0.000", "0.001", "0.002", "0.003", "0.004", "0.005"}},
	}
	for _, tt := range tests {
		top := roundUp(0, tt.hi)
		if math.Abs(top-tt.top) > 1e-9 {
			t.Errorf("roundUp(0, %v) = %v, want %v", tt.hi, top, tt.top)
		}
		var labels []string
		for _, tick := range valueTicks(0, top) {
			if !tick.IsMinor() {
				labels = append(labels, tick.Label)
			}
		}
		if diff := cmp.Diff(tt.labels, labels); diff != "" {
			t.Errorf("ticks of 0..%v (-want +got):\n%s", top, diff)
		}
	}
	if ticks := valueTicks(1, 1); ticks != nil {
		t.Errorf("ticks of an empty range: %v", ticks)
	}
}

func TestNumber(t *testing.T) {
	for _, tt := range []struct {
		v    float64
		want string
	}{{0.9643, "0.964"}, {9.712, "9.71"}, {30.27, "30.3"}, {1027.26, "1027"}, {math.NaN(), "-"}} {
		if got := number(tt.v); got != tt.want {
			t.Errorf("number(%v) = %q, want %q", tt.v, got, tt.want)
		}
	}
}
