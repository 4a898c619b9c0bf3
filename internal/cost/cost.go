// Package cost models BigQuery on-demand billing of the SQL bqcdc runs, so
// tests and benchmarks can price statements the emulator runs for free
// (it bills 0 bytes and prunes nothing).
//
// A Model holds tables as BigQuery stores them: columns with their logical
// bytes per row (BigQuery's documented data sizes, ColumnBytes) and blocks
// of rows, each in one day partition and with the range of the first
// clustering column it holds. Estimate reads a statement (or a script of
// them) as the renderer produces it and applies BigQuery's documented
// rules:
//
//   - A query is billed for the columns it references of each table it
//     reads, over the blocks it cannot rule out; LIMIT and filters on other
//     columns reduce nothing.
//   - Partitions and clustered blocks are pruned by constant filters in the
//     WHERE of the scope that reads the table (top-level AND conjuncts of
//     col = < <= > >= literal, col BETWEEN, col IN (literals), col IS
//     [NOT] NULL, a parenthesized OR of these on one column; IFNULL,
//     COALESCE and CAST(NULL AS t) of literals fold to constants). A filter
//     with a subquery, a query parameter or another table's column prunes
//     nothing. A constant filter of an outer scope prunes too where it
//     moves down to the table's scan: through scopes of one source that
//     keep its column as is, partition every window by it, group by it if
//     they group, and have no LIMIT (pushdown.go; assumed of BigQuery's
//     optimizer, as the standard rule, not verified against it).
//   - SELECT * reads every column when its rows reach the statement's
//     result, else the columns the statement names anywhere (BigQuery
//     reads only the columns a query uses).
//   - INSERT ... SELECT is billed for the SELECT (the target is not read).
//     DELETE and UPDATE are billed for what they read plus the size of the
//     table they modify, all columns (of a partitioned table, of the
//     partitions they touch); a DELETE whose WHERE is only a constant
//     filter on the partitioning column drops the partitions it covers
//     whole, for free.
//   - Each table a statement reads is billed at least 10 MB, and the
//     statement's total is rounded up to a whole MB (MB = 2^20 bytes, as
//     BigQuery counts). A table a statement reads 0 bytes of (empty, or
//     every block pruned) is billed 0: BigQuery's dry run reports 0 then.
//   - A table read several times by one statement is billed once per
//     column and block (the union of what its references read).
//   - DDL (CREATE VIEW, CREATE TABLE FUNCTION, DROP, ALTER) is free; the
//     Body of a view's or table function's DDL estimates what its body reads
//     (parameters prune nothing there).
//
// What the model cannot know: BigQuery sizes blocks adaptively and
// re-clusters data written after a table was clustered in the background,
// so the blocks are the caller's assumption (DefaultBlockBytes), as is
// every block being sorted by the clustering column. STRUCT columns are
// priced whole (BigQuery reads only the fields used). Correlated references
// to an outer scope's table, MERGE, TRUNCATE and table function calls are
// not modelled (Estimate refuses the last three).
//
// The model has a lexer of its own (lex.go), beside the flow parser's
// (internal/flow/lexer.go), because they read different languages for
// different readers. The flow lexer reads what users write (the AUTO CDC
// grammar, Spark's == and <=>, a byte-order mark), bounds it (file size,
// nesting) and reports line:column for editors; it never sees the SQL bqcdc
// generates. This one reads that generated BigQuery SQL whole: scripts,
// bytes literals, raw and triple-quoted strings, query parameters, and the
// matching parenthesis of every '(' that the scope and pushdown readers
// walk by; its errors are byte offsets in a statement no user wrote.
// Sharing one would put each reader's cases (and bounds) in the other's
// way; both are tested against their own inputs (cost's against every
// golden statement, render_test.go).
package cost

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// MB is the unit on-demand billing rounds to.
const MB = 1 << 20

// MinPerTable is what on-demand billing charges at least per table read.
const MinPerTable = 10 * MB

// A Model is the tables (and views) statements read.
type Model struct {
	Tables map[string]*Table
	// Views are expanded where a statement reads them: name -> the view's SQL.
	Views map[string]string
}

