package render

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/schema"
)

// goldStateData is what the templates of a materialized view's state
// render (gold_refresh, gold_refreshed, gold_maintain, gold_changes).
type goldStateData struct {
	goldData
	Name          string // the view's, for errors
	Init          bool   // make the state (CREATE OR REPLACE TABLE) from the whole feed
	Touched       bool   // render the query of the touched groups' clustering values instead
	TouchedLimit  int    // at most this many of them (one more: too many to filter by)
	State         string // the quoted state table
	Changes       string
	ChangeTable   string
	To            string   // the feed position the refresh reaches, as a literal
	Run           string   // the refresh's run id, part of the versions it writes
	Filter        string   // the constant filter on the clustering column of the touched groups' rows ("" reads all)
	Cluster       string   // the state's clustering column
	ClusterExpr   string   // it, computed in the keyed CTE
	GroupExprs    []string // "<GROUP BY expression> AS __g<i>"
	Delta         []string // the delta CTE's SELECTs: partial sums, then each aggregate's values
	Merge         []string // the merged CTE's columns
	MergeBy       []string // and what it groups by
	Columns       []string // the merged columns: kind, keys, group, partial sums, values
	HeldColumns   []string // them, of the held rows (h.)
	LiveColumns   []string // them, of the live rows, and the hash when the state is clustered by it
	MarkerColumns []string // a marker row's columns but the position and version
	StateColumns  []string // the state's columns, in order
	Keys          []string // the group's key columns
	FeedGroups    []string // the change feed's group columns (the view's, quoted)
	FeedAggs      []string // and its aggregates
	DDL           bool     // the change feed as CREATE TABLE FUNCTION, else its body as a query
	Func          string   // the feed's table function
	Args          args
	Horizon       string   // maintenance keeps the versions the feed needs from this position on, a literal
	Parts         []string // a session view's group keys (its sessions' partition); its Window is then of a microsecond
	Watermark     bool     // the markers keep the newest time seen (WATERMARK)

	// The final windows (WATERMARK; gold_final.sql.tmpl).
	FinalView, FinalMake bool
	Final                string   // the quoted table of final windows
	Refreshed            string   // <name>_refreshed's query
	WindowCol            string   // the quoted window column of the view
	WindowTime           string   // its time column, for comments
	Delay                int64    // the watermark's delay, microseconds
	DelayText            string   // and as text
	FinalColumns         []string // the table's columns: the view's, the window as its bounds, the position
	FinalKeys            []string // a final row's group: the view's group columns and the window's start
	FinalCandidateKeys   []string // the same, of a candidate row (c.)
	FinalItems           []string // the final view's columns, in the view's order
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
	d := goldStateData{goldData: view, Name: g.Name.String(), State: loc.GoldState(g.Gold)}
	d.Summary = fmt.Sprintf("state of materialized view %s over %s", g.Name, g.From)
	for i := range g.Groups {
		d.Keys = append(d.Keys, fmt.Sprintf("__g%d", i))
	}
	if g.Window != nil {
		d.Keys = append(d.Keys, "__window_start", "__window_end")
	}
	for i, e := range g.Groups {
		d.GroupExprs = append(d.GroupExprs, fmt.Sprintf("%s AS __g%d", e, i))
	}
	if d.Session != nil {
		// A session view's state is the same view's with windows of one
		// microsecond: per group (its partition) and time, the partial
		// sums and value counts. Sessions are cut when it is read
		// (gold_refreshed), so a delete that splits one costs nothing
		// more.
		d.Parts = d.Keys[:len(g.Groups)]
		d.Window = &goldWindow{Time: d.Session.Time, Size: 1, Slide: 1}
	}
	group := catalog.ColGoldGroup
	if g.Window != nil {
		// Windows are mostly recent: the touched groups of a run sit in
		// few blocks.
		d.Cluster, d.ClusterExpr = "__window_start", "__window_start"
	} else {
		d.Cluster, d.ClusterExpr = catalog.ColGoldHash, "FARM_FINGERPRINT("+group+")"
	}

	partials, values, valueAgg := d.aggregates(g)
	d.columns(g, partials, values)
	d.delta(partials, values, valueAgg)
	return d, nil
}

