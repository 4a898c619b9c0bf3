package flow

import (
	"fmt"
	"regexp"
	"strings"
)

// Parse parses every statement in one file. It returns the flows it could
// parse and an ErrorList with one error per statement it refused: the parser
// resynchronises at each ';', so a refused statement never hides the others.
//
// Besides flows, a file may declare their target tables the way Databricks
// requires before APPLY CHANGES INTO (CREATE OR REFRESH STREAMING TABLE t;,
// with or without a schema, COMMENT or TBLPROPERTIES). Such declarations are
// accepted: bqcdc creates each target itself, as a view whose columns come
// from the flow, and of their clauses takes only the change feed's table
// property (ChangeDataFeedProperty).
func Parse(file, src string) ([]*Flow, error) {
	flows, _, err := ParseAll(file, src)
	return flows, err
}

// statements reads every statement: flows are returned, materialized views
// collected in p.golds, declarations dropped.
func (p *parser) statements() ([]*Flow, ErrorList) {
	var flows []*Flow
	var errs ErrorList
	for p.peek().Kind != tokEOF {
		if p.isPunct(";") {
			p.next()
			continue
		}
		f := &Flow{Pos: p.peek().Pos, SCDType: 1, clauses: map[string]Pos{}}
		first := p.i
		isFlow, err := p.statement(f)
		if err != nil {
			if t := p.peek(); t.Kind == tokInvalid {
				err = errorf(t.Pos, "%s", t.Text) // what the lexer could not read is the cause
			}
			if err.Flow == "" {
				err.Flow = f.Name
			}
			errs = append(errs, err)
			if p.i > first && p.statementStartAt(0) && err.Pos == p.peek().Pos {
				continue // a ';' is missing: the next statement is read on its own
			}
			p.skipStatement()
			continue
		}
		if isFlow {
			flows = append(flows, f)
		}
	}
	return flows, errs
}

