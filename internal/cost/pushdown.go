package cost

import "strings"

// Filters of an outer scope pushed down to a table's scan.
//
// A query of a view filtered by its keys (SELECT ... FROM customers WHERE
// id = 5) names the key in the outer scope only; BigQuery's optimizer
// moves such a filter down through the view to the scans of its tables,
// where it prunes by the clustering column. The model applies the standard
// rule, and only where it surely holds: a filter on a column c moves from a
// scope into the query it reads, through each scope on the way down to the
// table's scope, when that scope passes c through unchanged (c, q.c or a *
// that keeps it in its SELECT list), partitions every window by c
// (PARTITION BY c), groups by c if it groups, and has no LIMIT. Then
// dropping the rows of other values of c before that scope changes none of
// the rows the filter keeps. A scope that joins moves a filter into one of
// its inputs when it joins without LEFT, RIGHT or FULL (an inner or cross
// join: a row of the output is a row of each input) and passes c through
// from that input by its alias (q.c, q.*; a bare * or another input's c
// stops it), partitioning and grouping by q.c. A scope read by several
// others keeps the rows any of them needs (the union of their filters);
// one that is the statement's result, or a scalar or IN subquery, needs
// every row.
// The operands of a UNION are matched by name (the renderer lists the same
// columns in the same order in each). This is assumed of BigQuery, not
// verified against it (the emulator prunes nothing).

// pushDown narrows res, the restriction r's own scope places on the
// pruning columns of r's table (types), by the filters of the scopes above
// that move down to r's scan.
func (a *analyzer) pushDown(r *ref, res *restriction, types map[string]string) {
	if r.target || len(r.blk.sources) != 1 {
		return
	}
	for col, typ := range types {
		if !a.transparent(r.blk, col) {
			continue
		}
		up := a.pushed(r.blk, col, typ, map[*block]bool{})
		if up == nil {
			continue
		}
		if res.cols == nil {
			res.cols = map[string]*set{}
		}
		n, _ := meet(res.cols[col], up)
		if n != nil {
			res.cols[col] = n
			if len(n.ivs) == 0 && !n.null {
				res.never = true
			}
		}
		res.exact = false
	}
}

// parent is a scope that reads a block through one of its sources.
type parent struct {
	p *block
	s source
}

// parents maps each block to the scopes that read it as a FROM source.
func (a *analyzer) parents() map[*block][]parent {
	out := map[*block][]parent{}
	for _, p := range a.blocks {
		for _, s := range p.sources {
			blocks := s.derived
			if s.cte != "" {
				blocks = a.ctes[s.cte]
			}
			for _, x := range blocks {
				out[x] = append(out[x], parent{p: p, s: s})
			}
		}
	}
	return out
}

// pushed returns the values of column col (of type typ) that the rows of
// block x's output must have for some scope reading x to keep them; nil
// when any value may be needed.
func (a *analyzer) pushed(x *block, col, typ string, seen map[*block]bool) *set {
	if a.up == nil {
		a.up = a.parents()
	}
	ps := a.up[x]
	if x.main || seen[x] || len(ps) == 0 {
		return nil // the result, a subquery in an expression, or a CTE no scope reads
	}
	seen[x] = true
	defer delete(seen, x)
	var all set
	for _, pr := range ps {
		if len(pr.p.sources) != 1 {
			// A join: what the scopes above keep of its output, where that
			// moves into this input. (Its own WHERE and ON may name either
			// input: not read.)
			name := pr.s.alias
			if name == "" {
				name = pr.s.cte
			}
			if !a.innerJoin(pr.p) || !a.passesFrom(pr.p, name, col) {
				return nil
			}
			need := a.pushed(pr.p, col, typ, seen)
			if need == nil {
				return nil
			}
			all.ivs = append(all.ivs, need.ivs...)
			all.null = all.null || need.null
			continue
		}
		// What p keeps of its input: its WHERE's restriction on col (applied
		// before p's windows and groups, so it moves down whatever p does)...
		var mine *set
		if w := pr.p.where; w[0] >= 0 {
			names := map[string]bool{}
			for _, n := range []string{pr.s.alias, pr.s.cte} {
				if n != "" {
					names[n] = true
				}
			}
			res := (&pruner{toks: a.toks, names: names, types: map[string]string{col: typ}}).eval(w[0], w[1])
			if res.never {
				continue // p keeps no row: it needs none of x's
			}
			mine = res.cols[col]
		}
		// ...and what the scopes above keep of p's output, where that moves
		// below p.
		var above *set
		if a.transparent(pr.p, col) {
			above = a.pushed(pr.p, col, typ, seen)
		}
		need, _ := meet(mine, above)
		if need == nil {
			return nil
		}
		all.ivs = append(all.ivs, need.ivs...)
		all.null = all.null || need.null
	}
	n, ok := all.normalize()
	if !ok {
		return nil
	}
	return &n
}