// stateCol is a column of a materialized view's state: partial, its delta
// in an A row; value, in a V row.
type stateCol struct{ name, partial, value string }

// aggregates fills the view's SELECT items over the state and returns the
// state's columns they need: the partial sums (the group's rows first),
// the value columns, and the aggregate index of each value column.
func (d *goldStateData) aggregates(g *flow.BoundGold) (partials, values []stateCol, valueAgg []int) {
	partials = append(partials, stateCol{name: "__group_rows", partial: "SUM(__sign)"})
	d.Items = d.Items[:0]
	for ai, it := range g.Items {
		switch {
		case it.Window && d.Session != nil:
			d.Items = append(d.Items, fmt.Sprintf("STRUCT(TIMESTAMP_MICROS(MIN(__t)) AS `start`, TIMESTAMP_MICROS(MAX(__t) + %d) AS `end`) AS %s", d.Session.Gap, q(it.Name)))
			continue
		case it.Window:
			d.Items = append(d.Items, "STRUCT(__window_start AS `start`, __window_end AS `end`) AS "+q(it.Name))
			d.FeedGroups = append(d.FeedGroups, q(it.Name))
			continue
		case it.Aggregate == "":
			d.Items = append(d.Items, fmt.Sprintf("__g%d AS %s", it.Group, q(it.Name)))
			d.FeedGroups = append(d.FeedGroups, q(it.Name))
			continue
		}
		d.FeedAggs = append(d.FeedAggs, q(it.Name))
		n, sum, c, v := fmt.Sprintf("__n%d", ai), fmt.Sprintf("__s%d", ai), fmt.Sprintf("__c%d", ai), fmt.Sprintf("__v%d", ai)
		of := func(x string) string { return fmt.Sprintf("IF(__agg = %d, %s, NULL)", ai, x) }
		var out string
		switch {
		case it.Aggregate == "COUNT(*)":
			out = "SUM(__group_rows)"
		case it.Func == "COUNTIF":
			partials = append(partials, stateCol{name: c, partial: fmt.Sprintf("SUM(IF(%s, __sign, 0))", it.Arg)})
			out = "SUM(" + c + ")"
		case it.Func == "COUNT" && !it.Distinct:
			partials = append(partials, stateCol{name: n, partial: fmt.Sprintf("SUM(IF(%s IS NULL, 0, __sign))", it.Arg)})
			out = "SUM(" + n + ")"
		case !it.ByValue(): // SUM, AVG of integers and NUMERIC
			partials = append(partials, stateCol{name: n, partial: fmt.Sprintf("SUM(IF(%s IS NULL, 0, __sign))", it.Arg)},
				stateCol{name: sum, partial: fmt.Sprintf("SUM(__sign * %s)", it.Arg)})
			// SUM of no values is NULL; AVG divides as BigQuery's AVG
			// types its result (INT64 / INT64 is FLOAT64, NUMERIC stays).
			out = fmt.Sprintf("IF(SUM(%s) = 0, NULL, SUM(%s))", n, sum)
			if it.Func == "AVG" {
				out = fmt.Sprintf("IF(SUM(%s) = 0, NULL, SUM(%s) / SUM(%s))", n, sum, n)
			}
		default:
			values = append(values, stateCol{name: v, value: it.Arg})
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
				if d.Session != nil { // a value has a row per time
					out = fmt.Sprintf("COUNT(DISTINCT %s)", of(v))
				}
			case "SUM":
				out = "SUM(" + of(v+" * __vcount") + ")"
			case "AVG":
				out = fmt.Sprintf("SUM(%s) / SUM(%s)", of(v+" * __vcount"), of("__vcount"))
			}
		}
		d.Items = append(d.Items, out+" AS "+q(it.Name))
	}
	return partials, values, valueAgg
}

