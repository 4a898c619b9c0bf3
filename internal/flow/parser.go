package flow

import (
	"fmt"
	"regexp"
	"strings"
)

// Parse parses every flow statement in one file. It reports all the
// statements it could not parse, resynchronising at each ';'.
func Parse(file, src string) ([]*Flow, error) {
	toks, err := lex(file, src)
	if err != nil {
		return nil, ErrorList{err.(*Error)}
	}
	p := &parser{toks: toks}
	var flows []*Flow
	var errs ErrorList
	for p.peek().Kind != tokEOF {
		if p.peek().Kind == tokPunct && p.peek().Text == ";" {
			p.next()
			continue
		}
		f, err := p.statement()
		if err != nil {
			errs = append(errs, err)
			p.skipStatement()
			continue
		}
		flows = append(flows, f)
	}
	return flows, errs.Err()
}

type parser struct {
	toks []token
	i    int
}

func (p *parser) peek() token { return p.toks[p.i] }
func (p *parser) peekN(n int) token {
	if p.i+n < len(p.toks) {
		return p.toks[p.i+n]
	}
	return p.toks[len(p.toks)-1]
}

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.Kind != tokEOF {
		p.i++
	}
	return t
}

func (p *parser) skipStatement() {
	for {
		t := p.next()
		if t.Kind == tokEOF || (t.Kind == tokPunct && t.Text == ";") {
			return
		}
	}
}

func (p *parser) isPunct(s string) bool { t := p.peek(); return t.Kind == tokPunct && t.Text == s }

// keywords expects a sequence of keywords.
func (p *parser) keywords(kws ...string) *Error {
	for _, kw := range kws {
		t := p.peek()
		if !t.is(kw) {
			return errorf(t.Pos, "expected %s, found %s", strings.Join(kws, " "), t.describe())
		}
		p.next()
	}
	return nil
}

func (p *parser) punct(s string) *Error {
	t := p.peek()
	if t.Kind != tokPunct || t.Text != s {
		return errorf(t.Pos, "expected %q, found %s", s, t.describe())
	}
	p.next()
	return nil
}

var plainName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// name reads an identifier (plain or `quoted`) used as a flow, dataset, table
// or column name.
func (p *parser) name(what string) (Ident, *Error) {
	t := p.peek()
	if t.Kind != tokIdent && t.Kind != tokQuoted {
		return Ident{}, errorf(t.Pos, "expected %s, found %s", what, t.describe())
	}
	p.next()
	return Ident{Name: t.Text, Pos: t.Pos}, nil
}

func (p *parser) statement() (*Flow, *Error) {
	start := p.peek()
	f := &Flow{Pos: start.Pos, SCDType: 1, clauses: map[string]Pos{}}
	switch {
	case start.is("CREATE"):
		p.next()
		if p.peek().is("OR") {
			if err := p.keywords("OR", "REFRESH"); err != nil {
				return nil, err
			}
		}
		if err := p.keywords("FLOW"); err != nil {
			return nil, err
		}
		n, err := p.name("a flow name")
		if err != nil {
			return nil, err
		}
		if !plainName.MatchString(n.Name) {
			return nil, errorf(n.Pos, "flow name %q must be letters, digits and underscores, starting with a letter or underscore", n.Name)
		}
		f.Name = n.Name
		if err := p.keywords("AS"); err != nil {
			return nil, err
		}
		switch {
		case p.peek().is("AUTO"):
			if err := p.keywords("AUTO", "CDC", "INTO"); err != nil {
				return nil, err
			}
			f.Spelling = "AUTO CDC"
		case p.peek().is("APPLY"):
			if err := p.keywords("APPLY", "CHANGES", "INTO"); err != nil {
				return nil, err
			}
			f.Spelling = "APPLY CHANGES"
		default:
			return nil, errorf(p.peek().Pos, "expected AUTO CDC INTO or APPLY CHANGES INTO, found %s", p.peek().describe())
		}
	case start.is("APPLY"):
		if err := p.keywords("APPLY", "CHANGES", "INTO"); err != nil {
			return nil, err
		}
		f.Spelling = "APPLY CHANGES"
	default:
		return nil, errorf(start.Pos, "expected CREATE FLOW ... AS AUTO CDC INTO or APPLY CHANGES INTO, found %s", start.describe())
	}
	target, err := p.target()
	if err != nil {
		return nil, err
	}
	f.Target = target
	if f.Name == "" {
		f.Name = target.Table
	}
	if err := p.keywords("FROM", "STREAM"); err != nil {
		return nil, err
	}
	if err := p.punct("("); err != nil {
		return nil, err
	}
	if f.Source, err = p.source(); err != nil {
		return nil, err
	}
	if err := p.punct(")"); err != nil {
		return nil, err
	}
	for !p.isPunct(";") && p.peek().Kind != tokEOF {
		if err := p.clause(f); err != nil {
			return nil, err
		}
	}
	if p.peek().Kind == tokEOF {
		return nil, errorf(p.peek().Pos, "flow %s is not terminated: add ';' after its last clause", f.Name)
	}
	if err := checkStructure(f); err != nil {
		return nil, err // the caller skips to the ';'
	}
	p.next()
	return f, nil
}