// meet intersects two restrictions of one column (nil: any value).
func meet(a, b *set) (*set, bool) {
	switch {
	case a == nil:
		return b, true
	case b == nil:
		return a, true
	}
	n, ok := intersect(*a, *b)
	if !ok {
		return nil, true // values it cannot order: no restriction
	}
	return &n, true
}

// transparent reports whether block b passes column col of its one source
// through unchanged, so that a filter on its output's col may move below
// it: col in its SELECT list as is, every window partitioned by col, its
// GROUP BY (if any) by col, and no LIMIT.
func (a *analyzer) transparent(b *block, col string) bool {
	t := a.toks
	var groupBy, partitions [][2]int
	var byName []string            // OVER w: windows named in the WINDOW clause
	windows := map[string][2]int{} // the WINDOW clause: name -> its spec's tokens
	for j := b.lo; j < b.hi; j++ {
		x := t[j]
		if x.punct("(") {
			if !isQueryStart(t, j+1) && j > b.lo && t[j-1].is("OVER") {
				partitions = append(partitions, [2]int{j + 1, x.match})
			}
			j = x.match
			continue
		}
		switch {
		case x.is("LIMIT"):
			return false
		case x.is("GROUP") && j+1 < b.hi && t[j+1].is("BY"):
			groupBy = append(groupBy, [2]int{j + 2, clauseEnd(t, j+2, b.hi)})
		case x.is("OVER") && j+1 < b.hi && isIdent(t[j+1]):
			byName = append(byName, strings.ToLower(t[j+1].text))
		case x.is("WINDOW"):
			for k := j + 1; k+2 < b.hi && isIdent(t[k]) && t[k+1].is("AS") && t[k+2].punct("("); {
				windows[strings.ToLower(t[k].text)] = [2]int{k + 3, t[k+2].match}
				k = t[k+2].match + 1
				if k < b.hi && t[k].punct(",") {
					k++
				}
			}
		}
	}
	if selLo, selHi := a.selectList(b); selLo < 0 || selHi < 0 || !a.selects(selLo, selHi, col) {
		return false
	}
	for _, g := range groupBy {
		if !hasItem(t, g[0], g[1], col) {
			return false
		}
	}
	for _, name := range byName {
		spec, ok := windows[name]
		if !ok {
			return false
		}
		partitions = append(partitions, spec)
	}
	for _, w := range partitions {
		if !partitionedBy(t, w[0], w[1], col, windows) {
			return false
		}
	}
	return true
}

// innerJoin reports whether block b's FROM joins its inputs without LEFT,
// RIGHT or FULL: every row of its output is a row of each input.
func (a *analyzer) innerJoin(b *block) bool {
	t := a.toks
	from := false
	for j := b.lo; j < b.hi; j++ {
		x := t[j]
		switch {
		case x.punct("("):
			j = x.match
		case x.is("FROM"):
			from = true
		case !from:
		case x.is("WHERE") || x.is("GROUP") || x.is("HAVING") || x.is("QUALIFY") || x.is("WINDOW") || x.is("ORDER") || x.is("LIMIT"):
			return true
		case x.is("LEFT") || x.is("RIGHT") || x.is("FULL") || x.is("OUTER"):
			return false
		}
	}
	return from
}

// selectList returns the tokens of block b's SELECT list (-1 where b has
// no SELECT or no FROM).
func (a *analyzer) selectList(b *block) (lo, hi int) {
	t := a.toks
	lo, hi = -1, -1
	for j := b.lo; j < b.hi; j++ {
		switch {
		case t[j].punct("("):
			j = t[j].match
		case t[j].is("SELECT") && lo < 0:
			lo = j + 1
		case t[j].is("FROM") && hi < 0:
			hi = j
		}
	}
	return lo, hi
}

// passesFrom is transparent for a scope that joins: it passes column col
// of its input alias (its alias, or the CTE's name) through as it is
// (alias.col or alias.*; no bare *, no other input's star or col), every
// window partitions by it and its GROUP BY (if any) groups by it, and it
// has no LIMIT.
func (a *analyzer) passesFrom(b *block, alias, col string) bool {
	if alias == "" || !a.transparent(b, col) {
		return false
	}
	t := a.toks
	selLo, selHi := a.selectList(b)
	// Another input's col anywhere in the scope (a window or group by it)
	// is not this input's.
	for j := b.lo; j+2 < b.hi; j++ {
		if isIdent(t[j]) && t[j+1].punct(".") && sameName(t[j+2], col) && strings.ToLower(t[j].text) != alias {
			return false
		}
	}
	passes := false
	for _, it := range splitList(t, selLo, selHi) {
		x, n := t[it[0]], it[1]-it[0]
		qual := ""
		if n >= 3 && isIdent(x) && t[it[0]+1].punct(".") {
			qual = strings.ToLower(x.text)
		}
		switch {
		case x.punct("*"):
			return false // a bare *: col may come from either input
		case n >= 3 && qual != "" && t[it[0]+2].punct("*"):
			if qual != alias {
				return false // another input's columns may hold a col too
			}
			passes = true
		case isColumn(t, it[0], it[1], col) || n >= 3 && isColumn(t, it[0], it[1]-2, col) && t[it[1]-2].is("AS"):
			if qual != alias {
				return false // col of another input, or unqualified
			}
			passes = true
		}
	}
	return passes
}

