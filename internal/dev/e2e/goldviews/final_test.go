package goldviews

import (
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/compact"
	"github.com/bqcdc/bqcdc/internal/dev/testenv"
	"github.com/bqcdc/bqcdc/internal/dev/viewcheck"
	"github.com/bqcdc/bqcdc/internal/flow"
)

const finalViews = `
CREATE MATERIALIZED VIEW f_hourly AS
SELECT window(ordered_at, '1 hour') AS hour, region, COUNT(*) AS n, SUM(qty) AS units
FROM f_orders WATERMARK ordered_at DELAY OF INTERVAL 30 MINUTES
GROUP BY 1, region;
`

// TestGoldFinalWindows: a view with a WATERMARK appends each window once,
// when the newest ordered_at seen less 30 minutes passes its end, with the
// values its refreshed state holds then (append mode); a late change to a
// final window shows in the view and <name>_refreshed, never in <name>_final;
// a repeated finalize appends nothing.
func TestGoldFinalWindows(t *testing.T) {
	e := testenv.New(t, stack, "gold-final")
	bound, golds := applyOrders(t, e, "f", finalViews)
	if len(golds) != 1 || golds[0].Watermark == nil {
		t.Fatalf("views %v", golds)
	}
	g := golds[0]
	base := time.Now().UTC().Add(-24 * time.Hour).Truncate(time.Hour)
	msg, seq := 0, int64(0)
	now := time.Now().UTC()
	add := func(id int64, region string, qty int64, at time.Time) {
		msg++
		seq++
		e.AppendRows(t, "f.orders", []map[string]any{{"id": id, "seq": seq, "operation": "UPSERT", "region": region, "qty": qty,
			"ordered_at": at.UnixMicro(), catalog.ColMessageID: fmt.Sprintf("f%03d", msg), catalog.ColIngestedAt: now.Add(-30 * time.Second).UnixMicro()}})
	}
	compactNow := func(when string) {
		t.Helper()
		now = now.Add(2 * time.Minute) // the watermark passes every change
		for _, r := range e.CompactAt(t, bound, now, compact.Options{VisibilityLag: time.Minute, Golds: []*flow.Gold{g.Gold}}) {
			if r.Error != "" || len(r.GoldErrors) > 0 || r.Golds != 1 {
				t.Fatalf("%s: %+v", when, r)
			}
		}
	}
	rows := func(sql string) []string { return sortedColumn(t, e, sql, "r") }
	row := "SELECT TO_JSON_STRING(STRUCT(UNIX_MICROS(hour.start) AS h, region, n, units)) AS r FROM "
	final := func() []string { return rows(row + e.Loc.GoldFinalView(g.Gold)) }
	// The refreshed rows of the windows that end at or before the watermark.
	finalNow := func(wm time.Time) []string {
		return rows(row + e.Loc.GoldRefreshed(g.Gold) + fmt.Sprintf(" WHERE UNIX_MICROS(hour.`end`) <= %d", wm.UnixMicro()))
	}

	// Hours 0 and 1; the newest time is 1:50, the watermark 1:20: hour 0 is final.
	add(1, "north", 2, base.Add(10*time.Minute))
	add(2, "north", 3, base.Add(50*time.Minute))
	add(3, "south", 1, base.Add(20*time.Minute))
	add(4, "north", 5, base.Add(110*time.Minute))
	compactNow("first")
	want := finalNow(base.Add(80 * time.Minute))
	if len(want) != 2 {
		t.Fatalf("hour 0 holds %v", want)
	}
	if d := viewcheck.Diff(want, final()); d != "" {
		t.Errorf("after the first run, f_hourly_final (-want +got):\n%s", d)
	}

	// A late change to hour 0 (final) and a row at 2:40 (watermark 2:10:
	// hour 1 final too). Hour 0 stays as it was appended.
	add(2, "north", 30, base.Add(40*time.Minute))
	add(5, "south", 4, base.Add(160*time.Minute))
	compactNow("second")
	got := final()
	hour1 := finalNow(base.Add(130 * time.Minute))
	var wantNow []string
	wantNow = append(wantNow, want...) // hour 0 as first appended
	for _, r := range hour1 {
		if !slices.Contains(rows(row+e.Loc.GoldRefreshed(g.Gold)+fmt.Sprintf(" WHERE UNIX_MICROS(hour.`end`) <= %d", base.Add(time.Hour).UnixMicro())), r) {
			wantNow = append(wantNow, r)
		}
	}
	sort.Strings(wantNow)
	if d := viewcheck.Diff(wantNow, got); d != "" {
		t.Errorf("after the late change, f_hourly_final (-want +got):\n%s", d)
	}
	if d := viewcheck.Diff(want, finalNow(base.Add(time.Hour))); d == "" {
		t.Error("the late change did not reach f_hourly_refreshed")
	}

	// Nothing new: a run appends nothing more.
	add(6, "east", 1, base.Add(165*time.Minute))
	compactNow("third")
	if d := viewcheck.Diff(got, final()); d != "" {
		t.Errorf("a run that finalized no new window changed f_hourly_final (-want +got):\n%s", d)
	}
	n, err := e.Query("SELECT COUNT(*) AS n FROM " + e.Loc.GoldFinal(g.Gold))
	if err != nil || n[0]["n"] != int64(len(got)) {
		t.Errorf("the final windows' table holds %v rows (%v), the view %d", n, err, len(got))
	}
}