// target reads [LIVE.][dataset.]table, plain or `quoted` (a quoted name may
// hold the dot itself: `dataset.table`).
func (p *parser) target() (Target, *Error) {
	pos := p.peek().Pos
	var parts []string
	for {
		n, err := p.name("a target table")
		if err != nil {
			return Target{}, err
		}
		parts = append(parts, strings.Split(n.Name, ".")...)
		if !p.isPunct(".") {
			break
		}
		p.next()
	}
	if len(parts) > 1 && strings.EqualFold(parts[0], "LIVE") {
		parts = parts[1:] // Databricks' LIVE. schema prefix means "this pipeline"
	}
	for _, s := range parts {
		if !plainName.MatchString(s) {
			return Target{}, errorf(pos, "target %q: table and dataset names must be letters, digits and underscores", strings.Join(parts, "."))
		}
	}
	switch len(parts) {
	case 1:
		return Target{Table: parts[0], Pos: pos}, nil
	case 2:
		return Target{Dataset: parts[0], Table: parts[1], Pos: pos}, nil
	}
	return Target{}, errorf(pos, "target %q: write table or dataset.table (the project comes from the deployment)", strings.Join(parts, "."))
}

// Pub/Sub topic ids: 3-255 characters, starting with a letter, of letters,
// digits and - _ . ~ + %, and not starting with "goog".
var topicName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9\-_.~+%]{2,254}$`)

func (p *parser) source() (Ident, *Error) {
	t := p.peek()
	var id Ident
	switch t.Kind {
	case tokQuoted, tokString:
		p.next()
		id = Ident{Name: t.Text, Pos: t.Pos}
	case tokIdent:
		// an unquoted dotted name: dbserver1.inventory.customers
		var parts []string
		for {
			n, err := p.name("a source topic")
			if err != nil {
				return Ident{}, err
			}
			parts = append(parts, n.Name)
			if !p.isPunct(".") {
				break
			}
			p.next()
		}
		id = Ident{Name: strings.Join(parts, "."), Pos: t.Pos}
	default:
		return Ident{}, errorf(t.Pos, "expected the source Pub/Sub topic, found %s", t.describe())
	}
	if strings.HasPrefix(strings.ToLower(id.Name), "live.") {
		id.Name = id.Name[5:]
	}
	if !topicName.MatchString(id.Name) || strings.HasPrefix(strings.ToLower(id.Name), "goog") {
		return Ident{}, errorf(id.Pos, "source %q is not a valid Pub/Sub topic id (3-255 characters: letters, digits and - _ . ~ + %%, starting with a letter, not with \"goog\")", id.Name)
	}
	return id, nil
}

func (p *parser) once(f *Flow, clause string, pos Pos) *Error {
	if prev, dup := f.clauses[clause]; dup {
		return errorf(pos, "%s given twice (first at line %d, column %d): keep one", clause, prev.Line, prev.Col)
	}
	f.clauses[clause] = pos
	return nil
}

func (p *parser) clause(f *Flow) *Error {
	t := p.peek()
	switch {
	case t.is("KEYS"):
		p.next()
		if err := p.once(f, "KEYS", t.Pos); err != nil {
			return err
		}
		list, err := p.parenList("KEYS")
		if err != nil {
			return err
		}
		f.Keys = list
	case t.is("SEQUENCE"):
		if err := p.keywords("SEQUENCE", "BY"); err != nil {
			return err
		}
		if err := p.once(f, "SEQUENCE BY", t.Pos); err != nil {
			return err
		}
		if p.peek().is("STRUCT") && p.peekN(1).Kind == tokPunct && p.peekN(1).Text == "(" {
			p.next()
			list, err := p.parenList("SEQUENCE BY STRUCT")
			if err != nil {
				return err
			}
			f.Sequence, f.SequenceStruct = list, true
		} else {
			n, err := p.name("a sequence column")
			if err != nil {
				return err
			}
			f.Sequence = []Ident{n}
		}
	case t.is("COLUMNS"):
		p.next()
		if err := p.once(f, "COLUMNS", t.Pos); err != nil {
			return err
		}
		spec, err := p.columnSpec("COLUMNS", true)
		if err != nil {
			return err
		}
		f.Columns = spec
	case t.is("WHERE"):
		p.next()
		if err := p.once(f, "WHERE", t.Pos); err != nil {
			return err
		}
		e, err := p.expr("WHERE")
		if err != nil {
			return err
		}
		f.Where = e
	case t.is("APPLY"):
		if err := p.keywords("APPLY", "AS"); err != nil {
			return err
		}
		kind := p.peek()
		if !kind.is("DELETE") && !kind.is("TRUNCATE") {
			return errorf(kind.Pos, "expected APPLY AS DELETE WHEN or APPLY AS TRUNCATE WHEN, found %s", kind.describe())
		}
		p.next()
		if err := p.keywords("WHEN"); err != nil {
			return err
		}
		clause := "APPLY AS " + strings.ToUpper(kind.Text) + " WHEN"
		if err := p.once(f, clause, t.Pos); err != nil {
			return err
		}
		e, err := p.expr(clause)
		if err != nil {
			return err
		}
		if kind.is("DELETE") {
			f.DeleteWhen = e
		} else {
			f.TruncateWhen = e
		}
	case t.is("STORED"):
		if err := p.keywords("STORED", "AS", "SCD", "TYPE"); err != nil {
			return err
		}
		if err := p.once(f, "STORED AS", t.Pos); err != nil {
			return err
		}
		n := p.next()
		if n.Kind != tokNumber || (n.Text != "1" && n.Text != "2") {
			return errorf(n.Pos, "SCD TYPE must be 1 or 2, found %s", n.describe())
		}
		f.SCDType = int(n.Text[0] - '0')
	case t.is("TRACK"):
		if err := p.keywords("TRACK", "HISTORY", "ON"); err != nil {
			return err
		}
		if err := p.once(f, "TRACK HISTORY", t.Pos); err != nil {
			return err
		}
		spec, err := p.columnSpec("TRACK HISTORY ON", false)
		if err != nil {
			return err
		}
		f.TrackHistory = spec
	case t.is("IGNORE"):
		if err := p.keywords("IGNORE", "NULL", "UPDATES"); err != nil {
			return err
		}
		if err := p.once(f, "IGNORE NULL UPDATES", t.Pos); err != nil {
			return err
		}
		spec := &ColumnSpec{Pos: t.Pos, All: true}
		if p.peek().is("ON") {
			p.next()
			var err *Error
			if spec, err = p.columnSpec("IGNORE NULL UPDATES ON", false); err != nil {
				return err
			}
		}
		f.IgnoreNull = spec
	default:
		return errorf(t.Pos, "expected a clause (KEYS, SEQUENCE BY, COLUMNS, WHERE, APPLY AS DELETE WHEN, APPLY AS TRUNCATE WHEN, STORED AS, TRACK HISTORY ON, IGNORE NULL UPDATES) or ';', found %s", t.describe())
	}
	return nil
}

// parenList reads ( name, name, ... ) with at least one name.
func (p *parser) parenList(clause string) ([]Ident, *Error) {
	open := p.peek()
	if err := p.punct("("); err != nil {
		return nil, err
	}
	if p.isPunct(")") {
		return nil, errorf(open.Pos, "%s needs at least one column", clause)
	}
	list, err := p.nameList(clause)
	if err != nil {
		return nil, err
	}
	return list, p.punct(")")
}

func (p *parser) nameList(clause string) ([]Ident, *Error) {
	var list []Ident
	seen := map[string]Pos{}
	for {
		n, err := p.name("a column name in " + clause)
		if err != nil {
			return nil, err
		}
		if prev, dup := seen[strings.ToLower(n.Name)]; dup {
			return nil, errorf(n.Pos, "column %s listed twice in %s (first at column %d)", n.Name, clause, prev.Col)
		}
		seen[strings.ToLower(n.Name)] = n.Pos
		list = append(list, n)
		if !p.isPunct(",") {
			return list, nil
		}
		p.next()
	}
}

// columnSpec reads * [EXCEPT (list)] or (list); COLUMNS also accepts a bare list.
func (p *parser) columnSpec(clause string, bare bool) (*ColumnSpec, *Error) {
	spec := &ColumnSpec{Pos: p.peek().Pos}
	switch {
	case p.isPunct("*"):
		p.next()
		spec.All = true
		if p.peek().is("EXCEPT") {
			p.next()
			list, err := p.parenList(clause + " * EXCEPT")
			if err != nil {
				return nil, err
			}
			spec.Except = list
		}
	case p.isPunct("("):
		list, err := p.parenList(clause)
		if err != nil {
			return nil, err
		}
		spec.List = list
	case bare && (p.peek().Kind == tokIdent || p.peek().Kind == tokQuoted):
		list, err := p.nameList(clause)
		if err != nil {
			return nil, err
		}
		spec.List = list
	default:
		return nil, errorf(p.peek().Pos, "%s expects * , * EXCEPT (...) or (column, ...), found %s", clause, p.peek().describe())
	}
	return spec, nil
}

// clauseStart reports whether the token at the top level of a condition
// starts the next clause, which ends the condition.
func (p *parser) clauseStart() bool {
	t := p.peek()
	switch {
	case t.Kind == tokEOF, t.Kind == tokPunct && t.Text == ";":
		return true
	case t.is("KEYS"), t.is("SEQUENCE"), t.is("COLUMNS"), t.is("STORED"), t.is("WHERE"):
		return true
	case t.is("APPLY") && p.peekN(1).is("AS"):
		return true
	case t.is("TRACK") && p.peekN(1).is("HISTORY"):
		return true
	case t.is("IGNORE") && p.peekN(1).is("NULL") && p.peekN(2).is("UPDATES"):
		return true
	}
	return false
}

func (p *parser) expr(clause string) (*Expr, *Error) {
	e := &Expr{Pos: p.peek().Pos}
	depth := 0
	for depth > 0 || !p.clauseStart() {
		t := p.peek()
		if t.Kind == tokEOF || (t.Kind == tokPunct && t.Text == ";") {
			return nil, errorf(t.Pos, "unbalanced parentheses in %s condition", clause)
		}
		switch {
		case t.Kind == tokPunct && t.Text == "(":
			depth++
		case t.Kind == tokPunct && t.Text == ")":
			if depth == 0 {
				return nil, errorf(t.Pos, "unbalanced ')' in %s condition", clause)
			}
			depth--
		}
		e.toks = append(e.toks, p.next())
	}
	if len(e.toks) == 0 {
		return nil, errorf(e.Pos, "%s needs a condition", clause)
	}
	return e, nil
}

// checkStructure enforces the rules that need no schema.
func checkStructure(f *Flow) *Error {
	if f.Keys == nil {
		return errorf(f.Pos, "flow %s has no KEYS: add KEYS (column, ...) naming the primary key", f.Name)
	}
	if f.Sequence == nil {
		return errorf(f.Pos, "flow %s has no SEQUENCE BY: add SEQUENCE BY _cdc_sequence (the source log position) or your own ordering column", f.Name)
	}
	if f.SCDType == 1 && f.TrackHistory != nil {
		return errorf(f.clauses["TRACK HISTORY"], "TRACK HISTORY ON needs STORED AS SCD TYPE 2: SCD type 1 keeps no history to track")
	}
	if f.SCDType == 2 && f.TruncateWhen != nil {
		return errorf(f.clauses["APPLY AS TRUNCATE WHEN"], "APPLY AS TRUNCATE WHEN is only supported with SCD TYPE 1 (as in Databricks): remove it or use STORED AS SCD TYPE 1")
	}
	return nil
}

// String renders a short summary used in view descriptions.
func (f *Flow) String() string {
	keys := make([]string, len(f.Keys))
	for i, k := range f.Keys {
		keys[i] = k.Name
	}
	seq := make([]string, len(f.Sequence))
	for i, s := range f.Sequence {
		seq[i] = s.Name
	}
	sequence := strings.Join(seq, ", ")
	if f.SequenceStruct {
		sequence = "STRUCT(" + sequence + ")"
	}
	return fmt.Sprintf("flow %s: %s INTO %s FROM STREAM(%s) KEYS (%s) SEQUENCE BY %s STORED AS SCD TYPE %d",
		f.Name, f.Spelling, f.Target, f.Source.Name, strings.Join(keys, ", "), sequence, f.SCDType)
}
