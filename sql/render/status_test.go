package render

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/bqcdc/bqcdc/internal/flow"
)

// The status view of the test flows, against a golden copy.
func TestStatusGolden(t *testing.T) {
	var flows []*flow.Flow
	for _, b := range boundTestFlows(t) {
		flows = append(flows, b.Flow)
	}
	d, errs := flow.ParseDirAll("testdata")
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	var golds []*flow.BoundGold
	for _, g := range d.Golds {
		bg, err := flow.BindGold(g, boundTestFlows(t), loc.DefaultDataset)
		if err != nil {
			t.Fatal(err)
		}
		golds = append(golds, bg)
	}
	got, _, err := StatusQueryWith(flows, golds, loc)
	if err != nil {
		t.Fatal(err)
	}
	if again, _, _ := StatusQueryWith(flows, golds, loc); again != got {
		t.Fatal("rendering twice gave different SQL")
	}
	if !strings.Contains(got, "'materialized view'") {
		t.Error("no row of a materialized view")
	}
	if n := topLevelSelectWidths(got); len(n) < 2 || slices.Min(n) != slices.Max(n) {
		t.Errorf("the branches of the status query's UNION ALL select %v columns", n)
	}
	checkGolden(t, "_status.sql", got)
	if _, err := Status(nil, loc); err == nil {
		t.Error("a status view of no flow rendered")
	}
}

// Past StatusMaxChangelogs flows the status view names no changelog (so it
// stays within BigQuery's 1,000 tables per query): 2,000 flows over 2,000
// sources read the report and dead-letter tables only, in well under 1 MB
// of SQL.
func TestStatusBeyondTheTableLimit(t *testing.T) {
	var src strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&src, "CREATE FLOW f%04d AS AUTO CDC INTO t%04d FROM STREAM(`db.shop.t%04d`) KEYS (id) SEQUENCE BY s;\n", i, i, i)
	}
	flows, err := flow.Parse("many.sql", src.String())
	if err != nil {
		t.Fatal(err)
	}
	sql, err := Status(flows, loc)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(sql, "_changelog`"); n != 0 {
		t.Errorf("the status view of 2,000 flows names %d changelogs", n)
	}
	tables := map[string]bool{}
	for _, m := range regexp.MustCompile("`[^`]+`\\.`[^`]+`\\.`[^`]+`").FindAllString(sql, -1) {
		tables[m] = true
	}
	if len(tables) != 2 {
		t.Errorf("the status view of 2,000 flows reads %d tables, want 2 (runs, dead letters): %v", len(tables), tables)
	}
	if len(sql) > 400<<10 {
		t.Errorf("the status view of 2,000 flows is %d bytes of SQL", len(sql))
	}
	few, err := Status(flows[:10], loc)
	if err != nil || !strings.Contains(few, "_changelog`") {
		t.Errorf("10 flows: the status view reads no changelog (%v)", err)
	}
}

// The status view's query stays under BigQuery's 256 K characters for a
// view at every size: 600 flows over 300 sources would be 347 KB reading
// each changelog, so they read the runs; 10,000 flows would be 1.2 MB
// listing them, so they read the flows table, whose statements each stay
// well inside a query's 1,024 K characters and list every flow once.
func TestStatusViewFitsAtEverySize(t *testing.T) {
	for _, c := range []struct {
		sources         int
		changelogs, tbl bool
	}{{10, true, false}, {300, false, false}, {5000, false, true}} {
		var src strings.Builder
		for i := range c.sources {
			fmt.Fprintf(&src, "CREATE FLOW t%05[1]d_current AS AUTO CDC INTO t%05[1]d_current FROM STREAM(`db.shop.table_%05[1]d`) KEYS (id) SEQUENCE BY s;\n", i)
			fmt.Fprintf(&src, "CREATE FLOW t%05[1]d_history AS AUTO CDC INTO history.t%05[1]d FROM STREAM(`db.shop.table_%05[1]d`) KEYS (id) SEQUENCE BY s STORED AS SCD TYPE 2;\n", i)
		}
		flows, err := flow.Parse("many.sql", src.String())
		if err != nil {
			t.Fatal(err)
		}
		sql, table, err := StatusQuery(flows, loc)
		if err != nil {
			t.Fatal(err)
		}
		if len(sql) > StatusMaxView {
			t.Errorf("%d flows: the status view is %d characters", len(flows), len(sql))
		}
		if got := strings.Contains(sql, "_changelog`"); got != c.changelogs || table != c.tbl {
			t.Errorf("%d flows: reads changelogs %t, the flows table %t; want %t, %t", len(flows), got, table, c.changelogs, c.tbl)
		}
		if !table {
			continue
		}
		stmts := FlowsTable(flows, loc)
		listed := 0
		for _, s := range stmts {
			if len(s) > 1<<20 {
				t.Errorf("a statement of the flows table is %d characters", len(s))
			}
			listed += strings.Count(s, "\n  ('")
		}
		if listed != len(flows) {
			t.Errorf("the flows table's statements list %d flows of %d", listed, len(flows))
		}
		if last := stmts[len(stmts)-1]; !strings.HasPrefix(last, "DROP TABLE ") {
			t.Errorf("the statements end with %q, not dropping the scratch table", last)
		}
	}
}

// topLevelSelectWidths counts the items of each SELECT outside parentheses
// in sql (the branches of its main query: the CTEs are parenthesized), so
// that a column added to one branch of a UNION ALL and not the others is
// caught without running the query.
func topLevelSelectWidths(sql string) []int {
	sql = regexp.MustCompile("(?s)--[^\n]*|'(?:[^'\\\\]|\\\\.)*'|`[^`]*`").ReplaceAllString(sql, "x")
	var widths []int
	depth, items, in := 0, 0, false
	word := regexp.MustCompile(`^\b(SELECT|FROM)\b`)
	for i := 0; i < len(sql); i++ {
		switch c := sql[i]; {
		case c == '(':
			depth++
		case c == ')':
			depth--
		case depth > 0:
		case c == ',' && in:
			items++
		default:
			if m := word.FindString(sql[i:]); m == "SELECT" && (i == 0 || !isWordByte(sql[i-1])) {
				in, items = true, 1
			} else if m == "FROM" && in && !isWordByte(sql[i-1]) {
				widths = append(widths, items)
				in = false
			}
		}
	}
	return widths
}

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z'
}
