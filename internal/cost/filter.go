package cost

import (
	"math/big"
	"strconv"
	"strings"
)

// A restriction is what a WHERE clause says about the columns BigQuery
// prunes by (the partitioning and first clustering column of the table a
// reference reads): per column, the values rows that pass can have.
type restriction struct {
	never bool            // no row passes (a constant FALSE, a comparison with NULL)
	cols  map[string]*set // lower-cased column -> its values in passing rows; absent: any
	// exact: the predicate is exactly the conjunction of cols (it has no
	// other condition), so a row in a range of cols passes for sure.
	exact bool
}

// pruner evaluates the WHERE of one table reference.
type pruner struct {
	toks  []token
	names map[string]bool   // lower-cased qualifiers naming the reference (alias, table)
	types map[string]string // lower-cased pruning columns -> their types
}

func unknown() restriction { return restriction{} }

// eval evaluates toks[lo:hi] as a predicate.
func (p *pruner) eval(lo, hi int) restriction {
	if lo >= hi {
		return restriction{exact: true} // empty: TRUE
	}
	if parts := p.split(lo, hi, "OR"); len(parts) > 1 {
		return p.or(parts)
	}
	if parts := p.split(lo, hi, "AND"); len(parts) > 1 {
		r := restriction{exact: true, cols: map[string]*set{}}
		for _, pt := range parts {
			x := p.eval(pt[0], pt[1])
			r.never = r.never || x.never
			r.exact = r.exact && x.exact
			for c, s := range x.cols {
				if have, ok := r.cols[c]; ok {
					n, ok := intersect(*have, *s)
					if !ok {
						delete(r.cols, c) // values it cannot order: no pruning on c
						r.exact = false
						continue
					}
					r.cols[c] = &n
					if len(n.ivs) == 0 && !n.null {
						r.never = true
					}
					continue
				}
				r.cols[c] = s
			}
		}
		return r
	}
	return p.atom(lo, hi)
}

func (p *pruner) or(parts [][2]int) restriction {
	var live []restriction
	exact := true
	for _, pt := range parts {
		x := p.eval(pt[0], pt[1])
		exact = exact && x.exact
		if !x.never {
			live = append(live, x)
		}
	}
	if len(live) == 0 {
		return restriction{never: true, exact: exact}
	}
	r := restriction{cols: map[string]*set{}}
	// A column is restricted when every live disjunct restricts it.
	for c := range live[0].cols {
		var all set
		ok := true
		for _, x := range live {
			t, has := x.cols[c]
			if !has {
				ok = false
				break
			}
			all.ivs = append(all.ivs, t.ivs...)
			all.null = all.null || t.null
		}
		if !ok {
			continue
		}
		if u, ok := all.normalize(); ok {
			r.cols[c] = &u
		}
	}
	// Exact when each disjunct is exactly a restriction of the same one
	// column (or a constant TRUE, which leaves nothing restricted).
	r.exact = exact
	for _, x := range live {
		if len(x.cols) > 1 || len(x.cols) == 1 && len(r.cols) == 0 {
			r.exact = false
		}
		for c := range x.cols {
			if _, ok := r.cols[c]; !ok {
				r.exact = false
			}
		}
	}
	if len(r.cols) > 1 {
		r.exact = false
	}
	return r
}

// split splits toks[lo:hi] at the keyword op outside parentheses; AND
// skips the one of a BETWEEN.
func (p *pruner) split(lo, hi int, op string) [][2]int {
	var parts [][2]int
	start, between := lo, 0
	for i := lo; i < hi; i++ {
		t := p.toks[i]
		switch {
		case t.punct("("):
			i = t.match
		case t.is("BETWEEN"):
			between++
		case t.is(op):
			if op == "AND" && between > 0 {
				between--
				continue
			}
			parts = append(parts, [2]int{start, i})
			start = i + 1
		}
	}
	return append(parts, [2]int{start, hi})
}

func (p *pruner) atom(lo, hi int) restriction {
	t := p.toks
	if t[lo].punct("(") && t[lo].match == hi-1 {
		if isQueryStart(t, lo+1) {
			return unknown()
		}
		return p.eval(lo+1, hi-1)
	}
	if hi-lo == 1 && (t[lo].is("TRUE") || t[lo].is("FALSE")) {
		return restriction{never: t[lo].is("FALSE"), exact: true}
	}
	if hi-lo >= 3 && t[hi-1].is("NULL") && (t[hi-2].is("IS") || t[hi-3].is("IS") && t[hi-2].is("NOT")) {
		return p.isNull(lo, hi)
	}
	if i := p.keyword(lo+1, hi, "BETWEEN"); i >= 0 {
		return p.between(lo, i, hi)
	}
	if i := p.keyword(lo+1, hi, "IN"); i >= 0 {
		return p.in(lo, i, hi)
	}
	return p.compare(lo, hi)
}

