package main

import (
	"io"
	"math"
	"sort"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// snapshot is one scrape of a Prometheus endpoint.
type snapshot map[string]*dto.MetricFamily

// parseMetrics reads the Prometheus text format.
func parseMetrics(r io.Reader) (snapshot, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(r)
	return snapshot(families), err
}

// sum adds the values (counter, gauge or untyped) of the series of name whose labels pass keep
// (nil keeps all).
func (s snapshot) sum(name string, keep func(labels map[string]string) bool) float64 {
	f := s[name]
	if f == nil {
		return 0
	}
	total := 0.0
	for _, m := range f.GetMetric() {
		if keep != nil && !keep(labelMap(m)) {
			continue
		}
		switch {
		case m.GetCounter() != nil:
			total += m.GetCounter().GetValue()
		case m.GetGauge() != nil:
			total += m.GetGauge().GetValue()
		case m.GetUntyped() != nil:
			total += m.GetUntyped().GetValue()
		}
	}
	return total
}

// histogram sums the cumulative buckets of the histogram series of name that pass keep.
func (s snapshot) histogram(name string, keep func(labels map[string]string) bool) buckets {
	out := buckets{}
	f := s[name]
	if f == nil {
		return out
	}
	for _, m := range f.GetMetric() {
		h := m.GetHistogram()
		if h == nil || (keep != nil && !keep(labelMap(m))) {
			continue
		}
		for _, b := range h.GetBucket() {
			if !math.IsInf(b.GetUpperBound(), 1) {
				out[b.GetUpperBound()] += float64(b.GetCumulativeCount())
			}
		}
		out[math.Inf(1)] += float64(h.GetSampleCount())
	}
	return out
}

func labelMap(m *dto.Metric) map[string]string {
	out := make(map[string]string, len(m.GetLabel()))
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// buckets are cumulative counts by upper bound.
type buckets map[float64]float64

// minus is the histogram of the observations made between earlier and b.
func (b buckets) minus(earlier buckets) buckets {
	out := buckets{}
	for le, n := range b {
		out[le] = n - earlier[le]
	}
	return out
}

// quantile estimates the q-quantile the way Prometheus' histogram_quantile does: linear
// interpolation inside the bucket that holds it. It returns NaN without observations.
func (b buckets) quantile(q float64) float64 {
	bounds := make([]float64, 0, len(b))
	for le := range b {
		bounds = append(bounds, le)
	}
	sort.Float64s(bounds)
	if len(bounds) == 0 || b[math.Inf(1)] == 0 {
		return math.NaN()
	}
	rank := q * b[math.Inf(1)]
	lower, below := 0.0, 0.0
	for _, le := range bounds {
		n := b[le]
		if n >= rank {
			if math.IsInf(le, 1) {
				// Beyond the last finite bound: the bound is all that is known.
				return lower
			}
			if n == below {
				return le
			}
			return lower + (le-lower)*(rank-below)/(n-below)
		}
		lower, below = le, n
	}
	return lower
}

// requestCounts are a client's requests by HTTP method.
type requestCounts map[string]float64

// restRequests reads client-go's rest_client_requests_total by method.
func (s snapshot) restRequests() requestCounts {
	out := requestCounts{}
	f := s["rest_client_requests_total"]
	if f == nil {
		return out
	}
	for _, m := range f.GetMetric() {
		out[labelMap(m)["method"]] += m.GetCounter().GetValue()
	}
	return out
}

func (c requestCounts) minus(earlier requestCounts) requestCounts {
	out := requestCounts{}
	for k, v := range c {
		if d := v - earlier[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

func (c requestCounts) total() float64 {
	t := 0.0
	for _, v := range c {
		t += v
	}
	return t
}

// writes counts the requests that change something.
func (c requestCounts) writes() float64 {
	return c["POST"] + c["PUT"] + c["PATCH"] + c["DELETE"]
}