// NewModel returns a model of the given tables.
func NewModel(tables ...*Table) *Model {
	m := &Model{Tables: map[string]*Table{}, Views: map[string]string{}}
	for _, t := range tables {
		m.Tables[t.Name] = t
	}
	return m
}

// An Estimate is what a script (one statement or several separated by
// semicolons) would be billed.
type Estimate struct {
	Statements []Statement
	Billed     int64 // the sum of the statements'
}

// A Statement is one statement's estimate.
type Statement struct {
	Kind   string // SELECT, INSERT, DELETE, UPDATE, CREATE TABLE, DDL
	Tables []TableUse
	Billed int64
	// Body: for the DDL of a view or table function, what its body reads
	// (billed when it is queried, not when it is created).
	Body *Statement
}

// A TableUse is what a statement reads of one table.
type TableUse struct {
	Table       string
	Columns     []string // the columns referenced, in table order
	BlocksKept  int      // blocks no filter rules out (of any reference)
	BlocksTotal int
	// ReadBytes: the referenced columns over the blocks kept.
	ReadBytes int64
	// RewriteBytes: for the target of a DELETE or UPDATE, every column of
	// the table (or of the partitions it touches) that DML bills for.
	RewriteBytes int64
	ScannedBytes int64 // ReadBytes + RewriteBytes
	BilledBytes  int64 // with the 10 MB minimum
	Target       bool  // the statement modifies it
}

// Table returns what the statement reads of the named table (zero if
// nothing).
func (s Statement) Table(name string) TableUse {
	for _, u := range s.Tables {
		if u.Table == name {
			return u
		}
	}
	return TableUse{Table: name}
}

// Scanned sums the scanned bytes of the named table over the script's
// statements (before the 10 MB minimum).
func (e *Estimate) Scanned(name string) int64 {
	var n int64
	for _, s := range e.Statements {
		n += s.Table(name).ScannedBytes
	}
	return n
}

// Estimate estimates what BigQuery on-demand billing charges for sql, one
// statement or a script.
func (m *Model) Estimate(sql string) (*Estimate, error) {
	toks, err := lex(sql)
	if err != nil {
		return nil, err
	}
	stmts, err := statements(toks)
	if err != nil {
		return nil, err
	}
	e := &Estimate{}
	for i, st := range stmts {
		s, err := m.statement(st)
		if err != nil {
			if len(stmts) > 1 {
				return nil, fmt.Errorf("statement %d: %w", i+1, err)
			}
			return nil, err
		}
		e.Statements = append(e.Statements, s)
		e.Billed += s.Billed
	}
	return e, nil
}

func (m *Model) statement(toks []token) (Statement, error) {
	toks, err := m.expandViews(toks, 0)
	if err != nil {
		return Statement{}, err
	}
	a := &analyzer{m: m, toks: toks, ctes: map[string][]*block{}, hidden: map[int]bool{}}
	t := toks
	n := len(t)
	kind := ""
	var target *ref
	switch first := t[0]; {
	case first.is("SELECT") || first.is("WITH") || first.punct("("):
		kind = "SELECT"
		a.main = a.query(0, n, true)
	case first.is("INSERT"):
		kind = "INSERT"
		i := 1
		if i < n && t[i].is("INTO") {
			i++
		}
		name, next, ok := a.path(i, n)
		if !ok {
			return Statement{}, fmt.Errorf("offset %d: INSERT without a table", first.pos)
		}
		if tb, ok := m.Tables[name]; ok {
			target = &ref{t: tb}
		}
		i = next
		if i < n && t[i].punct("(") && !isQueryStart(t, i+1) {
			for k := i; k <= t[i].match; k++ {
				a.hidden[k] = true
			}
			i = t[i].match + 1
		}
		if i < n && !t[i].is("VALUES") {
			a.main = a.query(i, n, true)
		}
	case first.is("DELETE") || first.is("UPDATE"):
		kind = first.up
		i := 1
		if i < n && t[i].is("FROM") {
			i++
		}
		name, next, ok := a.path(i, n)
		if !ok {
			return Statement{}, fmt.Errorf("offset %d: %s without a table", first.pos, kind)
		}
		tb, ok := m.Tables[name]
		if !ok {
			return Statement{}, &MissingTableError{Name: name, Offset: first.pos, Modifies: true}
		}
		alias, after := a.alias(next, n)
		target = &ref{t: tb, alias: alias, target: true}
		a.refs = append(a.refs, target)
		a.main = []*block{a.block(after, n, false, []source{{ref: target, alias: alias}})}
	case first.is("CREATE"):
		return m.create(a)
	case first.is("DROP") || first.is("ALTER"):
		return Statement{Kind: "DDL"}, nil
	default:
		return Statement{}, fmt.Errorf("offset %d: %s statements are not modelled", first.pos, first.text)
	}
	if a.err != nil {
		return Statement{}, a.err
	}
	a.reach()
	s := a.bill(kind)
	if target != nil && kind == "INSERT" {
		// The target is written, not read: listed (billed for what the
		// SELECT reads of it, if it reads it).
		i := slices.IndexFunc(s.Tables, func(u TableUse) bool { return u.Table == target.t.Name })
		if i < 0 {
			s.Tables = append(s.Tables, TableUse{Table: target.t.Name, BlocksTotal: len(target.t.Blocks)})
			i = len(s.Tables) - 1
		}
		s.Tables[i].Target = true
	}
	return s, nil
}