// isNull reads col IS [NOT] NULL, or a constant's.
func (p *pruner) isNull(lo, hi int) restriction {
	t := p.toks
	not := t[hi-2].is("NOT")
	end := hi - 2
	if not {
		end = hi - 3
	}
	if col, ok := p.column(lo, end); ok {
		s := set{null: true}
		if not {
			s = everything()
			s.null = false
		}
		return restriction{cols: map[string]*set{col: &s}, exact: true}
	}
	if v, ok := p.constant(lo, end); ok {
		return restriction{never: v.IsNull() == not, exact: true}
	}
	return unknown()
}

// between reads col BETWEEN a AND b (BETWEEN at i).
func (p *pruner) between(lo, i, hi int) restriction {
	col, ok := p.column(lo, i)
	and := p.keyword(i+1, hi, "AND")
	if !ok || and < 0 {
		return unknown()
	}
	a, ok1 := p.typed(col, i+1, and)
	b, ok2 := p.typed(col, and+1, hi)
	if !ok1 || !ok2 {
		return unknown()
	}
	if a.IsNull() || b.IsNull() {
		return restriction{never: true, exact: true}
	}
	s := set{ivs: []interval{{lo: bound{v: a, inc: true}, hi: bound{v: b, inc: true}}}}
	n, ok := s.normalize()
	if !ok {
		return unknown()
	}
	return p.only(col, n)
}

// in reads col IN (a, b, ...) (IN at i).
func (p *pruner) in(lo, i, hi int) restriction {
	t := p.toks
	col, ok := p.column(lo, i)
	if !ok || i+1 >= hi || !t[i+1].punct("(") || t[i+1].match != hi-1 || isQueryStart(t, i+2) {
		return unknown()
	}
	var s set
	for _, a := range p.args(i+2, hi-1) {
		v, ok := p.typed(col, a[0], a[1])
		if !ok {
			return unknown()
		}
		s.ivs = append(s.ivs, point(v).ivs...)
	}
	n, ok := s.normalize()
	if !ok {
		return unknown()
	}
	return p.only(col, n)
}

