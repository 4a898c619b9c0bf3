package folds

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/apply"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/compact"
	"github.com/bqcdc/bqcdc/internal/dev/testenv"
	"github.com/bqcdc/bqcdc/internal/dev/viewcheck"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/schema"
	"github.com/bqcdc/bqcdc/sql/render"
)

// bucketFlows are an SCD 1 flow (truncates, partial updates) and an SCD 2
// flow over rl.users; with buckets, each target is declared with a state
// of that many buckets (flow.StateBucketsProperty).
func bucketFlows(buckets int) string {
	decl := ""
	if buckets > 0 {
		decl = fmt.Sprintf("CREATE STREAMING TABLE rl_current TBLPROPERTIES ('bqcdc.state.buckets' = '%d');\n", buckets) +
			fmt.Sprintf("CREATE STREAMING TABLE rl_history TBLPROPERTIES ('bqcdc.state.buckets' = '%d');\n", buckets)
	}
	return decl + `
CREATE FLOW rl_current AS AUTO CDC INTO rl_current FROM STREAM(` + "`rl.users`" + `)
KEYS (userId) APPLY AS DELETE WHEN operation = 'DELETE' APPLY AS TRUNCATE WHEN operation = 'TRUNCATE'
SEQUENCE BY sequenceNum COLUMNS (userId, name, city)
IGNORE NULL UPDATES ON (city);

CREATE FLOW rl_history AS AUTO CDC INTO rl_history FROM STREAM(` + "`rl.users`" + `)
KEYS (userId) APPLY AS DELETE WHEN operation = 'DELETE'
WHERE operation IS DISTINCT FROM 'TRUNCATE'
SEQUENCE BY sequenceNum COLUMNS (userId, name, city) STORED AS SCD TYPE 2
TRACK HISTORY ON (name);
`
}

