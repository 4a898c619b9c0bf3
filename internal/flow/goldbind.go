package flow

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/bqcdc/bqcdc/internal/schema"
)

// BoundGold is a materialized view checked against the columns of its
// source, with every expression re-rendered as safe BigQuery SQL (the rules
// of conditions: columns resolved and quoted, literals re-escaped).
type BoundGold struct {
	*Gold
	// Source is the flow whose target the view reads, or for FROM
	// STREAM(topic) a flow reading that topic (whose changelog is the stream).
	Source *Bound
	// Input are the columns of one source row: the target's columns, or the
	// changelog's for a stream.
	Input  schema.Columns
	Where  string // "" when absent
	Groups []string
	// GroupColumns are, per group, the column it is ("" for an expression).
	GroupColumns []string
	Window       *GoldWindow // nil without a window
	Items        []GoldOutput
	Having       string // over the output columns; "" when absent
	// Watermark marks the windows that end before the newest time seen less
	// its delay as final (append mode): nil without one.
	Watermark *GoldWatermark
}

// GoldWatermark is a view's WATERMARK over its window's time column.
type GoldWatermark struct {
	Delay time.Duration
}

// IsStream reports whether the view aggregates the change events of a
// topic rather than a target's current rows.
func (g *BoundGold) IsStream() bool { return g.Stream.Name != "" }

// GoldWindow is the time window of GROUP BY window(time, size[, slide]):
// windows [start, start + Size) starting at every multiple of Slide since
// the Unix epoch (Slide = Size: tumbling), as Spark defines them; or of
// session_window(time, gap) (Session): per group, a session starts at an
// event more than the gap after the one before it and ends at its last
// event plus the gap (Size holds the gap).
type GoldWindow struct {
	Time    schema.Column // the event-time column
	Size    time.Duration
	Slide   time.Duration
	Session bool
	Name    string // the window column's name in the view (its alias; "window" when none)
}

// GoldOutput is one column of the view.
type GoldOutput struct {
	Name string
	// Group is the index in Groups of a GROUP BY expression shown as is;
	// -1 for the window and for aggregates.
	Group  int
	Window bool
	// Aggregate is the aggregate's SQL over a source row (e.g. SUM(`qty`));
	// Func its function, upper case; Arg the SQL of its argument ("" for
	// COUNT(*)), Distinct for COUNT(DISTINCT ...); ArgColumn the column when
	// the argument is one.
	Aggregate, Func, Arg string
	Distinct             bool
	ArgColumn            string
	// Float: the argument is a FLOAT64 column, or an expression (whose
	// type bqcdc does not know: a sum of it is kept by value, exact for
	// every type).
	Float bool
}

// Aggregates a materialized view may compute.
var goldAggregates = wordSet(`COUNT SUM AVG MIN MAX COUNTIF ANY_VALUE LOGICAL_AND LOGICAL_OR APPROX_COUNT_DISTINCT`)

// BigQuery aggregates (and analytic helpers) that are refused.
var otherAggregates = wordSet(`ARRAY_AGG STRING_AGG ARRAY_CONCAT_AGG BIT_AND BIT_OR BIT_XOR STDDEV STDDEV_POP
	STDDEV_SAMP VAR_POP VAR_SAMP VARIANCE CORR COVAR_POP COVAR_SAMP APPROX_QUANTILES APPROX_TOP_COUNT APPROX_TOP_SUM
	GROUPING MAX_BY MIN_BY HLL_COUNT AVG_IF SUM_IF COUNT_IF COLLECT_LIST COLLECT_SET PERCENTILE_CONT PERCENTILE_DISC`)

// Functions whose result is not a function of the row: a view over them
// would not be the same SELECT evaluated at another moment.
var nondeterministic = wordSet(`CURRENT_TIMESTAMP CURRENT_DATE CURRENT_DATETIME CURRENT_TIME NOW RAND GENERATE_UUID
	SESSION_USER UUID RANDOM`)

