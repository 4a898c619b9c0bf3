package metrics

import (
	"math"
	"sort"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// Series is one time series as the local stack shows it: a counter's or
// gauge's value, or a histogram's count, sum and estimated quantiles.
type Series struct {
	Name       string            `json:"name"`
	Unit       string            `json:"unit,omitempty"`
	Attributes map[string]string `json:"attributes,omitempty"`
	Value      *float64          `json:"value,omitempty"` // counters and gauges
	Count      uint64            `json:"count,omitempty"` // histograms
	Sum        *float64          `json:"sum,omitempty"`
	Min        *float64          `json:"min,omitempty"`
	Max        *float64          `json:"max,omitempty"`
	// P50 and P99 are the upper bounds of the buckets holding those
	// quantiles (the max for the last bucket): estimates, as in Cloud
	// Monitoring's distribution charts.
	P50 *float64 `json:"p50,omitempty"`
	P99 *float64 `json:"p99,omitempty"`
}

// Flatten turns collected metrics into series sorted by name, then
// attributes.
func Flatten(rm metricdata.ResourceMetrics) []Series {
	var out []Series
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out = append(out, flatten(m)...)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return key(out[i].Attributes) < key(out[j].Attributes)
	})
	return out
}

func key(a map[string]string) string {
	ks := make([]string, 0, len(a))
	for k, v := range a {
		ks = append(ks, k+"="+v)
	}
	sort.Strings(ks)
	s := ""
	for _, k := range ks {
		s += k + ","
	}
	return s
}

func flatten(m metricdata.Metrics) []Series {
	var out []Series
	base := func(attrs map[string]string) Series { return Series{Name: m.Name, Unit: m.Unit, Attributes: attrs} }
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		out = values(base, d.DataPoints)
	case metricdata.Sum[float64]:
		out = values(base, d.DataPoints)
	case metricdata.Gauge[float64]:
		out = values(base, d.DataPoints)
	case metricdata.Gauge[int64]:
		out = values(base, d.DataPoints)
	case metricdata.Histogram[float64]:
		for _, p := range d.DataPoints {
			out = append(out, histogram(base(attrsOf(p.Attributes.ToSlice())), p.Count, p.Sum, p.Bounds, p.BucketCounts, p.Min, p.Max))
		}
	case metricdata.Histogram[int64]:
		for _, p := range d.DataPoints {
			out = append(out, histogram(base(attrsOf(p.Attributes.ToSlice())), p.Count, float64(p.Sum), p.Bounds, p.BucketCounts,
				extrema(p.Min), extrema(p.Max)))
		}
	}
	return out
}

// values flattens the points of a sum or a gauge.
func values[N int64 | float64](base func(map[string]string) Series, points []metricdata.DataPoint[N]) []Series {
	out := make([]Series, 0, len(points))
	for _, p := range points {
		s := base(attrsOf(p.Attributes.ToSlice()))
		s.Value = f(float64(p.Value))
		out = append(out, s)
	}
	return out
}

func extrema(e metricdata.Extrema[int64]) metricdata.Extrema[float64] {
	if v, ok := e.Value(); ok {
		return metricdata.NewExtrema(float64(v))
	}
	return metricdata.Extrema[float64]{}
}

func histogram(s Series, count uint64, sum float64, bounds []float64, counts []uint64, lo, hi metricdata.Extrema[float64]) Series {
	s.Count, s.Sum = count, f(sum)
	if v, ok := lo.Value(); ok {
		s.Min = f(v)
	}
	if v, ok := hi.Value(); ok {
		s.Max = f(v)
	}
	s.P50 = quantile(0.5, count, bounds, counts, s.Max)
	s.P99 = quantile(0.99, count, bounds, counts, s.Max)
	return s
}

// quantile is the upper bound of the bucket holding quantile q, capped by
// the largest value seen.
func quantile(q float64, count uint64, bounds []float64, counts []uint64, max *float64) *float64 {
	if count == 0 {
		return nil
	}
	rank := uint64(math.Ceil(q * float64(count)))
	var seen uint64
	for i, c := range counts {
		seen += c
		if seen < rank {
			continue
		}
		if i < len(bounds) && (max == nil || bounds[i] < *max) {
			return f(bounds[i])
		}
		return max
	}
	return max
}

func f(v float64) *float64 { return &v }

func attrsOf(kvs []attribute.KeyValue) map[string]string {
	if len(kvs) == 0 {
		return nil
	}
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		out[string(kv.Key)] = kv.Value.Emit()
	}
	return out
}
