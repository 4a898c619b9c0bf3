package render

import (
	"fmt"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/dev/rendercases"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/schema"
)

// scaleSources is the deployment size the scale benchmarks measure: 500 source tables,
// each read by an SCD 1 and an SCD 2 flow (1,000 flows).
const scaleSources = 500

// scaleFlowFiles generates one flow file per source
// (rendercases.ScaleFlowFile).
func scaleFlowFiles(sources int) (names []string, srcs map[string]string) {
	srcs = make(map[string]string, sources)
	for i := range sources {
		name := fmt.Sprintf("sql/flows/table_%03d.sql", i)
		names = append(names, name)
		srcs[name] = rendercases.ScaleFlowFile(i, fmt.Sprintf("dbserver1.shop%02d.table_%03d", i%20, i))
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
		view, err := testView(b, loc, scaleRun.Watermark)
		if err != nil {
			return 0, err
		}
		n += len(view)
		c := NewCompaction(b, loc, testShape(b))
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
	cols := rendercases.ScaleChangelog()
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