// BindGolds binds each materialized view to the bound flows (BindGold):
// the views that bind, and an error joining those that do not
// (file:line:column): one refused view never stops the others.
func BindGolds(golds []*Gold, flows []*Bound, defaultDataset string) ([]*BoundGold, error) {
	var out []*BoundGold
	var refused []error
	for _, g := range golds {
		bg, err := BindGold(g, flows, defaultDataset)
		if err != nil {
			refused = append(refused, err)
			continue
		}
		out = append(out, bg)
	}
	return out, errors.Join(refused...)
}

// BindGold checks g against the flows it may read: flows are the bound
// flows of the deployment; defaultDataset resolves unqualified names.
func BindGold(g *Gold, flows []*Bound, defaultDataset string) (*BoundGold, error) {
	bg := &BoundGold{Gold: g}
	fail := func(err *Error) (*BoundGold, error) {
		if err.Flow == "" {
			err.Flow, err.View = g.Name.Table, true
		}
		return nil, ErrorList{err}
	}
	if err := bg.bindSource(flows, defaultDataset); err != nil {
		return fail(err)
	}
	refs := map[string]bool{}
	src := sourceRef{f: bg.Source.Flow}
	if err := bg.bindWhere(src, refs); err != nil {
		return fail(err)
	}
	groupOf, itemGroup, err := bg.bindGroups(src, refs)
	if err != nil {
		return fail(err)
	}
	if err := bg.bindItems(groupOf, itemGroup, src, refs); err != nil {
		return fail(err)
	}
	if err := bg.bindHaving(); err != nil {
		return fail(err)
	}
	if g.Watermark != nil {
		if bg.Watermark, err = bg.bindWatermark(g.Watermark); err != nil {
			return fail(err)
		}
	}
	return bg, nil
}

// bindWhere binds WHERE: an expression of one source row, BOOL.
func (bg *BoundGold) bindWhere(src sourceRef, refs map[string]bool) *Error {
	g := bg.Gold
	if g.Where == nil {
		return nil
	}
	if err := checkRowExpr(g.Where, "WHERE"); err != nil {
		return err
	}
	w, err := renderExpr(g.Where, "WHERE", bg.Input, src, refs)
	if err == nil {
		err = checkBool(g.Where, "WHERE", bg.Input)
	}
	bg.Where = w
	return err
}

// bindGroups binds GROUP BY: expressions of one row, a window, an alias
// or an ordinal. It returns each group's index by its rendered SQL, and
// the group of each SELECT item GROUP BY names (by ordinal or alias).
func (bg *BoundGold) bindGroups(src sourceRef, refs map[string]bool) (groupOf map[string]int, itemGroup map[int]int, _ *Error) {
	g := bg.Gold
	groupOf, itemGroup = map[string]int{}, map[int]int{}
	// groupWindow takes expr (at pos in GROUP BY) as the view's window if
	// it is one.
	groupWindow := func(expr *Expr, pos Pos) (bool, *Error) {
		w, ok, err := bg.window(expr)
		if err != nil || !ok {
			return false, err
		}
		if bg.Window != nil {
			return false, errorf(pos, "GROUP BY holds a second window: group by one window(...) at most")
		}
		bg.Window = w
		return true, nil
	}
	for _, e := range g.GroupBy {
		refItem := -1
		if ok, err := groupWindow(e, e.Pos); err != nil || ok {
			if err != nil {
				return nil, nil, err
			}
			continue
		}
		if i, ok := g.itemRef(e, bg.Input); ok {
			if i < 0 {
				return nil, nil, errorf(e.Pos, "GROUP BY %s: there is no such SELECT item", e.toks[0].Text)
			}
			if ok, err := groupWindow(g.Items[i].Expr, e.Pos); err != nil || ok {
				if err != nil {
					return nil, nil, err
				}
				continue
			}
			e = g.Items[i].Expr
			refItem = i
		}
		if err := checkRowExpr(e, "GROUP BY"); err != nil {
			return nil, nil, err
		}
		sql, err := renderExpr(e, "GROUP BY", bg.Input, src, refs)
		if err != nil {
			return nil, nil, err
		}
		if err := groupable(e, bg.Input); err != nil {
			return nil, nil, err
		}
		if _, dup := groupOf[sql]; !dup {
			groupOf[sql] = len(bg.Groups)
			bg.Groups = append(bg.Groups, sql)
			col := ""
			if len(e.toks) == 1 {
				if c, ok := bg.Input.Lookup(e.toks[0].Text); ok {
					col = c.Name
				}
			}
			bg.GroupColumns = append(bg.GroupColumns, col)
		}
		if refItem >= 0 {
			itemGroup[refItem] = groupOf[sql]
		}
	}
	return groupOf, itemGroup, nil
}

