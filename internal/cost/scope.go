package cost

import (
	"fmt"
	"strings"
)

// analyzer finds a statement's table references, the columns each
// references and the WHERE of its scope.
type analyzer struct {
	m      *Model
	toks   []token
	ctes   map[string][]*block // lower-cased CTE name -> its query's blocks
	blocks []*block
	main   []*block
	refs   []*ref
	hidden map[int]bool        // token indices that name no column (table paths, * EXCEPT lists)
	up     map[*block][]parent // the scopes that read each block (made when first needed)
	err    error
}

// A ref is one reference to a base table.
type ref struct {
	t      *Table
	alias  string // lower-cased; "" for none
	blk    *block // the scope it is read in (nil: an INSERT target, not read)
	target bool   // the DML target (DELETE, UPDATE)
}

type source struct {
	ref     *ref
	cte     string
	derived []*block
	alias   string
}

// A block is one SELECT (an operand of a set operation) or a DELETE or
// UPDATE: tokens lo..hi at one level, subqueries excluded.
type block struct {
	lo, hi  int
	main    bool // its rows are the statement's result (or what it inserts)
	reached bool
	sources []source
	stars   []star
	idents  []ident
	where   [2]int // the WHERE clause's tokens; where[0] < 0: none
}

type ident struct{ name, qual string } // lower-cased

type star struct {
	qual   string
	except map[string]bool
}

func (a *analyzer) fail(i int, format string, args ...any) {
	if a.err == nil {
		pos := 0
		if i < len(a.toks) {
			pos = a.toks[i].pos
		}
		a.err = fmt.Errorf("offset %d: %s", pos, fmt.Sprintf(format, args...))
	}
}

// query analyzes the query toks[lo:hi] and returns its blocks (the
// operands of its set operations).
func (a *analyzer) query(lo, hi int, main bool) []*block {
	t := a.toks
	i := lo
	if i < hi && t[i].is("WITH") {
		i++
		if i < hi && t[i].is("RECURSIVE") {
			i++
		}
		for i < hi {
			if !isIdent(t[i]) {
				a.fail(i, "expected a CTE name")
				return nil
			}
			name := strings.ToLower(t[i].text)
			i++
			if i < hi && t[i].punct("(") && !isQueryStart(t, i+1) {
				i = t[i].match + 1 // column list
			}
			if i+1 >= hi || !t[i].is("AS") || !t[i+1].punct("(") {
				a.fail(i, "expected AS ( after CTE %s", name)
				return nil
			}
			end := t[i+1].match
			a.ctes[name] = a.query(i+2, end, false)
			i = end + 1
			if i < hi && t[i].punct(",") {
				i++
				continue
			}
			break
		}
	}
	var out []*block
	start := i
	operand := func(s, e int) {
		if s >= e {
			return
		}
		if t[s].punct("(") && t[s].match == e-1 && isQueryStart(t, s+1) {
			out = append(out, a.query(s+1, e-1, main)...)
			return
		}
		if t[s].punct("(") && isQueryStart(t, s+1) {
			// (SELECT ...) ORDER BY ... LIMIT ...
			out = append(out, a.query(s+1, t[s].match, main)...)
			return
		}
		out = append(out, a.block(s, e, main, nil))
	}
	for j := i; j < hi; j++ {
		switch {
		case t[j].punct("("):
			j = t[j].match
		case t[j].is("UNION") || t[j].is("INTERSECT") || t[j].is("EXCEPT") && j+1 < hi && (t[j+1].is("DISTINCT") || t[j+1].is("ALL")):
			operand(start, j)
			j++
			if j < hi && (t[j].is("ALL") || t[j].is("DISTINCT")) {
				j++
			}
			start = j
			j--
		}
	}
	operand(start, hi)
	return out
}

// path reads a table path at i: names (quoted or bare) joined by dots. It
// returns the path as statements spell tables in the model and the index
// after it.
func (a *analyzer) path(i, hi int) (string, int, bool) {
	t := a.toks
	if i >= hi || !isIdent(t[i]) {
		return "", i, false
	}
	parts := []string{t[i].text}
	j := i + 1
	for j+1 < hi && t[j].punct(".") && isIdent(t[j+1]) {
		parts = append(parts, t[j+1].text)
		j += 2
	}
	for k := i; k < j; k++ {
		a.hidden[k] = true
	}
	return strings.Join(parts, "."), j, true
}

