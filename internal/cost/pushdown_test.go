package cost

import (
	"fmt"
	"testing"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/sql/render"
)

// A filter of an outer scope on the clustering column moves down to the
// table's scan through the scopes that keep the column and partition their
// windows by it; anything else keeps every block.
func TestOuterFiltersPushDown(t *testing.T) {
	m := NewModel(events(t))
	all := len(m.Tables["p.d.events"].Blocks)
	perDay := all / eventDays
	m.Views["p.d.latest"] = "SELECT *, ROW_NUMBER() OVER (PARTITION BY id ORDER BY ts DESC) AS rn FROM `p`.`d`.`events`"
	m.Views["p.d.ranked"] = "SELECT *, ROW_NUMBER() OVER (ORDER BY ts DESC) AS rn FROM `p`.`d`.`events`"
	for _, tt := range []struct {
		name, sql string
		blocks    int
	}{
		{"a CTE", "WITH x AS (SELECT * FROM `p`.`d`.`events`) SELECT name FROM x WHERE id = 5", eventDays},
		{"a subquery, qualified", "SELECT e.name FROM (SELECT id, name FROM `p`.`d`.`events`) AS e WHERE e.id = 5", eventDays},
		{"a view partitioned by the key", "SELECT name FROM `p`.`d`.`latest` WHERE id = 5 AND rn = 1", eventDays},
		{"through two CTEs and a named window", `WITH x AS (SELECT * EXCEPT (payload) FROM ` + "`p`.`d`.`events`" + `),
			y AS (SELECT *, COUNT(*) OVER w AS n FROM x WINDOW w AS (PARTITION BY name, id ORDER BY ts))
			SELECT name FROM y WHERE id IN (5, 6)`, eventDays},
		{"a GROUP BY the key", "SELECT n FROM (SELECT id, COUNT(*) AS n FROM `p`.`d`.`events` GROUP BY id) WHERE id = 5", eventDays},
		{"a UNION ALL", "SELECT name FROM (SELECT id, name FROM `p`.`d`.`events` UNION ALL SELECT id, name FROM `p`.`d`.`events`) WHERE id = 5", eventDays},
		{"two readers: the blocks of either", "WITH x AS (SELECT * FROM `p`.`d`.`events`) SELECT name FROM x WHERE id = 5 UNION ALL SELECT name FROM x WHERE id = 999999", 2 * eventDays},
		{"a window that names another", "SELECT name FROM (SELECT *, LAG(ts) OVER (w ORDER BY ts) AS prev FROM `p`.`d`.`events` WINDOW w AS (PARTITION BY id)) WHERE id = 5", eventDays},
		{"DISTINCT and QUALIFY", "SELECT name FROM (SELECT DISTINCT id, name, ts FROM `p`.`d`.`events` QUALIFY ROW_NUMBER() OVER (PARTITION BY id ORDER BY ts) = 1) WHERE id = 5", eventDays},
		{"through a CROSS JOIN, into the input that has the key", "WITH x AS (SELECT * FROM `p`.`d`.`events`) SELECT name FROM (SELECT x.*, ROW_NUMBER() OVER (PARTITION BY x.id ORDER BY x.ts) AS rn FROM x CROSS JOIN (SELECT 1 AS one) AS o WHERE o.one = 1) WHERE id = 5", eventDays},
		{"through an inner JOIN", "WITH x AS (SELECT * FROM `p`.`d`.`events`) SELECT name FROM (SELECT x.id, x.name FROM x JOIN (SELECT 1 AS one) AS o ON o.one = 1) WHERE id = 5", eventDays},
		{"a filter in the reading scope's own WHERE, through a window by another column", "SELECT n FROM (SELECT id, SUM(1) OVER (PARTITION BY name) AS n FROM (SELECT * FROM `p`.`d`.`events` WHERE id = 5))", eventDays},
		// The filter stays above these.
		{"a scalar subquery reads every row", "WITH x AS (SELECT * FROM `p`.`d`.`events`) SELECT name FROM x WHERE id = 5 AND ts > (SELECT MIN(ts) FROM x)", all},
		{"a window over every key", "SELECT name FROM `p`.`d`.`ranked` WHERE id = 5", all},
		{"a window by another column", "SELECT name FROM (SELECT *, SUM(1) OVER (PARTITION BY name) AS n FROM `p`.`d`.`events`) WHERE id = 5", all},
		{"a LIMIT", "SELECT name FROM (SELECT * FROM `p`.`d`.`events` LIMIT 10) WHERE id = 5", all},
		{"a GROUP BY another column", "SELECT n FROM (SELECT name AS id, COUNT(*) AS n FROM `p`.`d`.`events` GROUP BY name) WHERE id = 5", all},
		{"a renamed key", "SELECT name FROM (SELECT id AS k, name FROM `p`.`d`.`events`) WHERE k = 5", all},
		{"an expression named as the key", "SELECT name FROM (SELECT id + 1 AS id, name FROM `p`.`d`.`events`) WHERE id = 5", all},
		{"a reader without the filter", "WITH x AS (SELECT * FROM `p`.`d`.`events`) SELECT name FROM x WHERE id = 5 UNION ALL SELECT name FROM x", all},
		{"a join's own WHERE (not read: it may name either input)", "SELECT x.name FROM (SELECT * FROM `p`.`d`.`events`) AS x JOIN (SELECT 5 AS id) AS y ON x.id = y.id WHERE x.id = 5", all},
		{"a LEFT JOIN", "WITH x AS (SELECT * FROM `p`.`d`.`events`) SELECT name FROM (SELECT x.*, o.one FROM x LEFT JOIN (SELECT 1 AS one) AS o ON TRUE) WHERE id = 5", all},
		{"a bare * of a join", "WITH x AS (SELECT * FROM `p`.`d`.`events`) SELECT name FROM (SELECT * FROM x CROSS JOIN (SELECT 1 AS one) AS o) WHERE id = 5", all},
		{"the other input's key", "WITH x AS (SELECT * FROM `p`.`d`.`events`) SELECT name FROM (SELECT x.name, o.id FROM x CROSS JOIN (SELECT 5 AS id) AS o) WHERE id = 5", all},
		{"a join whose window is by the other input's key", "WITH x AS (SELECT * FROM `p`.`d`.`events`) SELECT name FROM (SELECT x.*, COUNT(*) OVER (PARTITION BY o.id) AS n FROM x CROSS JOIN (SELECT 5 AS id) AS o) WHERE id = 5", all},
		{"a filter on the partitioning column over a window by the key", "SELECT name FROM `p`.`d`.`latest` WHERE ts >= TIMESTAMP '2026-01-10'", all},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := estimate(t, m, tt.sql)
			if got := s.Table("p.d.events").BlocksKept; got != tt.blocks {
				t.Errorf("kept %d blocks, want %d (%d a day, %d in all)", got, tt.blocks, perDay, all)
			}
		})
	}
}