type parser struct {
	toks  []token
	i     int
	golds []*Gold     // the materialized views read so far
	decls []tableDecl // the streaming tables declared so far
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

// statement reads one statement into f. It reports false for a target table
// declaration, which holds no flow.
//
// The spellings, from the Databricks SQL references (see rules.go):
//
//	CREATE FLOW name [COMMENT 'text'] AS AUTO CDC INTO target ...   (AUTO CDC INTO, CREATE FLOW)
//	CREATE FLOW name AS APPLY CHANGES INTO target ...               (the older spelling)
//	APPLY CHANGES INTO target ...                                   (flow name = target table)
//	AUTO CDC INTO target ...                                        (the same, newer keyword)
//	CREATE [OR REFRESH] STREAMING TABLE target [...] FLOW AUTO CDC ... (Databricks SQL)
//	CREATE [OR REFRESH] [PRIVATE|TEMPORARY] STREAMING [LIVE] TABLE target [...]; (a declaration: ignored)
func (p *parser) statement(f *Flow) (bool, *Error) {
	start := p.peek()
	switch {
	case start.is("CREATE"):
		p.next()
		if p.peek().is("OR") {
			if err := p.keywords("OR", "REFRESH"); err != nil {
				return false, err
			}
		}
		if t := p.peek(); (t.is("PRIVATE") || t.is("TEMPORARY")) && p.peekN(1).is("STREAMING") {
			p.next() // a table the pipeline does not publish: bqcdc's view is its own
		}
		switch t := p.peek(); {
		case t.is("FLOW"):
			p.next()
			return true, p.createFlow(f)
		case t.is("STREAMING"):
			return p.streamingTable(f)
		case t.is("MATERIALIZED"):
			p.next()
			if err := p.keywords("VIEW"); err != nil {
				return false, err
			}
			g, err := p.gold(start.Pos)
			if err != nil {
				return false, err
			}
			p.golds = append(p.golds, g)
			return false, nil
		default:
			return false, errorf(t.Pos, "expected FLOW, STREAMING TABLE or MATERIALIZED VIEW after CREATE, found %s: views and tables defined by a query are not flows", t.describe())
		}
	case start.is("APPLY"):
		if err := p.spelling(f, "APPLY CHANGES"); err != nil {
			return false, err
		}
	case start.is("AUTO"):
		if err := p.spelling(f, "AUTO CDC"); err != nil {
			return false, err
		}
	default:
		return false, errorf(start.Pos, "expected CREATE FLOW ... AS AUTO CDC INTO, APPLY CHANGES INTO or CREATE STREAMING TABLE, found %s", start.describe())
	}
	if err := p.intoTarget(f); err != nil {
		return false, err
	}
	return true, p.body(f)
}

// createFlow reads the rest of CREATE FLOW name [COMMENT 'text'] AS ... INTO.
func (p *parser) createFlow(f *Flow) *Error {
	n, err := p.name("a flow name")
	if err != nil {
		return err
	}
	if !plainName.MatchString(n.Name) {
		return errorf(n.Pos, "flow name %q must be letters, digits and underscores, starting with a letter or underscore", n.Name)
	}
	f.Name = n.Name
	if p.peek().is("COMMENT") {
		p.next()
		c := p.peek()
		if c.Kind != tokString {
			return errorf(c.Pos, "COMMENT expects a string, found %s", c.describe())
		}
		p.next()
		f.Comment = c.Text
	}
	if err := p.keywords("AS"); err != nil {
		return err
	}
	switch t := p.peek(); {
	case t.is("AUTO"):
		if err := p.spelling(f, "AUTO CDC"); err != nil {
			return err
		}
	case t.is("APPLY"):
		if err := p.spelling(f, "APPLY CHANGES"); err != nil {
			return err
		}
	case t.is("INSERT"):
		return errorf(t.Pos, "append flows (CREATE FLOW ... AS INSERT INTO) are not supported: bqcdc maintains views from AUTO CDC flows only")
	default:
		return errorf(t.Pos, "expected AUTO CDC INTO or APPLY CHANGES INTO, found %s", t.describe())
	}
	if err := p.intoTarget(f); err != nil {
		return err
	}
	return p.body(f)
}

// spelling reads AUTO CDC [FROM SNAPSHOT] INTO or APPLY CHANGES [FROM
// SNAPSHOT] INTO (spelling is "AUTO CDC" or "APPLY CHANGES"). FROM SNAPSHOT
// makes a snapshot flow, whose FROM names a BigQuery table.
func (p *parser) spelling(f *Flow, spelling string) *Error {
	first, second, _ := strings.Cut(spelling, " ")
	if err := p.keywords(first, second); err != nil {
		return err
	}
	f.Spelling = spelling
	if p.peek().is("FROM") && p.peekN(1).is("SNAPSHOT") {
		p.next()
		p.next()
		f.fromSnapshot = true
	}
	return p.keywords("INTO")
}

// intoTarget reads the target after INTO; a flow without a name is named
// after its target table.
func (p *parser) intoTarget(f *Flow) *Error {
	target, err := p.target()
	if err != nil {
		return err
	}
	f.Target = target
	if f.Name == "" {
		f.Name = target.Table
	}
	return nil
}

// streamingTable reads CREATE [OR REFRESH] STREAMING [LIVE] TABLE after
// CREATE [OR REFRESH]: a declaration (ignored), or Databricks SQL's
// CREATE STREAMING TABLE t ... FLOW AUTO CDC FROM ..., a flow named after
// its table. The table's own clauses (a schema, COMMENT, TBLPROPERTIES,
// CLUSTER BY, ...) are skipped: the view bqcdc creates takes its columns from
// the flow.
func (p *parser) streamingTable(f *Flow) (bool, *Error) {
	p.next() // STREAMING
	if p.peek().is("LIVE") {
		p.next() // the legacy CREATE STREAMING LIVE TABLE
	}
	if err := p.keywords("TABLE"); err != nil {
		return false, err
	}
	target, err := p.target()
	if err != nil {
		return false, err
	}
	d := tableDecl{target: target}
	depth := 0
	for {
		t := p.peek()
		switch {
		case t.Kind == tokEOF:
			return false, errorf(t.Pos, "CREATE STREAMING TABLE %s is not terminated: add ';'", target)
		case t.Kind == tokInvalid:
			return false, errorf(t.Pos, "%s", t.Text)
		case depth == 0 && t.is("TBLPROPERTIES"):
			if err := p.tableProperties(&d); err != nil {
				return false, err
			}
			continue
		case t.Kind == tokPunct && t.Text == ";":
			p.next()
			p.decls = append(p.decls, d)
			return false, nil
		case t.Kind == tokPunct && t.Text == "(":
			depth++
		case t.Kind == tokPunct && t.Text == ")" && depth > 0:
			depth--
		case depth == 0 && t.is("AS"):
			return false, errorf(t.Pos, "streaming table %s is defined by a query, not an AUTO CDC flow: bqcdc runs AUTO CDC flows only", target)
		case depth == 0 && t.is("FLOW") && p.peekN(1).is("AUTO"):
			p.next()
			if err := p.keywords("AUTO", "CDC"); err != nil {
				return false, err
			}
			f.Spelling, f.Target, f.Name, f.NoChangeFeed = "AUTO CDC", target, target.Table, d.noFeed
			if d.says() {
				p.decls = append(p.decls, d) // applyDecls checks the flow's kind
			}
			return true, p.body(f)
		}
		p.next()
	}
}

// body reads FROM source, the clauses and the closing ';'.
func (p *parser) body(f *Flow) *Error {
	if err := p.keywords("FROM"); err != nil {
		return err
	}
	// FROM SNAPSHOT table (Databricks SQL's CREATE STREAMING TABLE ... FLOW
	// AUTO CDC FROM SNAPSHOT), unless SNAPSHOT is a topic's name.
	if !f.fromSnapshot && p.peek().is("SNAPSHOT") && (p.peekN(1).Kind == tokIdent || p.peekN(1).Kind == tokQuoted) && !p.clauseStartAt(1) {
		p.next()
		f.fromSnapshot = true
	}
	var err *Error
	if f.fromSnapshot {
		if f.Snapshot, err = p.snapshotTable(); err != nil {
			return err
		}
	} else if f.Source, err = p.from(); err != nil {
		return err
	}
	for !p.isPunct(";") && p.peek().Kind != tokEOF {
		if err := p.clause(f); err != nil {
			return err
		}
	}
	if p.peek().Kind == tokEOF {
		return errorf(p.peek().Pos, "not terminated: add ';' after its last clause")
	}
	if err := checkStructure(f); err != nil {
		return err // the caller skips to the ';'
	}
	p.next()
	return nil
}

// from reads the source after FROM: STREAM(source), STREAM source, or the
// source alone (Databricks reads a streaming view that way; a Pub/Sub topic
// is always a stream).
func (p *parser) from() (Ident, *Error) {
	if p.peek().is("STREAM") {
		switch n := p.peekN(1); {
		case n.Kind == tokPunct && n.Text == "(":
			p.next()
			p.next()
			src, err := p.source()
			if err != nil {
				return Ident{}, err
			}
			return src, p.punct(")")
		case n.Kind == tokQuoted || n.Kind == tokString || n.Kind == tokIdent && !p.clauseStartAt(1):
			p.next()
		}
		// else: a topic named STREAM
	}
	return p.source()
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

// BigQuery dataset ids are letters, digits and underscores; table ids may
// also hold dashes, spaces and Unicode letters, marks and numbers.
var (
	datasetName = regexp.MustCompile(`^[A-Za-z0-9_]+$`)
	tableName   = regexp.MustCompile(`^[\p{L}\p{M}\p{N}\p{Pc}\p{Pd} ]+$`)
)

// snapshotTable reads the table a snapshot flow reads: dataset.table, plain
// or `quoted` (`dataset.table` or `dataset`.`table`), in the deployment's
// project. Every name is checked here and quoted wherever SQL names it.
func (p *parser) snapshotTable() (*SnapshotSource, *Error) {
	pos := p.peek().Pos
	var parts []string
	for {
		t := p.peek()
		var name string
		switch t.Kind {
		case tokIdent:
			name = t.Text
		case tokQuoted:
			name = t.Text
		default:
			return nil, errorf(t.Pos, "expected the snapshot table (dataset.table), found %s", t.describe())
		}
		p.next()
		if t.Kind == tokQuoted {
			parts = append(parts, strings.Split(name, ".")...)
		} else {
			parts = append(parts, name)
		}
		if !p.isPunct(".") {
			break
		}
		p.next()
	}
	whole := strings.Join(parts, ".")
	switch {
	case len(parts) == 1:
		return nil, errorf(pos, "snapshot table %q: write dataset.table (the table's dataset must be named)", whole)
	case len(parts) > 2:
		return nil, errorf(pos, "snapshot table %q: write dataset.table (the project comes from the deployment)", whole)
	case len(parts[0]) > 1024 || len(parts[1]) > 1024:
		return nil, errorf(pos, "snapshot table %q: BigQuery names are at most 1,024 characters", whole)
	case !datasetName.MatchString(parts[0]):
		return nil, errorf(pos, "snapshot table %q: a dataset name is letters, digits and underscores", whole)
	case !tableName.MatchString(parts[1]):
		return nil, errorf(pos, "snapshot table %q: a table name is letters, marks, numbers, underscores, dashes and spaces", whole)
	}
	return &SnapshotSource{Dataset: parts[0], Table: parts[1], Pos: pos}, nil
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

// open reads the keywords kw that start a clause at t and records the
// clause, named by them, in f: a clause may be given once.
func (p *parser) open(f *Flow, t token, kw ...string) *Error {
	if err := p.keywords(kw...); err != nil {
		return err
	}
	return p.once(f, strings.Join(kw, " "), t.Pos)
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
	case p.statementStartAt(0):
		return errorf(t.Pos, "missing ';' before %s: this statement ends there (the next one is read on its own)", p.describeStatement())
	case t.is("KEYS"):
		return p.keysClause(f, t)
	case t.is("SEQUENCE"):
		return p.sequenceClause(f, t)
	case t.is("COLUMNS") && p.peekN(1).is("TO") && p.peekN(2).is("UPDATE"):
		return errorf(t.Pos, "COLUMNS TO UPDATE is not supported: bqcdc applies every column of each change event")
	case t.is("SYSTEM") && p.peekN(1).is("SEQUENCE"):
		return p.systemSequenceClause(f, t)
	case t.is("VERSION"):
		return p.versionClause(f, t)
	case t.is("COLUMNS"):
		return p.columnsClause(f, t)
	case t.is("WHERE"):
		return p.whereClause(f, t)
	case t.is("APPLY"):
		return p.applyAsClause(f, t)
	case t.is("STORED"):
		return p.storedAsClause(f, t)
	case t.is("TRACK"):
		return p.trackHistoryClause(f, t)
	case t.is("IGNORE"):
		return p.ignoreNullClause(f, t)
	}
	return errorf(t.Pos, "expected a clause (KEYS, SEQUENCE BY, SYSTEM SEQUENCE BY, VERSION BY, COLUMNS, WHERE, APPLY AS DELETE WHEN, APPLY AS TRUNCATE WHEN, STORED AS, TRACK HISTORY ON, IGNORE NULL UPDATES) or ';', found %s", t.describe())
}

// keysClause reads KEYS (k, ...).
func (p *parser) keysClause(f *Flow, t token) (err *Error) {
	if err = p.open(f, t, "KEYS"); err != nil {
		return err
	}
	f.Keys, err = p.parenList("KEYS")
	return err
}

// sequenceClause reads SEQUENCE BY col | SEQUENCE BY STRUCT(col, ...).
func (p *parser) sequenceClause(f *Flow, t token) *Error {
	if err := p.open(f, t, "SEQUENCE", "BY"); err != nil {
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
	return nil
}

// systemSequenceClause reads SYSTEM SEQUENCE BY col: the system time of a
// bitemporal flow (when a fact became known).
func (p *parser) systemSequenceClause(f *Flow, t token) *Error {
	n, err := p.oneColumnClause(f, t, "a system sequence column", "system time is one sortable value", "SYSTEM", "SEQUENCE", "BY")
	if err != nil {
		return err
	}
	f.SystemSequence = n
	return nil
}

// versionClause reads VERSION BY col: what orders a snapshot flow's
// snapshots.
func (p *parser) versionClause(f *Flow, t token) *Error {
	n, err := p.oneColumnClause(f, t, "a version column", "a snapshot's version is one sortable value", "VERSION", "BY")
	if err != nil {
		return err
	}
	f.Version = n
	return nil
}

// oneColumnClause reads a clause of keywords kw and one column (what, in
// errors), given at most once; why says why it takes no STRUCT.
func (p *parser) oneColumnClause(f *Flow, t token, what, why string, kw ...string) (*Ident, *Error) {
	if err := p.open(f, t, kw...); err != nil {
		return nil, err
	}
	if p.peek().is("STRUCT") && p.peekN(1).Kind == tokPunct && p.peekN(1).Text == "(" {
		return nil, errorf(p.peek().Pos, "%s takes one column: %s", strings.Join(kw, " "), why)
	}
	n, err := p.name(what)
	if err != nil {
		return nil, err
	}
	return &n, nil
}

// columnsClause reads COLUMNS col, ... | COLUMNS * EXCEPT (col, ...).
func (p *parser) columnsClause(f *Flow, t token) (err *Error) {
	if err = p.open(f, t, "COLUMNS"); err != nil {
		return err
	}
	f.Columns, err = p.columnSpec("COLUMNS", true)
	return err
}

// whereClause reads WHERE condition.
func (p *parser) whereClause(f *Flow, t token) (err *Error) {
	if err = p.open(f, t, "WHERE"); err != nil {
		return err
	}
	f.Where, err = p.expr("WHERE")
	return err
}

// applyAsClause reads APPLY AS DELETE WHEN condition | APPLY AS TRUNCATE WHEN condition.
func (p *parser) applyAsClause(f *Flow, t token) *Error {
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
	return nil
}

// storedAsClause reads STORED AS SCD TYPE 1 | 2.
func (p *parser) storedAsClause(f *Flow, t token) *Error {
	if err := p.open(f, t, "STORED", "AS"); err != nil {
		return err
	}
	if b := p.peek(); b.is("BITEMPORAL") {
		p.next()
		f.SCDType, f.Bitemporal = 2, true
		return nil
	}
	if err := p.keywords("SCD", "TYPE"); err != nil {
		return err
	}
	n := p.peek()
	if n.Kind != tokNumber || (n.Text != "1" && n.Text != "2") {
		return errorf(n.Pos, "SCD TYPE must be 1 or 2, found %s", n.describe())
	}
	p.next()
	f.SCDType = int(n.Text[0] - '0')
	return nil
}

// trackHistoryClause reads TRACK HISTORY ON col, ... | * EXCEPT (col, ...).
func (p *parser) trackHistoryClause(f *Flow, t token) (err *Error) {
	if err = p.keywords("TRACK", "HISTORY", "ON"); err != nil {
		return err
	}
	if err = p.once(f, "TRACK HISTORY", t.Pos); err != nil {
		return err
	}
	f.TrackHistory, err = p.columnSpec("TRACK HISTORY ON", false)
	return err
}

// ignoreNullClause reads IGNORE NULL UPDATES [ON col, ... | * EXCEPT (col, ...)].
func (p *parser) ignoreNullClause(f *Flow, t token) *Error {
	if err := p.open(f, t, "IGNORE", "NULL", "UPDATES"); err != nil {
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
func (p *parser) clauseStart() bool { return p.clauseStartAt(0) }

// statementStartAt reports whether the token n ahead starts a statement
// (CREATE FLOW, CREATE [OR REFRESH] ... STREAMING TABLE or MATERIALIZED
// VIEW, APPLY CHANGES INTO, AUTO CDC INTO), which no clause or
// condition holds: a statement before it lacks its ';'.
func (p *parser) statementStartAt(n int) bool {
	t := p.peekN(n)
	switch {
	case t.is("CREATE"):
		next := p.peekN(n + 1)
		return next.is("FLOW") || next.is("OR") || next.is("STREAMING") || next.is("MATERIALIZED") ||
			next.is("PRIVATE") || next.is("TEMPORARY")
	case t.is("APPLY"):
		return p.peekN(n + 1).is("CHANGES")
	case t.is("AUTO"):
		return p.peekN(n + 1).is("CDC")
	}
	return false
}

// describeStatement names the statement that starts at the next token, for
// an error: "CREATE FLOW b at file:line:column".
func (p *parser) describeStatement() string {
	t := p.peek()
	switch name := p.peekN(2); {
	case t.is("CREATE") && p.peekN(1).is("FLOW") && (name.Kind == tokIdent || name.Kind == tokQuoted):
		return fmt.Sprintf("CREATE FLOW %s at %s", name.Text, t.Pos)
	case t.is("APPLY"), t.is("AUTO"):
		if target := p.peekN(3); target.Kind == tokIdent || target.Kind == tokQuoted {
			return fmt.Sprintf("%s %s INTO %s at %s", strings.ToUpper(t.Text), strings.ToUpper(p.peekN(1).Text), target.Text, t.Pos)
		}
	}
	return fmt.Sprintf("the statement at %s", t.Pos)
}

// clauseStartAt reports whether the token n ahead starts a clause (or ends
// the statement, or starts the next one: see statementStartAt).
func (p *parser) clauseStartAt(n int) bool {
	t := p.peekN(n)
	switch {
	case t.Kind == tokEOF, t.Kind == tokPunct && t.Text == ";":
		return true
	case p.statementStartAt(n):
		return true
	case t.is("KEYS"), t.is("SEQUENCE"), t.is("COLUMNS"), t.is("STORED"), t.is("WHERE"):
		return true
	case t.is("APPLY") && p.peekN(n+1).is("AS"):
		return true
	case t.is("TRACK") && p.peekN(n+1).is("HISTORY"):
		return true
	case t.is("IGNORE") && p.peekN(n+1).is("NULL") && p.peekN(n+2).is("UPDATES"):
		return true
	case t.is("SYSTEM") && p.peekN(n+1).is("SEQUENCE"):
		return true
	case t.is("VERSION") && p.peekN(n+1).is("BY"):
		return true
	}
	return false
}

func (p *parser) expr(clause string) (*Expr, *Error) {
	e := &Expr{Pos: p.peek().Pos}
	start := p.i
	depth := 0
	for depth > 0 || !p.clauseStart() {
		t := p.peek()
		if t.Kind == tokEOF || (t.Kind == tokPunct && t.Text == ";") {
			return nil, errorf(t.Pos, "unbalanced parentheses in %s condition", clause)
		}
		if t.Kind == tokInvalid {
			return nil, errorf(t.Pos, "%s", t.Text)
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
		p.next()
	}
	// The condition's tokens are the parser's, not a copy: a long one
	// costs no second array.
	e.toks = p.toks[start:p.i:p.i]
	if len(e.toks) == 0 {
		return nil, errorf(e.Pos, "%s needs a condition", clause)
	}
	return e, nil
}

// checkStructure enforces the clause rules that need no schema (rules.go
// lists every rule with its source).
func checkStructure(f *Flow) *Error {
	if f.Keys == nil {
		return errorf(f.Pos, "no KEYS: add KEYS (column, ...) naming the primary key")
	}
	if f.Snapshot != nil {
		return checkSnapshot(f)
	}
	if f.Version != nil {
		return errorf(f.clauses["VERSION BY"], "VERSION BY orders the snapshots of an AUTO CDC FROM SNAPSHOT flow: a change stream is ordered by SEQUENCE BY")
	}
	if f.Sequence == nil {
		return errorf(f.Pos, "no SEQUENCE BY: add SEQUENCE BY _cdc_sequence (the source log position) or your own ordering column")
	}
	if f.SCDType == 1 && f.TrackHistory != nil {
		return errorf(f.clauses["TRACK HISTORY"], "TRACK HISTORY ON needs STORED AS SCD TYPE 2: SCD type 1 keeps no history to track (Databricks refuses it too)")
	}
	if f.Bitemporal {
		if err := checkBitemporal(f); err != nil {
			return err
		}
	} else if f.SystemSequence != nil {
		return errorf(f.clauses["SYSTEM SEQUENCE BY"], "SYSTEM SEQUENCE BY needs STORED AS BITEMPORAL: only a bitemporal target has a system time")
	}
	if f.SCDType == 2 && f.TruncateWhen != nil {
		return errorf(f.clauses["APPLY AS TRUNCATE WHEN"], "APPLY AS TRUNCATE WHEN is only supported with SCD TYPE 1 (as in Databricks): remove it or use STORED AS SCD TYPE 1")
	}
	return nil
}

// checkBitemporal enforces the rules of STORED AS BITEMPORAL (rules.go).
func checkBitemporal(f *Flow) *Error {
	stored := f.clauses["STORED AS"]
	switch {
	case f.SystemSequence == nil:
		return errorf(stored, "STORED AS BITEMPORAL needs SYSTEM SEQUENCE BY column: the system time at which each change became known")
	case f.SequenceStruct:
		return errorf(f.clauses["SEQUENCE BY"], "STORED AS BITEMPORAL needs SEQUENCE BY one column: business time is one sortable value (__START_AT and __END_AT, and the business_time argument of <target>_as_of)")
	case f.TruncateWhen != nil:
		return errorf(f.clauses["APPLY AS TRUNCATE WHEN"], "APPLY AS TRUNCATE WHEN is not supported with STORED AS BITEMPORAL (as with SCD TYPE 2): a truncate has no business time per key")
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
	stored := fmt.Sprintf("STORED AS SCD TYPE %d", f.SCDType)
	if f.Snapshot != nil {
		return fmt.Sprintf("flow %s: %s FROM SNAPSHOT INTO %s FROM %s KEYS (%s) VERSION BY %s %s",
			f.Name, f.Spelling, f.Target, f.Snapshot, strings.Join(keys, ", "), f.Version.Name, stored)
	}
	if f.Bitemporal {
		stored = "SYSTEM SEQUENCE BY " + f.SystemSequence.Name + " STORED AS BITEMPORAL"
	}
	return fmt.Sprintf("flow %s: %s INTO %s FROM STREAM(%s) KEYS (%s) SEQUENCE BY %s %s",
		f.Name, f.Spelling, f.Target, f.Source.Name, strings.Join(keys, ", "), sequence, stored)
}