// alias reads an optional alias at i ([AS] name).
func (a *analyzer) alias(i, hi int) (string, int) {
	t := a.toks
	if i < hi && t[i].is("AS") && i+1 < hi && isIdent(t[i+1]) {
		a.hidden[i+1] = true
		return strings.ToLower(t[i+1].text), i + 2
	}
	if i < hi && isIdent(t[i]) && !clauseWord(t[i]) {
		a.hidden[i] = true
		return strings.ToLower(t[i].text), i + 1
	}
	return "", i
}

// clauseWord: a bare word that may follow a FROM item and is no alias
// (the reserved ones are no identifiers anyway).
func clauseWord(t token) bool {
	return t.kind == kIdent && (t.up == "SET" || t.up == "OPTIONS" || t.up == "FOR" || t.up == "PIVOT" || t.up == "UNPIVOT")
}

// tableSource resolves a path in a FROM clause.
func (a *analyzer) tableSource(name string, at int, alias string) (source, bool) {
	if tb, ok := a.m.Tables[name]; ok {
		r := &ref{t: tb, alias: alias}
		a.refs = append(a.refs, r)
		return source{ref: r, alias: alias}, true
	}
	if !strings.Contains(name, ".") {
		if _, ok := a.ctes[strings.ToLower(name)]; ok {
			return source{cte: strings.ToLower(name), alias: alias}, true
		}
		return source{}, false // UNNEST aliases, CTEs of an outer scope this model missed
	}
	if a.err == nil {
		a.err = &MissingTableError{Name: name, Offset: a.toks[at].pos}
	}
	return source{}, false
}

// block analyzes one SELECT, DELETE or UPDATE at toks[lo:hi].
func (a *analyzer) block(lo, hi int, main bool, pre []source) *block {
	t := a.toks
	b := &block{lo: lo, hi: hi, main: main, sources: pre, where: [2]int{-1, -1}}
	a.blocks = append(a.blocks, b)
	for _, s := range pre {
		if s.ref != nil {
			s.ref.blk = b
		}
	}
	depth := 0 // non-query parentheses open
	inFrom, expect := false, false
	endWhere := func(j int) {
		if b.where[0] >= 0 && b.where[1] < 0 {
			b.where[1] = j
		}
	}
	for j := lo; j < hi && a.err == nil; j++ {
		x := t[j]
		if x.punct("(") && isQueryStart(t, j+1) {
			j = a.subquery(b, j, hi, expect && depth == 0) - 1
			expect = false
			continue
		}
		if x.punct("(") {
			expect = false
			depth++
			continue
		}
		if x.punct(")") {
			depth--
			continue
		}
		if depth == 0 && x.kind == kIdent {
			switch x.up {
			case "FROM":
				inFrom, expect = true, true
				continue
			case "JOIN":
				expect = true
				continue
			case "WHERE":
				inFrom, expect = false, false
				b.where = [2]int{j + 1, -1}
				continue
			case "GROUP", "HAVING", "QUALIFY", "WINDOW", "ORDER", "LIMIT":
				inFrom, expect = false, false
				endWhere(j)
			}
		}
		if depth == 0 && inFrom && x.punct(",") {
			expect = true
			continue
		}
		if expect {
			expect = false
			if x.is("UNNEST") {
				continue
			}
			if next, ok := a.tableAt(b, j, hi); ok {
				if a.err != nil {
					return b
				}
				j = next - 1
				continue
			}
		}
		if x.punct("*") && j > lo {
			if end, ok := a.star(b, j, lo, hi, depth); ok {
				j = end
				continue
			}
		}
		if id, ok := a.ident(j); ok {
			b.idents = append(b.idents, id)
		}
	}
	endWhere(hi)
	return b
}

// subquery reads the subquery in the parentheses at toks[j] (as a source
// of b when asSource: after FROM, JOIN or a comma) and returns the token
// after it (and its alias).
func (a *analyzer) subquery(b *block, j, hi int, asSource bool) int {
	end := a.toks[j].match
	blocks := a.query(j+1, end, false)
	if !asSource {
		return end + 1
	}
	alias, next := a.alias(end+1, hi)
	b.sources = append(b.sources, source{derived: blocks, alias: alias})
	return next
}

// tableAt reads the table a FROM or JOIN names at toks[j] (a path) as a
// source of b, and returns the token after it and its alias; false when
// toks[j] is no path. A table function call fails the analysis.
func (a *analyzer) tableAt(b *block, j, hi int) (int, bool) {
	name, next, ok := a.path(j, hi)
	if !ok {
		return 0, false
	}
	if next < hi && a.toks[next].punct("(") {
		a.fail(j, "the statement calls table function %s, which the model does not expand", name)
		return next, true
	}
	alias, after := a.alias(next, hi)
	if s, ok := a.tableSource(name, j, alias); ok {
		if s.ref != nil {
			s.ref.blk = b
		}
		b.sources = append(b.sources, s)
	}
	return after, true
}

