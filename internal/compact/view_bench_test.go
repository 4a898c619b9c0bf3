package compact

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/cost"
	"github.com/bqcdc/bqcdc/internal/dev/rendercases"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/plan"
	"github.com/bqcdc/bqcdc/internal/schema"
	"github.com/bqcdc/bqcdc/sql/render"
)

// BenchmarkViewCost prices reading a view of versions whole, against the
// bound of issue 40's criterion 2: a view costs what it shows,
//
//	view-bytes ≤ 1.5 × (versions-bytes + events-delta-bytes)
//
// where versions-bytes is the rows the view shows × the state's row (a
// version stored whole) and events-delta-bytes the other events × (the
// keys, the sequences and the columns that changed: viewChanged). An SCD 2
// view shows a row per version (an event that opens none updates it in
// place); a bitemporal view a row per version and stretch of system time
// it was believed with the same values, so an event that changes a column
// it shows is a row of its own (rows-shown reports the count). Each key has
// versions versions of eventsPerVersion events; an event after a
// version's first changes only columns outside TRACK HISTORY ON, and the
// state is as maintenance leaves it (such events stored sparse).
// Reported: view-bytes (what reading the whole view scans: the state and
// the changelog's tail), view-bytes-whole (the same over a state of whole
// rows, as before sparse rows), versions-bytes, events-delta-bytes,
// view/bound (the ratio the criterion bounds by 1.5) and whole/bound.
//
// It runs no query: go test ./internal/compact -run '^$' -bench ViewCost.
func BenchmarkViewCost(b *testing.B) {
	flows := trackedFlows(b)
	for _, kind := range []string{"scd2", "bitemporal"} {
		for _, keys := range []int{10_000, 100_000} {
			for _, per := range []int{1, 10, 100} {
				b.Run(fmt.Sprintf("view/%s/keys%dk/events%dperversion", kind, keys/1000, per), func(b *testing.B) {
					benchView(b, flows[kind], keys, 2, per, viewChanged, 0, 0)
				})
			}
		}
		// A wide row (name, tracked and unchanged within a version, ~1 KiB):
		// what a sparse row leaves out grows with the row.
		b.Run(fmt.Sprintf("view/%s/keys100k/events100perversion/row1KiB", kind), func(b *testing.B) {
			benchView(b, flows[kind], 100_000, 2, 100, viewChanged, 900, 0)
		})
	}
	// 100k keys, 2 versions of 100 events each, by flow, columns changed,
	// and rows a version the state keeps (0: every event).
	for _, c := range []struct {
		name, flow string
		changed    []string
		stored     int
	}{
		// The issue's own case: a narrow SCD 2 target (a key, name, city
		// and the sequence) where one untracked column changes. Every event
		// keeps its message id, ingestion time, op and (sparse) base: ~37
		// bytes beside a 28-byte delta.
		{"scd2-narrow", "scd2-narrow", []string{"city"}, 0},
		// Narrow targets whose events change nothing the view shows (a
		// column outside COLUMNS changed at the source, or a row image sent
		// again): the delta is the keys and sequences alone. A bitemporal
		// view shows the city change of the case above as a row of its own,
		// and every event where it shows a sequence; one that shows neither
		// sequence (COLUMNS (userId, name, city)) shows an event that changes
		// nothing shown as no row.
		{"scd2-narrow/unshown", "scd2-narrow", nil, 0},
		{"bitemporal-narrow", "bitemporal-narrow", []string{"city"}, 0},
		{"bitemporal-narrow/unshown", "bitemporal-narrow", nil, 0},
		{"bitemporal-bare/unshown", "bitemporal-bare", nil, 0},
		// With a lateness horizon (flow.LatenessHorizonProperty), every
		// event older than it: maintenance keeps of each SCD 2 version its
		// first event (whole) and its last (sparse), of a bitemporal one the
		// events that show a change. The views' SQL is the same.
		{"scd2/horizon", "scd2", viewChanged, 2},
		{"scd2-narrow/horizon", "scd2-narrow", []string{"city"}, 2},
		{"scd2-narrow/unshown/horizon", "scd2-narrow", nil, 2},
		{"bitemporal-bare/unshown/horizon", "bitemporal-bare", nil, 1},
	} {
		kind, variant, _ := strings.Cut(c.name, "/")
		name := "view/" + kind + "/keys100k/events100perversion"
		if variant != "" {
			name += "/" + variant
		}
		b.Run(name, func(b *testing.B) {
			benchView(b, flows[c.flow], 100_000, 2, 100, c.changed, 0, c.stored)
		})
	}
}

