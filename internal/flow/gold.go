package flow

import (
	"strings"
)

// Gold is a CREATE [OR REFRESH] MATERIALIZED VIEW declaration: an aggregate
// over a flow's target (the current state, so it follows updates and
// deletes) or over a stream of change events, in the Databricks spelling:
//
//	CREATE MATERIALIZED VIEW orders_per_day COMMENT '...' AS
//	SELECT window(order_date, '1 day') AS day, COUNT(*) AS orders, SUM(quantity) AS units
//	FROM orders [WATERMARK order_date DELAY OF INTERVAL 1 DAY]
//	WHERE quantity > 0
//	GROUP BY window(order_date, '1 day')
//	HAVING orders > 1;
//
// Parsing keeps each piece as tokens; BindGold resolves them against the
// source's columns and re-renders them (see goldbind.go).
type Gold struct {
	Pos     Pos
	Name    Target // the view bqcdc creates
	Comment string

	// From is the flow target the aggregate reads; Stream, when set, is
	// the topic of FROM STREAM(topic) instead.
	From   Target
	Stream Ident

	// Watermark is FROM source WATERMARK column DELAY OF INTERVAL ...
	// (nil when absent): the view's final windows, append mode.
	Watermark *GoldWatermarkClause

	Items   []GoldItem
	Where   *Expr
	GroupBy []*Expr
	Having  *Expr
}

// GoldWatermarkClause is WATERMARK column DELAY OF INTERVAL delay, as
// written: delay's tokens are a string ('10 minutes') or a number and a
// unit (10 MINUTES).
type GoldWatermarkClause struct {
	Pos    Pos
	Column Ident
	Delay  []token
}

// GoldItem is one SELECT item: an expression and its alias (Alias.Name ""
// when none was written).
type GoldItem struct {
	Expr  *Expr
	Alias Ident
}

// ParseAll parses one file like Parse and also returns its materialized
// views (gold flows). Parse, which every caller that runs only change flows
// uses, accepts a valid materialized view and leaves it out.
func ParseAll(file, src string) ([]*Flow, []*Gold, error) {
	flows, golds, decls, err := parseFile(file, src)
	if derrs := applyDecls(flows, decls); len(derrs) > 0 {
		list, _ := err.(ErrorList)
		return flows, golds, append(list, derrs...)
	}
	return flows, golds, err
}

// parseFile parses one source: its flows, materialized views and
// streaming table declarations (which ParseFilesAll applies to the flows
// of every file).
func parseFile(file, src string) ([]*Flow, []*Gold, []tableDecl, error) {
	if len(src) > MaxFileBytes {
		return nil, nil, nil, ErrorList{errorf(Pos{File: file, Line: 1, Col: 1}, "flow file of %d bytes: at most %d are read (split it into files of its own)", len(src), MaxFileBytes)}
	}
	p := &parser{toks: lex(file, src)}
	flows, errs := p.statements()
	return flows, p.golds, p.decls, errs.Err()
}

// gold reads the rest of CREATE [OR REFRESH] MATERIALIZED VIEW, after VIEW;
// its errors name the view.
func (p *parser) gold(start Pos) (*Gold, *Error) {
	name, err := p.target()
	if err != nil {
		return nil, err
	}
	g, err := p.goldBody(&Gold{Pos: start, Name: name})
	if err != nil && err.Flow == "" {
		err.Flow, err.View = name.Table, true
	}
	return g, err
}

func (p *parser) goldBody(g *Gold) (*Gold, *Error) {
	if p.peek().is("COMMENT") {
		p.next()
		c := p.peek()
		if c.Kind != tokString {
			return nil, errorf(c.Pos, "COMMENT expects a string, found %s", c.describe())
		}
		p.next()
		g.Comment = c.Text
	}
	if err := p.keywords("AS", "SELECT"); err != nil {
		return nil, err
	}
	if t := p.peek(); t.is("DISTINCT") || t.is("ALL") {
		return nil, errorf(t.Pos, "SELECT %s is not supported: group with GROUP BY", strings.ToUpper(t.Text))
	}
	items, err := p.goldList("SELECT", "FROM")
	if err != nil {
		return nil, err
	}
	for _, toks := range items {
		it := GoldItem{Expr: &Expr{Pos: toks[0].Pos, toks: toks}}
		if n := len(toks); n >= 3 && toks[n-2].is("AS") && (toks[n-1].Kind == tokIdent || toks[n-1].Kind == tokQuoted) {
			it.Alias = Ident{Name: toks[n-1].Text, Pos: toks[n-1].Pos}
			it.Expr.toks = toks[:n-2]
		}
		g.Items = append(g.Items, it)
	}
	p.next() // FROM
	if err := p.goldSource(g); err != nil {
		return nil, err
	}
	if p.peek().is("WHERE") {
		w := p.next()
		toks, err := p.goldTokens("WHERE", w.Pos, func() bool { return p.peek().is("GROUP") && p.peekN(1).is("BY") })
		if err != nil {
			return nil, err
		}
		g.Where = &Expr{Pos: toks[0].Pos, toks: toks}
	}
	if t := p.peek(); !(t.is("GROUP") && p.peekN(1).is("BY")) {
		return nil, errorf(t.Pos, "expected GROUP BY, found %s: a materialized view is an aggregate (a view of every row is the flow's target itself)", t.describe())
	}
	p.next()
	p.next()
	groups, err := p.goldList("GROUP BY", "HAVING")
	if err != nil {
		return nil, err
	}
	for _, toks := range groups {
		g.GroupBy = append(g.GroupBy, &Expr{Pos: toks[0].Pos, toks: toks})
	}
	if p.peek().is("HAVING") {
		h := p.next()
		toks, err := p.goldTokens("HAVING", h.Pos, func() bool { return false })
		if err != nil {
			return nil, err
		}
		g.Having = &Expr{Pos: toks[0].Pos, toks: toks}
	}
	if t := p.peek(); t.Kind != tokPunct || t.Text != ";" {
		if t.Kind == tokEOF {
			return nil, errorf(t.Pos, "not terminated: add ';'")
		}
		return nil, errorf(t.Pos, "unexpected %s (ORDER BY, LIMIT, joins and set operations are not supported)", t.describe())
	}
	p.next()
	return g, nil
}

