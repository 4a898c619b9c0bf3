package folds

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/compact"
	"github.com/bqcdc/bqcdc/internal/dev/testenv"
	"github.com/bqcdc/bqcdc/internal/dev/viewcheck"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/google/go-cmp/cmp"
)

const timeTravelFlows = `
CREATE FLOW tt_current AS AUTO CDC INTO tt_current FROM STREAM(` + "`tt.users`" + `)
KEYS (userId) APPLY AS DELETE WHEN operation = 'DELETE' APPLY AS TRUNCATE WHEN operation = 'TRUNCATE'
SEQUENCE BY sequenceNum COLUMNS * EXCEPT (operation, _cdc_op, _cdc_source_ts, _cdc_sequence, _cdc_ingested_at, _cdc_publish_time, _cdc_schema_id, _cdc_message_id, _cdc_transaction)
IGNORE NULL UPDATES ON (city);

CREATE FLOW tt_history AS AUTO CDC INTO tt_history FROM STREAM(` + "`tt.users`" + `)
KEYS (userId) APPLY AS DELETE WHEN operation = 'DELETE'
WHERE operation IS DISTINCT FROM 'TRUNCATE'
SEQUENCE BY sequenceNum COLUMNS (userId, name, city) STORED AS SCD TYPE 2 TRACK HISTORY ON (name);
`

// ttClock gives the minutes of the tt tests, from an hour ago, and a maker of
// tt.users events ingested at one of them.
func ttClock() (at func(minute int) time.Time, row func(id int64, name, city any, op string, seq int64, msg string, minute int) map[string]any) {
	return testenv.UsersClock()
}

// TestTimeTravelFunctions: <target>_at(ts) equals the model over the events
// ingested by ts, and <target>_changes(from, to) equals the model's feed, for
// an SCD 1 flow (truncate, partial updates) and an SCD 2 flow, before and
// after compaction; the feed read in pieces is the feed read at once, and
// replaying it onto an empty table gives the view.
func TestTimeTravelFunctions(t *testing.T) {
	e := testenv.New(t, stack, "timetravel")
	ctx := context.Background()
	// The emulator accepts the functions' DDL (it cannot call them): apply
	// creates them here, unlike the other tests (concession 11).
	e.Apply.SkipTableFunctions = false
	bound := e.ApplySourceFlows(t, "tt.sql", timeTravelFlows, "tt.users", testenv.UsersImage)
	at, row := ttClock()
	batches := [][]map[string]any{{
		row(1, "a", "x", "INSERT", 1, "m01", 1),
		row(2, "b", "y", "INSERT", 1, "m02", 1),
		row(1, "a", nil, "UPDATE", 3, "m03", 2), // untracked; NULL city kept (SCD 1)
		row(1, "z", "w", "UPDATE", 2, "m04", 3), // late: stale for SCD 1, re-cuts SCD 2 history
		row(1, "a", nil, "UPDATE", 3, "m03", 4), // redelivered: changes nothing
	}, {
		row(2, nil, nil, "DELETE", 2, "m05", 5),
		row(3, "c", "v", "INSERT", 1, "m06", 5),
		row(0, nil, nil, "TRUNCATE", 5, "m07", 6), // SCD 1: everything sequenced before 5 goes
		row(3, "d", "v", "UPDATE", 6, "m08", 7),
		row(1, "q", "p", "UPDATE", 4, "m09", 8), // before the truncate: gone in SCD 1
	}}
	check := func(when string) {
		t.Helper()
		for _, b := range bound {
			for _, m := range []int{0, 1, 2, 3, 5, 6, 8} {
				diff, err := viewcheck.CheckAt(ctx, e.BQ, b, e.Loc, at(m))
				if err != nil {
					t.Fatalf("%s: %v", when, err)
				}
				if diff != "" {
					t.Errorf("%s: %s_at(minute %d) differs from the model:\n%s", when, b.Target, m, diff)
				}
			}
			for _, r := range [][2]time.Time{{}, {at(2), {}}, {at(1), at(5)}, {at(3), at(3)}} {
				diff, err := viewcheck.CheckChanges(ctx, e.BQ, b, e.Loc, r[0], r[1])
				if err != nil {
					t.Fatalf("%s: %v", when, err)
				}
				if diff != "" {
					t.Errorf("%s: %s_changes(%v, %v) differs from the model:\n%s", when, b.Target, r[0], r[1], diff)
				}
			}
		}
	}
	compactAt := func(now time.Time) { t.Helper(); e.CompactAt(t, bound, now, compact.Options{}) }
	e.AppendRows(t, "tt.users", batches[0])
	check("before any compaction (the feed is empty: no watermark yet)")
	compactAt(at(4).Add(30 * time.Second))
	check("after compacting the first batch")
	e.AppendRows(t, "tt.users", batches[1])
	check("second batch in the tail")
	compactAt(at(9))
	check("after compacting everything")

	// Read in pieces, the feed is the feed; replayed, it is the view.
	for _, b := range bound {
		whole := changes(t, e, b, time.Time{}, time.Time{})
		pieces := append(changes(t, e, b, time.Time{}, at(3)), changes(t, e, b, at(3), at(6))...)
		pieces = append(pieces, changes(t, e, b, at(6), time.Time{})...)
		if d := cmp.Diff(whole, sorted(pieces)); d != "" {
			t.Errorf("%s: the feed read in three pieces differs (-whole +pieces):\n%s", b.Target, d)
		}
		view, err := viewcheck.Actual(ctx, e.BQ, b, e.Loc)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(view, viewcheck.ReplayChanges(b, whole)); d != "" {
			t.Errorf("%s: replaying the feed differs from the view (-view +replay):\n%s", b.Target, d)
		}
		if len(whole) == 0 {
			t.Errorf("%s: empty change feed", b.Target)
		}
		t.Logf("%s_changes(NULL, NULL):\n%s", b.Target, fmt.Sprint(whole))
	}
}

func changes(t *testing.T, e *testenv.Env, b *flow.Bound, from, to time.Time) []string {
	t.Helper()
	got, err := viewcheck.ActualChanges(context.Background(), e.BQ, b, e.Loc, from, to)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func sorted(lines []string) []string {
	out := append([]string(nil), lines...)
	sort.Strings(out)
	return out
}