// viewChanged are the columns an event that opens no version changes in
// BenchmarkViewCost: city, and the Debezium metadata that every event
// changes (its source and publish times), where the flow keeps them.
var viewChanged = []string{"city", catalog.ColSourceTS, catalog.ColPublishTime}

// trackedFlows binds an SCD 2 and a bitemporal flow that track history
// on name only (and narrow ones, scd2-narrow and bitemporal-narrow,
// without metadata), so that an event changing city (with the Debezium
// metadata that changes with every event: the source and publish times)
// opens no version. (TRACK HISTORY ON * EXCEPT (city) would track the
// kept sequenceNum, as Databricks does: every event would open one.)
func trackedFlows(b *testing.B) map[string]*flow.Bound {
	b.Helper()
	dir := b.TempDir()
	src := `CREATE FLOW users_tracked_name AS AUTO CDC INTO users_tracked_name
FROM STREAM(users)
KEYS (userId)
APPLY AS DELETE WHEN operation = 'DELETE'
SEQUENCE BY STRUCT(sequenceNum, _cdc_sequence)
COLUMNS * EXCEPT (operation, tags)
STORED AS SCD TYPE 2
TRACK HISTORY ON (name);

CREATE FLOW users_narrow AS AUTO CDC INTO users_narrow
FROM STREAM(users)
KEYS (userId)
APPLY AS DELETE WHEN operation = 'DELETE'
SEQUENCE BY sequenceNum
COLUMNS (userId, name, city, sequenceNum)
STORED AS SCD TYPE 2
TRACK HISTORY ON (name);

CREATE FLOW users_bitemporal_narrow AS AUTO CDC INTO users_bitemporal_narrow
FROM STREAM(users)
KEYS (userId)
APPLY AS DELETE WHEN operation = 'DELETE'
SEQUENCE BY sequenceNum
SYSTEM SEQUENCE BY _cdc_ingested_at
COLUMNS (userId, name, city, sequenceNum, _cdc_ingested_at)
STORED AS BITEMPORAL
TRACK HISTORY ON (name);

CREATE FLOW users_bitemporal_bare AS AUTO CDC INTO users_bitemporal_bare
FROM STREAM(users)
KEYS (userId)
APPLY AS DELETE WHEN operation = 'DELETE'
SEQUENCE BY sequenceNum
SYSTEM SEQUENCE BY _cdc_ingested_at
COLUMNS (userId, name, city)
STORED AS BITEMPORAL
TRACK HISTORY ON (name);

CREATE FLOW users_bitemporal_tracked AS AUTO CDC INTO users_bitemporal_tracked
FROM STREAM(users)
KEYS (userId)
APPLY AS DELETE WHEN operation = 'DELETE'
SEQUENCE BY sequenceNum
SYSTEM SEQUENCE BY _cdc_ingested_at
COLUMNS * EXCEPT (operation, tags, _cdc_op, _cdc_sequence, _cdc_schema_id, _cdc_transaction)
STORED AS BITEMPORAL
TRACK HISTORY ON (name);
`
	if err := os.WriteFile(filepath.Join(dir, "tracked.sql"), []byte(src), 0o644); err != nil {
		b.Fatal(err)
	}
	out := map[string]*flow.Bound{}
	for _, bd := range rendercases.Flows(b, dir) {
		switch bd.Name {
		case "users_tracked_name":
			out["scd2"] = bd
		case "users_bitemporal_tracked":
			out["bitemporal"] = bd
		case "users_narrow":
			out["scd2-narrow"] = bd
		case "users_bitemporal_narrow":
			out["bitemporal-narrow"] = bd
		case "users_bitemporal_bare":
			out["bitemporal-bare"] = bd
		}
	}
	if len(out) != 5 {
		b.Fatalf("found %d of the 5 flows", len(out))
	}
	return out
}

