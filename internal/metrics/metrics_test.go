package metrics

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

func memory(t *testing.T) *Provider {
	t.Helper()
	p, err := Start(context.Background(), Config{Exporter: ExportMemory})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// find returns the series of name whose attributes include attrs.
func find(t *testing.T, series []Series, name string, attrs map[string]string) Series {
	t.Helper()
	for _, s := range series {
		if s.Name != name {
			continue
		}
		ok := true
		for k, v := range attrs {
			ok = ok && s.Attributes[k] == v
		}
		if ok {
			return s
		}
	}
	t.Fatalf("no series %s %v in %+v", name, attrs, series)
	return Series{}
}

func TestCompactionAndAppendMetrics(t *testing.T) {
	ctx := context.Background()
	p := memory(t)
	r := p.Recorder()
	r.Compacted(ctx, Compaction{Flow: "orders", Outcome: "compacted", Duration: 2 * time.Second, Events: 40, Jobs: 3, BytesBilled: 10 << 20, UnfoldedAge: 3 * time.Minute})
	r.Compacted(ctx, Compaction{Flow: "orders", Outcome: "idle", UnfoldedAge: 13 * time.Minute})
	r.Compacted(ctx, Compaction{Flow: "orders", Outcome: "failed", UnfoldedAge: -1})
	r.Compacted(ctx, Compaction{Flow: "extracts", Outcome: "up to date", Snapshot: true, SnapshotRowsSkipped: 7})
	for _, rows := range []int{1, 30, 500} {
		r.AppendCall(ctx, rows, 20*time.Millisecond, AppendOK)
	}
	r.AppendCall(ctx, 2, time.Second, AppendError)
	series, err := p.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		attrs map[string]string
		want  float64
	}{
		{CompactionRuns, map[string]string{"flow": "orders", "outcome": "compacted"}, 1},
		{CompactionRuns, map[string]string{"flow": "orders", "outcome": "failed"}, 1},
		{CompactionEvents, map[string]string{"flow": "orders"}, 40},
		{CompactionJobs, map[string]string{"flow": "orders"}, 3},
		{CompactionBytesBilled, map[string]string{"flow": "orders"}, 10 << 20},
		// The newest known age: the failed run did not know its watermark.
		{CompactionUnfoldedAge, map[string]string{"flow": "orders"}, 13 * 60},
		{CompactionSnapshotRowsSkipped, map[string]string{"flow": "extracts"}, 7},
	} {
		if got := find(t, series, c.name, c.attrs); got.Value == nil || *got.Value != c.want {
			t.Errorf("%s %v = %v, want %v", c.name, c.attrs, got.Value, c.want)
		}
	}
	for _, s := range series {
		if s.Name == CompactionSnapshotRowsSkipped && s.Attributes["flow"] == "orders" {
			t.Errorf("a change-stream flow recorded %s", s.Name)
		}
	}
	rows := find(t, series, AppendRows, nil)
	if rows.Count != 4 || *rows.Sum != 533 || *rows.Max != 500 || *rows.P50 != 2 {
		t.Errorf("append rows = %+v", rows)
	}
	if ok := find(t, series, AppendDuration, map[string]string{"outcome": AppendOK}); ok.Count != 3 {
		t.Errorf("ok appends = %d, want 3", ok.Count)
	}
	if d := find(t, series, CompactionDuration, map[string]string{"flow": "orders", "outcome": "compacted"}); d.Count != 1 || *d.Sum != 2 {
		t.Errorf("compaction duration = %+v", d)
	}
}

// A nil recorder (metrics off) is safe everywhere.
func TestNilRecorder(t *testing.T) {
	ctx := context.Background()
	p, err := Start(ctx, Config{})
	if err != nil {
		t.Fatal(err)
	}
	r := p.Recorder()
	if r != nil {
		t.Fatal("metrics off gave a recorder")
	}
	r.Appended(ctx, "t", time.Now(), time.Now())
	r.Tombstone(ctx, "t")
	r.Failed(ctx, "t", DeadLettered, "wire")
	r.Decoded(ctx, time.Microsecond)
	r.AppendCall(ctx, 1, time.Millisecond, AppendOK)
	r.Compacted(ctx, Compaction{Flow: "f"})
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Snapshot(ctx); err == nil {
		t.Error("a snapshot without memory metrics succeeded")
	}
}

