package goldprop

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/compact"
	"github.com/bqcdc/bqcdc/internal/dev/testenv"
	"github.com/bqcdc/bqcdc/internal/dev/viewcheck"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/schema"
)

var seeds = testenv.SeedFlags("gold", 2, 2000, "random histories (CI runs 2, to keep this binary within go test's 10 minutes beside the property binary on two cores; more for a longer search)")

var image = schema.Columns{
	{Name: "k1", Type: schema.Int64}, {Name: "k2", Type: schema.String},
	{Name: "s1", Type: schema.Int64}, {Name: "op", Type: schema.String},
	{Name: "region", Type: schema.String}, {Name: "qty", Type: schema.Int64},
	{Name: "amount", Type: schema.Numeric, Precision: 10, Scale: 2},
	{Name: "placed_at", Type: schema.Timestamp}, {Name: "flag", Type: schema.Bool},
}

// flows: an SCD 1 flow with deletes and truncates, and materialized views
// over it of every kind: exact ones with every aggregate, windows of each
// kind and a stream, and two compaction refreshes.
func flows(source, p string) string {
	meta := strings.Join(catalog.MetadataColumns().Names(), ", ")
	return fmt.Sprintf(`
CREATE FLOW %[2]s AS AUTO CDC INTO %[2]s FROM STREAM(`+"`%[1]s`"+`)
KEYS (k1, k2) APPLY AS DELETE WHEN op = 'D' APPLY AS TRUNCATE WHEN op = 'T'
SEQUENCE BY s1 COLUMNS * EXCEPT (op, %[3]s) STORED AS SCD TYPE 1;

CREATE MATERIALIZED VIEW %[2]s_all AS
SELECT region, COUNT(*) AS n, COUNT(qty) AS with_qty, SUM(qty) AS units, AVG(amount) AS mean, MIN(placed_at) AS first_at,
  MAX(qty) AS largest, COUNT(DISTINCT qty) AS sizes, COUNTIF(flag) AS flagged, LOGICAL_OR(flag) AS any_flag
FROM %[2]s GROUP BY region;

CREATE MATERIALIZED VIEW %[2]s_hourly AS
SELECT window(placed_at, '1 hour') AS hour, region, COUNT(*) AS n, COUNT(qty) AS with_qty, SUM(qty) AS units,
  AVG(amount) AS mean, SUM(amount) AS total, COUNTIF(flag) AS flagged
FROM %[2]s GROUP BY 1, 2;

CREATE MATERIALIZED VIEW %[2]s_sliding AS
SELECT window(placed_at, '90 minutes', '30 minutes') AS w, COUNT(*) AS n, AVG(qty) AS mean
FROM %[2]s GROUP BY w;

CREATE MATERIALIZED VIEW %[2]s_sessions AS
SELECT k2, session_window(placed_at, '45 minutes') AS visit, COUNT(*) AS n, MAX(amount) AS largest
FROM %[2]s GROUP BY k2, visit;

CREATE MATERIALIZED VIEW %[2]s_events AS
SELECT op, COUNT(*) AS events, SUM(qty) AS units
FROM STREAM(`+"`%[1]s`"+`) GROUP BY op;
`, source, p, meta)
}

// history: events of 6 keys (composite, a NULL k2 among them), updates
// that move rows between regions and times, deletes, truncates, NULL
// sequences, 20 % redelivered, shuffled; times at a few on window
// boundaries.
func history(r *rand.Rand, base time.Time) []map[string]any {
	n := 20 + r.Intn(25)
	msg := testenv.MessageIDs(r)
	var events []map[string]any
	for i := 0; i < n; i++ {
		e := map[string]any{
			"k1": int64(1 + r.Intn(3)), "k2": testenv.Maybe(r, testenv.Pick(r, "a", "b")), "s1": int64(1 + r.Intn(10)),
			"op": testenv.Pick(r, "I", "U", "U"), "region": testenv.Maybe(r, testenv.Pick(r, "north", "south")),
			"qty": testenv.Maybe(r, int64(r.Intn(5))), "amount": testenv.Maybe(r, testenv.Pick(r, "1.50", "2.25", "-3.00", "0.01")),
			"placed_at": testenv.Maybe(r, base.Add(time.Duration(testenv.Pick(r, 0, 30, 60, 75, 90, 150, 200))*time.Minute).UnixMicro()),
			"flag":      testenv.Maybe(r, testenv.Pick(r, true, false)), catalog.ColMessageID: msg(),
		}
		switch x := r.Intn(100); {
		case x < 18:
			e["op"] = "D"
		case x < 22:
			e["op"], e["k1"], e["k2"] = "T", nil, nil
		case x < 25:
			delete(e, "s1")
		}
		events = append(events, e)
	}
	return testenv.Deliver(r, events, nil)
}

