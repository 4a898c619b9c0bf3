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
)

// feedFlows are an SCD 1 and an SCD 2 flow <p>_current and <p>_history
// of the source <p>.users.
func feedFlows(p string) string {
	return strings.NewReplacer("{p}", p).Replace(`
CREATE FLOW {p}_current AS AUTO CDC INTO {p}_current FROM STREAM(` + "`{p}.users`" + `)
KEYS (userId) APPLY AS DELETE WHEN operation = 'DELETE'
SEQUENCE BY sequenceNum COLUMNS (userId, name, city);

CREATE FLOW {p}_history AS AUTO CDC INTO {p}_history FROM STREAM(` + "`{p}.users`" + `)
KEYS (userId) APPLY AS DELETE WHEN operation = 'DELETE'
SEQUENCE BY sequenceNum COLUMNS (userId, name, city) STORED AS SCD TYPE 2;
`)
}

var laggingFeedFlows = feedFlows("lf")

// TestLaggingFeedSurvivesMaintenance: a change feed behind the watermark
// (ChangeFeedEvery) when the daily maintenance folds the levels still gets
// its baselines: an update made while the feed lagged is an update (pre-
// and post-image) once the feed catches up, not an insert, also when the
// catching-up run reads only the state of the keys its range touches. Maintenance
// reduces events only as of the feed's position; before, it reduced them
// as of the watermark and dropped the update's predecessor.
func TestLaggingFeedSurvivesMaintenance(t *testing.T) {
	e := testenv.New(t, stack, "laggingfeed")
	ctx := context.Background()
	bound := e.ApplySourceFlows(t, "lf.sql", laggingFeedFlows, "lf.users", testenv.UsersImage)
	at, row := ttClock()
	compactAt := func(now time.Time, opts compact.Options) { t.Helper(); e.CompactAt(t, bound, now, opts) }
	noMaintenance := compact.Options{MaintainEvery: -1}
	// Key 3 has no change while the feed lags: the catching-up run reads
	// the state of the keys its range touches only (FeedKeysAbove -1, as
	// a large state's), and key 3's rows are not among them.
	e.AppendRows(t, "lf.users", []map[string]any{row(1, "a", "x", "INSERT", 1, "m1", 1), row(2, "b", "y", "INSERT", 1, "m2", 1), row(3, "d", "z", "INSERT", 1, "m0", 1)})
	compactAt(at(2), noMaintenance) // the feed materialized to minute 2
	e.AppendRows(t, "lf.users", []map[string]any{row(1, "c", "x", "UPDATE", 2, "m3", 3), row(2, nil, nil, "DELETE", 2, "m4", 3)})
	lagging := compact.Options{MaintainEvery: -1, ChangeFeedEvery: 24 * time.Hour}
	compactAt(at(4), lagging) // folded; the feed stays at minute 2
	lagging.MaintainEvery, lagging.MaintainMargin, lagging.MaintainGranularity = time.Minute, time.Second, time.Second
	compactAt(at(6), lagging)                                               // nothing new: the levels are folded
	compactAt(at(8), compact.Options{MaintainEvery: -1, FeedKeysAbove: -1}) // the feed catches up, reading the range's keys first
	for _, b := range bound {
		diff, err := viewcheck.CheckChanges(ctx, e.BQ, b, e.Loc, time.Time{}, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if diff != "" {
			t.Errorf("%s_changes differs from the model after maintenance with the feed behind:\n%s", b.Target, diff)
		}
		if diff, err := viewcheck.Check(ctx, e.BQ, b, e.Loc); err != nil || diff != "" {
			t.Errorf("%s: view differs from the model (%v):\n%s", b.Target, err, diff)
		}
	}
}

var slicedFeedFlows = feedFlows("sf") + `
CREATE FLOW sf_partial AS AUTO CDC INTO sf_partial FROM STREAM(` + "`sf.users`" + `)
KEYS (userId) APPLY AS DELETE WHEN operation = 'DELETE' APPLY AS TRUNCATE WHEN operation = 'TRUNCATE'
SEQUENCE BY sequenceNum COLUMNS (userId, name, city) IGNORE NULL UPDATES;
`

// TestFirstFeedSlicesReadTheirKeys: a change feed's first materialization
// over a history longer than ChangeSlice writes one slice a statement, and
// each slice reads the state of the keys its own changelog rows touch only
// (FeedKeysAbove -1, as a large state's). Key 1, inserted in the first
// slice, untouched in the second and updated in the third, still finds its
// baseline (an update, not an insert; a partial one for sf_partial's
// IGNORE NULL UPDATES); key 2 is deleted in the fourth; sf_partial's
// truncate in the fifth deletes what the fourth slice left, key 4 comes
// after it. A later run whose feed lags (ChangeFeedEvery) catches up in
// slices the same way over levels it folded earlier. The feed and the
// views equal the model.
func TestFirstFeedSlicesReadTheirKeys(t *testing.T) {
	e := testenv.New(t, stack, "slicedfeed")
	ctx := context.Background()
	bound := e.ApplySourceFlows(t, "sf.sql", slicedFeedFlows, "sf.users", testenv.UsersImage)
	at, row := ttClock()
	e.AppendRows(t, "sf.users", []map[string]any{
		row(1, "a", "x", "INSERT", 1, "m1", 1), row(2, "b", "y", "INSERT", 1, "m2", 1),
		row(3, "d", "z", "INSERT", 1, "m3", 2),
		row(1, nil, "q", "UPDATE", 2, "m4", 3),
		row(2, nil, nil, "DELETE", 2, "m5", 4),
		row(9, "t", "t", "TRUNCATE", 3, "m6", 5),
		row(4, "f", "v", "INSERT", 1, "m7", 6),
	})
	sliced := compact.Options{MaintainEvery: -1, ChangeSlice: time.Minute, MaxChangeSlices: 10, FeedKeysAbove: -1}
	// The first run stops after three slices (MaxChangeSlices), the next
	// one goes on from there.
	first := sliced
	first.MaxChangeSlices = 3
	for _, rep := range e.CompactAt(t, bound, at(7), first) {
		if rep.Jobs < 6 {
			t.Errorf("%s: %d jobs, want the statistics, the fold and per slice its keys and its changes: %+v", rep.Flow, rep.Jobs, rep)
		}
	}
	e.CompactAt(t, bound, at(7).Add(time.Second), sliced)
	check := func(when string) {
		t.Helper()
		for _, b := range bound {
			if diff, err := viewcheck.CheckChanges(ctx, e.BQ, b, e.Loc, time.Time{}, time.Time{}); err != nil || diff != "" {
				t.Errorf("%s: %s_changes differs from the model (%v):\n%s", when, b.Target, err, diff)
			}
			if diff, err := viewcheck.Check(ctx, e.BQ, b, e.Loc); err != nil || diff != "" {
				t.Errorf("%s: %s: view differs from the model (%v):\n%s", when, b.Target, err, diff)
			}
		}
	}
	check("after a first materialization in slices")
	// The feed lags while a run folds one level over minutes 8 and 9 (a
	// key changed in both: the fold keeps its minute-8 event, the baseline
	// of the slice after it); it then catches up in one-minute slices,
	// each reading its keys' state.
	e.AppendRows(t, "sf.users", []map[string]any{
		row(3, "g", "z", "UPDATE", 2, "m8", 8), row(4, nil, "w", "UPDATE", 2, "m9", 8),
		row(3, "h", "z", "UPDATE", 3, "m10", 9), row(4, "i", nil, "UPDATE", 3, "m11", 9), row(1, nil, nil, "DELETE", 3, "m12", 9),
	})
	lagging := sliced
	lagging.ChangeFeedEvery = 24 * time.Hour
	e.CompactAt(t, bound, at(10), lagging)
	e.CompactAt(t, bound, at(12), sliced)
	check("after a lagging feed caught up in slices")
}

const keyedTruncateFlows = `
CREATE FLOW kt_current AS AUTO CDC INTO kt_current FROM STREAM(` + "`kt.users`" + `)
KEYS (userId) APPLY AS DELETE WHEN operation = 'DELETE' APPLY AS TRUNCATE WHEN operation = 'TRUNCATE'
SEQUENCE BY sequenceNum COLUMNS (userId, name, city);
`

// TestKeyedTruncate: a truncate whose row carries a key (a producer that
// fills the key of its truncate events) truncates every key, in the view
// and in the change feed of a run that touches another key. The state
// keeps its truncates without a key, so the change feed's statement, which
// reads the blocks of the touched keys and of NULL keys, sees them, and a
// view looked up by key reads the NULL-key blocks for them. A state of the
// previous layout (a truncate row with its key) is brought to it by the
// next run, through bqcdc apply's state update.
func TestKeyedTruncate(t *testing.T) {
	e := testenv.New(t, stack, "keyedtruncate")
	ctx := context.Background()
	bound := e.ApplySourceFlows(t, "kt.sql", keyedTruncateFlows, "kt.users", testenv.UsersImage)
	b := bound[0]
	at, row := ttClock()
	noMaintenance := compact.Options{MaintainEvery: -1}
	check := func(when string) {
		t.Helper()
		if diff, err := viewcheck.Check(ctx, e.BQ, b, e.Loc); err != nil || diff != "" {
			t.Errorf("%s: view differs from the model (%v):\n%s", when, err, diff)
		}
		diff, err := viewcheck.CheckChanges(ctx, e.BQ, b, e.Loc, time.Time{}, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if diff != "" {
			t.Errorf("%s: %s_changes differs from the model:\n%s", when, b.Target, diff)
		}
	}
	e.AppendRows(t, "kt.users", []map[string]any{row(1, "a", "x", "INSERT", 1, "m1", 1), row(2, "b", "y", "INSERT", 1, "m2", 1)})
	e.CompactAt(t, bound, at(2), noMaintenance)
	e.AppendRows(t, "kt.users", []map[string]any{row(2, "b", "y", "TRUNCATE", 2, "m3", 3)})
	e.CompactAt(t, bound, at(4), noMaintenance)
	e.AppendRows(t, "kt.users", []map[string]any{row(1, "c", "x", "UPDATE", 3, "m4", 5)})
	e.CompactAt(t, bound, at(6), noMaintenance)
	check("after a keyed truncate")
	keyed := func() int64 {
		t.Helper()
		rows, err := e.Query(fmt.Sprintf("SELECT COUNT(*) AS n FROM %s WHERE %s = 'T' AND userId IS NOT NULL", e.Loc.StateTable(b.Flow), catalog.ColStateOp))
		if err != nil {
			t.Fatal(err)
		}
		return rows[0]["n"].(int64)
	}
	if n := keyed(); n != 0 {
		t.Fatalf("%d truncate rows of the state carry a key", n)
	}

	// The previous layout: its truncate rows kept their key.
	if _, err := e.Query(fmt.Sprintf("UPDATE %s SET userId = 2 WHERE %s = 'T'", e.Loc.StateTable(b.Flow), catalog.ColStateOp)); err != nil {
		t.Fatal(err)
	}
	state := e.BQ.Dataset(e.Loc.Dataset(b.Flow)).Table(catalog.StateName(b.Flow))
	md, err := state.Metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var upd bigquery.TableMetadataToUpdate
	for k, v := range md.Labels { // the emulator replaces labels: repeat them all
		upd.SetLabel(k, v)
	}
	upd.SetLabel(catalog.StateLayoutLabel, "levels-1")
	if _, err := state.Update(ctx, upd, ""); err != nil {
		t.Fatal(err)
	}
	if keyed() != 1 {
		t.Fatal("the test did not make a keyed truncate row")
	}
	e.AppendRows(t, "kt.users", []map[string]any{row(3, "d", "z", "INSERT", 4, "m5", 7)})
	e.CompactAt(t, bound, at(8), noMaintenance)
	if n := keyed(); n != 0 {
		t.Errorf("after the upgrade run, %d truncate rows of the state carry a key", n)
	}
	if md, err = state.Metadata(ctx); err != nil {
		t.Fatal(err)
	}
	if got := md.Labels[catalog.StateLayoutLabel]; got != catalog.StateLayout {
		t.Errorf("layout label %q after the upgrade run, want %q", got, catalog.StateLayout)
	}
	check("after the upgrade")

	// Maintenance keeps no event a truncate hides: key 2's insert, before
	// the truncate and untouched since, is gone from the state.
	e.CompactAt(t, bound, at(10), compact.Options{MaintainEvery: time.Minute, MaintainMargin: time.Second, MaintainGranularity: time.Second})
	rows, err := e.Query(fmt.Sprintf("SELECT COUNT(*) AS n FROM %s WHERE userId = 2", e.Loc.StateTable(b.Flow)))
	if err != nil {
		t.Fatal(err)
	}
	if n := rows[0]["n"].(int64); n != 0 {
		t.Errorf("after maintenance the state keeps %d rows of key 2, which the truncate hides", n)
	}
	check("after maintenance")
}