// create estimates a CREATE statement: CREATE TABLE ... AS SELECT is
// billed for its SELECT; a view's or table function's DDL is free, its
// Body what the body reads.
func (m *Model) create(a *analyzer) (Statement, error) {
	t := a.toks
	n := len(t)
	i := 1
	for i < n && (t[i].is("OR") || t[i].is("REPLACE") || t[i].is("TEMP") || t[i].is("TEMPORARY") || t[i].is("MATERIALIZED")) {
		i++
	}
	body := -1
	for j := i; j < n; j++ {
		if t[j].punct("(") {
			j = t[j].match
			continue
		}
		if t[j].is("AS") && j+1 < n && isQueryStart(t, j+1) {
			body = j + 1
			break
		}
	}
	if i < n && t[i].is("TABLE") && !(i+1 < n && t[i+1].is("FUNCTION")) {
		if body < 0 {
			return Statement{Kind: "DDL"}, nil
		}
		a.main = a.query(body, n, true)
		if a.err != nil {
			return Statement{}, a.err
		}
		a.reach()
		return a.bill("CREATE TABLE"), nil
	}
	s := Statement{Kind: "DDL"}
	if body >= 0 && i < n && (t[i].is("VIEW") || t[i].is("TABLE")) {
		// The body as a statement of its own (its parentheses matched anew).
		bt := append([]token(nil), t[body:]...)
		matchParens(bt)
		b, err := m.statement(bt)
		if err != nil {
			return Statement{}, fmt.Errorf("the body: %w", err)
		}
		s.Body = &b
	}
	return s, nil
}

// expandViews replaces each view a FROM or JOIN reads with its query in
// parentheses.
func (m *Model) expandViews(toks []token, depth int) ([]token, error) {
	if len(m.Views) == 0 {
		return toks, nil
	}
	a := &analyzer{toks: toks, hidden: map[int]bool{}}
	var out []token
	changed := false
	for i := 0; i < len(toks); i++ {
		if i > 0 && (toks[i-1].is("FROM") || toks[i-1].is("JOIN")) {
			if name, next, ok := a.path(i, len(toks)); ok {
				if sql, ok := m.Views[name]; ok {
					if depth > 16 {
						return nil, fmt.Errorf("view %s: views nested too deep", name)
					}
					vt, err := lex(strings.TrimRight(strings.TrimSpace(sql), ";"))
					if err != nil {
						return nil, fmt.Errorf("view %s: %w", name, err)
					}
					out = append(out, token{kind: kPunct, text: "(", pos: toks[i].pos})
					for _, x := range vt {
						x.pos = toks[i].pos
						out = append(out, x)
					}
					out = append(out, token{kind: kPunct, text: ")", pos: toks[i].pos})
					i = next - 1
					changed = true
					continue
				}
			}
		}
		out = append(out, toks[i])
	}
	if !changed {
		return toks, nil
	}
	matchParens(out)
	return m.expandViews(out, depth+1)
}

// reads is what one table's references read: per column, the blocks.
type reads struct {
	t       *Table
	cols    map[string][]bool
	kept    []bool
	rewrite []bool // blocks of the partitions a DML target's statement bills whole
	target  bool
}