// columns fills the state's columns (kind, keys, the group, partial sums,
// value columns, value count) and how the live, marker and held rows list
// them.
func (d *goldStateData) columns(g *flow.BoundGold, partials, values []stateCol) {
	group := catalog.ColGoldGroup
	op := catalog.ColStateOp
	d.Columns = append([]string{op}, d.Keys...)
	d.Columns = append(d.Columns, group)
	for _, p := range partials {
		d.Columns = append(d.Columns, p.name)
	}
	d.Columns = append(d.Columns, "__agg")
	for _, v := range values {
		d.Columns = append(d.Columns, v.name)
	}
	d.Columns = append(d.Columns, "__vcount")

	// The group's JSON is computed where it is needed, not stored: a read
	// of the state is billed for the columns it references.
	for _, c := range d.Columns {
		d.HeldColumns = append(d.HeldColumns, "h."+c)
		if c == group {
			continue
		}
		d.LiveColumns = append(d.LiveColumns, "live."+c)
		d.MarkerColumns = append(d.MarkerColumns, "NULL")
		d.StateColumns = append(d.StateColumns, c)
	}
	d.MarkerColumns[0] = "'W'"
	if g.Window == nil {
		d.LiveColumns = append(d.LiveColumns, "FARM_FINGERPRINT(live."+group+") AS "+catalog.ColGoldHash)
		d.MarkerColumns = append(d.MarkerColumns, "NULL")
		d.StateColumns = append(d.StateColumns, catalog.ColGoldHash)
	}
	if g.Watermark != nil {
		// The newest time seen, on the markers (the watermark is it less
		// the delay).
		d.Watermark = true
		d.LiveColumns = append(d.LiveColumns, "CAST(NULL AS TIMESTAMP) AS "+catalog.ColGoldEventMax)
		d.MarkerColumns = append(d.MarkerColumns, "(SELECT __seen FROM seen)")
		d.StateColumns = append(d.StateColumns, catalog.ColGoldEventMax)
	}
	d.StateColumns = append(d.StateColumns, catalog.ColStateWatermark, catalog.ColGoldVersion)

}

// delta fills the statements of a refresh's delta (one SELECT of partial
// sums, one per value aggregate, of the keyed rows: fresh, those after
// their group's newest version) and of their merge.
func (d *goldStateData) delta(partials, values []stateCol, valueAgg []int) {
	group, op := catalog.ColGoldGroup, catalog.ColStateOp
	from := "fresh"
	ordinals := func(n int) string {
		var o []string
		for i := 2; i < 2+n; i++ {
			o = append(o, fmt.Sprint(i))
		}
		return strings.Join(o, ", ")
	}
	keyCols := append(append([]string{}, d.Keys...), group)
	sel := []string{"'A' AS " + op}
	sel = append(sel, keyCols...)
	for _, p := range partials {
		sel = append(sel, p.partial+" AS "+p.name)
	}
	sel = append(sel, "CAST(NULL AS INT64) AS __agg")
	for _, v := range values {
		sel = append(sel, "NULL AS "+v.name)
	}
	sel = append(sel, "CAST(NULL AS INT64) AS __vcount")
	d.Delta = append(d.Delta, fmt.Sprintf("SELECT %s\n    FROM %s\n    GROUP BY %s", strings.Join(sel, ", "), from, ordinals(len(keyCols))))
	for vi, v := range values {
		sel := []string{"'V' AS " + op}
		sel = append(sel, keyCols...)
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
			strings.Join(sel, ", "), from, v.value, ordinals(len(keyCols)), 2+len(keyCols)+len(partials)+1+vi))
	}
	// Merged: the same columns, grouped by kind, keys and value.
	d.Merge = append(d.Merge, op)
	d.Merge = append(d.Merge, keyCols...)
	for _, p := range partials {
		d.Merge = append(d.Merge, "SUM("+p.name+") AS "+p.name)
	}
	d.Merge = append(d.Merge, "__agg")
	for _, v := range values {
		d.Merge = append(d.Merge, v.name)
	}
	d.Merge = append(d.Merge, "SUM(__vcount) AS __vcount")
	d.MergeBy = append([]string{op}, keyCols...)
	d.MergeBy = append(d.MergeBy, "__agg")
	for _, v := range values {
		d.MergeBy = append(d.MergeBy, v.name)
	}
}

