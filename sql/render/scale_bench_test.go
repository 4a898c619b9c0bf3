package render

import (
	"fmt"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/schema"
)

// scaleSources is the deployment size issue 11 targets: 500 source tables,
// each read by an SCD 1 and an SCD 2 flow (1,000 flows).
const scaleSources = 500

// scaleChangelog is a realistic changelog: a 12-column row image (keys,
// text, money, times, a flag, an array) plus bqcdc's 8 metadata columns,
// 20 columns in all.
func scaleChangelog() schema.Columns {
	image := schema.Columns{
		{Name: "id", Type: schema.Int64, Required: true},
		{Name: "tenant_id", Type: schema.String, Required: true},
		{Name: "name", Type: schema.String},
		{Name: "email", Type: schema.String},
		{Name: "status", Type: schema.String},
		{Name: "amount", Type: schema.Numeric},
		{Name: "balance", Type: schema.Float64},
		{Name: "created_at", Type: schema.Timestamp},
		{Name: "updated_at", Type: schema.Timestamp},
		{Name: "birth_date", Type: schema.Date},
		{Name: "is_active", Type: schema.Bool},
		{Name: "tags", Type: schema.String, Repeated: true},
	}
	return append(image, catalog.MetadataColumns()...)
}

// scaleFlowFiles generates one flow file per source, as a team that keeps a
// table's flows together would write them: an SCD 1 current state (with truncates) and an
// SCD 2 history with a composite key, a STRUCT sequence, tracked and
// NULL-ignored columns and a filter.
func scaleFlowFiles(sources int) (names []string, srcs map[string]string) {
	srcs = make(map[string]string, sources)
	for i := range sources {
		topic := fmt.Sprintf("dbserver1.shop%02d.table_%03d", i%20, i)
		name := fmt.Sprintf("sql/flows/table_%03d.sql", i)
		names = append(names, name)
		srcs[name] = fmt.Sprintf(`-- Flows of source %[2]s.

CREATE FLOW t%03[1]d_current AS AUTO CDC INTO t%03[1]d_current
FROM STREAM(`+"`%[2]s`"+`)
KEYS (id)
APPLY AS DELETE WHEN _cdc_op = 'd'
APPLY AS TRUNCATE WHEN _cdc_op = 't'
SEQUENCE BY _cdc_sequence
COLUMNS * EXCEPT (_cdc_message_id, _cdc_transaction)
STORED AS SCD TYPE 1;

CREATE FLOW t%03[1]d_history AS AUTO CDC INTO history.t%03[1]d
FROM STREAM(`+"`%[2]s`"+`)
KEYS (tenant_id, id)
APPLY AS DELETE WHEN _cdc_op = 'd'
SEQUENCE BY STRUCT(updated_at, _cdc_sequence)
COLUMNS * EXCEPT (_cdc_transaction)
WHERE status IS NULL OR status != 'test'
STORED AS SCD TYPE 2
TRACK HISTORY ON * EXCEPT (updated_at, balance)
IGNORE NULL UPDATES ON (email, status);
`, i, topic)
	}
	return names, srcs
}

// scaleRun is a compaction run's timestamps.
var scaleRun = Run{
	Watermark: time.Date(2026, 11, 30, 7, 0, 0, 0, time.UTC), FoldedMax: time.Date(2026, 11, 30, 7, 9, 0, 0, time.UTC),
	Generation: time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC), NewWatermark: time.Date(2026, 11, 30, 7, 50, 0, 0, time.UTC),
	TombstoneCutoff: time.Date(2026, 10, 31, 8, 0, 0, 0, time.UTC)}

// renderScale renders what bqcdc runs for each flow: the view (bqcdc render
// and apply) and the statements of a compaction run. It returns the bytes
// of SQL, so the work cannot be optimised away.
func renderScale(bound []*flow.Bound) (int, error) {
	n := 0
	for _, b := range bound {
		view, err := View(b, loc, scaleRun.Watermark)
		if err != nil {
			return 0, err
		}
		n += len(view)
		c := NewCompaction(b, loc)
		stmts := []func() (string, error){
			func() (string, error) { return c.Stats(scaleRun) },
			func() (string, error) { return c.Fold(scaleRun) },
		}
		for _, stmt := range stmts {
			sql, err := stmt()
			if err != nil {
				return 0, err
			}
			n += len(sql)
		}
	}
	return n, nil
}

func parseAndBind(tb testing.TB, names []string, srcs map[string]string, changelogs map[string]schema.Columns) []*flow.Bound {
	flows, errs := flow.ParseFiles(names, srcs)
	if len(errs) > 0 {
		tb.Fatalf("%d errors, the first: %v", len(errs), errs[0])
	}
	bound, err := flow.BindAll(flows, changelogs)
	if err != nil {
		tb.Fatal(err)
	}
	return bound
}

// BenchmarkRender1000Flows measures bqcdc render at issue 11's scale: 1,000
// flows over 500 sources parsed from their text, bound to 20-column
// changelogs, and rendered (view and compaction statements). The phases
// are also measured alone, to show where the time goes.
func BenchmarkRender1000Flows(b *testing.B) {
	names, srcs := scaleFlowFiles(scaleSources)
	changelogs := map[string]schema.Columns{}
	cols := scaleChangelog()
	flows, errs := flow.ParseFiles(names, srcs)
	if len(errs) > 0 {
		b.Fatalf("%d errors, the first: %v", len(errs), errs[0])
	}
	for _, src := range flow.Sources(flows) {
		changelogs[src] = cols
	}
	if len(flows) != 2*scaleSources || len(changelogs) != scaleSources {
		b.Fatalf("generated %d flows over %d sources", len(flows), len(changelogs))
	}
	b.Run("all", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := renderScale(parseAndBind(b, names, srcs, changelogs)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parse", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, errs := flow.ParseFiles(names, srcs); len(errs) > 0 {
				b.Fatalf("%d errors, the first: %v", len(errs), errs[0])
			}
		}
	})
	b.Run("bind", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := flow.BindAll(flows, changelogs); err != nil {
				b.Fatal(err)
			}
		}
	})
	bound := parseAndBind(b, names, srcs, changelogs)
	b.Run("render", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			n, err := renderScale(bound)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(n)/1e6, "MB-of-SQL/op")
		}
	})
}