// TestStateMovesToBuckets: turning a state of buckets on (and off) moves
// an existing state to the new partitioning through a copy (apply's
// relayout; the history's sparse rows and their bases move together),
// resuming after a crash at either step; the views and change
// feeds equal the model before, after each move and after the runs that
// follow, which read the touched buckets' partitions only.
func TestStateMovesToBuckets(t *testing.T) {
	e := testenv.New(t, stack, "buckets")
	ctx := context.Background()
	bound := e.ApplySourceFlows(t, "rl.sql", bucketFlows(0), "rl.users", testenv.UsersImage)
	changelog := bound[0].Changelog
	at, row := ttClock()
	// FeedKeysAbove -1: every slice reads its own keys, as a large state's.
	opts := compact.Options{MaintainEvery: -1, FeedKeysAbove: -1}
	e.AppendRows(t, "rl.users", []map[string]any{
		row(1, "a", "x", "INSERT", 1, "m01", 1), row(2, "b", "y", "INSERT", 1, "m02", 1),
		row(3, "c", "z", "INSERT", 1, "m03", 2), row(1, "a2", nil, "UPDATE", 2, "m04", 2),
	})
	e.CompactAt(t, bound, at(4), opts)
	check := func(bound []*flow.Bound, when string) {
		t.Helper()
		checkViewsAndFeeds(t, e, bound, when)
	}
	check(bound, "before the move")

	// Buckets on: apply moves both states.
	rebind := func(buckets int) []*flow.Bound {
		t.Helper()
		return bindFlows(t, bucketFlows(buckets), changelog)
	}
	applyAll := func(bound []*flow.Bound, when string) {
		t.Helper()
		for _, b := range bound {
			var rep apply.Report
			if err := apply.FlowObjects(ctx, e.BQ, e.Loc, b, e.Apply, &rep); err != nil {
				t.Fatalf("%s: applying %s: %v", when, b.Name, err)
			}
			t.Logf("%s: %s", when, strings.Join(rep, "; "))
		}
	}
	layout := func(bound []*flow.Bound, buckets int, when string) {
		t.Helper()
		for _, b := range bound {
			ds := e.BQ.Dataset(e.Loc.Dataset(b.Flow))
			md, err := ds.Table(catalog.StateName(b.Flow)).Metadata(ctx)
			if err != nil {
				t.Fatalf("%s: %s: %v", when, b.Name, err)
			}
			rp := md.RangePartitioning
			// An archived state of buckets has a second range for the
			// archive (render/archive.go).
			parts := render.StatePartitions(b)
			if buckets > 0 && (rp == nil || rp.Field != catalog.ColStateBucket || rp.Range.End != int64(parts)) || buckets == 0 && rp != nil {
				t.Errorf("%s: %s's state partitioned by %+v, want %d buckets (%d partitions)", when, b.Name, rp, buckets, parts)
			}
			if md.Labels[catalog.StateLayoutLabel] != catalog.StateLayout {
				t.Errorf("%s: %s's state not labelled with its layout: %v", when, b.Name, md.Labels)
			}
			if _, err := ds.Table(catalog.StateCopyName(b.Flow)).Metadata(ctx); err == nil {
				t.Errorf("%s: %s's state copy is left", when, b.Name)
			}
			if buckets == 0 {
				continue
			}
			// Every keyed row has its key's bucket (or, archived, its
			// bucket's archive partition); markers and truncates none.
			rows, err := e.Query(fmt.Sprintf("SELECT COUNTIF(__op IN ('U', 'D') AND (__bucket IS NULL OR MOD(__bucket, %d) != ABS(MOD(FARM_FINGERPRINT(__key), %d)) OR __bucket >= %d)) AS bad, COUNTIF(__op IN ('T', 'W', 'A') AND __bucket IS NOT NULL) AS bad_null, COUNT(*) AS n FROM %s", buckets, buckets, parts, e.Loc.StateTable(b.Flow)))
			if err != nil || len(rows) != 1 || rows[0]["bad"] != int64(0) || rows[0]["bad_null"] != int64(0) || rows[0]["n"] == int64(0) {
				t.Errorf("%s: %s's buckets: %v (%v)", when, b.Name, rows, err)
			}
		}
	}
	// Buckets on (9,000: more than one statement writes, so each copy is
	// written in three ranges), moved by the next run (its state lacks
	// __bucket, so the run brings it up to date first), which then folds
	// into the moved state.
	bucketed := rebind(9000)
	e.AppendRows(t, "rl.users", []map[string]any{
		row(2, nil, nil, "DELETE", 3, "m05", 5), row(3, "c2", "w", "UPDATE", 3, "m06", 5),
		row(4, "d", "v", "INSERT", 1, "m07", 6), row(3, "c2", "w2", "UPDATE", 4, "m13", 6), // city only: sparse in rl_history once maintained
	})
	e.CompactAt(t, bucketed, at(8), opts)
	layout(bucketed, 9000, "buckets on, by a run")
	check(bucketed, "after a run that moved the state to buckets")
	e.AppendRows(t, "rl.users", []map[string]any{row(1, "a4", nil, "UPDATE", 4, "m12", 8)})
	// With maintenance (in three ranges of buckets and their DELETEs).
	for _, r := range e.CompactAt(t, bucketed, at(9), compact.Options{FeedKeysAbove: -1, MaintainEvery: time.Nanosecond, MaintainMargin: time.Second, MaintainGranularity: time.Nanosecond}) {
		if !r.Maintained {
			t.Errorf("%s: not maintained", r.Flow)
		}
	}
	check(bucketed, "after a run and maintenance over a state of buckets")
	sparseRows(t, e, testenv.Only(bucketed, "rl_history")[0], "after maintenance in ranges", 1, 1)

	// A crash after the copy was complete and the old state deleted: the
	// next apply makes the state from the copy.
	for _, b := range bucketed {
		crashAfterCopy(t, e, b)
	}
	applyAll(bucketed, "resumed after a crash")
	layout(bucketed, 9000, "resumed after a crash")
	check(bucketed, "after resuming a move")

	// Another number of buckets, with a truncate: the run moves the state
	// before it folds (its rows' buckets are the old number's).
	rebucketed := rebind(11)
	e.AppendRows(t, "rl.users", []map[string]any{
		row(0, nil, nil, "TRUNCATE", 4, "m08", 9), row(5, "e", "u", "INSERT", 5, "m09", 10),
		row(1, "a3", nil, "UPDATE", 6, "m10", 10),
	})
	e.CompactAt(t, rebucketed, at(12), opts)
	layout(rebucketed, 11, "11 buckets, by a run")
	check(rebucketed, "after a run with a truncate that moved the state to 11 buckets")
	// Maintenance writes rl_history's archive into the buckets' second
	// range (render/archive.go); the next run's feed reads the levels.
	maintain := compact.Options{FeedKeysAbove: -1, MaintainEvery: time.Nanosecond, MaintainMargin: time.Second, MaintainGranularity: time.Nanosecond, BucketsPerJob: 4}
	e.CompactAt(t, rebucketed, at(13), maintain)
	layout(rebucketed, 11, "11 buckets, maintained")
	check(rebucketed, "after maintenance of 11 buckets and their archive, in ranges")
	hist := testenv.Only(rebucketed, "rl_history")[0]
	if rows, err := e.Query("SELECT COUNT(*) AS n FROM " + e.Loc.StateTable(hist.Flow) + " WHERE __bucket >= 11"); err != nil || rows[0]["n"].(int64) == 0 {
		t.Errorf("rl_history's archive after maintenance of 11 buckets: %v (%v)", rows, err)
	}
	e.AppendRows(t, "rl.users", []map[string]any{row(1, "a5", nil, "UPDATE", 7, "m14", 13), row(3, "c2", "w3", "UPDATE", 5, "m15", 13)})
	e.CompactAt(t, rebucketed, at(14), opts)
	check(rebucketed, "after a run over 11 buckets and their archive")
	// Buckets off, over a partial copy a crash left: the move is stopped
	// once after the old state is deleted (a crash), then resumed; at every
	// step of both the views show the same rows (they read the copy while
	// the state is re-made).
	plain := rebind(0)
	for _, b := range plain {
		partialCopy(t, e, b)
	}
	steps := map[string]int{}
	for attempt, crashAt := range []string{apply.MoveDeleted, ""} {
		opts := e.Apply
		var notices strings.Builder
		opts.Notices = &notices
		opts.AfterMoveStep = func(flowName, step string) error {
			steps[step]++
			if attempt == 0 && step == apply.MoveCopied && !strings.Contains(notices.String(), "table "+flowName+"__state: moving to partitioning by generation: ") {
				t.Errorf("moving %s back: no notice before the copy: %q", flowName, notices.String())
			}
			e.CheckViews(t, testenv.Only(plain, flowName), fmt.Sprintf("moving %s back, attempt %d, after step %s", flowName, attempt+1, step))
			if step == crashAt {
				return fmt.Errorf("crash after %s", step)
			}
			return nil
		}
		for _, b := range plain {
			var rep apply.Report
			err := apply.FlowObjects(ctx, e.BQ, e.Loc, b, opts, &rep)
			if crashAt == "" && err != nil || crashAt != "" && (err == nil || !strings.Contains(err.Error(), "crash after "+crashAt)) {
				t.Fatalf("moving %s back, attempt %d: %v", b.Name, attempt+1, err)
			}
		}
	}
	// Both flows: copied, deleted (crash), then copied, created, filled.
	if want := map[string]int{apply.MoveCopied: 4, apply.MoveDeleted: 2, apply.MoveCreated: 2, apply.MoveFilled: 2}; fmt.Sprint(steps) != fmt.Sprint(want) {
		t.Errorf("steps of the moves back: %v, want %v", steps, want)
	}
	layout(plain, 0, "buckets off")
	check(plain, "after the move back")
	e.AppendRows(t, "rl.users", []map[string]any{row(4, "d2", "v", "UPDATE", 2, "m11", 15)})
	e.CompactAt(t, plain, at(16), opts)
	check(plain, "after a run over the state moved back")
}

