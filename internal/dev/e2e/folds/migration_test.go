package folds

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/compact"
	"github.com/bqcdc/bqcdc/internal/dev/testenv"
	"github.com/bqcdc/bqcdc/internal/dev/viewcheck"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/sql/render"
)

// TestMigrationFromGenerations: a deployment of the bqcdc before levels has
// state tables of generations (per key, the rows of its newest generation
// count; older ones linger after a crash) and no change tables. The views
// of this version read such a state as levels (every row counts: each is
// an event, and events that do not decide the target change nothing), and
// its first compaction brings it to the layout: the change table is made
// and the change feed's history materialized. Every view equals the model
// before and after, and the change feed equals the model's.
func TestMigrationFromGenerations(t *testing.T) {
	e := testenv.New(t, stack, "migration")
	ctx := context.Background()
	bound := e.ApplySourceFlows(t, "tt.sql", timeTravelFlows, "tt.users", testenv.UsersImage)
	at, row := ttClock()
	e.AppendRows(t, "tt.users", []map[string]any{
		row(1, "a", "x", "INSERT", 1, "m01", 1),
		row(2, "b", "y", "INSERT", 1, "m02", 1),
		row(1, "a", nil, "UPDATE", 3, "m03", 2),
		row(1, "z", "w", "UPDATE", 2, "m04", 3),
		row(2, nil, nil, "DELETE", 2, "m05", 4),
		row(3, "c", "v", "INSERT", 1, "m06", 5),
	})
	// The old compaction folded everything up to minute 6: generation g1,
	// and a second copy of it (g2) that a crash left before its clean-up.
	w1, g1, g2 := at(6), at(7), at(8)
	for _, b := range bound {
		oldLayout(t, e, b, w1, g1, g2)
	}
	e.AppendRows(t, "tt.users", []map[string]any{
		row(3, "d", "v", "UPDATE", 6, "m07", 9),
		row(1, "q", "p", "UPDATE", 4, "m08", 10),
		row(0, nil, nil, "TRUNCATE", 5, "m09", 11),
		row(4, "e", "u", "INSERT", 7, "m10", 12),
	})
	e.CheckViews(t, bound, "over the old layout, before compaction")

	now := at(20)
	opts := compact.Options{VisibilityLag: time.Minute, Now: func() time.Time { return now }, Backoff: 20 * time.Millisecond, MaintainEvery: -1}
	for _, r := range compact.New(e.BQ, e.Loc, opts).Run(ctx, bound) {
		if r.Outcome != compact.Compacted || r.Error != "" {
			t.Fatalf("first compaction of the new layout: %+v", r)
		}
	}
	e.CheckViews(t, bound, "after the first compaction of the new layout")
	for _, b := range bound {
		md, err := e.BQ.Dataset(e.Loc.Dataset(b.Flow)).Table(catalog.StateName(b.Flow)).Metadata(ctx)
		if err != nil || md.Labels[catalog.StateLayoutLabel] != catalog.StateLayout {
			t.Errorf("%s: state not labelled with the layout: %v (%v)", b.Name, md.Labels, err)
		}
		if !b.Kind().ChangeFeed() {
			continue
		}
		// The feed's history, materialized by the first run, is the
		// model's; so is a range read.
		if d, err := viewcheck.CheckChanges(ctx, e.BQ, b, e.Loc, time.Time{}, time.Time{}); err != nil || d != "" {
			t.Errorf("%s_changes after the migration (%v):\n%s", b.Target, err, d)
		}
		if d, err := viewcheck.CheckChanges(ctx, e.BQ, b, e.Loc, at(3), at(10)); err != nil || d != "" {
			t.Errorf("%s_changes(minute 3, minute 10] after the migration (%v):\n%s", b.Target, err, d)
		}
	}

	// A later run materializes only its own range, reading the touched keys.
	e.AppendRows(t, "tt.users", []map[string]any{row(3, "f", "v", "UPDATE", 8, "m11", 21)})
	now = at(30)
	for _, r := range compact.New(e.BQ, e.Loc, opts).Run(ctx, bound) {
		if r.Outcome != compact.Compacted || r.Error != "" {
			t.Fatalf("second compaction: %+v", r)
		}
	}
	for _, b := range bound {
		if !b.Kind().ChangeFeed() {
			continue
		}
		if d, err := viewcheck.CheckChanges(ctx, e.BQ, b, e.Loc, time.Time{}, time.Time{}); err != nil || d != "" {
			t.Errorf("%s_changes after the second run (%v):\n%s", b.Target, err, d)
		}
	}
}

// oldLayout makes b's objects what the bqcdc before levels left: no change
// table, a state table without the layout label (its labels the old
// run's), holding every event ingested by w as generation g1 and again as
// g2, and g2's watermark marker.
func oldLayout(t *testing.T, e *testenv.Env, b *flow.Bound, w, g1, g2 time.Time) {
	t.Helper()
	ctx := context.Background()
	ds := e.BQ.Dataset(e.Loc.Dataset(b.Flow))
	if b.Kind().ChangeFeed() {
		if err := ds.Table(catalog.ChangesName(b.Flow)).Delete(ctx); err != nil {
			t.Fatal(err)
		}
	}
	events := strings.Join(quoted(catalog.EventColumns(b).Names()), ", ")
	keys := strings.Join(quoted(b.Keys.Names()), ", ")
	for _, g := range []time.Time{g1, g2} {
		sql := fmt.Sprintf("INSERT INTO %s (%s, __key, __op, __gen, __watermark) SELECT %s, TO_JSON_STRING(STRUCT(%s)), __op, %s, CAST(NULL AS TIMESTAMP) FROM (%s) WHERE `_cdc_ingested_at` <= %s",
			e.Loc.StateTable(b.Flow), events, events, keys, render.Literal(g), render.EventsQuery(b, e.Loc), render.Literal(w))
		if _, err := e.Query(sql); err != nil {
			t.Fatalf("writing generation %s of %s: %v", g, b.Name, err)
		}
	}
	if _, err := e.Query(fmt.Sprintf("INSERT INTO %s (`_cdc_ingested_at`, __op, __gen, __watermark) VALUES (%s, 'W', %s, %s)",
		e.Loc.StateTable(b.Flow), render.Literal(w), render.Literal(g2), render.Literal(w))); err != nil {
		t.Fatal(err)
	}
	us := fmt.Sprint(w.UnixMicro())
	var upd bigquery.TableMetadataToUpdate
	upd.SetLabel(catalog.LabelWatermark, us)
	upd.SetLabel(catalog.LabelFoldedMax, us)
	upd.DeleteLabel(catalog.StateLayoutLabel)
	if _, err := ds.Table(catalog.StateName(b.Flow)).Update(ctx, upd, ""); err != nil {
		t.Fatal(err)
	}
}

func quoted(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = catalog.QuoteIdent(n)
	}
	return out
}