// bill prices what the analyzed statement reads.
func (a *analyzer) bill(kind string) Statement {
	per := map[string]*reads{}
	var order []string
	for _, r := range a.refs {
		if r.blk == nil {
			continue
		}
		rd, ok := per[r.t.Name]
		if !ok {
			rd = &reads{t: r.t, cols: map[string][]bool{}, kept: make([]bool, len(r.t.Blocks))}
			per[r.t.Name] = rd
			order = append(order, r.t.Name)
		}
		kept, free := a.prune(r, kind)
		if r.target {
			rd.target = true
			rd.rewrite = a.rewritten(r, kept, free)
		}
		for i, k := range kept {
			if k && !free[i] {
				rd.kept[i] = true
			}
		}
		for c := range a.columns(r) {
			bs := rd.cols[c]
			if bs == nil {
				bs = make([]bool, len(r.t.Blocks))
				rd.cols[c] = bs
			}
			for i, k := range kept {
				if k && !free[i] {
					bs[i] = true
				}
			}
		}
	}
	s := Statement{Kind: kind}
	var billed int64
	for _, name := range order {
		rd := per[name]
		u := TableUse{Table: name, BlocksTotal: len(rd.t.Blocks), Target: rd.target}
		var read, rewrite float64
		for _, c := range rd.t.Columns {
			bs, ok := rd.cols[c.Name]
			if !ok {
				continue
			}
			u.Columns = append(u.Columns, c.Name)
			for i, k := range bs {
				if k {
					read += float64(rd.t.Blocks[i].Rows) * c.Bytes
				}
			}
		}
		for i, k := range rd.kept {
			if k {
				u.BlocksKept++
			}
			if rd.rewrite != nil && rd.rewrite[i] {
				rewrite += float64(rd.t.Blocks[i].Rows) * rd.t.RowBytes()
			}
		}
		u.ReadBytes, u.RewriteBytes = int64(math.Ceil(read)), int64(math.Ceil(rewrite))
		u.ScannedBytes = u.ReadBytes + u.RewriteBytes
		if u.ScannedBytes > 0 {
			u.BilledBytes = max(u.ScannedBytes, MinPerTable)
		}
		billed += u.BilledBytes
		s.Tables = append(s.Tables, u)
	}
	s.Billed = (billed + MB - 1) / MB * MB
	return s
}

// prune returns the blocks of r's table its scope's WHERE keeps, and of
// those the ones a DELETE drops as whole partitions, for free.
func (a *analyzer) prune(r *ref, kind string) (kept, free []bool) {
	t := r.t
	kept = make([]bool, len(t.Blocks))
	free = make([]bool, len(t.Blocks))
	types := map[string]string{}
	for _, name := range []string{t.Partition, t.Cluster} {
		if c, ok := t.column(name); ok {
			types[strings.ToLower(c.Name)] = c.Type
		}
	}
	res := restriction{exact: true}
	if w := r.blk.where; w[0] >= 0 {
		p := &pruner{toks: a.toks, names: r.names(), types: types}
		res = p.eval(w[0], w[1])
	}
	if res.never {
		return kept, free
	}
	a.pushDown(r, &res, types)
	partSet, partOK := res.cols[strings.ToLower(t.Partition)]
	clustSet, clustOK := res.cols[strings.ToLower(t.Cluster)]
	partType := types[strings.ToLower(t.Partition)]
	// Whole partitions: the WHERE is exactly a filter on the partitioning
	// column (nothing else restricted or unknown).
	wholeOnly := kind == "DELETE" && r.target && t.Partition != "" && res.exact &&
		(len(res.cols) == 0 || len(res.cols) == 1 && partOK)
	for i, b := range t.Blocks {
		pr := t.partitionRange(b, partType)
		if t.Partition != "" && partOK && !partSet.overlaps(pr, b.NullPartition) {
			continue
		}
		if t.Cluster != "" && clustOK {
			cr := interval{lo: bound{v: b.Min, inc: true}, hi: bound{v: b.Max, inc: true}}
			if !clustSet.overlaps(cr, b.Nulls) {
				continue
			}
		}
		kept[i] = true
		if wholeOnly && (!partOK || partSet.contains(pr, b.NullPartition)) {
			free[i] = true
		}
	}
	return kept, free
}