// bindItems binds the SELECT list: each item a group or one aggregate,
// each name once, the window shown.
func (bg *BoundGold) bindItems(groupOf map[string]int, itemGroup map[int]int, src sourceRef, refs map[string]bool) *Error {
	g := bg.Gold
	names := map[string]Pos{}
	for i, it := range g.Items {
		out, err := bg.item(i, it, groupOf, itemGroup, src, refs)
		if err != nil {
			return err
		}
		key := strings.ToLower(out.Name)
		if prev, dup := names[key]; dup {
			return errorf(it.Expr.Pos, "a second column named %s (the first at %s): give each SELECT item its own alias", out.Name, prev)
		}
		names[key] = it.Expr.Pos
		bg.Items = append(bg.Items, out)
	}
	if bg.Window != nil && !bg.showsWindow() {
		return errorf(g.Pos, "GROUP BY has a window that no SELECT item shows: add window(...) AS %s to the SELECT list", bg.Window.Name)
	}
	return nil
}

// bindHaving binds HAVING over the view's columns (typed as far as
// outputType knows them), BOOL.
func (bg *BoundGold) bindHaving() *Error {
	g := bg.Gold
	if g.Having == nil {
		return nil
	}
	cols := make(schema.Columns, len(bg.Items))
	for i, it := range bg.Items {
		cols[i] = schema.Column{Name: it.Name, Type: bg.outputType(it)}
	}
	for _, t := range g.Having.toks {
		if t.Kind == tokIdent && (goldAggregates[strings.ToUpper(t.Text)] || otherAggregates[strings.ToUpper(t.Text)]) {
			return errorf(t.Pos, "HAVING filters the view's columns: name the aggregate in the SELECT list (%s(...) AS name) and use its name here", strings.ToUpper(t.Text))
		}
	}
	h, err := renderExpr(g.Having, "HAVING", cols, sourceRef{f: &Flow{Name: g.Name.Table, Source: Ident{Name: "the view's columns"}}}, map[string]bool{})
	if err == nil {
		err = checkBool(g.Having, "HAVING", cols)
	}
	bg.Having = h
	return err
}

// maxWatermarkDelay: Databricks allows a delay shorter than a month.
const maxWatermarkDelay = 28 * 24 * time.Hour

// bindWatermark checks WATERMARK column DELAY OF INTERVAL delay: the column
// is the time of the view's tumbling or sliding window, and compaction
// refreshes the view (its final windows are taken from the refreshed
// state).
func (g *BoundGold) bindWatermark(w *GoldWatermarkClause) (*GoldWatermark, *Error) {
	if g.Window == nil || g.Window.Session {
		return nil, errorf(w.Pos, "WATERMARK marks windows final: the view needs a window(time, size[, slide]) in GROUP BY")
	}
	if !strings.EqualFold(w.Column.Name, g.Window.Time.Name) {
		return nil, errorf(w.Column.Pos, "WATERMARK %s: it must be the window's time column, %s (a window is final once the watermark passes its end)", w.Column.Name, g.Window.Time.Name)
	}
	if err := g.Refreshable(); err != nil {
		return nil, errorf(w.Pos, "WATERMARK needs a view compaction refreshes (its final windows come from the refreshed state): %v", err)
	}
	text := w.Delay[0]
	if len(w.Delay) == 2 {
		text = token{Kind: tokString, Text: w.Delay[0].Text + " " + w.Delay[1].Text, Pos: w.Delay[0].Pos}
	}
	d, err := windowDuration([]token{text}, "watermark delay")
	if err != nil {
		return nil, err
	}
	if d >= maxWatermarkDelay {
		return nil, errorf(text.Pos, "the watermark's delay %s is not shorter than four weeks (Databricks allows less than a month)", d)
	}
	return &GoldWatermark{Delay: d}, nil
}

