package property

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/dev/testenv"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/compact"
	"github.com/bqcdc/bqcdc/internal/dev/model"
	"github.com/bqcdc/bqcdc/internal/dev/viewcheck"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/schema"
)

var seeds = testenv.SeedFlags("prop", 4, 1000, "random histories per property test (CI runs 4: each compaction run now also materializes the change feed, and the binary must stay within go test's 10 minutes; -prop.seeds 8 or more for a longer search)")

// propImage has a column of every kind the views must fold: composite keys,
// a two-column sequence, and values of each BigQuery type.
var propImage = schema.Columns{
	{Name: "k1", Type: schema.Int64}, {Name: "k2", Type: schema.String},
	{Name: "s1", Type: schema.Int64}, {Name: "s2", Type: schema.Int64}, {Name: "op", Type: schema.String},
	{Name: "v_str", Type: schema.String}, {Name: "v_int", Type: schema.Int64}, {Name: "v_num", Type: schema.Numeric, Precision: 10, Scale: 2},
	{Name: "v_date", Type: schema.Date}, {Name: "v_ts", Type: schema.Timestamp}, {Name: "v_bool", Type: schema.Bool},
	{Name: "v_float", Type: schema.Float64}, {Name: "v_bytes", Type: schema.Bytes},
	{Name: "v_arr", Type: schema.String, Repeated: true},
	{Name: "v_rec", Type: schema.Record, Fields: []schema.Column{{Name: "a", Type: schema.Int64}, {Name: "b", Type: schema.String}}},
}