// partitionRange is the values of the partitioning column in b's partition.
func (t *Table) partitionRange(b Block, typ string) interval {
	if b.NullPartition {
		return interval{} // no non-NULL values
	}
	switch typ {
	case "INT64": // integer range partitioning: of interval 1, Day is the value
		lo, hi := b.Day, b.Day
		if t.Ranges > 1 {
			lo = t.RangeStart + b.Day*t.Ranges
			hi = lo + t.Ranges - 1
		}
		return interval{lo: bound{v: Value{k: vInt, i: lo}, inc: true}, hi: bound{v: Value{k: vInt, i: hi}, inc: true}}
	case "DATE":
		v := Value{k: vDate, i: b.Day}
		return interval{lo: bound{v: v, inc: true}, hi: bound{v: v, inc: true}}
	case "DATETIME":
		return dayMicros(vDatetime, b.Day)
	}
	return dayMicros(vTimestamp, b.Day)
}

// dayMicros is a day's values in microseconds, its last one included (the
// values are discrete).
func dayMicros(k vkind, day int64) interval {
	const us = 86_400_000_000
	return interval{lo: bound{v: Value{k: k, i: day * us}, inc: true}, hi: bound{v: Value{k: k, i: (day+1)*us - 1}, inc: true}}
}

// rewritten is the blocks DML bills whole for its target: the table's
// (not partitioned), or those of the partitions holding kept blocks that
// are not dropped whole.
func (a *analyzer) rewritten(r *ref, kept, free []bool) []bool {
	t := r.t
	out := make([]bool, len(t.Blocks))
	if t.Partition == "" {
		for i := range out {
			out[i] = true
		}
		return out
	}
	touched := map[Partition]bool{}
	for i, b := range t.Blocks {
		if kept[i] && !free[i] {
			touched[b.partition()] = true
		}
	}
	for i, b := range t.Blocks {
		out[i] = touched[b.partition()]
	}
	return out
}

func (b Block) partition() Partition {
	if b.NullPartition {
		return Partition{Null: true}
	}
	return Partition{Day: b.Day}
}

// Summary is a one-line account of an estimate, for test logs.
func (s Statement) Summary() string {
	var parts []string
	for _, u := range s.Tables {
		parts = append(parts, fmt.Sprintf("%s: %d/%d blocks, %d B scanned (%s)", u.Table, u.BlocksKept, u.BlocksTotal, u.ScannedBytes, strings.Join(u.Columns, ",")))
	}
	sort.Strings(parts)
	out := fmt.Sprintf("%s billed %d B; %s", s.Kind, s.Billed, strings.Join(parts, "; "))
	if s.Body != nil {
		out += " | its body: " + s.Body.Summary()
	}
	return out
}

// MissingTableError is a statement reading (or modifying) a table the
// model lacks.
type MissingTableError struct {
	Name     string
	Offset   int
	Modifies bool
}

func (e *MissingTableError) Error() string {
	verb := "reads"
	if e.Modifies {
		verb = "modifies"
	}
	return fmt.Sprintf("offset %d: the statement %s %s, which the model lacks", e.Offset, verb, e.Name)
}

// MissingTable returns the table an Estimate error says the model lacks.
func MissingTable(err error) (string, bool) {
	var m *MissingTableError
	if errors.As(err, &m) {
		return m.Name, true
	}
	return "", false
}

// SplitName splits a model's table name into project, dataset and table.
func SplitName(name string) (project, dataset, table string, ok bool) {
	parts := strings.Split(name, ".")
	if len(parts) != 3 {
		return "", "", "", false
	}
	return parts[0], parts[1], parts[2], true
}

// Name is the model's name of a table as SQL spells it (`p`.`d`.`t` or
// `p.d.t`): its parts joined by dots.
func Name(sql string) string {
	toks, err := lex(sql)
	if err != nil {
		return sql
	}
	a := &analyzer{toks: toks, hidden: map[int]bool{}}
	name, next, ok := a.path(0, len(toks))
	if !ok || next != len(toks) {
		return sql
	}
	return name
}