// bindSource finds what the view reads.
func (bg *BoundGold) bindSource(flows []*Bound, defaultDataset string) *Error {
	g := bg.Gold
	if g.Stream.Name != "" {
		for _, b := range flows {
			if src, ok := b.ChangelogSource(); ok && src == g.Stream.Name {
				bg.Source, bg.Input = b, b.Changelog
				return nil
			}
		}
		return errorf(g.Stream.Pos, "STREAM(%s): no flow reads that topic, so bqcdc keeps no changelog of it: declare a flow of the topic first", g.Stream.Name)
	}
	same := func(a, b string) bool {
		if a == "" {
			a = defaultDataset
		}
		if b == "" {
			b = defaultDataset
		}
		return strings.EqualFold(a, b)
	}
	var names []string
	for _, b := range flows {
		if strings.EqualFold(b.Target.Table, g.From.Table) && same(b.Target.Dataset, g.From.Dataset) {
			if b.SCDType != 1 {
				return errorf(g.From.Pos, "%s is an SCD type 2 history (flow %s): a materialized view aggregates a current state (an SCD type 1 target) or STREAM(topic)", g.From, b.Name)
			}
			bg.Source, bg.Input = b, b.Output
			return nil
		}
		if b.SCDType == 1 {
			names = append(names, b.Target.String())
		}
	}
	msg := fmt.Sprintf("%s is not the target of a flow: a materialized view reads an SCD type 1 target (%s) or STREAM(topic)", g.From, strings.Join(names, ", "))
	if s := suggest(g.From.Table, names); s != "" {
		msg += " (did you mean " + s + "?)"
	}
	return errorf(g.From.Pos, "%s", msg)
}

// itemRef resolves a GROUP BY of a SELECT alias or ordinal: the item's
// index, -1 for an ordinal or name that matches none; ok false when e is
// neither (an expression of the row, or a column that shadows an alias).
func (g *Gold) itemRef(e *Expr, input schema.Columns) (int, bool) {
	if len(e.toks) != 1 {
		return 0, false
	}
	t := e.toks[0]
	switch t.Kind {
	case tokNumber:
		n, err := strconv.Atoi(t.Text)
		if err != nil || n < 1 || n > len(g.Items) {
			return -1, true
		}
		return n - 1, true
	case tokIdent, tokQuoted:
		if _, ok := input.Lookup(t.Text); ok {
			return 0, false
		}
		for i, it := range g.Items {
			if strings.EqualFold(it.Alias.Name, t.Text) {
				return i, true
			}
		}
	}
	return 0, false
}