// propFlows covers SCD 1 (with truncate), SCD 1 with partial updates and a
// WHERE, SCD 2, SCD 2 with TRACK HISTORY and partial updates, and a
// bitemporal flow (system time s2: the arrival order is shuffled, the
// result must not depend on it), and one with IGNORE NULL UPDATES (on a
// tracked and an untracked column). The SCD 1 flow with truncates and the
// SCD 2 flow keep states of buckets (flow.StateBucketsProperty; few, so
// keys share them), whose change feeds read their buckets' partitions. A
// second SCD 2 flow, with TRACK HISTORY and without buckets, has its
// closed versions archived by maintenance (render/archive.go), so its
// change feed reads the levels, and the archive of the keys shuffled
// arrivals make late. The SCD 1 flow with IGNORE NULL UPDATES keeps a
// history (flow.HistoryProperty), which its time travel reads. The SCD 2
// flow with IGNORE NULL UPDATES and the second bitemporal flow keep states
// partitioned by ranges of k1 (flow.StateKeyRangeProperty), each with a
// key of the generator's three outside its range. The SCD 2 flow in
// buckets and the first bitemporal flow have a lateness horizon of a day
// (flow.LatenessHorizonProperty): the histories here are minutes old, so
// their maintenance drops nothing but runs the horizon's SQL through
// crashes and ranges of buckets (TestLatenessHorizonRandomHistories, in
// folds, ingests days before and drops).
func propFlows(source, p string) string {
	meta := strings.Join(catalog.MetadataColumns().Names(), ", ")
	return fmt.Sprintf(`
CREATE STREAMING TABLE %[2]s_scd1 TBLPROPERTIES ('bqcdc.state.buckets' = '7');
CREATE STREAMING TABLE %[2]s_hist TBLPROPERTIES ('bqcdc.state.buckets' = '5', 'bqcdc.lateness_horizon_days' = '1');
CREATE STREAMING TABLE %[2]s_bitemporal TBLPROPERTIES ('bqcdc.lateness_horizon_days' = '1');
CREATE STREAMING TABLE %[2]s_partial TBLPROPERTIES ('bqcdc.history' = 'true');
CREATE STREAMING TABLE %[2]s_track TBLPROPERTIES ('bqcdc.state.key_range' = '2:4');
CREATE STREAMING TABLE %[2]s_bifill TBLPROPERTIES ('bqcdc.state.key_range' = '1:3');

CREATE FLOW %[2]s_scd1 AS AUTO CDC INTO %[2]s_scd1 FROM STREAM(`+"`%[1]s`"+`)
KEYS (k1, k2) APPLY AS DELETE WHEN op = 'D' APPLY AS TRUNCATE WHEN op = 'T'
SEQUENCE BY STRUCT(s1, s2) COLUMNS * EXCEPT (op, %[3]s) STORED AS SCD TYPE 1;

CREATE FLOW %[2]s_partial AS AUTO CDC INTO %[2]s_partial FROM STREAM(`+"`%[1]s`"+`)
KEYS (k1, k2) APPLY AS DELETE WHEN op = 'D' SEQUENCE BY s1
WHERE v_int IS NULL OR v_int != 13
COLUMNS (k1, k2, s2, v_str, v_int, v_num, v_date, v_arr, v_rec)
IGNORE NULL UPDATES ON (v_str, v_int, v_num, v_date);

CREATE FLOW %[2]s_hist AS AUTO CDC INTO %[2]s_hist FROM STREAM(`+"`%[1]s`"+`)
KEYS (k1, k2) APPLY AS DELETE WHEN op = 'D'
SEQUENCE BY STRUCT(s1, s2) COLUMNS * EXCEPT (op, %[3]s) STORED AS SCD TYPE 2;

CREATE FLOW %[2]s_arch AS AUTO CDC INTO %[2]s_arch FROM STREAM(`+"`%[1]s`"+`)
KEYS (k1, k2) APPLY AS DELETE WHEN op = 'D'
SEQUENCE BY STRUCT(s1, s2) COLUMNS * EXCEPT (op, %[3]s) STORED AS SCD TYPE 2
TRACK HISTORY ON (v_str, v_arr);

CREATE FLOW %[2]s_track AS AUTO CDC INTO %[2]s_track FROM STREAM(`+"`%[1]s`"+`)
KEYS (k1, k2) APPLY AS DELETE WHEN op = 'D'
SEQUENCE BY s1 COLUMNS * EXCEPT (op, s2, %[3]s) STORED AS SCD TYPE 2
TRACK HISTORY ON (v_str, v_bool, v_arr, v_rec)
IGNORE NULL UPDATES ON (v_str, v_num, v_date, v_ts);

CREATE FLOW %[2]s_bitemporal AS AUTO CDC INTO %[2]s_bitemporal FROM STREAM(`+"`%[1]s`"+`)
KEYS (k1, k2) APPLY AS DELETE WHEN op = 'D'
SEQUENCE BY s1 SYSTEM SEQUENCE BY s2
COLUMNS (k1, k2, s1, s2, v_str, v_int, v_arr, v_rec) STORED AS BITEMPORAL
TRACK HISTORY ON (v_str, v_arr);

CREATE FLOW %[2]s_bifill AS AUTO CDC INTO %[2]s_bifill FROM STREAM(`+"`%[1]s`"+`)
KEYS (k1, k2) APPLY AS DELETE WHEN op = 'D'
SEQUENCE BY s1 SYSTEM SEQUENCE BY s2
COLUMNS (k1, k2, s1, s2, v_str, v_int, v_num) STORED AS BITEMPORAL
TRACK HISTORY ON (v_str)
IGNORE NULL UPDATES ON (v_str, v_int);
`, source, p, meta)
}

// history is a random change history and its arrival order.
type history struct {
	rows    []map[string]any // in arrival order, duplicates included
	batches []int            // cut points in rows
}