func TestHandlerAndLogLine(t *testing.T) {
	ctx := context.Background()
	var buf bytes.Buffer
	p, err := Start(ctx, Config{Exporter: ExportLog, Log: slog.New(slog.NewJSONHandler(&buf, nil)), Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	p.Recorder().Appended(ctx, "db.t", time.Unix(100, 0), time.Unix(101, 0))
	w := httptest.NewRecorder()
	p.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	var body struct{ Metrics []Series }
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatalf("/metrics: %v\n%s", err, w.Body)
	}
	lag := find(t, body.Metrics, IngestLag, map[string]string{"topic": "db.t"})
	if lag.Count != 1 || *lag.Sum != 1 || *lag.P99 != 1 {
		t.Errorf("lag = %+v", lag)
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	line := buf.String()
	if !strings.Contains(line, `"event":"metrics"`) || !strings.Contains(line, `"name":"bqcdc.ingest.messages"`) || strings.Count(line, "\n") != 1 {
		t.Errorf("log exporter wrote %q, want one JSON line of the series", line)
	}
}

func TestNamesAreUniqueAndPrefixed(t *testing.T) {
	seen := map[string]bool{}
	for _, n := range Names() {
		if seen[n] || !strings.HasPrefix(n, "bqcdc.") {
			t.Errorf("instrument name %q: duplicate or not under bqcdc.", n)
		}
		seen[n] = true
	}
	// Every instrument New creates is listed: a recorder with every method
	// called emits exactly Names().
	ctx := context.Background()
	p := memory(t)
	r := p.Recorder()
	r.Appended(ctx, "t", time.Unix(1, 0), time.Unix(2, 0))
	r.Decoded(ctx, time.Microsecond)
	r.AppendCall(ctx, 1, time.Millisecond, AppendOK)
	r.Compacted(ctx, Compaction{Flow: "f", Outcome: "idle", UnfoldedAge: time.Second, Snapshot: true})
	r.GoldRefreshed(ctx, "v", time.Minute)
	series, _ := p.Snapshot(ctx)
	emitted := map[string]bool{}
	for _, s := range series {
		emitted[s.Name] = true
	}
	want := map[string]bool{}
	for _, n := range Names() {
		want[n] = true
	}
	if d := cmp.Diff(want, emitted); d != "" {
		t.Errorf("emitted instruments (-Names +emitted):\n%s", d)
	}
}

// Instruments describes what the instruments emit: kind, value type, unit
// and attribute keys (the Terraform descriptors are checked against it).
func TestInstrumentsDescribeWhatIsEmitted(t *testing.T) {
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	r, err := New(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	if err != nil {
		t.Fatal(err)
	}
	r.Appended(ctx, "t", time.Unix(1, 0), time.Unix(2, 0))
	r.Failed(ctx, "t", DeadLettered, "wire")
	r.Decoded(ctx, time.Microsecond)
	r.AppendCall(ctx, 1, time.Millisecond, AppendOK)
	r.Compacted(ctx, Compaction{Flow: "f", Outcome: "idle", UnfoldedAge: time.Second})
	r.Compacted(ctx, Compaction{Flow: "s", Outcome: "up to date", Snapshot: true, SnapshotRowsSkipped: 2})
	r.GoldRefreshed(ctx, "v", time.Minute)
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]Instrument{}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		in := Instrument{Name: m.Name, Unit: m.Unit, Description: m.Description}
		kind, ok := dataKinds[fmt.Sprintf("%T", m.Data)]
		if !ok {
			t.Errorf("%s: unexpected data %T", m.Name, m.Data)
		}
		in.Kind, in.ValueType = kind[0], kind[1]
		for k := range attributeKeys(m.Data) {
			in.Labels = append(in.Labels, k)
		}
		sort.Strings(in.Labels)
		got[m.Name] = in
	}
	want := map[string]Instrument{}
	for _, in := range Instruments() {
		want[in.Name] = in
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Instruments() (-listed +emitted):\n%s", d)
	}
}

// dataKinds maps the SDK's aggregation types to Cloud Monitoring's metric
// kind and value type.
var dataKinds = map[string][2]string{
	"metricdata.Sum[int64]":         {"CUMULATIVE", "INT64"},
	"metricdata.Histogram[float64]": {"CUMULATIVE", "DISTRIBUTION"},
	"metricdata.Histogram[int64]":   {"CUMULATIVE", "DISTRIBUTION"},
	"metricdata.Gauge[float64]":     {"GAUGE", "DOUBLE"},
	"metricdata.Gauge[int64]":       {"GAUGE", "INT64"},
}

// attributeKeys returns the attribute keys of an aggregation's data points.
// The point types share the Attributes field but no method, hence reflection.
func attributeKeys(data metricdata.Aggregation) map[string]bool {
	keys := map[string]bool{}
	points := reflect.ValueOf(data).FieldByName("DataPoints")
	for i := range points.Len() {
		set := points.Index(i).FieldByName("Attributes").Interface().(attribute.Set)
		for _, kv := range set.ToSlice() {
			keys[string(kv.Key)] = true
		}
	}
	return keys
}