// TestGoldMatchesSelect appends random histories in three batches and,
// after every batch, every compaction step and every crash, compares each
// materialized view with its SELECT evaluated by the reference over the
// target's rows now, each refreshed one (<name>_refreshed) with its
// SELECT over the target as of the state's own position, and the replay of
// its change feed (<name>_changes) with <name>_refreshed. Compaction runs
// at random points, crashes after a random step (the refresh included)
// and is re-run; some runs see rows appended while they run.
func TestGoldMatchesSelect(t *testing.T) {
	const lag = 20 * time.Second
	for _, seed := range seeds() {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			r := rand.New(rand.NewSource(seed))
			e := testenv.New(t, stack, testenv.Project("gold", seed))
			source := fmt.Sprintf("gold.s%d", seed)
			text := flows(source, fmt.Sprintf("g%d", seed))
			bound := e.ApplySourceFlows(t, "gold.sql", text, source, image)
			golds := e.ApplyGolds(t, "gold.sql", text, bound)
			var decls []*flow.Gold
			refreshed := 0
			for _, g := range golds {
				decls = append(decls, g.Gold)
				if g.Refreshable() == nil {
					refreshed++
				}
			}
			if len(golds) != 5 || refreshed != 4 {
				t.Fatalf("%d views, %d refreshable; want 5 and 4 (all but the stream)", len(golds), refreshed)
			}
			check := func(when string) {
				t.Helper()
				e.CheckViews(t, bound, when)
				for _, g := range golds {
					diff, err := viewcheck.CheckGold(context.Background(), e.BQ, g, e.Loc)
					if err != nil {
						t.Fatalf("%s: %s: %v", when, g.Name, err)
					}
					if diff != "" {
						t.Errorf("%s: %s differs from its SELECT:\n%s", when, g.Name, diff)
					}
				}
				e.CheckRefreshedGolds(t, golds, when)
			}
			base := time.Now().Add(-time.Hour).Truncate(time.Hour)
			rows := history(r, base.Add(-2*time.Hour))
			cuts := []int{len(rows) / 3, 2 * len(rows) / 3, len(rows)}
			from := 0
			for bi, to := range cuts {
				start := base.Add(time.Duration(bi) * time.Minute)
				e.AppendIngested(t, source, rows[from:to], start)
				from = to
				when := fmt.Sprintf("seed %d, after batch %d", seed, bi+1)
				check(when)
				if r.Intn(10) < 8 {
					compactRandomly(t, e, r, bound, decls, source, start.Add(50*time.Second), lag, when, check)
				}
			}
		})
	}
}

func compactRandomly(t *testing.T, e *testenv.Env, r *rand.Rand, bound []*flow.Bound, golds []*flow.Gold, source string,
	now time.Time, lag time.Duration, when string, check func(string)) {
	t.Helper()
	crashAt := ""
	if r.Intn(10) < 4 {
		crashAt = testenv.Pick(r, compact.StepFold, compact.StepChanges, compact.StepGold, compact.StepGC, compact.StepView)
	}
	var late func()
	if r.Intn(10) < 4 {
		// Appended after the run read the changelog, stamped between the
		// new watermark and now.
		late = func() {
			e.AppendRows(t, source, []map[string]any{{"k1": int64(1), "k2": "a", "s1": int64(11), "op": "U",
				"region": "late", "qty": int64(9), "placed_at": now.UnixMicro(), catalog.ColMessageID: fmt.Sprintf("late%06d", r.Intn(1_000_000)),
				catalog.ColIngestedAt: now.Add(-lag / 2).UnixMicro()}})
		}
	}
	// Half the runs ask which groups they touch first (as a large state's
	// do) and read only those; a third maintain (the flow's levels, and
	// the views' versions that no longer count).
	// Maintenance keeps the versions the feed compares for a week, or (on
	// half of them) none: a replay of the whole feed gives the same.
	touched, maintain, retention := int64(-1), time.Duration(-1), time.Duration(0)
	if r.Intn(2) == 0 {
		touched = 0
	}
	if r.Intn(3) == 0 {
		maintain = time.Nanosecond
	}
	if r.Intn(2) == 0 {
		retention = -1
	}
	opts := compact.Options{VisibilityLag: lag, Now: func() time.Time { return now }, Backoff: 20 * time.Millisecond, Concurrency: 1,
		MaintainEvery: maintain, MaintainMargin: time.Second, MaintainGranularity: time.Nanosecond, GoldTouchedAbove: touched, GoldFeedRetention: retention, Golds: golds,
		AfterStep: testenv.CrashingSteps(r, crashAt, late, func(_, step string) {
			check(fmt.Sprintf("%s, compaction after step %s", when, step))
		})}
	e.CompactCrashing(t, opts, bound, now, crashAt, when, check)
}