// star reads a SELECT * (or t.*, with EXCEPT (...)) at toks[j] into b, and
// returns the last token it read; false when the * is a product.
func (a *analyzer) star(b *block, j, lo, hi, depth int) (int, bool) {
	t := a.toks
	p := t[j-1]
	qual := ""
	isStar := p.is("SELECT") || p.is("DISTINCT") || p.is("ALL") || p.punct(",") && depth == 0
	if p.punct(".") && j-2 >= lo && isIdent(t[j-2]) {
		isStar, qual = true, strings.ToLower(t[j-2].text)
	}
	if !isStar {
		return j, false
	}
	s := star{qual: qual, except: map[string]bool{}}
	if j+2 < hi && t[j+1].is("EXCEPT") && t[j+2].punct("(") {
		end := t[j+2].match
		for k := j + 3; k < end; k++ {
			a.hidden[k] = true
			if isIdent(t[k]) {
				s.except[strings.ToLower(t[k].text)] = true
			}
		}
		j = end
	}
	b.stars = append(b.stars, s)
	return j, true
}

// ident reports whether toks[j] names a column (or a field of one): a
// quoted name, or a bare word that is no reserved keyword and no
// function's name.
func (a *analyzer) ident(j int) (ident, bool) {
	t := a.toks
	x := t[j]
	if a.hidden[j] || !isIdent(x) {
		return ident{}, false
	}
	if x.kind == kIdent && j+1 < len(t) && (t[j+1].punct("(") || t[j+1].kind == kString) {
		return ident{}, false // a function, or a typed literal's type (TIMESTAMP '...')
	}
	name := strings.ToLower(x.text)
	qual := ""
	if x.kind == kQuoted {
		if i := strings.LastIndexByte(name, '.'); i >= 0 {
			name, qual = name[i+1:], name[:i]
		}
	}
	if j >= 2 && t[j-1].punct(".") && isIdent(t[j-2]) {
		qual = strings.ToLower(t[j-2].text)
	}
	return ident{name: name, qual: qual}, true
}

// reach marks the blocks whose rows reach the statement's result: the
// main ones, and those a reached block selects * from.
func (a *analyzer) reach() {
	for _, b := range a.main {
		b.reached = true
	}
	for changed := true; changed; {
		changed = false
		for _, b := range a.blocks {
			if !b.reached {
				continue
			}
			for _, st := range b.stars {
				for _, s := range b.sources {
					if st.qual != "" && st.qual != s.alias && st.qual != s.cte {
						continue
					}
					blocks := s.derived
					if s.cte != "" {
						blocks = a.ctes[s.cte]
					}
					for _, x := range blocks {
						if !x.reached {
							x.reached, changed = true, true
						}
					}
				}
			}
		}
	}
}

// names are the lower-cased names a reference's columns may be qualified
// by: its alias and its table's name.
func (r *ref) names() map[string]bool {
	n := map[string]bool{}
	if r.alias != "" {
		n[r.alias] = true
	}
	name := strings.ToLower(r.t.Name)
	n[name] = true
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		n[name[i+1:]] = true
	}
	return n
}

// columns are the columns of r's table that r reads: those named in its
// scope (unqualified or qualified by r), and for a * over it every column
// if the * reaches the result, else every column named anywhere in the
// statement (BigQuery reads only the columns a query uses).
func (a *analyzer) columns(r *ref) map[string]bool {
	out := map[string]bool{}
	names := r.names()
	has := func(name string) (string, bool) {
		c, ok := r.t.column(name)
		return c.Name, ok
	}
	for _, id := range r.blk.idents {
		if id.qual != "" && !names[id.qual] {
			continue
		}
		if c, ok := has(id.name); ok {
			out[c] = true
		}
	}
	for _, st := range r.blk.stars {
		if st.qual != "" && !names[st.qual] {
			continue
		}
		if r.blk.reached {
			for _, c := range r.t.Columns {
				if !st.except[strings.ToLower(c.Name)] {
					out[c.Name] = true
				}
			}
			continue
		}
		for j := range a.toks {
			if id, ok := a.ident(j); ok {
				if c, ok := has(id.name); ok {
					out[c] = true
				}
			}
		}
	}
	return out
}
