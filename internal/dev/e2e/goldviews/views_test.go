package goldviews

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/compact"
	"github.com/bqcdc/bqcdc/internal/dev/model"
	"github.com/bqcdc/bqcdc/internal/dev/testenv"
	"github.com/bqcdc/bqcdc/internal/dev/viewcheck"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/plan"
	"github.com/bqcdc/bqcdc/internal/schema"
	"github.com/bqcdc/bqcdc/sql/render"
)

var ordersImage = schema.Columns{
	{Name: "id", Type: schema.Int64}, {Name: "region", Type: schema.String}, {Name: "qty", Type: schema.Int64},
	{Name: "ordered_at", Type: schema.Timestamp}, {Name: "operation", Type: schema.String}, {Name: "seq", Type: schema.Int64},
}

// ordersFlow declares the flow <p>_orders over the changelog <p>.orders
// (ordersImage): the target the materialized views of a test read.
func ordersFlow(p string) string {
	return fmt.Sprintf(`
CREATE FLOW %[1]s_orders AS AUTO CDC INTO %[1]s_orders FROM STREAM(`+"`%[1]s.orders`"+`)
KEYS (id) APPLY AS DELETE WHEN operation = 'DELETE'
SEQUENCE BY seq COLUMNS (id, region, qty, ordered_at);
`, p)
}

// applyOrders creates the changelog <p>.orders and applies ordersFlow(p)
// and the materialized views declared in views (file <p>.sql), as bqcdc
// apply does.
func applyOrders(t *testing.T, e *testenv.Env, p, views string) ([]*flow.Bound, []*flow.BoundGold) {
	t.Helper()
	text := ordersFlow(p) + views
	bound := e.ApplySourceFlows(t, p+".sql", text, p+".orders", ordersImage)
	return bound, e.ApplyGolds(t, p+".sql", text, bound)
}

const goldTestViews = `
CREATE MATERIALIZED VIEW g_per_region AS
SELECT region, COUNT(*) AS n, COUNT(qty) AS with_qty, SUM(qty) AS units, MIN(qty) AS smallest, MAX(qty) AS largest,
  AVG(qty) AS mean, COUNT(DISTINCT qty) AS sizes
FROM g_orders GROUP BY region;

CREATE MATERIALIZED VIEW g_per_hour AS
SELECT window(ordered_at, '1 hour') AS hour, region, COUNT(*) AS n, SUM(qty) AS units
FROM g_orders GROUP BY 1, 2;

CREATE MATERIALIZED VIEW g_sliding AS
SELECT window(ordered_at, '2 hours', '30 minutes') AS w, MAX(ordered_at) AS last, COUNT(*) AS n
FROM g_orders GROUP BY w;

CREATE MATERIALIZED VIEW g_sliding_counts AS
SELECT window(ordered_at, '2 hours', '30 minutes') AS w, region, COUNT(*) AS n, COUNT(qty) AS with_qty, SUM(qty) AS units, AVG(qty) AS mean
FROM g_orders GROUP BY 1, 2;

CREATE MATERIALIZED VIEW g_sessions AS
SELECT region, session_window(ordered_at, '40 minutes') AS visit, COUNT(*) AS n, MIN(qty) AS smallest
FROM g_orders GROUP BY region, visit;

CREATE MATERIALIZED VIEW g_events AS
SELECT region, operation, COUNT(*) AS events, SUM(qty) AS units
FROM STREAM(` + "`g.orders`" + `) GROUP BY region, operation;
`