// crashAfterCopy leaves what a crash of a move between its steps 1 and 2
// leaves: a complete copy of b's state, and no state table.
func crashAfterCopy(t *testing.T, e *testenv.Env, b *flow.Bound) {
	t.Helper()
	ctx := context.Background()
	ds := e.BQ.Dataset(e.Loc.Dataset(b.Flow))
	st, cp := ds.Table(catalog.StateName(b.Flow)), ds.Table(catalog.StateCopyName(b.Flow))
	md, err := st.Metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := cp.Create(ctx, &bigquery.TableMetadata{Schema: md.Schema, RangePartitioning: md.RangePartitioning, Clustering: md.Clustering,
		Labels: map[string]string{"bqcdc-state-copy": "complete"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Query(fmt.Sprintf("INSERT INTO %s SELECT * FROM %s", e.Loc.StateCopyTable(b.Flow), e.Loc.StateTable(b.Flow))); err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(ctx); err != nil {
		t.Fatal(err)
	}
}

// partialCopy leaves what a crash during a move's step 1 may leave: a copy
// not labelled complete, holding some rows (twice).
func partialCopy(t *testing.T, e *testenv.Env, b *flow.Bound) {
	t.Helper()
	ctx := context.Background()
	ds := e.BQ.Dataset(e.Loc.Dataset(b.Flow))
	md, err := ds.Table(catalog.StateName(b.Flow)).Metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var cols []string
	var schema bigquery.Schema
	for _, f := range md.Schema {
		if f.Name != catalog.ColStateBucket {
			cols, schema = append(cols, "`"+f.Name+"`"), append(schema, f)
		}
	}
	if err := ds.Table(catalog.StateCopyName(b.Flow)).Create(ctx, &bigquery.TableMetadata{Schema: schema, Labels: map[string]string{"bqcdc-state-copy": "filling"}}); err != nil {
		t.Fatal(err)
	}
	list := strings.Join(cols, ", ")
	for range 2 {
		if _, err := e.Query(fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM %s WHERE __op = 'U'", e.Loc.StateCopyTable(b.Flow), list, list, e.Loc.StateTable(b.Flow))); err != nil {
			t.Fatal(err)
		}
	}
}

// checkViewsAndFeeds checks bound's views and change feeds against the
// model.
func checkViewsAndFeeds(t *testing.T, e *testenv.Env, bound []*flow.Bound, when string) {
	t.Helper()
	e.CheckViews(t, bound, when)
	for _, b := range bound {
		if d, err := viewcheck.CheckChanges(context.Background(), e.BQ, b, e.Loc, time.Time{}, time.Time{}); err != nil || d != "" {
			t.Errorf("%s: %s_changes differs from the model (%v):\n%s", when, b.Target, err, d)
		}
	}
}

// bindFlows parses src (as rl.sql) and binds its flows over changelog: a
// flow file edited between runs.
func bindFlows(t *testing.T, src string, changelog schema.Columns) []*flow.Bound {
	t.Helper()
	flows, err := flow.Parse("rl.sql", src)
	if err != nil {
		t.Fatal(err)
	}
	var out []*flow.Bound
	for _, f := range flows {
		b, err := flow.Bind(f, changelog)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}