// item binds one SELECT item.
func (bg *BoundGold) item(i int, it GoldItem, groupOf map[string]int, itemGroup map[int]int, src sourceRef, refs map[string]bool) (GoldOutput, *Error) {
	e := it.Expr
	if w, ok, err := bg.window(e); err != nil {
		return GoldOutput{}, err
	} else if ok {
		if bg.Window == nil || w.Time.Name != bg.Window.Time.Name || w.Size != bg.Window.Size || w.Slide != bg.Window.Slide || w.Session != bg.Window.Session {
			return GoldOutput{}, errorf(e.Pos, "SELECT shows a window the GROUP BY does not group by: group by the same window(...)")
		}
		name := w.Name
		if it.Alias.Name != "" {
			name = it.Alias.Name
		}
		bg.Window.Name = name
		return GoldOutput{Name: name, Group: -1, Window: true}, nil
	}
	if fn, args, ok := aggregateCall(e); ok {
		if it.Alias.Name == "" {
			return GoldOutput{}, errorf(e.Pos, "name the aggregate: %s(...) AS name (the view's columns need names)", fn)
		}
		out := GoldOutput{Name: it.Alias.Name, Group: -1, Func: fn}
		if err := bg.aggregate(e, args, &out, src, refs); err != nil {
			return GoldOutput{}, err
		}
		return out, nil
	}
	if err := checkRowExpr(e, "SELECT"); err != nil {
		if strings.Contains(err.Msg, "aggregate") {
			err.Msg = "a SELECT item is a GROUP BY expression or one aggregate call (" + err.Msg + "); compute ratios and other combinations in a query over the view"
		}
		return GoldOutput{}, err
	}
	sql, err := renderExpr(e, "SELECT", bg.Input, src, refs)
	if err != nil {
		return GoldOutput{}, err
	}
	gi, ok := groupOf[sql]
	if j, byRef := itemGroup[i]; byRef {
		gi, ok = j, true
	}
	if !ok {
		return GoldOutput{}, errorf(e.Pos, "%s is neither grouped nor aggregated: add it to GROUP BY or aggregate it (e.g. ANY_VALUE(...))", sql)
	}
	name := it.Alias.Name
	if name == "" {
		if len(e.toks) == 1 && (e.toks[0].Kind == tokIdent || e.toks[0].Kind == tokQuoted) {
			c, _ := bg.Input.Lookup(e.toks[0].Text)
			name = c.Name
		} else {
			return GoldOutput{}, errorf(e.Pos, "name the expression: %s AS name (the view's columns need names)", sql)
		}
	}
	return GoldOutput{Name: name, Group: gi}, nil
}

func (bg *BoundGold) showsWindow() bool {
	for _, it := range bg.Items {
		if it.Window {
			return true
		}
	}
	return false
}

// aggregateCall reports whether e is exactly one call f(...) of an
// aggregate, and returns its argument tokens.
func aggregateCall(e *Expr) (string, []token, bool) {
	t := e.toks
	if len(t) < 3 || t[0].Kind != tokIdent || t[1].Kind != tokPunct || t[1].Text != "(" {
		return "", nil, false
	}
	fn := strings.ToUpper(t[0].Text)
	if !goldAggregates[fn] && !otherAggregates[fn] {
		return "", nil, false
	}
	if closes(t, 1) != len(t)-1 {
		return "", nil, false // f(x) + 1: more than the call
	}
	return fn, t[2 : len(t)-1], true
}

// aggregate renders an aggregate call over a source row into out.
func (bg *BoundGold) aggregate(e *Expr, args []token, out *GoldOutput, src sourceRef, refs map[string]bool) *Error {
	fn := out.Func
	if otherAggregates[fn] {
		return errorf(e.Pos, "%s is not supported in a materialized view: it supports %s", fn, strings.Join(sortedWords(goldAggregates), ", "))
	}
	if fn == "COUNT" && len(args) == 1 && args[0].Kind == tokPunct && args[0].Text == "*" {
		out.Aggregate = "COUNT(*)"
		return nil
	}
	if len(args) > 0 && args[0].is("DISTINCT") {
		if fn != "COUNT" {
			return errorf(args[0].Pos, "%s(DISTINCT ...) is not supported: only COUNT(DISTINCT ...)", fn)
		}
		out.Distinct, args = true, args[1:]
	}
	if len(args) == 0 {
		return errorf(e.Pos, "%s needs an argument", fn)
	}
	for _, t := range args {
		if t.Kind == tokPunct && t.Text == "," {
			return errorf(t.Pos, "%s takes one argument here", fn)
		}
		if t.is("ORDER") || t.is("LIMIT") || t.is("HAVING") || t.is("IGNORE") || t.is("RESPECT") {
			return errorf(t.Pos, "%s(... %s ...) is not supported", fn, strings.ToUpper(t.Text))
		}
	}
	arg := &Expr{Pos: args[0].Pos, toks: args}
	if err := checkRowExpr(arg, fn); err != nil {
		return err
	}
	sql, err := renderExpr(arg, fn, bg.Input, src, refs)
	if err != nil {
		return err
	}
	if c, ok := soleColumn(args, bg.Input); ok {
		out.ArgColumn = c.Name
	}
	out.Arg = sql
	if c, ok := bg.Input.Lookup(out.ArgColumn); !ok || c.Type == schema.Float64 {
		out.Float = true
	}
	if out.Distinct {
		out.Aggregate = "COUNT(DISTINCT " + sql + ")"
	} else {
		out.Aggregate = fn + "(" + sql + ")"
	}
	return nil
}