func genHistory(r *rand.Rand, _ time.Time) history {
	n := 15 + r.Intn(26)
	var events []map[string]any
	newMsg := testenv.MessageIDs(r)
	for i := 0; i < n; i++ {
		e := map[string]any{
			"k1": int64(1 + r.Intn(3)), "k2": maybeNull(r, testenv.Pick(r, "a", "b"), 20),
			"s1": int64(1 + r.Intn(8)), "s2": int64(r.Intn(3)),
			"op":      testenv.Pick(r, "I", "U", "U", "U"),
			"v_str":   testenv.Maybe(r, testenv.Pick(r, "x", "y", "z")),
			"v_int":   testenv.Maybe(r, testenv.Pick(r, int64(1), int64(2), int64(13))),
			"v_num":   testenv.Maybe(r, testenv.Pick(r, "1.50", "2.25", "-3.00")),
			"v_date":  testenv.Maybe(r, testenv.Pick(r, int32(19000), int32(19001))),
			"v_ts":    testenv.Maybe(r, testenv.Pick(r, int64(1_700_000_000_000_000), int64(1_700_000_000_000_001))),
			"v_bool":  testenv.Maybe(r, testenv.Pick(r, true, false)),
			"v_float": testenv.Maybe(r, testenv.Pick(r, 1.5, -2.25)), "v_bytes": testenv.Maybe(r, testenv.Pick(r, []byte{1}, []byte{2, 3})),
			"v_arr":              testenv.Pick(r, []any{}, []any{"p"}, []any{"p", "q"}),
			"v_rec":              testenv.Maybe(r, testenv.Pick(r, map[string]any{"a": int64(1), "b": "u"}, map[string]any{"a": int64(2)})),
			catalog.ColMessageID: newMsg(),
		}
		switch x := r.Intn(100); {
		case x < 18:
			e["op"] = "D"
		case x < 22:
			e["op"], e["k1"], e["k2"] = "T", nil, nil // a truncate marker has no key
		case x < 25:
			delete(e, "s1") // NULL sequence: excluded from every view
		}
		events = append(events, e)
	}
	// 20 % duplicates: a redelivery keeps the message id, a re-send gets a new one.
	events = testenv.Deliver(r, events, newMsg)

	a, b := 1+r.Intn(len(events)-2), 0
	b = a + 1 + r.Intn(len(events)-a-1)
	return history{rows: events, batches: []int{a, b, len(events)}}
}

func maybeNull(r *rand.Rand, v any, percent int) any {
	if r.Intn(100) < percent {
		return nil
	}
	return v
}

// TestViewsMatchModel appends random histories (composite keys, every column
// type, deletes, truncates, NULL sequences, 20 % duplicates, shuffled and
// delivered in three batches) and compares each of four views with the
// reference model after every batch. Compaction runs at random points; some
// runs crash after a random step and are re-run; some runs see rows appended
// after they read the changelog (with an ingestion time between the new
// watermark and the run's start, as a slow ingest append would). The views
// must equal the model after every batch, after every compaction step, and
// after every crash.
func TestViewsMatchModel(t *testing.T) {
	const lag = 20 * time.Second
	for _, seed := range seeds() {
		seed := seed
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			r := rand.New(rand.NewSource(seed))
			e := testenv.New(t, stack, testenv.Project("views", seed))
			// Names are unique per seed although each seed has its own
			// project: the emulator mixed up same-named tables of different
			// projects (views read another seed's rows).
			source := fmt.Sprintf("prop.s%d", seed)
			bound := e.ApplySourceFlows(t, "prop.sql", propFlows(source, fmt.Sprintf("p%d", seed)), source, propImage)
			base := time.Now().Add(-time.Hour).Truncate(time.Minute)
			h := genHistory(r, base)
			from := 0
			for bi, to := range h.batches {
				// Batch bi is ingested during minute bi after base.
				batchStart := base.Add(time.Duration(bi) * time.Minute)
				e.AppendIngested(t, source, h.rows[from:to], batchStart)
				from = to
				when := fmt.Sprintf("seed %d, after batch %d (%d rows)", seed, bi+1, to)
				e.CheckViews(t, bound, when)
				if r.Intn(10) < 7 {
					compactRandomly(t, e, r, bound, source, batchStart.Add(50*time.Second), lag, when)
				}
			}
			checkTimeTravel(t, e, bound, base.Add(time.Minute+time.Duration(r.Intn(30))*time.Millisecond), fmt.Sprintf("seed %d", seed))
		})
	}
}

