package render

import (
	"fmt"
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
	Delta       []string // the delta CTE's columns: keys, then partial sums
	Merge       []string // the merged CTE's columns
	Columns     []string // the state's key and partial columns, in order
}

// partial names the partial sums of the i-th aggregate.
func partials(it flow.GoldOutput, i int) (count, sum, countif string) {
	return fmt.Sprintf("__n%d", i), fmt.Sprintf("__s%d", i), fmt.Sprintf("__c%d", i)
}

// newGoldState lays out the state: the group keys (and window bounds),
// __group_rows (the rows of the group), and per aggregate what it is computed
// from.
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
	var keys []string
	for i := range g.Groups {
		keys = append(keys, fmt.Sprintf("__g%d", i))
	}
	if g.Window != nil {
		keys = append(keys, "__window_start", "__window_end")
	}
	d.Delta = append(d.Delta, d.Grouped[:len(keys)]...)
	d.Merge = append(d.Merge, keys...)
	d.Columns = append(d.Columns, keys...)
	add := func(name, delta string) {
		d.Delta = append(d.Delta, delta+" AS "+name)
		d.Merge = append(d.Merge, "SUM("+name+") AS "+name)
		d.Columns = append(d.Columns, name)
	}
	add("__group_rows", "SUM(__sign)")
	d.Items = d.Items[:0]
	aggs := 0
	for _, it := range g.Items {
		switch {
		case it.Window:
			d.Items = append(d.Items, "STRUCT(__window_start AS `start`, __window_end AS `end`) AS "+q(it.Name))
			continue
		case it.Aggregate == "":
			d.Items = append(d.Items, fmt.Sprintf("__g%d AS %s", it.Group, q(it.Name)))
			continue
		}
		n, s, c := partials(it, aggs)
		aggs++
		switch {
		case it.Aggregate == "COUNT(*)":
			d.Items = append(d.Items, "__group_rows AS "+q(it.Name))
		case it.Func == "COUNTIF":
			add(c, fmt.Sprintf("SUM(IF(%s, __sign, 0))", it.Arg))
			d.Items = append(d.Items, c+" AS "+q(it.Name))
		case it.Func == "COUNT":
			add(n, fmt.Sprintf("SUM(IF(%s IS NULL, 0, __sign))", it.Arg))
			d.Items = append(d.Items, n+" AS "+q(it.Name))
		case it.Func == "SUM" || it.Func == "AVG":
			add(n, fmt.Sprintf("SUM(IF(%s IS NULL, 0, __sign))", it.Arg))
			add(s, fmt.Sprintf("SUM(__sign * %s)", it.Arg))
			// SUM of no values is NULL; AVG divides as BigQuery's AVG
			// types its result (INT64 / INT64 is FLOAT64, NUMERIC stays).
			if it.Func == "SUM" {
				d.Items = append(d.Items, fmt.Sprintf("IF(%s = 0, NULL, %s) AS %s", n, s, q(it.Name)))
			} else {
				d.Items = append(d.Items, fmt.Sprintf("IF(%s = 0, NULL, %s / %s) AS %s", n, s, n, q(it.Name)))
			}
		}
	}
	return d, nil
}

// GoldRefresh renders the statement that brings a materialized view's
// state to position to of its source's change feed. from is a position
// the state is known to hold (its label; the state's own is read in the
// statement): it bounds the feed's read by a constant, so BigQuery prunes
// the change table's older partitions. init renders the statement that
// creates the state when it does not exist, from everything the feed
// holds. The state reaches to, or where the feed is materialized if that
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
