package archive

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/compact"
	"github.com/bqcdc/bqcdc/internal/dev/testenv"
	"github.com/bqcdc/bqcdc/internal/dev/viewcheck"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/plan"
	"github.com/bqcdc/bqcdc/internal/schema"
	"github.com/bqcdc/bqcdc/sql/render"
)

const historyFlow = `
CREATE FLOW hi_current AS AUTO CDC INTO hi_current FROM STREAM(` + "`hi.users`" + `)
KEYS (userId) APPLY AS DELETE WHEN operation = 'DELETE'
SEQUENCE BY sequenceNum COLUMNS (userId, name, city);
`

// The same flow asking for a history, and a new one that has it from its
// first run.
const historyFlows = "CREATE STREAMING TABLE hi_current TBLPROPERTIES ('bqcdc.history' = 'true');\n" + historyFlow + `
CREATE OR REFRESH STREAMING TABLE hi_new TBLPROPERTIES ('bqcdc.history' = 'true')
FLOW AUTO CDC FROM STREAM(` + "`hi.users`" + `)
KEYS (userId) APPLY AS DELETE WHEN operation = 'DELETE'
SEQUENCE BY sequenceNum COLUMNS (userId, name, city);
`

// TestSCD1HistoryTimeTravel: an SCD 1 flow with TBLPROPERTIES
// ('bqcdc.history' = 'true') copies every event it folds into its
// history (render/history.go), and its <target>_at reads the history and
// the changelog after its bound only. A flow folded before it asked for
// one: its runs copy what they fold, but its _at fails, naming bqcdc apply,
// until apply has copied the changelog into the history (once: a repeat
// adds nothing); a flow made with one has it from its first run. Time
// travel equals the model at the minutes where events land, before and
// after maintenance
// (which neither folds nor deletes the history), and the views and feeds
// stay equal to the model.
func TestSCD1HistoryTimeTravel(t *testing.T) {
	e := testenv.New(t, stack, "history")
	ctx := context.Background()
	cols := e.CreateSource(t, "hi.users", testenv.UsersImage)
	changelogs := map[string]schema.Columns{"hi.users": cols}
	before := e.ApplyFlows(t, "hi.sql", historyFlow, changelogs)
	at, row := testenv.UsersClock()
	compactAt := func(bound []*flow.Bound, minute int, maintain bool) {
		t.Helper()
		opts := compact.Options{MaintainEvery: -1, VisibilityLag: time.Second}
		if maintain {
			opts.MaintainEvery, opts.MaintainMargin, opts.MaintainGranularity = time.Nanosecond, time.Second, time.Second
		}
		e.CompactAt(t, bound, at(minute), opts)
	}
	// travel checks _at at the minutes given (the events of a minute are
	// ingested at its start), and the views.
	travel := func(bound []*flow.Bound, minutes []int, when string) {
		t.Helper()
		for _, b := range bound {
			for _, minute := range minutes {
				ts := at(minute)
				diff, err := viewcheck.CheckAt(ctx, e.BQ, b, e.Loc, ts)
				if err != nil {
					t.Fatalf("%s: %s_at(%s): %v", when, b.Target, ts.Format(time.RFC3339Nano), err)
				}
				if diff != "" {
					t.Errorf("%s: %s_at(%s) differs from the model:\n%s", when, b.Target, ts.Format(time.RFC3339Nano), diff)
				}
			}
		}
		e.CheckViews(t, bound, when)
	}

	e.AppendRows(t, "hi.users", []map[string]any{
		row(1, "a", "x", "INSERT", 10, "m01", 1), row(1, "b", "x", "UPDATE", 20, "m02", 2),
		row(2, "a", "x", "INSERT", 10, "m03", 1), row(2, nil, nil, "DELETE", 20, "m04", 2),
		row(3, "a", "x", "INSERT", 10, "m05", 2), row(3, "c", "z", "UPDATE", 30, "m06", 3),
		row(3, "c", "z", "UPDATE", 30, "m06", 3), // a redelivered copy
	})
	compactAt(before, 4, false)
	compactAt(before, 5, true) // maintenance: the levels folded into one

	// The flow asks for a history: its runs copy what they fold, but its
	// time travel fails until apply fills the history.
	flows, err := flow.Parse("hi.sql", historyFlows)
	if err != nil {
		t.Fatal(err)
	}
	edited, err := flow.Bind(flows[0], cols)
	if err != nil || !render.HistoryKept(edited) {
		t.Fatalf("flow %s: no history (%v)", flows[0].Name, err)
	}
	e.AppendRows(t, "hi.users", []map[string]any{row(1, "d", "y", "UPDATE", 40, "m07", 6), row(4, "a", "x", "INSERT", 10, "m08", 6)})
	compactAt([]*flow.Bound{edited}, 7, false)
	sql, err := plan.For(edited, e.Loc).AtQuery(at(7), at(6))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Query(sql); err == nil || !strings.Contains(err.Error(), "run bqcdc apply") {
		t.Errorf("time travel before apply filled the history: %v, want an error naming bqcdc apply", err)
	}

	after := e.ApplyFlows(t, "hi.sql", historyFlows, changelogs)
	state := e.Loc.StateTable(edited.Flow)
	history := func() int64 {
		t.Helper()
		rows, err := e.Query("SELECT COUNT(*) AS n FROM " + state + " WHERE __gen < " + render.Literal(render.ArchiveEnd))
		if err != nil {
			t.Fatal(err)
		}
		return rows[0]["n"].(int64)
	}
	// The changelog's 9 rows (m06 twice) and the run's copies of m07 and
	// m08, and the marker.
	if n := history(); n != 12 {
		t.Errorf("history rows after apply: %d, want 12", n)
	}
	fill, err := render.HistoryBackfill(edited, e.Loc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Query(fill); err != nil {
		t.Fatal(err)
	}
	if n := history(); n != 12 {
		t.Errorf("history rows after the backfill again: %d, want 12 (the marker stops it)", n)
	}
	travel(after[:1], []int{0, 1, 2, 3, 6, 7}, "after apply filled the history")

	e.AppendRows(t, "hi.users", []map[string]any{
		row(1, nil, nil, "DELETE", 50, "m09", 8), row(4, "b", "w", "UPDATE", 20, "m10", 8), row(5, "a", "x", "INSERT", 10, "m11", 9),
	})
	compactAt(after, 10, false)
	compactAt(after, 11, true) // maintenance keeps the history
	if n := history(); n != 15 {
		t.Errorf("history rows after maintenance: %d, want 15", n)
	}
	travel(after, []int{2, 6, 8, 9, 11}, "after maintenance")

	// Turned off: the next run marks the history incomplete (its marker
	// goes, its label says "0"), since runs no longer copy; turned on
	// again, apply fills it anew.
	off, err := flow.Bind(flows[0], cols)
	if err != nil {
		t.Fatal(err)
	}
	off.History = false
	e.AppendRows(t, "hi.users", []map[string]any{row(2, "e", "v", "INSERT", 30, "m12", 12)})
	compactAt([]*flow.Bound{off}, 13, false)
	marks := func() int64 {
		t.Helper()
		rows, err := e.Query("SELECT COUNT(*) AS n FROM " + state + " WHERE __op = 'H'")
		if err != nil {
			t.Fatal(err)
		}
		return rows[0]["n"].(int64)
	}
	if n := marks(); n != 0 {
		t.Errorf("history markers after a run without the history: %d, want 0", n)
	}
	travel([]*flow.Bound{off}, []int{8, 13}, "with the history off")
	after = e.ApplyFlows(t, "hi.sql", historyFlows, changelogs)
	if n := marks(); n != 1 {
		t.Errorf("history markers after apply turned it on again: %d, want 1", n)
	}
	travel(after[:1], []int{3, 8, 12, 13}, "with the history on again")
}