// checkTimeTravel compares <target>_at(at) and the whole change feed with
// the model, and replays the feed onto an empty table: it must give the
// view (up to the watermark, which the last compaction set; the view may
// hold rows after it, so the replay is compared with the model at it).
func checkTimeTravel(t *testing.T, e *testenv.Env, bound []*flow.Bound, at time.Time, when string) {
	t.Helper()
	ctx := context.Background()
	for _, b := range bound {
		if b.Bitemporal {
			continue
		}
		diff, err := viewcheck.CheckAt(ctx, e.BQ, b, e.Loc, at)
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		if diff != "" {
			t.Errorf("%s: %s_at(%s) differs from the model:\n%s", when, b.Target, at.Format(time.RFC3339Nano), diff)
		}
		feed, err := viewcheck.ActualChanges(ctx, e.BQ, b, e.Loc, time.Time{}, time.Time{})
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		events, err := viewcheck.Events(ctx, e.BQ, b, e.Loc)
		if err != nil {
			t.Fatal(err)
		}
		w, err := viewcheck.Watermark(ctx, e.BQ, b, e.Loc)
		if err != nil {
			t.Fatal(err)
		}
		if d := viewcheck.Diff(viewcheck.ExpectedChanges(b, events, time.Time{}, w, w), feed); d != "" {
			t.Errorf("%s: %s_changes differs from the model:\n%s", when, b.Target, d)
		}
		if d := viewcheck.Diff(viewcheck.Expected(b, model.AsOf(events, w)), viewcheck.ReplayChanges(b, feed)); d != "" {
			t.Errorf("%s: replaying %s_changes differs from the target at the watermark:\n%s", when, b.Target, d)
		}
	}
}

// compactRandomly runs compaction at clock now, possibly crashing after a
// random step (then re-running it), possibly appending rows while it runs,
// and checks the views after every step.
func compactRandomly(t *testing.T, e *testenv.Env, r *rand.Rand, bound []*flow.Bound, source string, now time.Time, lag time.Duration, when string) {
	t.Helper()
	crashAt := ""
	if r.Intn(10) < 3 {
		crashAt = testenv.Pick(r, compact.StepFold, compact.StepChanges, compact.StepGC, compact.StepView, compact.StepFoldChunk, compact.StepMaintainChunk)
	}
	var late func()
	if r.Intn(10) < 4 {
		// Rows whose append became visible after the run read the
		// changelog, stamped between the new watermark and now.
		late = func() { e.AppendRows(t, source, lateRows(r, now.Add(-lag/2))) }
	}
	// One flow at a time: AfterStep appends rows and checks views between
	// steps, which is only a well-defined interleaving (and the model read
	// only comparable with the view read) when no other flow runs meanwhile.
	// Flows are independent (each writes its own state table), so this
	// loses nothing of what is checked; concurrency is covered by the scale
	// test.
	// Maintenance (folding the state's levels into one) on half the runs,
	// deleting the levels of earlier runs (a margin of a second: runs here
	// are a minute apart and never overlap).
	maintain := time.Duration(-1)
	if r.Intn(2) == 0 {
		maintain = time.Nanosecond
	}
	// Two buckets a statement: the states of buckets (7 and 5) are written
	// in ranges by a run touching more, and by every maintenance.
	opts := compact.Options{VisibilityLag: lag, Now: func() time.Time { return now }, Backoff: 20 * time.Millisecond, Concurrency: 1, BucketsPerJob: 2,
		MaintainEvery: maintain, MaintainMargin: time.Second, MaintainGranularity: time.Nanosecond,
		AfterStep: testenv.CrashingSteps(r, crashAt, late, func(flowName, step string) {
			// The flow being compacted is the one whose state changes.
			e.CheckViews(t, testenv.Only(bound, flowName), fmt.Sprintf("%s, compaction of %s after step %s", when, flowName, step))
		})}
	e.CompactCrashing(t, opts, bound, now, crashAt, when, func(when string) { e.CheckViews(t, bound, when) })
}

// lateRows are a few fresh events for existing keys, ingested at "at".
func lateRows(r *rand.Rand, at time.Time) []map[string]any {
	var rows []map[string]any
	for i := 0; i < 1+r.Intn(3); i++ {
		rows = append(rows, map[string]any{
			"k1": int64(1 + r.Intn(3)), "k2": testenv.Pick(r, "a", "b"), "s1": int64(1 + r.Intn(9)), "s2": int64(r.Intn(3)),
			"op": testenv.Pick(r, "U", "U", "D"), "v_str": testenv.Maybe(r, testenv.Pick(r, "late", "x")), "v_int": testenv.Maybe(r, int64(2)),
			"v_arr": []any{"late"}, catalog.ColMessageID: fmt.Sprintf("late%06d", r.Intn(1_000_000)),
			catalog.ColIngestedAt: at.Add(time.Duration(i) * time.Millisecond).UnixMicro(),
		})
	}
	return rows
}
