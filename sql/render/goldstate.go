package render

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/flow"
)

// goldStateData is what gold_refresh.sql.tmpl and gold_refreshed.sql.tmpl
// render.
type goldStateData struct {
	goldData
	Init        bool
	State       string
	Changes     string
	ChangeTable string
	To          string   // the feed position the refresh reaches, as a literal
	Delta       []string // the delta CTE's SELECTs: partial sums, then each aggregate's values
	Merge       []string // the merged CTE's columns
	MergeBy     []string // and what it groups by
	Columns     []string // the state's columns (but the position), in order
	Keys        []string // the group's key columns
}

// newGoldState lays out the state: per group (and window) a row of kind A
// with __group_rows and the partial sums of the aggregates kept that way
// (__n<i> non-NULL count, __s<i> sum, __c<i> COUNTIF count), and for each
// aggregate kept by value (flow.GoldOutput.ByValue) a row of kind V per
// distinct value: __agg its index, __v<i> the value, __vcount its rows.
func newGoldState(g *flow.BoundGold, loc catalog.Location) (goldStateData, error) {
	if err := g.Refreshable(); err != nil {
		return goldStateData{}, err
	}
	view, err := goldViewData(g, loc)
	if err != nil {
		return goldStateData{}, err
	}
	d := goldStateData{goldData: view, State: loc.GoldState(g.Gold)}
	d.Summary = fmt.Sprintf("state of materialized view %s over %s", g.Name, g.From)
	for i := range g.Groups {
		d.Keys = append(d.Keys, fmt.Sprintf("__g%d", i))
	}
	if g.Window != nil {
		d.Keys = append(d.Keys, "__window_start", "__window_end")
	}
	keyExprs := d.Grouped[:len(d.Keys)] // "<expr> AS __g0", ..., the window's bounds

	// The columns: kind, keys, partial sums, value columns, value count.
	type col struct{ name, partial, value string } // partial: its delta in an A row; value: in a V row
	var partials, values []col
	partials = append(partials, col{name: "__group_rows", partial: "SUM(__sign)"})
	var valueAgg []int // the aggregate index of each value column
	d.Items = d.Items[:0]
	for ai, it := range g.Items {
		switch {
		case it.Window:
			d.Items = append(d.Items, "STRUCT(__window_start AS `start`, __window_end AS `end`) AS "+q(it.Name))
			continue
		case it.Aggregate == "":
			d.Items = append(d.Items, fmt.Sprintf("__g%d AS %s", it.Group, q(it.Name)))
			continue
		}
		n, sum, c, v := fmt.Sprintf("__n%d", ai), fmt.Sprintf("__s%d", ai), fmt.Sprintf("__c%d", ai), fmt.Sprintf("__v%d", ai)
		of := func(x string) string { return fmt.Sprintf("IF(__agg = %d, %s, NULL)", ai, x) }
		var out string
		switch {
		case it.Aggregate == "COUNT(*)":
			out = "SUM(__group_rows)"
		case it.Func == "COUNTIF":
			partials = append(partials, col{name: c, partial: fmt.Sprintf("SUM(IF(%s, __sign, 0))", it.Arg)})
			out = "SUM(" + c + ")"
		case it.Func == "COUNT" && !it.Distinct:
			partials = append(partials, col{name: n, partial: fmt.Sprintf("SUM(IF(%s IS NULL, 0, __sign))", it.Arg)})
			out = "SUM(" + n + ")"
		case !it.ByValue(): // SUM, AVG of integers and NUMERIC
			partials = append(partials, col{name: n, partial: fmt.Sprintf("SUM(IF(%s IS NULL, 0, __sign))", it.Arg)},
				col{name: sum, partial: fmt.Sprintf("SUM(__sign * %s)", it.Arg)})
			// SUM of no values is NULL; AVG divides as BigQuery's AVG
			// types its result (INT64 / INT64 is FLOAT64, NUMERIC stays).
			out = fmt.Sprintf("IF(SUM(%s) = 0, NULL, SUM(%s))", n, sum)
			if it.Func == "AVG" {
				out = fmt.Sprintf("IF(SUM(%s) = 0, NULL, SUM(%s) / SUM(%s))", n, sum, n)
			}
		default:
			values = append(values, col{name: v, value: it.Arg})
			valueAgg = append(valueAgg, ai)
			switch it.Func {
			case "MIN", "ANY_VALUE": // any value is one: the least
				out = "MIN(" + of(v) + ")"
			case "MAX":
				out = "MAX(" + of(v) + ")"
			case "LOGICAL_AND", "LOGICAL_OR":
				out = it.Func + "(" + of(v) + ")"
			case "COUNT", "APPROX_COUNT_DISTINCT": // distinct values: exact
				out = fmt.Sprintf("COUNTIF(__agg = %d)", ai)
			case "SUM":
				out = "SUM(" + of(v+" * __vcount") + ")"
			case "AVG":
				out = fmt.Sprintf("SUM(%s) / SUM(%s)", of(v+" * __vcount"), of("__vcount"))
			}
		}
		d.Items = append(d.Items, out+" AS "+q(it.Name))
	}
	op := catalog.ColStateOp
	d.Columns = append([]string{op}, d.Keys...)
	for _, p := range partials {
		d.Columns = append(d.Columns, p.name)
	}
	d.Columns = append(d.Columns, "__agg")
	for _, v := range values {
		d.Columns = append(d.Columns, v.name)
	}
	d.Columns = append(d.Columns, "__vcount")

	// The delta: one SELECT of partial sums, one per value aggregate.
	from := "source_rows"
	if g.Window != nil {
		from = "windowed"
	}
	ordinals := func(n int) string {
		var o []string
		for i := 2; i < 2+n; i++ {
			o = append(o, fmt.Sprint(i))
		}
		return strings.Join(o, ", ")
	}
	sel := []string{"'A' AS " + op}
	sel = append(sel, keyExprs...)
	for _, p := range partials {
		sel = append(sel, p.partial+" AS "+p.name)
	}
	sel = append(sel, "CAST(NULL AS INT64) AS __agg")
	for _, v := range values {
		sel = append(sel, "NULL AS "+v.name)
	}
	sel = append(sel, "CAST(NULL AS INT64) AS __vcount")
	d.Delta = append(d.Delta, fmt.Sprintf("SELECT %s\n    FROM %s\n    GROUP BY %s", strings.Join(sel, ", "), from, ordinals(len(d.Keys))))
	for vi, v := range values {
		sel := []string{"'V' AS " + op}
		sel = append(sel, keyExprs...)
		for _, p := range partials {
			sel = append(sel, "NULL AS "+p.name)
		}
		sel = append(sel, fmt.Sprintf("%d AS __agg", valueAgg[vi]))
		for vj, w := range values {
			if vj == vi {
				sel = append(sel, w.value+" AS "+w.name)
			} else {
				sel = append(sel, "NULL AS "+w.name)
			}
		}
		sel = append(sel, "SUM(__sign) AS __vcount")
		d.Delta = append(d.Delta, fmt.Sprintf("SELECT %s\n    FROM %s\n    WHERE %s IS NOT NULL\n    GROUP BY %s, %d",
			strings.Join(sel, ", "), from, v.value, ordinals(len(d.Keys)), 2+len(d.Keys)+len(partials)+1+vi))
	}
	// Merged: the same columns, grouped by kind, keys and value.
	d.Merge = append(d.Merge, op)
	d.Merge = append(d.Merge, d.Keys...)
	for _, p := range partials {
		d.Merge = append(d.Merge, "SUM("+p.name+") AS "+p.name)
	}
	d.Merge = append(d.Merge, "__agg")
	for _, v := range values {
		d.Merge = append(d.Merge, v.name)
	}
	d.Merge = append(d.Merge, "SUM(__vcount) AS __vcount")
	d.MergeBy = append([]string{op}, d.Keys...)
	d.MergeBy = append(d.MergeBy, "__agg")
	for _, v := range values {
		d.MergeBy = append(d.MergeBy, v.name)
	}
	return d, nil
}

