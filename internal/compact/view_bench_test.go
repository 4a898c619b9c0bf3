package compact

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/cost"
	"github.com/bqcdc/bqcdc/internal/dev/rendercases"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/plan"
	"github.com/bqcdc/bqcdc/internal/schema"
)

// BenchmarkViewCost prices reading a view of versions whole, against the
// bound of issue 40's criterion 2: a view costs what it shows,
//
//	view-bytes ≤ 1.5 × (versions-bytes + events-delta-bytes)
//
// where versions-bytes is the versions × the state's row (a version
// stored whole) and events-delta-bytes the other events × (the keys, the
// sequences and the one column that changed). Each key has versions
// versions of eventsPerVersion events; an event after a version's first
// changes only a column outside TRACK HISTORY ON. Reported: view-bytes
// (what reading the whole view scans: the state and the changelog's
// tail), versions-bytes, events-delta-bytes, view/bound (the ratio the
// criterion bounds by 1.5) and state-bytes.
//
// It runs no query: go test ./internal/compact -run '^$' -bench ViewCost.
func BenchmarkViewCost(b *testing.B) {
	flows := trackedFlows(b)
	for _, kind := range []string{"scd2", "bitemporal"} {
		for _, keys := range []int{10_000, 100_000} {
			for _, per := range []int{1, 10, 100} {
				b.Run(fmt.Sprintf("view/%s/keys%dk/events%dperversion", kind, keys/1000, per), func(b *testing.B) {
					benchView(b, flows[kind], keys, 2, per, "city")
				})
			}
		}
	}
}

// trackedFlows binds an SCD 2 flow that tracks history on every column
// but city (sql/render/testdata's users_tracked) and a bitemporal one that
// does the same (the test flows have none).
func trackedFlows(b *testing.B) map[string]*flow.Bound {
	b.Helper()
	out := map[string]*flow.Bound{}
	for _, bd := range rendercases.Flows(b, "../../sql/render/testdata") {
		if bd.Name == "users_tracked" {
			out["scd2"] = bd
		}
	}
	dir := b.TempDir()
	src := `CREATE FLOW users_bitemporal_tracked AS AUTO CDC INTO users_bitemporal_tracked
FROM STREAM(users)
KEYS (userId)
APPLY AS DELETE WHEN operation = 'DELETE'
SEQUENCE BY sequenceNum
SYSTEM SEQUENCE BY _cdc_ingested_at
COLUMNS * EXCEPT (operation, _cdc_op, _cdc_source_ts, _cdc_sequence, _cdc_publish_time, _cdc_schema_id, _cdc_transaction)
STORED AS BITEMPORAL
TRACK HISTORY ON * EXCEPT (city);
`
	if err := os.WriteFile(filepath.Join(dir, "tracked.sql"), []byte(src), 0o644); err != nil {
		b.Fatal(err)
	}
	out["bitemporal"] = rendercases.Flows(b, dir)[0]
	if len(out) != 2 {
		b.Fatalf("found %d of the 2 flows", len(out))
	}
	return out
}

// benchView prices flow bd's view read whole over a state of keys keys ×
// versions × perVersion events, each event a full state row as today's
// state stores it, clustered by the first key and written by maintenance
// the day before; the changelog holds the history's days and the run's
// tail of one event.
func benchView(b *testing.B, bd *flow.Bound, keys, versions, perVersion int, changed string) {
	r := newCostRun(keys, 1)
	p := plan.For(bd, costLoc)
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	events := int64(keys * versions * perVersion)
	changelog := cost.NewTable(cost.Name(costLoc.ChangelogTable(bd.Flow)), cost.Columns(bd.Changelog, costShapes, costShape), catalog.ColIngestedAt, catalog.ColIngestedAt)
	must(changelog.AddTimeRange(costNow.AddDate(0, 0, -costHistoryDays), r.params.Watermark, events, 0))
	must(changelog.AddTimeRange(r.params.Watermark.Add(time.Microsecond), r.params.NewWatermark, 1, 0))
	state := cost.NewTable(cost.Name(costLoc.StateTable(bd.Flow)), cost.Columns(p.StateColumns(), costShapes, costShape), catalog.ColStateGen, bd.Keys[0].Name)
	folded := cost.DayOf(costNow.AddDate(0, 0, -1))
	must(state.AddSpan(folded, cost.Null, cost.Null, 1, 0)) // the marker
	must(state.AddSpan(folded, cost.Int(0), cost.Int(int64(keys-1)), events, 0))
	m := cost.NewModel(changelog, state)
	sql, err := viewSQL(bd, costLoc, r.params.NewWatermark)
	must(err)
	view := cost.Name(costLoc.ViewTable(bd.Flow))
	m.Views[view] = sql
	var e *cost.Estimate
	for b.Loop() {
		if e, err = m.Estimate(fmt.Sprintf("SELECT * FROM `%s`", view)); err != nil {
			b.Fatal(err)
		}
	}
	viewBytes := e.Scanned(state.Name) + e.Scanned(changelog.Name)
	nVersions := float64(keys * versions)
	versionsBytes := nVersions * state.RowBytes()
	delta := float64(events) - nVersions
	deltaBytes := delta * deltaRowBytes(bd, changed)
	b.ReportMetric(float64(viewBytes), "view-bytes")
	b.ReportMetric(versionsBytes, "versions-bytes")
	b.ReportMetric(deltaBytes, "events-delta-bytes")
	b.ReportMetric(float64(viewBytes)/(versionsBytes+deltaBytes), "view/bound")
	b.ReportMetric(float64(state.Bytes()), "state-bytes")
}

// deltaRowBytes is what an event that opens no version must carry: the
// keys, the sequences (SEQUENCE BY, and SYSTEM SEQUENCE BY) and the
// column that changed, at the benchmark's value sizes.
func deltaRowBytes(bd *flow.Bound, changed string) float64 {
	cols := append(schema.Columns{}, bd.Keys...)
	cols = append(cols, bd.Sequence...)
	if bd.SystemSequence != nil {
		cols = append(cols, *bd.SystemSequence)
	}
	for _, c := range bd.Output {
		if c.Name == changed {
			cols = append(cols, c)
		}
	}
	var n float64
	for _, c := range cost.Columns(cols, costShapes, costShape) {
		n += c.Bytes
	}
	return n
}