// soleColumn reports whether toks are one column of cols.
func soleColumn(toks []token, cols schema.Columns) (schema.Column, bool) {
	if len(toks) != 1 || (toks[0].Kind != tokIdent && toks[0].Kind != tokQuoted) {
		return schema.Column{}, false
	}
	return cols.Lookup(toks[0].Text)
}

// checkRowExpr refuses in an expression of one source row what would make
// it something else: an aggregate, a window, a non-deterministic function.
func checkRowExpr(e *Expr, clause string) *Error {
	for i, t := range e.toks {
		if t.Kind != tokIdent || i+1 >= len(e.toks) || e.toks[i+1].Kind != tokPunct || e.toks[i+1].Text != "(" {
			continue
		}
		u := strings.ToUpper(t.Text)
		switch {
		case overAfter(e.toks, i+1):
			return errorf(t.Pos, "%s(...) OVER (...): window functions are not supported in a materialized view (it is one aggregate per group); compute them in a query over the view", u)
		case goldAggregates[u] || otherAggregates[u]:
			return errorf(t.Pos, "%s may not hold an aggregate (%s): it is an expression of one source row", clause, u)
		case u == "WINDOW" || u == "SESSION_WINDOW" || u == "WINDOW_TIME":
			return errorf(t.Pos, "%s may not hold %s(...): a window is a GROUP BY item", clause, strings.ToLower(u))
		case nondeterministic[u]:
			return errorf(t.Pos, "%s may not call %s: its value is not a function of the row, so the view could not be kept equal to its SELECT", clause, u)
		}
	}
	return nil
}

// outputType is the type of a column of the view, as far as HAVING's type
// check needs it ("" when bqcdc does not know it).
func (bg *BoundGold) outputType(o GoldOutput) string {
	switch {
	case o.Window:
		return schema.Record
	case o.Func == "COUNT", o.Func == "COUNTIF", o.Func == "APPROX_COUNT_DISTINCT":
		return schema.Int64
	case o.Func == "LOGICAL_AND", o.Func == "LOGICAL_OR":
		return schema.Bool
	case o.Func == "AVG":
		return "a number"
	case o.Func == "SUM" && o.Float:
		return schema.Float64
	case o.Func == "":
		if c, ok := bg.Input.Lookup(o.Name); ok && o.Group >= 0 {
			return c.Type // a GROUP BY column shown under its own name
		}
		return ""
	}
	if c, ok := bg.Input.Lookup(o.ArgColumn); ok && o.ArgColumn != "" {
		return c.Type // SUM of an integer, MIN, MAX, ANY_VALUE of a column
	}
	return ""
}

// overAfter reports whether the call whose '(' is toks[open] is followed
// by OVER: a window function.
func overAfter(toks []token, open int) bool {
	j := closes(toks, open)
	return j >= 0 && j+1 < len(toks) && toks[j+1].is("OVER")
}