// flipped is each comparison with its operands swapped.
var flipped = map[string]string{"=": "=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}

// compare reads col op constant, or constant op col.
func (p *pruner) compare(lo, hi int) restriction {
	t := p.toks
	for i := lo + 1; i < hi; i++ {
		if t[i].punct("(") {
			i = t[i].match
			continue
		}
		if t[i].kind != kPunct {
			continue
		}
		op := t[i].text
		if _, ok := flipped[op]; !ok {
			continue
		}
		if col, ok := p.column(lo, i); ok {
			if v, ok := p.typed(col, i+1, hi); ok {
				if s, ok := compared(op, v); ok {
					return p.only(col, s)
				}
			}
			return unknown()
		}
		if col, ok := p.column(i+1, hi); ok {
			if v, ok := p.typed(col, lo, i); ok {
				if s, ok := compared(flipped[op], v); ok {
					return p.only(col, s)
				}
			}
		}
		return unknown()
	}
	return unknown()
}

func (p *pruner) only(col string, s set) restriction {
	if len(s.ivs) == 0 && !s.null {
		return restriction{never: true, exact: true}
	}
	return restriction{cols: map[string]*set{col: &s}, exact: true}
}

// column reports whether toks[lo:hi] is one of the pruning columns of the
// reference: col, or q.col with q naming the reference.
func (p *pruner) column(lo, hi int) (string, bool) {
	t := p.toks
	var name string
	switch {
	case hi-lo == 1 && isIdent(t[lo]):
		name = t[lo].text
		if t[lo].kind == kQuoted {
			if i := strings.LastIndexByte(name, '.'); i >= 0 {
				if !p.names[strings.ToLower(name[:i])] {
					return "", false
				}
				name = name[i+1:]
			}
		}
	case hi-lo == 3 && isIdent(t[lo]) && t[lo+1].punct(".") && isIdent(t[lo+2]):
		if !p.names[strings.ToLower(t[lo].text)] {
			return "", false
		}
		name = t[lo+2].text
	default:
		return "", false
	}
	name = strings.ToLower(name)
	if _, ok := p.types[name]; !ok {
		return "", false
	}
	return name, true
}

// typed is the constant toks[lo:hi] as compared with column col.
func (p *pruner) typed(col string, lo, hi int) (Value, bool) {
	v, ok := p.constant(lo, hi)
	if !ok {
		return Null, false
	}
	return coerce(v, p.types[col])
}

// constant evaluates toks[lo:hi] as a constant expression: a literal
// (TIMESTAMP '...', DATE '...', DATETIME '...', TIME '...', NUMERIC '...',
// an integer or float, a string, bytes, TRUE, FALSE, NULL), CAST(NULL AS
// t), or IFNULL/COALESCE of constants; anything else (a column, a query
// parameter, a subquery) is not constant.
func (p *pruner) constant(lo, hi int) (Value, bool) {
	t := p.toks
	if lo >= hi {
		return Null, false
	}
	if t[lo].punct("(") && t[lo].match == hi-1 {
		if isQueryStart(t, lo+1) {
			return Null, false
		}
		return p.constant(lo+1, hi-1)
	}
	if hi-lo == 2 && t[lo].punct("-") && t[lo+1].kind == kNumber {
		v, ok := number("-" + t[lo+1].text)
		return v, ok
	}
	if hi-lo == 1 {
		return literal(t[lo])
	}
	if hi-lo == 2 && t[lo].kind == kIdent && t[lo+1].kind == kString {
		return typedLiteral(t[lo].up, t[lo+1].text)
	}
	if t[lo].kind == kIdent && t[lo+1].punct("(") && t[lo+1].match == hi-1 {
		return p.constantCall(t[lo].up, p.args(lo+2, hi-1))
	}
	return Null, false
}

// literal is a one-token constant.
func literal(x token) (Value, bool) {
	switch {
	case x.kind == kNumber:
		return number(x.text)
	case x.kind == kString:
		return String(x.text), true
	case x.kind == kBytes:
		return Value{k: vBytes, s: x.text}, true
	case x.is("TRUE"):
		return Bool(true), true
	case x.is("FALSE"):
		return Bool(false), true
	case x.is("NULL"):
		return Null, true
	}
	return Null, false
}

// typedLiteral is TYPE 'text': TIMESTAMP '...', DATE '...', NUMERIC '...'.
func typedLiteral(typ, s string) (Value, bool) {
	switch typ {
	case "TIMESTAMP":
		return parseTimestamp(s)
	case "DATE":
		return parseDate(s)
	case "DATETIME":
		return parseDatetime(s)
	case "TIME":
		return parseTime(s)
	case "NUMERIC", "BIGNUMERIC", "DECIMAL", "BIGDECIMAL":
		r, ok := new(big.Rat).SetString(strings.TrimSpace(s))
		if !ok {
			return Null, false
		}
		return Numeric(r), true
	}
	return Null, false
}

// constantCall folds the calls that are constant of constants: CAST(NULL
// AS type), IFNULL and COALESCE.
func (p *pruner) constantCall(fn string, args [][2]int) (Value, bool) {
	t := p.toks
	switch fn {
	case "CAST", "SAFE_CAST":
		if len(args) == 1 {
			a := args[0]
			if a[1]-a[0] >= 3 && t[a[0]].is("NULL") && t[a[0]+1].is("AS") {
				return Null, true
			}
		}
	case "IFNULL", "COALESCE":
		if fn == "IFNULL" && len(args) != 2 {
			return Null, false
		}
		for _, a := range args {
			v, ok := p.constant(a[0], a[1])
			if !ok {
				return Null, false
			}
			if !v.IsNull() {
				return v, true
			}
		}
		return Null, true
	}
	return Null, false
}

// keyword is the index of the first bare word w in toks[lo:hi] outside
// parentheses, or -1.
func (p *pruner) keyword(lo, hi int, w string) int {
	for i := lo; i < hi; i++ {
		switch {
		case p.toks[i].punct("("):
			i = p.toks[i].match
		case p.toks[i].is(w):
			return i
		}
	}
	return -1
}

// args splits a call's argument tokens at top-level commas.
func (p *pruner) args(lo, hi int) [][2]int {
	var out [][2]int
	start := lo
	for i := lo; i < hi; i++ {
		if p.toks[i].punct("(") {
			i = p.toks[i].match
			continue
		}
		if p.toks[i].punct(",") {
			out = append(out, [2]int{start, i})
			start = i + 1
		}
	}
	if start < hi {
		out = append(out, [2]int{start, hi})
	}
	return out
}

func number(s string) (Value, bool) {
	if n, err := strconv.ParseInt(s, 0, 64); err == nil {
		return Int(n), true
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return Float(f), true
	}
	return Null, false
}

func isIdent(t token) bool {
	return t.kind == kQuoted || t.kind == kIdent && !reserved[t.up]
}

// isQueryStart reports whether toks[i] starts a query: SELECT, WITH, or
// a parenthesis around one.
func isQueryStart(toks []token, i int) bool {
	for i < len(toks) && toks[i].punct("(") {
		i++
	}
	return i < len(toks) && (toks[i].is("SELECT") || toks[i].is("WITH"))
}