// benchView prices flow bd's view read whole over a state of keys keys ×
// versions × perVersion events as maintenance leaves it (clustered by the
// first key, written the day before): a version's first event whole, the
// others sparse (render.SparseColumns: NULL but for the columns that
// changed, with __base set); the changelog holds the history's days and
// the run's tail of one event; nameLen > 0 makes name that long (a wide
// row); stored > 0 keeps only that many rows a version in the state (a
// lateness horizon: the version's first event and its last), the bound
// still counting every event. It reports view-bytes-whole too: the same
// view over a state of whole rows (before sparse rows).
func benchView(b *testing.B, bd *flow.Bound, keys, versions, perVersion int, changed []string, nameLen float64, stored int) {
	r := newCostRun(keys, 1)
	p := plan.For(bd, costLoc)
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	events := int64(keys * versions * perVersion)
	rows := events
	if stored > 0 {
		rows = int64(keys * versions * stored)
	}
	nVersions := float64(keys * versions)
	changelog := cost.NewTable(cost.Name(costLoc.ChangelogTable(bd.Flow)), cost.Columns(bd.Changelog, costShapes, costShape), catalog.ColIngestedAt, catalog.ColIngestedAt)
	must(changelog.AddTimeRange(costNow.AddDate(0, 0, -costHistoryDays), r.params.Watermark, events, 0))
	must(changelog.AddTimeRange(r.params.Watermark.Add(time.Microsecond), r.params.NewWatermark, 1, 0))
	sql, err := viewSQL(bd, costLoc, r.params.NewWatermark)
	must(err)
	view := cost.Name(costLoc.ViewTable(bd.Flow))
	// The state, its sparse columns NULL on every row but a version's
	// first (or where they changed), __base on every row but those.
	whole := maps.Clone(costShapes)
	if nameLen > 0 {
		whole["name"] = cost.Shape{Len: nameLen}
	}
	sparse := maps.Clone(whole)
	opened := nVersions / float64(rows)
	for _, c := range render.SparseColumns(bd) {
		if slices.Contains(changed, c) {
			continue
		}
		sh, ok := sparse[c]
		if !ok {
			sh = costShape
		}
		sh.Null = 1 - (1-sh.Null)*opened
		sparse[c] = sh
	}
	sparse[catalog.ColStateBase] = cost.Shape{Null: opened}
	read := func(shapes map[string]cost.Shape) (viewBytes int64, rowBytes float64) {
		state := cost.NewTable(cost.Name(costLoc.StateTable(bd.Flow)), cost.Columns(p.StateColumns(), shapes, costShape), catalog.ColStateGen, bd.Keys[0].Name)
		folded := cost.DayOf(costNow.AddDate(0, 0, -1))
		must(state.AddSpan(folded, cost.Null, cost.Null, 1, 0)) // the marker
		must(state.AddSpan(folded, cost.Int(0), cost.Int(int64(keys-1)), rows, 0))
		m := cost.NewModel(changelog, state)
		m.Views[view] = sql
		e, err := m.Estimate(fmt.Sprintf("SELECT * FROM `%s`", view))
		must(err)
		return e.Scanned(state.Name) + e.Scanned(changelog.Name), state.RowBytes()
	}
	var viewBytes, wholeBytes int64
	var rowBytes float64
	for b.Loop() {
		viewBytes, _ = read(sparse)
		wholeBytes, rowBytes = read(whole)
	}
	shown := nVersions
	if bd.SystemSequence != nil && slices.ContainsFunc(bd.Output, func(c schema.Column) bool {
		// A shown column the events change (the sequences change with
		// every event): a bitemporal view shows each event as a belief.
		return slices.Contains(changed, c.Name) || slices.ContainsFunc(bd.Sequence, func(s schema.Column) bool { return s.Name == c.Name }) || c.Name == bd.SystemSequence.Name
	}) {
		shown = float64(events)
	}
	versionsBytes := shown * rowBytes
	delta := float64(events) - shown
	deltaBytes := delta * deltaRowBytes(bd, changed)
	b.ReportMetric(float64(viewBytes), "view-bytes")
	b.ReportMetric(float64(wholeBytes), "view-bytes-whole")
	b.ReportMetric(shown, "rows-shown")
	b.ReportMetric(versionsBytes, "versions-bytes")
	b.ReportMetric(deltaBytes, "events-delta-bytes")
	b.ReportMetric(float64(viewBytes)/(versionsBytes+deltaBytes), "view/bound")
	b.ReportMetric(float64(wholeBytes)/(versionsBytes+deltaBytes), "whole/bound")
}

// deltaRowBytes is what an event that opens no version must carry: the
// keys, the sequences (SEQUENCE BY, and SYSTEM SEQUENCE BY) and the
// columns that changed, at the benchmark's value sizes.
func deltaRowBytes(bd *flow.Bound, changed []string) float64 {
	cols := append(schema.Columns{}, bd.Keys...)
	cols = append(cols, bd.Sequence...)
	if bd.SystemSequence != nil {
		cols = append(cols, *bd.SystemSequence)
	}
	for _, c := range bd.Output {
		if slices.Contains(changed, c.Name) && !slices.ContainsFunc(cols, func(x schema.Column) bool { return x.Name == c.Name }) {
			cols = append(cols, c)
		}
	}
	var n float64
	for _, c := range cost.Columns(cols, costShapes, costShape) {
		n += c.Bytes
	}
	return n
}
