package goldviews

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/compact"
	"github.com/bqcdc/bqcdc/internal/dev/testenv"
	"github.com/bqcdc/bqcdc/internal/dev/viewcheck"
	"github.com/bqcdc/bqcdc/internal/flow"
)

const havingViews = `
CREATE MATERIALIZED VIEW h_busy AS
SELECT region, COUNT(*) AS n, SUM(qty) AS units, MAX(qty) AS largest
FROM h_orders WHERE qty IS NOT NULL AND region != 'east'
GROUP BY region HAVING n >= 2;
`

// TestGoldWhereHavingAndFeed: a view the reference does not evaluate
// (WHERE, HAVING) is checked against BigQuery's own evaluation of its
// SELECT: once compaction has passed every change, <name>_refreshed equals
// <name>; and its change feed, replayed, equals <name>_refreshed — groups
// appear and disappear as HAVING starts and stops holding, after every
// run, with refreshes reading the touched groups only or every group, and
// with maintenance keeping no versions for the feed.
func TestGoldWhereHavingAndFeed(t *testing.T) {
	e := testenv.New(t, stack, "gold-having")
	ctx := context.Background()
	bound, golds := applyOrders(t, e, "h", havingViews)
	if len(golds) != 1 || golds[0].Refreshable() != nil {
		t.Fatalf("%d views applied, refreshable: %v", len(golds), golds[0].Refreshable())
	}
	g := golds[0]
	rows := func(view string) []string {
		return sortedColumn(t, e, "SELECT TO_JSON_STRING(STRUCT(region, n, units, largest)) AS r FROM "+view, "r")
	}
	rng := rand.New(rand.NewPCG(23, 2))
	seq := map[int64]int64{}
	msg := 0
	now := time.Now().UTC()
	history := func(n int, at time.Time) {
		var batch []map[string]any
		for i := 0; i < n; i++ {
			id := int64(rng.IntN(16) + 1)
			seq[id] += int64(rng.IntN(3) + 1)
			msg++
			r := map[string]any{"id": id, "seq": seq[id], "operation": "UPSERT", "region": []string{"north", "south", "east", "west"}[rng.IntN(4)],
				catalog.ColMessageID: fmt.Sprintf("h%03d", msg), catalog.ColIngestedAt: at.Add(time.Duration(i) * time.Millisecond).UnixMicro()}
			if rng.IntN(4) > 0 {
				r["qty"] = int64(rng.IntN(5))
			}
			if rng.IntN(4) == 0 {
				r["operation"] = "DELETE"
			}
			batch = append(batch, r)
		}
		e.AppendRows(t, "h.orders", batch)
	}
	shown := map[string]bool{}
	for run := 0; run < 4; run++ {
		history(12, now.Add(-30*time.Second))
		now = now.Add(2 * time.Minute) // the watermark passes every change
		opts := compact.Options{VisibilityLag: time.Minute, Reports: e.W,
			Golds: []*flow.Gold{g.Gold}, GoldTouchedAbove: int64(run%2*2 - 1), MaintainEvery: time.Nanosecond,
			MaintainMargin: time.Second, MaintainGranularity: time.Nanosecond, GoldFeedRetention: -1}
		for _, r := range e.CompactAt(t, bound, now, opts) {
			if r.Error != "" || r.Golds != 1 {
				t.Fatalf("run %d: %+v", run, r)
			}
		}
		want, got := rows(e.Loc.GoldView(g.Gold)), rows(e.Loc.GoldRefreshed(g.Gold))
		if d := viewcheck.Diff(want, got); d != "" {
			t.Errorf("run %d: h_busy_refreshed differs from h_busy:\n%s", run, d)
		}
		for _, r := range want {
			shown[r[:14]] = true
		}
		diff, err := viewcheck.CheckGoldFeed(ctx, e.BQ, g, e.Loc)
		if err != nil {
			t.Fatal(err)
		}
		if diff != "" {
			t.Errorf("run %d: h_busy_changes, replayed:\n%s", run, diff)
		}
	}
	if len(shown) < 2 {
		t.Errorf("the history showed %d groups past HAVING: it should show several", len(shown))
	}
}

// sortedColumn runs sql and returns column col of its rows, as text,
// sorted.
func sortedColumn(t *testing.T, e *testenv.Env, sql, col string) []string {
	t.Helper()
	got, err := e.Query(sql)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, 0, len(got))
	for _, r := range got {
		out = append(out, fmt.Sprint(r[col]))
	}
	sort.Strings(out)
	return out
}