// selects reports whether the SELECT list toks[lo:hi] passes col through
// unchanged: an item col or q.col (AS col), or a * (q.*) whose EXCEPT does
// not drop it; and no other item named col, and no REPLACE.
func (a *analyzer) selects(lo, hi int, col string) bool {
	t := a.toks
	if lo < hi && (t[lo].is("DISTINCT") || t[lo].is("ALL")) {
		lo++
	}
	passes, other := false, false
	for _, it := range splitList(t, lo, hi) {
		n := it[1] - it[0]
		x := t[it[0]]
		switch {
		case n >= 1 && x.punct("*") || n >= 3 && isIdent(x) && t[it[0]+1].punct(".") && t[it[0]+2].punct("*"):
			star := it[0]
			if !x.punct("*") {
				star += 2
			}
			rest := star + 1
			if rest < it[1] && t[rest].is("REPLACE") {
				return false
			}
			if rest < it[1] && t[rest].is("EXCEPT") && rest+1 < it[1] && t[rest+1].punct("(") {
				if hasItem(t, rest+2, t[rest+1].match, col) {
					continue
				}
			}
			passes = true
		case isColumn(t, it[0], it[1], col):
			passes = true
		case n >= 3 && isColumn(t, it[0], it[1]-2, col) && t[it[1]-2].is("AS") && sameName(t[it[1]-1], col):
			passes = true
		case n >= 2 && sameName(t[it[1]-1], col):
			other = true // an expression named col
		}
	}
	return passes && !other
}

// partitionedBy reports whether the window spec toks[lo:hi] partitions by
// col (a spec that names another window inherits its partitioning).
func partitionedBy(t []token, lo, hi int, col string, named map[string][2]int) bool {
	if lo < hi && isIdent(t[lo]) && !t[lo].is("PARTITION") && !t[lo].is("ORDER") && !t[lo].is("ROWS") && !t[lo].is("RANGE") {
		base, ok := named[strings.ToLower(t[lo].text)]
		return ok && partitionedBy(t, base[0], base[1], col, named)
	}
	for j := lo; j+1 < hi; j++ {
		if t[j].is("PARTITION") && t[j+1].is("BY") {
			return hasItem(t, j+2, clauseEnd(t, j+2, hi), col)
		}
	}
	return false
}

// clauseEnd is where a list starting at lo ends: the next clause keyword
// outside parentheses, or hi.
func clauseEnd(t []token, lo, hi int) int {
	for j := lo; j < hi; j++ {
		switch {
		case t[j].punct("("):
			j = t[j].match
		case t[j].is("ORDER") || t[j].is("ROWS") || t[j].is("RANGE") || t[j].is("HAVING") || t[j].is("QUALIFY") ||
			t[j].is("WINDOW") || t[j].is("LIMIT") || t[j].is("UNION") || t[j].is("INTERSECT") || t[j].is("EXCEPT"):
			return j
		}
	}
	return hi
}

// hasItem reports whether the comma-separated list toks[lo:hi] has an
// item that is column col (col or q.col).
func hasItem(t []token, lo, hi int, col string) bool {
	for _, it := range splitList(t, lo, hi) {
		if isColumn(t, it[0], it[1], col) {
			return true
		}
	}
	return false
}

// splitList splits toks[lo:hi] at commas outside parentheses.
func splitList(t []token, lo, hi int) [][2]int {
	var out [][2]int
	start := lo
	for j := lo; j < hi; j++ {
		switch {
		case t[j].punct("("):
			j = t[j].match
		case t[j].punct(","):
			out = append(out, [2]int{start, j})
			start = j + 1
		}
	}
	if start < hi {
		out = append(out, [2]int{start, hi})
	}
	return out
}

// isColumn reports whether toks[lo:hi] is column col: col, or q.col.
func isColumn(t []token, lo, hi int, col string) bool {
	switch hi - lo {
	case 1:
		if t[lo].kind == kQuoted {
			name := strings.ToLower(t[lo].text)
			if i := strings.LastIndexByte(name, '.'); i >= 0 {
				name = name[i+1:]
			}
			return name == col
		}
		return isIdent(t[lo]) && sameName(t[lo], col)
	case 3:
		return isIdent(t[lo]) && t[lo+1].punct(".") && isIdent(t[lo+2]) && sameName(t[lo+2], col)
	}
	return false
}

func sameName(x token, col string) bool { return isIdent(x) && strings.ToLower(x.text) == col }