// GoldRange is what a refresh of a materialized view's state covers.
type GoldRange struct {
	// From is a position the state is known to hold (its label; the
	// state's own is read in the statement): it bounds the feed's read by
	// a constant, so BigQuery prunes the change table's older partitions.
	// To is where the source's change feed reached: the state reaches it,
	// or where the feed is materialized if that is sooner.
	From, To time.Time
	// Init renders the statement that makes the state from everything the
	// feed holds (apply runs it when the state is missing or was laid out
	// for another definition).
	Init bool
	// Run tells this refresh's versions from another's at the same
	// position: lower-case letters and digits.
	Run string
	// Touched is the constant filter on the state's clustering column
	// that selects (a superset of) the groups the range touches
	// (GoldTouchedFilter); "" reads every group's newest version.
	Touched string
}

var goldRun = regexp.MustCompile(`^[0-9a-z]{1,40}$`)

// GoldRefresh renders the statement that brings a materialized view's
// state to r.To: it appends a version of each group the feed's rows in
// the range touch.
func GoldRefresh(g *flow.BoundGold, loc catalog.Location, src Shape, r GoldRange) (string, error) {
	d, err := newGoldState(g, loc)
	if err != nil {
		return "", err
	}
	if !goldRun.MatchString(r.Run) {
		return "", fmt.Errorf("refresh of materialized view %s: run id %q is not 1 to 40 lower-case letters and digits", g.Name, r.Run)
	}
	if r.Init {
		// Everything the feed holds: the refresh stops where it is
		// materialized.
		r.From, r.To, r.Touched = Epoch, time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC), ""
	}
	d.Init, d.To, d.ChangeTable, d.Run, d.Filter = r.Init, Literal(r.To), loc.ChangesTable(g.Source.Flow), r.Run, r.Touched
	if d.Changes, err = ChangesQuery(g.Source, loc, src, r.From, r.To); err != nil {
		return "", err
	}
	return d.execute("gold_refresh.sql.tmpl", "the refresh of ")
}

func (d goldStateData) execute(tmpl, what string) (string, error) {
	buf := newSQLBuilder()
	if err := templates.ExecuteTemplate(buf, tmpl, d); err != nil {
		return "", fmt.Errorf("rendering %smaterialized view %s: %w", what, d.Name, err)
	}
	return buf.String(), nil
}

// GoldTouchedLimit bounds the touched groups' clustering values a
// refresh filters by: past it, the refresh reads every group.
const GoldTouchedLimit = 10_000

// goldFilterRanges bounds the ranges of the filter: each value while they
// are fewer, else runs of neighbouring values.
const goldFilterRanges = 256

// GoldTouched renders the query of the clustering values of the groups
// the feed's rows in (from, to] touch (at most GoldTouchedLimit + 1 rows,
// one column, ordered), for GoldTouchedFilter.
func GoldTouched(g *flow.BoundGold, loc catalog.Location, src Shape, from, to time.Time) (string, error) {
	d, err := newGoldState(g, loc)
	if err != nil {
		return "", err
	}
	d.Touched, d.TouchedLimit, d.To, d.ChangeTable = true, GoldTouchedLimit+1, Literal(to), loc.ChangesTable(g.Source.Flow)
	d.Summary = fmt.Sprintf("the groups a refresh of materialized view %s would touch", g.Name)
	if d.Changes, err = ChangesQuery(g.Source, loc, src, from, to); err != nil {
		return "", err
	}
	return d.execute("gold_refresh.sql.tmpl", "the touched groups of ")
}