// groupable refuses a GROUP BY of a column BigQuery cannot group by.
func groupable(e *Expr, input schema.Columns) *Error {
	if len(e.toks) != 1 {
		return nil
	}
	c, ok := input.Lookup(e.toks[0].Text)
	if !ok {
		return nil
	}
	if c.Repeated || c.Type == schema.Record || !c.Equatable() {
		return errorf(e.Pos, "GROUP BY %s: BigQuery cannot group by %s: group by a field or a value extracted from it", c.Name, c.SQLType())
	}
	return nil
}

// window parses window(time, 'size'[, 'slide']) and session_window(...).
func (bg *BoundGold) window(e *Expr) (*GoldWindow, bool, *Error) {
	t := e.toks
	if len(t) < 3 || t[0].Kind != tokIdent || t[1].Kind != tokPunct || t[1].Text != "(" {
		return nil, false, nil
	}
	fn := strings.ToLower(t[0].Text)
	if fn != "window" && fn != "session_window" {
		return nil, false, nil
	}
	if last := t[len(t)-1]; last.Kind != tokPunct || last.Text != ")" {
		return nil, false, errorf(t[0].Pos, "window(...) is a column of its own: it cannot be part of an expression")
	}
	args := splitArgs(t[2 : len(t)-1])
	switch {
	case fn == "session_window" && len(args) != 2:
		return nil, false, errorf(t[0].Pos, "session_window takes (time column, 'gap'), as Spark's session_window function")
	case len(args) < 2 || len(args) > 3:
		return nil, false, errorf(t[0].Pos, "window takes (time column, 'size') or (time column, 'size', 'slide'), as Spark's window function")
	}
	if len(args[0]) != 1 || (args[0][0].Kind != tokIdent && args[0][0].Kind != tokQuoted) {
		return nil, false, errorf(t[2].Pos, "window's first argument is a TIMESTAMP, DATETIME or DATE column")
	}
	col, ok := bg.Input.Lookup(args[0][0].Text)
	if !ok {
		return nil, false, unknownColumn(args[0][0], "window", bg.Input, sourceRef{f: bg.Source.Flow})
	}
	if col.Repeated || (col.Type != schema.Timestamp && col.Type != schema.Datetime && col.Type != schema.Date) {
		return nil, false, errorf(args[0][0].Pos, "window(%s, ...): %s is %s, not a TIMESTAMP, DATETIME or DATE", col.Name, col.Name, col.Type)
	}
	w := &GoldWindow{Time: col, Name: "window", Session: fn == "session_window"}
	var err *Error
	what := "size"
	if w.Session {
		w.Name, what = "session_window", "gap" // Spark's name for the column
	}
	if w.Size, err = windowDuration(args[1], what); err != nil {
		return nil, false, err
	}
	w.Slide = w.Size
	if len(args) == 3 {
		if w.Slide, err = windowDuration(args[2], "slide"); err != nil {
			return nil, false, err
		}
		if w.Slide > w.Size {
			return nil, false, errorf(args[2][0].Pos, "the slide (%s) is longer than the window (%s): as in Spark, a window slides by at most its size", w.Slide, w.Size)
		}
	}
	return w, true, nil
}

// splitArgs splits a call's argument tokens at top-level commas.
func splitArgs(toks []token) [][]token {
	var out [][]token
	depth, start := 0, 0
	for i, t := range toks {
		if t.Kind != tokPunct {
			continue
		}
		switch t.Text {
		case "(":
			depth++
		case ")":
			depth--
		case ",":
			if depth == 0 {
				out = append(out, toks[start:i])
				start = i + 1
			}
		}
	}
	return append(out, toks[start:])
}

var durationUnits = map[string]time.Duration{
	"microsecond": time.Microsecond, "millisecond": time.Millisecond, "second": time.Second,
	"minute": time.Minute, "hour": time.Hour, "day": 24 * time.Hour, "week": 7 * 24 * time.Hour,
}

