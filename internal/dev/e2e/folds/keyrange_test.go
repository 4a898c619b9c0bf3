package folds

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/apply"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/compact"
	"github.com/bqcdc/bqcdc/internal/dev/testenv"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/sql/render"
)

// keyRangeFlows are bucketFlows' two flows, each target declared with a
// state partitioned by ranges of userId (flow.StateKeyRangeProperty) when
// keyRange is not "".
func keyRangeFlows(keyRange string) string {
	decl := ""
	if keyRange != "" {
		decl = fmt.Sprintf("CREATE STREAMING TABLE rl_current TBLPROPERTIES ('bqcdc.state.key_range' = '%s');\n", keyRange) +
			fmt.Sprintf("CREATE STREAMING TABLE rl_history TBLPROPERTIES ('bqcdc.state.key_range' = '%s');\n", keyRange)
	}
	return decl + bucketFlows(0)
}

// TestStateMovesToKeyRanges: a state partitioned by ranges of its key is
// moved to (by a run) and from (by apply) as a state of buckets is; keys
// outside the range (in BigQuery's __UNPARTITIONED__) and truncates (in
// the NULL partition) fold as any, in one statement or in ranges (as a run
// touching more than 3,998 ranges, and maintenance of a state of more,
// write); an SCD 2 state archived before the move
// keeps no archive after it (render.Archives) and its next maintenance
// folds the archive back. The views and change feeds equal the model
// throughout.
func TestStateMovesToKeyRanges(t *testing.T) {
	e := testenv.New(t, stack, "keyranges")
	ctx := context.Background()
	bound := e.ApplySourceFlows(t, "rl.sql", keyRangeFlows(""), "rl.users", testenv.UsersImage)
	changelog := bound[0].Changelog
	at, row := ttClock()
	opts := compact.Options{MaintainEvery: -1, FeedKeysAbove: -1}
	maintain := compact.Options{FeedKeysAbove: -1, MaintainEvery: time.Nanosecond, MaintainMargin: time.Second, MaintainGranularity: time.Nanosecond}
	check := func(bound []*flow.Bound, when string) {
		t.Helper()
		checkViewsAndFeeds(t, e, bound, when)
	}
	rebind := func(keyRange string) []*flow.Bound {
		t.Helper()
		return bindFlows(t, keyRangeFlows(keyRange), changelog)
	}
	layout := func(bound []*flow.Bound, ranged bool, when string) {
		t.Helper()
		for _, b := range bound {
			ds := e.BQ.Dataset(e.Loc.Dataset(b.Flow))
			md, err := ds.Table(catalog.StateName(b.Flow)).Metadata(ctx)
			if err != nil {
				t.Fatalf("%s: %s: %v", when, b.Name, err)
			}
			rp := md.RangePartitioning
			if ranged && (rp == nil || rp.Field != "userId" || rp.Range.Start != 1 || rp.Range.End != 4 || rp.Range.Interval != 1 || md.TimePartitioning != nil) ||
				!ranged && (rp != nil || md.TimePartitioning == nil) {
				t.Errorf("%s: %s's state partitioned by %+v and %+v, want ranges of userId: %v", when, b.Name, rp, md.TimePartitioning, ranged)
			}
			if md.Labels[catalog.StateLayoutLabel] != catalog.StateLayout {
				t.Errorf("%s: %s's state not labelled with its layout: %v", when, b.Name, md.Labels)
			}
			if _, err := ds.Table(catalog.StateCopyName(b.Flow)).Metadata(ctx); err == nil {
				t.Errorf("%s: %s's state copy is left", when, b.Name)
			}
		}
	}
	history := func(bound []*flow.Bound) *flow.Bound { return testenv.Only(bound, "rl_history")[0] }
	archived := func(bound []*flow.Bound) int64 {
		t.Helper()
		rows, err := e.Query(fmt.Sprintf("SELECT COUNT(*) AS n FROM %s WHERE %s < %s", e.Loc.StateTable(history(bound).Flow), catalog.ColStateGen, render.Literal(render.ArchiveEnd)))
		if err != nil {
			t.Fatal(err)
		}
		return rows[0]["n"].(int64)
	}

	// By generation: a run and maintenance, which archives rl_history's
	// closed versions.
	e.AppendRows(t, "rl.users", []map[string]any{
		row(1, "a", "x", "INSERT", 1, "m01", 1), row(2, "b", "y", "INSERT", 1, "m02", 1),
		row(5, "e", "z", "INSERT", 1, "m03", 2), row(1, "a2", nil, "UPDATE", 2, "m04", 2),
	})
	e.CompactAt(t, bound, at(4), opts)
	e.AppendRows(t, "rl.users", []map[string]any{row(1, "a3", "x2", "UPDATE", 3, "m05", 4)})
	e.CompactAt(t, bound, at(6), maintain)
	if n := archived(bound); n == 0 {
		t.Error("rl_history is not archived before the move")
	}
	check(bound, "by generation")

	// Ranges of userId from 1 to 4 (keys 0 and 5 outside): the next run
	// moves both states, then folds into them.
	ranged := rebind("1:4")
	if render.Archives(history(ranged)) {
		t.Error("a state partitioned by key range is archived")
	}
	e.AppendRows(t, "rl.users", []map[string]any{
		row(2, nil, nil, "DELETE", 2, "m06", 7), row(5, "e2", "z", "UPDATE", 2, "m07", 7),
		row(3, "c", "w", "INSERT", 1, "m08", 8), row(0, "o", "o", "INSERT", 1, "m09", 8),
	})
	// A run touching keys outside suggests a range holding them with room
	// (flow.KeyRange.Widened, from the run's keys).
	outside := func(reports []compact.Report, want bool, suggested, when string) {
		t.Helper()
		for _, r := range reports {
			if r.KeysOutsideRange != want || strings.Contains(r.Line(), "keys outside the state's key range") != want ||
				r.KeyRangeSuggested != suggested || want && !strings.Contains(r.Line(), "'"+suggested+"'") {
				t.Errorf("%s: %s's report says keys outside its range: %v (suggesting %q), want %v (%q) (%s)", when, r.Flow, r.KeysOutsideRange, r.KeyRangeSuggested, want, suggested, r.Line())
			}
		}
	}
	outside(e.CompactAt(t, ranged, at(10), opts), true, "-4:11", "a run touching keys 0 and 5")
	layout(ranged, true, "moved by a run")
	check(ranged, "after the run that moved the states to key ranges")
	// A truncate (rl_current) and a key updated twice; then maintenance,
	// which folds rl_history's archive back into its level.
	e.AppendRows(t, "rl.users", []map[string]any{
		row(0, nil, nil, "TRUNCATE", 3, "m10", 11), row(3, "c2", "w", "UPDATE", 2, "m11", 12),
		row(1, "a4", nil, "UPDATE", 4, "m12", 12), row(3, "c3", "w2", "UPDATE", 3, "m13", 12),
	})
	// Two statements of one range each (BucketsPerJob 2: one range and
	// the NULL and unpartitioned partitions a statement), as a run
	// touching more than 3,998 ranges writes.
	chunked := opts
	chunked.BucketsPerJob = 2
	jobs := map[string]int{}
	for _, r := range e.CompactAt(t, ranged, at(13), chunked) {
		jobs[r.Flow] = r.Jobs
	}
	check(ranged, "after a run with a truncate over key ranges, in two statements")
	maintainChunked := maintain
	maintainChunked.BucketsPerJob = 2
	for _, r := range e.CompactAt(t, ranged, at(15), maintainChunked) {
		if !r.Maintained {
			t.Errorf("%s: not maintained", r.Flow)
		}
	}
	if n := archived(ranged); n != 0 {
		t.Errorf("rl_history keeps %d archived rows after maintenance over key ranges", n)
	}
	check(ranged, "after maintenance over key ranges, in three statements")
	e.AppendRows(t, "rl.users", []map[string]any{row(4, "d", "v", "INSERT", 1, "m14", 16), row(5, "e3", "z", "UPDATE", 3, "m15", 16)})
	outside(e.CompactAt(t, ranged, at(17), opts), true, "1:11", "a run touching keys 4 and 5")
	e.AppendRows(t, "rl.users", []map[string]any{row(1, "a5", nil, "UPDATE", 5, "m17", 17), row(3, nil, nil, "DELETE", 4, "m18", 17)})
	one := e.CompactAt(t, ranged, at(18), opts)
	outside(one, false, "", "a run touching keys 1 and 3")
	for _, r := range one {
		// Its keys in two ranges too, in one statement.
		if jobs[r.Flow] != r.Jobs+1 {
			t.Errorf("%s: the run in ranges started %d jobs, the run in one statement %d: want one more", r.Flow, jobs[r.Flow], r.Jobs)
		}
	}
	check(ranged, "after a run over maintained key ranges")

	// Back to generations, by apply (its notice first).
	plain := rebind("")
	for _, b := range plain {
		var rep apply.Report
		var notices strings.Builder
		o := e.Apply
		o.Notices = &notices
		if err := apply.FlowObjects(ctx, e.BQ, e.Loc, b, o, &rep); err != nil {
			t.Fatalf("moving %s back: %v", b.Name, err)
		}
		if !strings.Contains(notices.String(), "table "+b.Name+"__state: moving to partitioning by generation: ") {
			t.Errorf("moving %s back: notice %q", b.Name, notices.String())
		}
	}
	layout(plain, false, "moved back by apply")
	check(plain, "after the move back")
	e.AppendRows(t, "rl.users", []map[string]any{row(3, "c4", "w3", "INSERT", 5, "m16", 19)})
	e.CompactAt(t, plain, at(20), opts)
	check(plain, "after a run over the state moved back")
}
