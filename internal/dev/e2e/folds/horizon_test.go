package folds

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/compact"
	"github.com/bqcdc/bqcdc/internal/dev/testenv"
	"github.com/bqcdc/bqcdc/internal/dev/viewcheck"
)

const horizonFlows = `
CREATE OR REFRESH STREAMING TABLE hz_history
TBLPROPERTIES ('bqcdc.lateness_horizon_days' = '1')
FLOW AUTO CDC FROM STREAM(` + "`hz.users`" + `)
KEYS (userId) APPLY AS DELETE WHEN operation = 'DELETE'
SEQUENCE BY sequenceNum COLUMNS (userId, name, city, sequenceNum) STORED AS SCD TYPE 2
TRACK HISTORY ON (name);
`

// TestLatenessHorizonDropsOldEvents: with bqcdc.lateness_horizon_days,
// maintenance drops an event that opens no version once it, its version's
// first event and a later event of its version were all ingested more than
// the horizon before the maintenance's watermark, and only those: the
// view, <target>_at at times since the horizon and <target>_changes still
// equal the model over every event. An event ingested later than the
// horizon among dropped events re-cuts versions as the events kept say
// (the view equals the model once the dropped events are gone from the
// changelog too): what the horizon gives up.
func TestLatenessHorizonDropsOldEvents(t *testing.T) {
	e := testenv.New(t, stack, "horizon")
	ctx := context.Background()
	e.Apply.SkipTableFunctions = false
	bound := e.ApplySourceFlows(t, "hz.sql", horizonFlows, "hz.users", testenv.UsersImage)
	b := bound[0]
	if b.LatenessHorizonDays != 1 {
		t.Fatalf("flow %s: horizon %d days, want 1", b.Name, b.LatenessHorizonDays)
	}
	at, row := ttClock()
	const day = 24 * 60 // minutes
	old := -3 * day     // well before the horizon (the watermark, about minute 6, less a day)
	e.AppendRows(t, "hz.users", []map[string]any{
		// Key 1: its version's first and last events and the two between,
		// all old: the two between are dropped.
		row(1, "a", "x", "INSERT", 10, "k1a", old),
		row(1, "a", "y", "UPDATE", 20, "k1b", old+1), // dropped
		row(1, "a", "z", "UPDATE", 30, "k1c", old+2), // dropped
		row(1, "a", "w", "UPDATE", 40, "k1d", old+3),
		// Key 2: the only later event of the version is recent, so the
		// old one between is kept (_at since the horizon shows it).
		row(2, "b", "x", "INSERT", 10, "k2a", old),
		row(2, "b", "y", "UPDATE", 20, "k2b", old+1),
		row(2, "b", "z", "UPDATE", 30, "k2c", 1),
		// Key 3: the version's first event came late (recent): kept whole.
		row(3, "c", "x", "INSERT", 10, "k3a", 2),
		row(3, "c", "y", "UPDATE", 20, "k3b", old),
		row(3, "c", "z", "UPDATE", 30, "k3c", old+1),
		// Key 4: a tracked change opens a second version (one dropped
		// event in it), a delete ends it, and a last version of two.
		row(4, "d", "x", "INSERT", 10, "k4a", old),
		row(4, "e", "x", "UPDATE", 20, "k4b", old+1),
		row(4, "e", "y", "UPDATE", 30, "k4c", old+2), // dropped
		row(4, "e", "z", "UPDATE", 40, "k4d", old+3),
		row(4, nil, nil, "DELETE", 50, "k4e", old+4),
		row(4, "f", "x", "INSERT", 60, "k4f", old+5),
		row(4, "f", "y", "UPDATE", 70, "k4g", old+6),
	})
	dropped := []string{"k1b", "k1c", "k4c"}
	check := func(when string, atMinutes ...int) {
		t.Helper()
		e.CheckViews(t, bound, when)
		for _, m := range atMinutes {
			if diff, err := viewcheck.CheckAt(ctx, e.BQ, b, e.Loc, at(m)); err != nil || diff != "" {
				t.Errorf("%s: %s_at(minute %d) differs from the model (%v):\n%s", when, b.Target, m, err, diff)
			}
		}
		if diff, err := viewcheck.CheckChanges(ctx, e.BQ, b, e.Loc, time.Time{}, time.Time{}); err != nil || diff != "" {
			t.Errorf("%s: %s_changes differs from the model (%v):\n%s", when, b.Target, err, diff)
		}
	}
	events := func() (n int64, msgs map[string]bool) {
		t.Helper()
		rows, err := e.Query(fmt.Sprintf("SELECT `_cdc_message_id` AS m FROM %s WHERE __op IN ('U', 'D')", e.Loc.StateTable(b.Flow)))
		if err != nil {
			t.Fatal(err)
		}
		msgs = map[string]bool{}
		for _, r := range rows {
			msgs[fmt.Sprint(r["m"])] = true
		}
		return int64(len(rows)), msgs
	}

	e.CompactAt(t, bound, at(6), compact.Options{MaintainEvery: -1})
	check("after the first run", old+2, 0, 3, 7)
	if n, _ := events(); n != 17 {
		t.Errorf("after the first run the state keeps %d events, want all 17 (runs drop nothing)", n)
	}
	maintain := compact.Options{MaintainEvery: time.Minute, MaintainMargin: time.Second, MaintainGranularity: time.Second}
	e.CompactAt(t, bound, at(7), maintain)
	// _at since the horizon (about a day before minute 6) is exact.
	check("after maintenance", -day+60, 0, 1, 3, 7)
	n, kept := events()
	if n != 14 {
		t.Errorf("after maintenance the state keeps %d events, want 14 (17 less %v)", n, dropped)
	}
	for _, m := range dropped {
		if kept[m] {
			t.Errorf("after maintenance event %s is kept; it is older than the horizon, opens no version and a later old event of its version follows", m)
		}
	}
	for _, m := range []string{"k2b", "k3b", "k3c", "k1d", "k4g"} {
		if !kept[m] {
			t.Errorf("after maintenance event %s is dropped; it must be kept", m)
		}
	}

	// A second maintenance changes nothing more.
	e.CompactAt(t, bound, at(9), maintain)
	check("after a second maintenance", -day+60, 3, 7)
	if n, _ := events(); n != 14 {
		t.Errorf("after a second maintenance the state keeps %d events, want 14", n)
	}

	// Late by more than the horizon, among key 1's dropped events: a
	// tracked change at 25. Every event kept would reopen name a at 30; the
	// state re-cuts as the events it kept say: a at 40.
	e.AppendRows(t, "hz.users", []map[string]any{row(1, "q", "k", "UPDATE", 25, "k1late", 10)})
	e.CompactAt(t, bound, at(11), compact.Options{MaintainEvery: -1})
	if diff, err := viewcheck.Check(ctx, e.BQ, b, e.Loc); err != nil || diff == "" {
		t.Errorf("a late event among dropped ones: the view equals the model over every event (%v); the test's late event missed the dropped ones", err)
	}
	if _, err := e.Query(fmt.Sprintf("DELETE FROM %s WHERE `_cdc_message_id` IN ('k1b', 'k1c', 'k4c')", e.Loc.ChangelogTable(b.Flow))); err != nil {
		t.Fatal(err)
	}
	e.CheckViews(t, bound, "a late event among dropped ones, against the events kept")
}