// A query of a flow's view filtered by its first key reads, of the state,
// the blocks that hold that key: the views keep the key and partition
// every window by it down to the state's scan (events.sql.tmpl says why;
// the bitemporal view partitions by the keys beside __key, their JSON
// string, for it). A flow with APPLY AS TRUNCATE also reads the blocks of
// NULL keys, where the state keeps its truncates (the newest truncate
// decides every key).
func TestKeyLookupsReadTheKeysBlocks(t *testing.T) {
	for _, b := range renderFlows(t) {
		t.Run(b.Name, func(t *testing.T) {
			m := newFlowModel(t, b)
			sql, err := viewSQL(b, renderLoc, renderRun.NewWatermark)
			if err != nil {
				t.Fatal(err)
			}
			view := Name(renderLoc.ViewTable(b.Flow))
			m.Views[view] = sql
			key := catalog.QuoteIdent(b.Keys[0].Name)
			whole := one(t, m.Model, fmt.Sprintf("SELECT * FROM `%s`", view), nil).Table(m.state.Name)
			lookup := one(t, m.Model, fmt.Sprintf("SELECT * FROM `%s` WHERE %s = 1234", view, key), nil).Table(m.state.Name)
			// (An SCD 1 flow's history, render.HistoryKept, is not the
			// view's: its partitions are left out.)
			levels := levelsOnly(m.state)
			want := stateBlocksOf(levels, 1234)
			if b.Truncate != "" {
				// and the NULL-key blocks, where the state keeps truncates
				want += nullKeyBlocksOf(levels)
			}
			if lookup.BlocksKept != want {
				t.Errorf("a lookup of one key kept %d of the state's %d blocks, want %d", lookup.BlocksKept, lookup.BlocksTotal, want)
			}
			if whole.BlocksKept != len(levels.Blocks) {
				t.Errorf("the whole view kept %d of %d blocks, want its levels' %d", whole.BlocksKept, whole.BlocksTotal, len(levels.Blocks))
			}
			t.Logf("state read: whole view %d bytes, one key %d bytes", whole.ScannedBytes, lookup.ScannedBytes)
		})
	}
}

// levelsOnly is tb without the blocks of generations before
// render.ArchiveEnd (an SCD 1 flow's history, an SCD 2 flow's archive).
func levelsOnly(tb *Table) *Table {
	out := *tb
	out.Blocks = nil
	for _, b := range tb.Blocks {
		if !b.NullPartition && b.Day < DayOf(render.ArchiveEnd).Day {
			continue
		}
		out.Blocks = append(out.Blocks, b)
	}
	return &out
}

// nullKeyBlocksOf counts the blocks of tb that hold NULL keys.
func nullKeyBlocksOf(tb *Table) int {
	n := 0
	for _, b := range tb.Blocks {
		if b.Min.IsNull() {
			n++
		}
	}
	return n
}

// stateBlocksOf counts the blocks of tb whose clustering range holds k.
func stateBlocksOf(tb *Table, k int64) int {
	n := 0
	for _, b := range tb.Blocks {
		if !b.Min.IsNull() && b.Min.i <= k && b.Max.i >= k {
			n++
		}
	}
	return n
}