// windowDuration reads a window's size or slide: a string of number-unit
// pairs as Spark writes them ('5 minutes', '1 hour 30 minutes').
func windowDuration(toks []token, what string) (time.Duration, *Error) {
	if len(toks) != 1 || toks[0].Kind != tokString {
		return 0, errorf(toks[0].Pos, "the window's %s is a string such as '5 minutes'", what)
	}
	t := toks[0]
	f := strings.Fields(strings.ToLower(t.Text))
	if len(f) > 0 && f[0] == "interval" {
		f = f[1:]
	}
	if len(f) == 0 || len(f)%2 != 0 {
		return 0, errorf(t.Pos, "window %s %q: write number-unit pairs such as '5 minutes' or '1 hour 30 minutes'", what, t.Text)
	}
	var d time.Duration
	for i := 0; i < len(f); i += 2 {
		n, err := strconv.ParseInt(f[i], 10, 64)
		unit, ok := durationUnits[strings.TrimSuffix(f[i+1], "s")]
		if err != nil || n < 0 || !ok {
			return 0, errorf(t.Pos, "window %s %q: %q %q is not a count of microseconds, milliseconds, seconds, minutes, hours, days or weeks (months and years have no fixed length)", what, t.Text, f[i], f[i+1])
		}
		if n > int64(100*365*24*time.Hour/unit) {
			return 0, errorf(t.Pos, "window %s %q is longer than a century", what, t.Text)
		}
		d += time.Duration(n) * unit
	}
	if d <= 0 {
		return 0, errorf(t.Pos, "window %s %q must be positive", what, t.Text)
	}
	return d, nil
}

func sortedWords(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for _, w := range []string{"COUNT", "SUM", "AVG", "MIN", "MAX", "COUNTIF", "ANY_VALUE", "LOGICAL_AND", "LOGICAL_OR", "APPROX_COUNT_DISTINCT"} {
		if m[w] {
			out = append(out, w)
		}
	}
	return out
}

// Refreshable reports why compaction cannot keep the view's refreshed
// table (the aggregate as of the source's change feed position, folded from
// the feed's pre- and post-images); nil when it can. A group keeps
// partial sums for COUNT, COUNTIF, and SUM and AVG of integer and NUMERIC
// arguments (taken out exactly when a row leaves), and counts of each
// distinct value for the others (MIN, MAX, ANY_VALUE, LOGICAL_AND/OR,
// distinct counts, FLOAT64 sums, which would drift under subtraction), so
// a value leaves with its last row; session views keep them per time.
// Not kept: streams (no change feed), snapshot sources.
func (g *BoundGold) Refreshable() error {
	if g.IsStream() {
		return fmt.Errorf("%s reads a stream: its view costs the changelog read, and has no change feed to fold", g.Name)
	}
	if g.Source.IsSnapshot() {
		return fmt.Errorf("%s: its source %s is a snapshot flow, which has no change feed", g.Name, g.Source.Name)
	}
	if g.Source.NoChangeFeed {
		return fmt.Errorf("%s: its source %s has its change feed off (TBLPROPERTIES ('%s' = 'false'))", g.Name, g.Source.Name, ChangeDataFeedProperty)
	}
	for _, it := range g.Items {
		if !it.ByValue() || it.ArgColumn == "" {
			continue
		}
		// Values are grouped by: BigQuery groups no ARRAY, STRUCT, JSON or
		// GEOGRAPHY.
		if c, _ := g.Input.Lookup(it.ArgColumn); c.Repeated || c.Type == schema.Record || !c.Equatable() {
			return fmt.Errorf("%s: %s of %s (%s) cannot be kept by value", g.Name, it.Func, c.Name, c.SQLType())
		}
	}
	return nil
}

// ByValue reports whether the refreshed table keeps the aggregate as counts
// of each distinct value of its argument rather than as partial sums.
func (o GoldOutput) ByValue() bool {
	switch {
	case o.Aggregate == "":
		return false
	case o.Aggregate == "COUNT(*)" || o.Func == "COUNTIF" || o.Func == "COUNT" && !o.Distinct:
		return false
	case (o.Func == "SUM" || o.Func == "AVG") && !o.Float:
		return false
	}
	return true
}