// TestGoldViewsEqualTheirSelect: after random histories of inserts,
// updates that move rows between groups and windows, deletes, late events
// and redeliveries, every materialized view equals its SELECT evaluated by
// the reference (internal/dev/model) over the target's current rows (or
// the stream's events), before and after compaction.
func TestGoldViewsEqualTheirSelect(t *testing.T) {
	e := testenv.New(t, stack, "gold-views")
	ctx := context.Background()
	bound, golds := applyOrders(t, e, "g", goldTestViews)
	if len(golds) != 6 {
		t.Fatalf("%d materialized views applied, want 6", len(golds))
	}
	// The views say what they are, and so do their columns.
	md, err := e.BQ.Dataset(e.Loc.DefaultDataset).Table("g_per_hour").Metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cols := map[string]string{}
	for _, f := range md.Schema {
		cols[f.Name] = f.Description
	}
	if !strings.Contains(md.Description, "materialized view (gold flow) g_per_hour") ||
		cols["units"] != "SUM(`qty`) over the rows of g_orders per hour, region." || cols["region"] != "GROUP BY `region`." ||
		!strings.HasPrefix(cols["hour"], "Window of ordered_at, 1h0m0s long every 1h0m0s") {
		t.Errorf("g_per_hour is described %q, its columns %q", md.Description, cols)
	}
	rng := rand.New(rand.NewPCG(22, 1))
	base := time.Now().UTC().Add(-3 * time.Hour).Truncate(time.Hour)
	seq := map[int64]int64{}
	msg := 0
	history := func(n int, at time.Time) {
		var rows []map[string]any
		for i := 0; i < n; i++ {
			id := int64(rng.IntN(8) + 1)
			seq[id] += int64(rng.IntN(3) + 1)
			s := seq[id]
			if rng.IntN(6) == 0 {
				s -= int64(rng.IntN(4) + 1) // late: sequenced before what arrived already
			}
			msg++
			r := map[string]any{"id": id, "seq": s, "operation": "UPSERT",
				catalog.ColMessageID: fmt.Sprintf("m%03d", msg), catalog.ColIngestedAt: at.Add(time.Duration(i) * time.Millisecond).UnixMicro()}
			if rng.IntN(5) > 0 {
				r["region"] = []string{"north", "south", "east"}[rng.IntN(3)]
			}
			if rng.IntN(5) > 0 {
				r["qty"] = int64(rng.IntN(6))
			}
			if rng.IntN(6) > 0 {
				// Half on a window's boundary: it belongs to the window it starts.
				m := rng.IntN(5 * 60)
				if rng.IntN(2) == 0 {
					m = rng.IntN(10) * 30
				}
				r["ordered_at"] = base.Add(time.Duration(m) * time.Minute).UnixMicro()
			}
			if rng.IntN(5) == 0 {
				r["operation"] = "DELETE"
			}
			rows = append(rows, r)
			if rng.IntN(8) == 0 {
				rows = append(rows, r) // redelivered: the same message id
			}
		}
		e.AppendRows(t, "g.orders", rows)
	}
	check := func(when string) {
		t.Helper()
		e.CheckViews(t, bound, when)
		for _, g := range golds {
			diff, err := viewcheck.CheckGold(ctx, e.BQ, g, e.Loc)
			if err != nil {
				t.Fatalf("%s: checking %s: %v", when, g.Name, err)
			}
			if diff != "" {
				t.Errorf("%s: %s differs from its SELECT over the source:\n%s", when, g.Name, diff)
			}
			got, err := viewcheck.Gold(ctx, e.BQ, g, e.Loc, mustSpec(t, g))
			if err != nil || len(got) < 2 {
				t.Errorf("%s: %s has %d rows (%v): the history should fill several groups", when, g.Name, len(got), err)
			}
		}
	}
	// The views compaction refreshes: their <name>_refreshed equals the
	// SELECT once the change feed is materialized past every change.
	var refreshed []*flow.BoundGold
	var decls []*flow.Gold
	for _, g := range golds {
		decls = append(decls, g.Gold)
		if g.Refreshable() == nil {
			refreshed = append(refreshed, g)
		}
	}
	if len(refreshed) != 5 {
		t.Fatalf("%d refreshable views, want all but the stream", len(refreshed))
	}
	now := time.Now().UTC()
	history(40, now.Add(-20*time.Minute))
	check("before compaction")
	opts := compact.Options{VisibilityLag: time.Minute, Now: func() time.Time { return now }, Backoff: 20 * time.Millisecond, Reports: e.W, Golds: decls,
		GoldTouchedAbove: -1} // every refresh reads the touched groups only, as a large state's
	compactAll := func(when string) {
		t.Helper()
		for _, r := range compact.New(e.BQ, e.Loc, opts).Run(ctx, bound) {
			if r.Error != "" {
				t.Fatalf("%s: compaction: %+v", when, r)
			}
			if r.Flow == "g_orders" && r.Golds != 5 {
				t.Errorf("%s: the run of g_orders refreshed %d materialized views, want 5", when, r.Golds)
			}
		}
	}
	compactAll("first compaction")
	check("after compaction")
	e.CheckRefreshedGolds(t, refreshed, "after compaction")
	history(40, now.Add(-30*time.Second))
	check("after more changes")
	now = now.Add(2 * time.Minute) // the watermark passes every change
	compactAll("second compaction")
	check("after the second compaction")
	e.CheckRefreshedGolds(t, refreshed, "after the second compaction")
	// A refresh repeated (a run that crashed before its label) from an
	// older position adds nothing twice: the state carries its own.
	for _, g := range refreshed {
		sql, err := plan.ForGold(g, e.Loc).Refresh(render.GoldRange{From: render.Epoch, To: now, Run: render.NewRun()})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Query(sql); err != nil {
			t.Fatal(err)
		}
	}
	e.CheckRefreshedGolds(t, refreshed, "after a repeated refresh")

	// A changed definition: bqcdc apply makes its state again, from the
	// whole change feed, and the refreshed view follows it at once.
	old := "COUNT(*) AS n, SUM(qty) AS units\nFROM g_orders GROUP BY 1, 2;"
	if !strings.Contains(goldTestViews, old) {
		t.Fatal("the test's g_per_hour moved")
	}
	changedText := ordersFlow("g") + strings.Replace(goldTestViews, old, "COUNT(*) AS n, SUM(qty) AS units, COUNT(qty) AS with_qty\nFROM g_orders GROUP BY 1, 2;", 1)
	for _, g := range e.ApplyGolds(t, "g.sql", changedText, bound) {
		if g.Name.Table != "g_per_hour" {
			continue
		}
		if diff, err := viewcheck.CheckGoldRefreshed(ctx, e.BQ, g, e.Loc); err != nil || diff != "" {
			t.Errorf("g_per_hour_refreshed after its definition changed: %v\n%s", err, diff)
		}
	}
}

func mustSpec(t *testing.T, g *flow.BoundGold) model.GoldSpec {
	t.Helper()
	spec, err := viewcheck.GoldSpec(g)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}