// GoldTouchedFilter renders the filter on the state's clustering column
// that selects the groups of values (GoldTouched's rows, as the BigQuery
// client returns them): "" when they are too many to filter by. Values of
// another type are refused rather than formatted.
func GoldTouchedFilter(g *flow.BoundGold, values []any) (string, error) {
	if len(values) > GoldTouchedLimit {
		return "", nil
	}
	col := schema.Column{Name: catalog.ColGoldHash, Type: schema.Int64}
	if g.Window != nil {
		col = schema.Column{Name: "__window_start", Type: schema.Timestamp}
	}
	if len(values) == 0 {
		return "FALSE", nil
	}
	lits := make([]string, len(values))
	for i, v := range values {
		l, err := keyLiteral(col, v)
		if err != nil {
			return "", fmt.Errorf("touched groups of materialized view %s: %w", g.Name, err)
		}
		lits[i] = l
	}
	if len(lits) <= goldFilterRanges {
		return fmt.Sprintf("%s IN (%s)", col.Name, strings.Join(lits, ", ")), nil
	}
	// The values come ordered: consecutive runs of them, as ranges.
	var parts []string
	per := (len(lits) + goldFilterRanges - 1) / goldFilterRanges
	for i := 0; i < len(lits); i += per {
		j := min(i+per, len(lits)) - 1
		parts = append(parts, fmt.Sprintf("%s BETWEEN %s AND %s", col.Name, lits[i], lits[j]))
	}
	return "(" + strings.Join(parts, " OR ") + ")", nil
}

// GoldHasChanges reports whether a materialized view has a change feed
// (<name>_changes): those compaction refreshes, but session views (whose
// state holds times, not sessions).
func GoldHasChanges(g *flow.BoundGold) bool {
	return g.Refreshable() == nil && (g.Window == nil || !g.Window.Session)
}

// GoldChangesFunction renders the DDL of a materialized view's change
// feed, <name>_changes(from_position, to_position) (update mode): the
// groups whose row changed at each position of its state.
func GoldChangesFunction(g *flow.BoundGold, loc catalog.Location) (string, error) {
	return goldChanges(g, loc, true, functionParams)
}

// GoldChangesQuery is the body of <name>_changes as a query, the positions
// bound as literals (a zero time as NULL); see AtQuery.
func GoldChangesQuery(g *flow.BoundGold, loc catalog.Location, from, to time.Time) (string, error) {
	return goldChanges(g, loc, false, args{From: nullableLiteral(from), To: nullableLiteral(to)})
}

func goldChanges(g *flow.BoundGold, loc catalog.Location, ddl bool, a args) (string, error) {
	if !GoldHasChanges(g) {
		return "", fmt.Errorf("materialized view %s has no change feed: only refreshed views without session windows have one", g.Name)
	}
	d, err := newGoldState(g, loc)
	if err != nil {
		return "", err
	}
	d.Summary = fmt.Sprintf("change feed of materialized view %s over %s", g.Name, g.From)
	d.DDL, d.Args, d.Func = ddl, a, loc.GoldChanges(g.Gold)
	return d.execute("gold_changes.sql.tmpl", "the change feed of ")
}

// FinalStatement names one of the statements of a materialized view's final
// windows (WATERMARK, append mode).
type FinalStatement int

const (
	// FinalTable creates the empty table of them (catalog.GoldFinalName).
	FinalTable FinalStatement = iota + 1
	// FinalAppend is what compaction runs after each refresh: it appends
	// the windows that became final.
	FinalAppend
	// FinalView is <name>_final: each final window once.
	FinalView
)

