package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/dev/testenv"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/compact"
	"github.com/bqcdc/bqcdc/internal/dev/viewcheck"
)

const compactFlows = `
CREATE FLOW c_current AS AUTO CDC INTO c_current FROM STREAM(` + "`c.users`" + `)
KEYS (userId) APPLY AS DELETE WHEN operation = 'DELETE' APPLY AS TRUNCATE WHEN operation = 'TRUNCATE'
SEQUENCE BY sequenceNum COLUMNS * EXCEPT (operation, _cdc_op, _cdc_source_ts, _cdc_sequence, _cdc_ingested_at, _cdc_publish_time, _cdc_schema_id);

CREATE FLOW c_history AS AUTO CDC INTO c_history FROM STREAM(` + "`c.users`" + `)
KEYS (userId) APPLY AS DELETE WHEN operation = 'DELETE'
SEQUENCE BY sequenceNum COLUMNS (userId, name, city) STORED AS SCD TYPE 2;
`

func userRow(id int64, name, op string, seq int64, msg string, at time.Time) map[string]any {
	return map[string]any{"userId": id, "name": name, "city": "c" + name, "operation": op, "sequenceNum": seq,
		catalog.ColMessageID: msg, catalog.ColIngestedAt: at.UnixMicro()}
}

func stateRows(t *testing.T, e *testenv.Env, table string) []map[string]bigquery.Value {
	t.Helper()
	rows, err := e.Query(fmt.Sprintf("SELECT __op, __gen, __watermark, __key, _cdc_message_id FROM `%s.cdc.%s` ORDER BY __gen, __op, __key, _cdc_message_id", e.Loc.Project, table))
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestCompactionIsIdempotentAndBounded: a second run with no new rows
// writes nothing and keeps the watermark; the SCD 1 state keeps only the
// rows that decide the view; tombstones expire; the report table is written;
// compacted changelog days past the retention are deleted, uncompacted ones
// never.
func TestCompactionIsIdempotentAndBounded(t *testing.T) {
	e := testenv.New(t, stack, "compaction-basics")
	ctx := context.Background()
	bound := e.ApplySourceFlows(t, "c.sql", compactFlows, "c.users", testenv.UsersImage)
	day := time.Now().UTC().Truncate(24 * time.Hour)
	// Three days ago (a minute after midnight: the change feed's slices
	// end at midnights, and an event at one would be its own slice).
	old := day.Add(-72*time.Hour + time.Minute)
	e.AppendRows(t, "c.users", []map[string]any{
		userRow(1, "a", "INSERT", 1, "m01", old),
		userRow(1, "b", "UPDATE", 2, "m02", old.Add(time.Second)),
		userRow(1, "c", "UPDATE", 3, "m03", old.Add(2*time.Second)),
		userRow(2, "x", "INSERT", 1, "m04", old.Add(3*time.Second)),
		userRow(2, "", "DELETE", 2, "m05", old.Add(4*time.Second)),
		userRow(3, "q", "INSERT", 1, "m06", day.Add(time.Hour)), // today: newer than the retention
	})
	now := day.Add(2 * time.Hour)
	// Runs here never overlap: maintenance may delete the levels of a run
	// a minute before it.
	opts := compact.Options{VisibilityLag: time.Minute, Now: func() time.Time { return now }, Backoff: 20 * time.Millisecond, Reports: e.W,
		MaintainMargin: time.Minute, MaintainGranularity: time.Nanosecond}
	reports := compact.New(e.BQ, e.Loc, opts).Run(ctx, bound)
	for _, r := range reports {
		// The first run has an empty state: statistics, the fold, the
		// flow's first position and its change feed's history, a day per
		// statement (from a minute after midnight three days ago, ending at
		// midnights, to two hours past the last: four), and no maintenance
		// (nothing was folded before it).
		if r.Outcome != compact.Compacted || r.Error != "" || !r.WatermarkAfter.Equal(now.Add(-time.Minute)) || r.Jobs != 7 || r.Maintained {
			t.Fatalf("first run: %+v", r)
		}
	}
	if r := reports[0]; r.EventsRead != 6 || r.KeysTouched != 3 {
		t.Errorf("first run read %d events of %d keys, want 6 of 3", r.EventsRead, r.KeysTouched)
	}
	// SCD 1 keeps the newest event of each key and the tombstone: 1 (m03), 2 (m05), 3 (m06).
	current := stateRows(t, e, "c_current__state")
	var ids []string
	for _, r := range current {
		if r["__op"] != "W" {
			ids = append(ids, fmt.Sprint(r["__op"], ":", r["_cdc_message_id"]))
		}
	}
	if fmt.Sprint(ids) != "[D:m05 U:m03 U:m06]" {
		t.Errorf("SCD 1 state = %v, want [D:m05 U:m03 U:m06]", ids)
	}
	// SCD 2 keeps every distinct event (history re-cuts need them): 6.
	if n := len(stateRows(t, e, "c_history__state")) - 1; n != 6 {
		t.Errorf("SCD 2 state has %d event rows, want 6", n)
	}
	for _, b := range bound {
		if diff, err := viewcheck.Check(ctx, e.BQ, b, e.Loc); err != nil || diff != "" {
			t.Fatalf("view %s after compaction: %v\n%s", b.Target, err, diff)
		}
	}

	// A second run with nothing new changes nothing. It checks with one
	// query (the first run's watermark had not reached the time it saw the
	// changelog's metadata); a third finds the metadata unchanged and
	// starts no query job at all. (Maintenance is off for them: it would
	// fold the level into one, changing the rows, not what they fold to.)
	before := [][]map[string]bigquery.Value{stateRows(t, e, "c_current__state"), stateRows(t, e, "c_history__state")}
	now = now.Add(10 * time.Minute)
	opts.MaintainEvery = -1
	for _, r := range compact.New(e.BQ, e.Loc, opts).Run(ctx, bound) {
		if r.Outcome != compact.UpToDate || !r.WatermarkAfter.Equal(reports[0].WatermarkAfter) || r.Jobs != 1 {
			t.Errorf("second run: %+v, want up to date with watermark %v after 1 job", r, reports[0].WatermarkAfter)
		}
	}
	now = now.Add(10 * time.Minute)
	for _, r := range compact.New(e.BQ, e.Loc, opts).Run(ctx, bound) {
		if r.Outcome != compact.Idle || !r.WatermarkAfter.Equal(reports[0].WatermarkAfter) || r.Jobs != 0 {
			t.Errorf("third run: %+v, want idle with watermark %v and no job", r, reports[0].WatermarkAfter)
		}
	}
	after := [][]map[string]bigquery.Value{stateRows(t, e, "c_current__state"), stateRows(t, e, "c_history__state")}
	if fmt.Sprint(before) != fmt.Sprint(after) {
		t.Errorf("a run with no new rows changed the state:\nbefore %v\nafter  %v", before, after)
	}
	rep, err := e.Query("SELECT flow, outcome, events_read FROM `compaction-basics.cdc._bqcdc_compaction_state` ORDER BY flow")
	if err != nil || len(rep) != 2 || rep[0]["outcome"] != compact.Idle {
		t.Errorf("report table = %v (%v)", rep, err)
	}

	// Tombstone retention of one day drops key 2's tombstone when the
	// state's levels are folded (maintenance); the view is unchanged.
	// Changelog retention of one day deletes the day of the old rows
	// (compacted), not today's.
	e.AppendRows(t, "c.users", []map[string]any{userRow(4, "n", "INSERT", 1, "m07", now)})
	now = now.Add(10 * time.Minute)
	opts.TombstoneRetention, opts.ChangelogRetention, opts.MaintainEvery = 24*time.Hour, 24*time.Hour, time.Nanosecond
	for _, r := range compact.New(e.BQ, e.Loc, opts).Run(ctx, bound) {
		// Labels known: statistics, the fold, the change feed, and the
		// maintenance (two statements); the retention DELETE is counted on
		// the source's first flow.
		if r.Outcome != compact.Compacted || r.Error != "" || r.Jobs > 6 || !r.Maintained {
			t.Fatalf("fourth run: %+v", r)
		}
	}
	for _, r := range stateRows(t, e, "c_current__state") {
		if r["__op"] == "D" {
			t.Errorf("expired tombstone kept: %v", r)
		}
	}
	left, err := e.Query("SELECT _cdc_message_id FROM `compaction-basics.cdc.c_users_changelog` ORDER BY 1")
	if err != nil || fmt.Sprint(left) != "[map[_cdc_message_id:m06] map[_cdc_message_id:m07]]" {
		t.Errorf("changelog after retention = %v (%v), want m06 and m07", left, err)
	}
	for _, b := range bound {
		got, err := viewcheck.Actual(ctx, e.BQ, b, e.Loc)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %v", b.Target, got)
	}
}

// TestCompactingSomeFlowsKeepsDaysOthersNeed: a run of one flow (the
// Compact function's ?flow=) must not expire changelog days that another
// flow of the same source has not folded yet; a run of both does.
func TestCompactingSomeFlowsKeepsDaysOthersNeed(t *testing.T) {
	e := testenv.New(t, stack, "compaction-selected")
	ctx := context.Background()
	bound := e.ApplySourceFlows(t, "c.sql", compactFlows, "c.users", testenv.UsersImage)
	day := time.Now().UTC().Truncate(24 * time.Hour)
	e.AppendRows(t, "c.users", []map[string]any{
		userRow(1, "a", "INSERT", 1, "m01", day.Add(-72*time.Hour)),
		userRow(2, "b", "INSERT", 1, "m02", day.Add(time.Hour)),
	})
	now := day.Add(2 * time.Hour)
	opts := compact.Options{VisibilityLag: time.Minute, Now: func() time.Time { return now }, Backoff: 20 * time.Millisecond,
		ChangelogRetention: 24 * time.Hour}
	left := func() string {
		rows, err := e.Query("SELECT _cdc_message_id FROM `compaction-selected.cdc.c_users_changelog` ORDER BY 1")
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(rows)
	}
	reports, err := compact.New(e.BQ, e.Loc, opts).RunSelected(ctx, bound, []string{"c_current"}, nil)
	if err != nil || len(reports) != 1 || reports[0].Outcome != compact.Compacted || reports[0].Error != "" {
		t.Fatalf("run of c_current: %+v, %v", reports, err)
	}
	if got := left(); got != "[map[_cdc_message_id:m01] map[_cdc_message_id:m02]]" {
		t.Fatalf("after compacting only c_current the changelog holds %s: a day c_history has not folded was expired", got)
	}
	// Both views are whole: c_history still reads key 1 from the changelog.
	// (After days expire, the model, which reads the changelog, no longer
	// sees them, so views are compared here.)
	for _, b := range bound {
		if diff, err := viewcheck.Check(ctx, e.BQ, b, e.Loc); err != nil || diff != "" {
			t.Errorf("view %s: %v\n%s", b.Target, err, diff)
		}
	}
	now = now.Add(10 * time.Minute)
	if reports, err = compact.New(e.BQ, e.Loc, opts).RunSelected(ctx, bound, nil, nil); err != nil || len(reports) != 2 {
		t.Fatalf("run of both: %+v, %v", reports, err)
	}
	if got := left(); got != "[map[_cdc_message_id:m02]]" {
		t.Errorf("after compacting both flows the changelog holds %s, want only today's m02", got)
	}
}

// TestDryRunWithTheModel: `bqcdc compact --dry-run` against an emulator
// prices every statement of a run with the cost model over the tables'
// metadata (compact.Model): each one priced, at least the 10 MB minimum per
// table it reads, nothing written.
func TestDryRunWithTheModel(t *testing.T) {
	e := testenv.New(t, stack, "dryrun-model")
	bound := e.ApplySourceFlows(t, "c.sql", compactFlows, "c.users", testenv.UsersImage)
	now := time.Now().UTC()
	e.AppendRows(t, "c.users", []map[string]any{
		userRow(1, "a", "INSERT", 1, "m01", now.Add(-time.Hour)),
		userRow(2, "b", "INSERT", 1, "m02", now.Add(-time.Hour)),
	})
	c := compact.New(e.BQ, e.Loc, compact.Options{VisibilityLag: time.Second, DryRun: compact.Model(e.BQ), Now: func() time.Time { return now }})
	for _, rep := range c.Run(context.Background(), bound) {
		var priced int
		for _, st := range rep.Plan {
			if st.Error != "" {
				t.Errorf("%s: %s: %s", rep.Flow, st.Step, st.Error)
			}
			if !st.Ran {
				priced++
				if st.Bytes < 10<<20 {
					t.Errorf("%s: %s priced at %d bytes, under the 10 MB minimum", rep.Flow, st.Step, st.Bytes)
				}
			}
		}
		if priced == 0 {
			t.Errorf("%s: nothing priced: %+v", rep.Flow, rep.Plan)
		}
	}
	for _, b := range bound {
		if rows := stateRows(t, e, catalog.StateName(b.Flow)); len(rows) != 0 {
			t.Errorf("%s: the dry run wrote %d state rows", b.Name, len(rows))
		}
	}
}