// GoldRefresh renders the statement that brings a materialized view's
// state to position to of its source's change feed. from is a position
// the state is known to hold (its label; the state's own is read in the
// statement): it bounds the feed's read by a constant, so BigQuery prunes
// the change table's older partitions. init renders the statement that
// makes the state from everything the feed holds (apply runs it when the
// state is missing or was laid out for another definition). The state reaches to, or where the feed is materialized if that
// is sooner.
func GoldRefresh(g *flow.BoundGold, loc catalog.Location, from, to time.Time, init bool) (string, error) {
	d, err := newGoldState(g, loc)
	if err != nil {
		return "", err
	}
	if init {
		// Everything the feed holds: the refresh stops where it is
		// materialized.
		from, to = Epoch, time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)
	}
	d.Init, d.To, d.ChangeTable = init, Literal(to), loc.ChangesTable(g.Source.Flow)
	if d.Changes, err = ChangesQuery(g.Source, loc, from, to); err != nil {
		return "", err
	}
	buf := newSQLBuilder()
	if err := templates.ExecuteTemplate(buf, "gold_refresh.sql.tmpl", d); err != nil {
		return "", fmt.Errorf("rendering the refresh of materialized view %s: %w", g.Name, err)
	}
	return buf.String(), nil
}

// GoldStateColumns names the columns of a materialized view's state, in
// order (the position last), for the cost model and tests.
func GoldStateColumns(g *flow.BoundGold, loc catalog.Location) ([]string, error) {
	d, err := newGoldState(g, loc)
	if err != nil {
		return nil, err
	}
	return append(d.Columns, catalog.ColStateWatermark), nil
}

// GoldStateSpec is the value of catalog.SpecLabel on a materialized view's
// state: a hash of the statement that makes it, so a state laid out for
// another definition is told apart. A refresh replaces the table, which
// drops its labels in BigQuery: compaction writes them again after it.
func GoldStateSpec(g *flow.BoundGold, loc catalog.Location) (string, error) {
	ddl, err := GoldRefresh(g, loc, Epoch, Epoch, true)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(ddl))
	return hex.EncodeToString(sum[:16]), nil
}

// GoldRefreshedView renders <name>_refreshed: the materialized view as
// its state holds it.
func GoldRefreshedView(g *flow.BoundGold, loc catalog.Location) (string, error) {
	d, err := newGoldState(g, loc)
	if err != nil {
		return "", err
	}
	d.Summary = fmt.Sprintf("materialized view %s over %s, as last refreshed", g.Name, g.From)
	buf := newSQLBuilder()
	if err := templates.ExecuteTemplate(buf, "gold_refreshed.sql.tmpl", d); err != nil {
		return "", fmt.Errorf("rendering materialized view %s: %w", g.Name, err)
	}
	return buf.String(), nil
}