// goldSource reads FROM target or FROM STREAM(topic).
func (p *parser) goldSource(g *Gold) *Error {
	if p.peek().is("STREAM") {
		src, err := p.from()
		if err != nil {
			return err
		}
		g.Stream = src
	} else {
		from, err := p.target()
		if err != nil {
			return err
		}
		g.From = from
	}
	if t := p.peek(); t.is("WATERMARK") {
		p.next()
		col, err := p.name("the watermark's time column")
		if err != nil {
			return err
		}
		if err := p.keywords("DELAY", "OF", "INTERVAL"); err != nil {
			return err
		}
		w := &GoldWatermarkClause{Pos: t.Pos, Column: col}
		switch d := p.peek(); {
		case d.Kind == tokString:
			w.Delay = []token{p.next()}
		case d.Kind == tokNumber && p.peekN(1).Kind == tokIdent:
			w.Delay = []token{p.next(), p.next()}
		default:
			return errorf(d.Pos, "expected the watermark's delay (INTERVAL 10 MINUTES or INTERVAL '10 minutes'), found %s", d.describe())
		}
		g.Watermark = w
	}
	switch t := p.peek(); {
	case t.is("JOIN") || t.is("LEFT") || t.is("RIGHT") || t.is("INNER") || t.is("FULL") || t.is("CROSS") || t.Kind == tokPunct && t.Text == ",":
		return errorf(t.Pos, "joins are not supported: a materialized view aggregates one flow's target or one stream")
	case t.is("AS") || (t.Kind == tokIdent && !t.is("WHERE") && !t.is("GROUP")):
		return errorf(t.Pos, "a table alias is not supported: name the columns as they are")
	}
	return nil
}

// goldList reads comma-separated expressions up to the keyword stop (at the
// top level) or the end of the statement.
func (p *parser) goldList(clause, stop string) ([][]token, *Error) {
	var items [][]token
	for {
		start := p.peek().Pos
		toks, err := p.goldTokens(clause, start, func() bool {
			return p.isPunct(",") || p.peek().is(stop)
		})
		if err != nil {
			return nil, err
		}
		items = append(items, toks)
		if !p.isPunct(",") {
			break
		}
		p.next()
	}
	if t := p.peek(); stop == "FROM" && !t.is("FROM") {
		return nil, errorf(t.Pos, "expected FROM after the SELECT list, found %s", t.describe())
	}
	return items, nil
}

// goldTokens reads one expression's tokens: up to ';', a top-level end
// (atEnd), or, for clauses before GROUP BY, the next clause keyword.
func (p *parser) goldTokens(clause string, start Pos, atEnd func() bool) ([]token, *Error) {
	var toks []token
	depth := 0
	for {
		t := p.peek()
		if t.Kind == tokInvalid {
			return nil, errorf(t.Pos, "%s", t.Text)
		}
		if t.Kind == tokEOF || t.Kind == tokPunct && t.Text == ";" {
			if depth > 0 {
				return nil, errorf(t.Pos, "unbalanced parentheses in %s", clause)
			}
			break
		}
		if depth == 0 && (atEnd() || clause != "HAVING" && (t.is("HAVING") || t.is("ORDER") || t.is("LIMIT") || t.is("QUALIFY")) ||
			clause == "SELECT" && t.is("FROM") || clause == "WHERE" && t.is("HAVING")) {
			break
		}
		switch {
		case t.Kind == tokPunct && t.Text == "(":
			depth++
		case t.Kind == tokPunct && t.Text == ")":
			if depth == 0 {
				return nil, errorf(t.Pos, "unbalanced ')' in %s", clause)
			}
			depth--
		case t.is("SELECT"):
			return nil, errorf(t.Pos, "%s may not hold a subquery: a materialized view is one aggregate over one source", clause)
		}
		toks = append(toks, p.next())
	}
	if len(toks) == 0 {
		return nil, errorf(start, "%s needs an expression here", clause)
	}
	return toks, nil
}