// GoldFinal renders statement s of a materialized view's final windows.
func GoldFinal(g *flow.BoundGold, loc catalog.Location, s FinalStatement) (string, error) {
	d, err := goldFinalData(g, loc)
	if err != nil {
		return "", err
	}
	switch s {
	case FinalTable, FinalAppend:
		d.FinalMake = s == FinalTable
		d.Summary = fmt.Sprintf("final windows of materialized view %s", g.Name)
	case FinalView:
		d.FinalView = true
		d.Summary = fmt.Sprintf("materialized view %s, final windows (append mode)", g.Name)
	default:
		return "", fmt.Errorf("materialized view %s: no final-window statement %d", g.Name, s)
	}
	return d.execute("gold_final.sql.tmpl", "the final windows of ")
}

func goldFinalData(g *flow.BoundGold, loc catalog.Location) (goldStateData, error) {
	if g.Watermark == nil {
		return goldStateData{}, fmt.Errorf("materialized view %s has no WATERMARK: no final windows", g.Name)
	}
	d, err := newGoldState(g, loc)
	if err != nil {
		return goldStateData{}, err
	}
	if d.Refreshed, err = GoldRefreshedView(g, loc); err != nil {
		return goldStateData{}, err
	}
	d.Final, d.WindowCol, d.WindowTime = loc.GoldFinal(g.Gold), q(g.Window.Name), g.Window.Time.Name
	d.Delay, d.DelayText = g.Watermark.Delay.Microseconds(), g.Watermark.Delay.String()
	for _, it := range g.Items {
		switch {
		case it.Window:
			d.FinalItems = append(d.FinalItems, "STRUCT(__window_start AS `start`, __window_end AS `end`) AS "+q(it.Name))
		default:
			d.FinalItems = append(d.FinalItems, q(it.Name))
			d.FinalColumns = append(d.FinalColumns, q(it.Name))
			if it.Aggregate == "" {
				d.FinalKeys = append(d.FinalKeys, q(it.Name))
				d.FinalCandidateKeys = append(d.FinalCandidateKeys, "c."+q(it.Name))
			}
		}
	}
	d.FinalColumns = append(d.FinalColumns, "__window_start", "__window_end", "`"+catalog.ColCommitPosition+"`")
	d.FinalKeys = append(d.FinalKeys, "__window_start")
	d.FinalCandidateKeys = append(d.FinalCandidateKeys, "c.__window_start")
	return d, nil
}

// GoldMaintain renders the statement that drops the versions of a
// materialized view's state that no longer count (run once a day), but
// those the change feed needs from horizon on.
func GoldMaintain(g *flow.BoundGold, loc catalog.Location, horizon time.Time) (string, error) {
	d, err := newGoldState(g, loc)
	if err != nil {
		return "", err
	}
	d.Horizon = Literal(horizon)
	d.Summary = fmt.Sprintf("maintenance of the state of materialized view %s", g.Name)
	return d.execute("gold_maintain.sql.tmpl", "the maintenance of ")
}

// GoldStateColumns names the columns of a materialized view's state, in
// order (the position last), for the cost model and tests.
func GoldStateColumns(g *flow.BoundGold, loc catalog.Location) ([]string, error) {
	d, err := newGoldState(g, loc)
	if err != nil {
		return nil, err
	}
	return d.StateColumns, nil
}

// GoldStateSpec is the value of catalog.SpecLabel on a materialized view's
// state: a hash of the statement that makes it, so a state laid out for
// another definition is told apart. A refresh replaces the table, which
// drops its labels in BigQuery: compaction writes them again after it.
func GoldStateSpec(g *flow.BoundGold, loc catalog.Location, src Shape) (string, error) {
	ddl, err := GoldRefresh(g, loc, src, GoldRange{Init: true, Run: "0"})
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
	return d.execute("gold_refreshed.sql.tmpl", "")
}

// NewRun returns a run id for GoldRange.Run: 16 random lower-case hex
// digits.
func NewRun() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return hex.EncodeToString(b[:])
}
