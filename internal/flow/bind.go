package flow

import (
	"errors"
	"fmt"
	"strings"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/schema"
)

// Bound is a flow checked against its changelog's columns, with everything
// the SQL renderer needs resolved.
type Bound struct {
	*Flow
	Changelog schema.Columns // every changelog column

	Keys     schema.Columns
	Sequence schema.Columns
	// SystemSequence is the SYSTEM SEQUENCE BY column of a bitemporal flow
	// (nil otherwise).
	SystemSequence *schema.Column
	Output         schema.Columns // what the target shows, in order

	// Tracked are the output columns whose change opens a new SCD 2 version.
	Tracked []string
	// IgnoreNull are the output columns where a NULL in an upsert means
	// "unchanged" (IGNORE NULL UPDATES).
	IgnoreNull []string

	// Conditions rendered as safe BigQuery SQL; "" when absent.
	Where, Delete, Truncate string
}

// Bind checks f against the columns of its source changelog. Its error is
// an ErrorList holding every problem of this one flow, each naming the flow
// and its file:line:column; binding one flow never depends on another, so
// callers bind each flow and run those that bind (see BindAll).
func Bind(f *Flow, changelog schema.Columns) (*Bound, error) {
	if err := CheckNames(f); err != nil {
		return nil, ErrorList{err}
	}
	if f.Snapshot != nil && len(changelog) == 0 {
		// The only error: every column named would be "unknown" too.
		err := errorf(f.Snapshot.Pos, "snapshot table %s not found in the deployment's project: bqcdc apply, compact and render (with --project) read its columns from BigQuery; load the table first", f.Snapshot)
		err.Flow = f.Name
		return nil, ErrorList{err}
	}
	bd := &binding{b: &Bound{Flow: f, Changelog: changelog}, source: sourceRef{f}}
	bd.sourceColumns()
	bd.ordering()
	bd.outputs()
	bd.conditions()
	if len(bd.errs) > 0 {
		for _, e := range bd.errs {
			e.Flow = f.Name
		}
		return nil, bd.errs
	}
	return bd.b, nil
}

// binding is one flow's Bind in progress: the bound flow as far as it
// got, and every error so far (Bind reports them all).
type binding struct {
	b      *Bound
	source sourceRef
	errs   ErrorList
}

func (bd *binding) add(err *Error) {
	if err != nil {
		bd.errs = append(bd.errs, err)
	}
}

// sourceColumns refuses source columns whose names bqcdc reserves.
func (bd *binding) sourceColumns() {
	b, f := bd.b, bd.b.Flow
	for _, c := range b.Changelog {
		if strings.HasPrefix(c.Name, "__") && !strings.EqualFold(c.Name, catalog.StartAt) && !strings.EqualFold(c.Name, catalog.EndAt) {
			bd.add(errorf(b.sourcePos(), "%s has column %s: names starting with __ are reserved for bqcdc's internal columns; rename the source column", bd.source, c.Name))
		}
		if f.Snapshot != nil && strings.EqualFold(c.Name, snapshotTieBreaker) {
			bd.add(errorf(b.sourcePos(), "%s has column %s, the name bqcdc gives the tie-breaker of a snapshot's rows: rename the column", bd.source, c.Name))
		}
	}
}

// columns binds the columns of a clause; check says what is wrong with a
// column found (nil: nothing).
func (bd *binding) columns(ids []Ident, clause string, check func(Ident, schema.Column) *Error) schema.Columns {
	var cols schema.Columns
	for _, id := range ids {
		c, err := lookup(id, clause, bd.b.Changelog, bd.source)
		if err != nil {
			bd.add(err)
			continue
		}
		bd.add(check(id, c))
		cols = append(cols, c)
	}
	return cols
}

// ordering binds the keys and what orders the events: SEQUENCE BY, a
// snapshot's VERSION BY, a bitemporal flow's SYSTEM SEQUENCE BY.
func (bd *binding) ordering() {
	b, f := bd.b, bd.b.Flow
	b.Keys = bd.columns(f.Keys, "KEYS", func(k Ident, c schema.Column) *Error {
		if c.Groupable() {
			return nil
		}
		return errorf(k.Pos, "key column %s is %s, which cannot identify a row: pick columns of an exact scalar type (INT64, STRING, DATE, NUMERIC, ...)", k.Name, c.SQLType())
	})
	if r := f.StateKeyRange; r != nil && len(b.Keys) > 0 && (b.Keys[0].Type != schema.Int64 || b.Keys[0].Repeated) {
		// BigQuery partitions by integer ranges of an INT64 column only.
		bd.add(errorf(r.Pos, "%s: the first key, %s, is %s: a state is partitioned by ranges of an INT64 first key only (%s hashes any key)", StateKeyRangeProperty, b.Keys[0].Name, b.Keys[0].SQLType(), StateBucketsProperty))
	}
	b.Sequence = bd.columns(f.Sequence, "SEQUENCE BY", func(s Ident, c schema.Column) *Error {
		if c.Orderable() {
			return nil
		}
		return errorf(s.Pos, "sequence column %s is %s, which BigQuery cannot order: use a scalar column, or SEQUENCE BY STRUCT(a, b) to order by several", s.Name, c.SQLType())
	})
	if f.Version != nil {
		c, err := lookup(*f.Version, "VERSION BY", b.Changelog, bd.source)
		bd.add(err)
		if err == nil {
			if !VersionType(c) {
				bd.add(errorf(f.Version.Pos, "version column %s is %s: a snapshot version is INT64, STRING, DATE, DATETIME or TIMESTAMP", c.Name, c.SQLType()))
			}
			// The version orders the snapshots as a sequence orders events.
			b.Sequence = schema.Columns{c}
		}
	}
	if f.SystemSequence != nil {
		c, err := lookup(*f.SystemSequence, "SYSTEM SEQUENCE BY", b.Changelog, bd.source)
		bd.add(err)
		if err == nil {
			if !c.Orderable() || c.Repeated || c.Type == schema.Record {
				bd.add(errorf(f.SystemSequence.Pos, "system sequence column %s is %s, which BigQuery cannot order: use a scalar column (a TIMESTAMP such as _cdc_ingested_at, or a number)", c.Name, c.SQLType()))
			}
			b.SystemSequence = &c
		}
	}
}

// outputs binds what the target shows (COLUMNS), refuses columns that
// clash with the ones bqcdc adds, and binds TRACK HISTORY ON and IGNORE
// NULL UPDATES ON.
func (bd *binding) outputs() {
	b, f := bd.b, bd.b.Flow
	b.Output, bd.errs = b.output(bd.errs)
	if f.SCDType == 2 {
		for _, name := range []string{catalog.StartAt, catalog.EndAt} {
			if _, clash := b.Output.Lookup(name); clash {
				bd.add(errorf(f.Pos, "the changelog column %s clashes with the SCD type 2 interval column of the same name: exclude it with COLUMNS * EXCEPT (%s)", name, name))
			}
		}
	}
	// The change feed <target>_changes adds these two columns to the
	// target's (snapshot flows have no change feed).
	for _, name := range changeFeedColumns(f) {
		if _, clash := b.Output.Lookup(name); clash {
			bd.add(errorf(f.Pos, "the changelog column %s clashes with the change feed's column of the same name: exclude it with COLUMNS * EXCEPT (%s)", name, name))
		}
	}
	if f.TrackHistory != nil {
		// A selection that leaves no column tracked (TRACK HISTORY ON *
		// EXCEPT every value column) is valid: each key then has one version
		// per life (from its first upsert or the one after a delete), updated
		// in place, as in Databricks, where * EXCEPT may exclude every column.
		var err *Error
		b.Tracked, err = b.subset(f.TrackHistory, "TRACK HISTORY ON", false)
		bd.add(err)
	} else if f.SCDType == 2 {
		b.Tracked = b.defaultSubset(nil, false)
	}
	if f.IgnoreNull != nil {
		var err *Error
		b.IgnoreNull, err = b.subset(f.IgnoreNull, "IGNORE NULL UPDATES ON", true)
		bd.add(err)
	}
}

// conditions renders WHERE, APPLY AS DELETE WHEN and APPLY AS TRUNCATE
// WHEN against the changelog's columns, each typed BOOL (types.go).
func (bd *binding) conditions() {
	b, f := bd.b, bd.b.Flow
	refs := map[string]bool{}
	cond := func(e *Expr, clause string) string {
		if e == nil {
			return ""
		}
		s, err := renderExpr(e, clause, b.Changelog, bd.source, refs)
		bd.add(err)
		if err == nil {
			bd.add(checkBool(e, clause, b.Changelog))
		}
		return s
	}
	b.Where = cond(f.Where, "WHERE")
	b.Delete = cond(f.DeleteWhen, "APPLY AS DELETE WHEN")
	b.Truncate = cond(f.TruncateWhen, "APPLY AS TRUNCATE WHEN")
}

// BindAll binds each flow to the changelog columns of its source
// (changelogs, by Flow.SourceKey: the topic, or a snapshot flow's table):
// the one way flows are bound, whatever read the columns (apply from the
// registry, compaction and the dev tools from the tables). It returns the
// flows that bind, and an error joining one ErrorList per flow that does
// not (file:line:column, naming the flow; errors.As finds an *Error in it):
// one refused flow never stops the others.
func BindAll(flows []*Flow, changelogs map[string]schema.Columns) ([]*Bound, error) {
	var bound []*Bound
	var errs []error
	for _, f := range flows {
		b, err := Bind(f, changelogs[f.SourceKey()])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		bound = append(bound, b)
	}
	return bound, errors.Join(errs...)
}

func lookup(id Ident, clause string, cols schema.Columns, source sourceRef) (schema.Column, *Error) {
	c, ok := cols.Lookup(id.Name)
	if !ok {
		return schema.Column{}, unknownColumn(token{Kind: tokIdent, Text: id.Name, Pos: id.Pos}, clause, cols, source)
	}
	return c, nil
}

// lookupAll resolves every id, in order (found holds the known ones). Unknown
// names are one error, at the first, naming how many there are and the
// first few: a list of 10,000 unknown columns made a 3.4 MB error when
// each was its own, each listing the changelog's columns.
func lookupAll(ids []Ident, clause string, cols schema.Columns, source sourceRef) (schema.Columns, *Error) {
	found := make(schema.Columns, 0, len(ids))
	var unknown []Ident
	for _, id := range ids {
		if c, ok := cols.Lookup(id.Name); ok {
			found = append(found, c)
		} else {
			unknown = append(unknown, id)
		}
	}
	switch len(unknown) {
	case 0:
		return found, nil
	case 1:
		_, err := lookup(unknown[0], clause, cols, source)
		return found, err
	}
	names := make([]string, 0, maxListed)
	for _, id := range unknown[:min(len(unknown), maxListed)] {
		names = append(names, id.Name)
	}
	more := ""
	if len(unknown) > maxListed {
		more = fmt.Sprintf(" and %d more", len(unknown)-maxListed)
	}
	return found, errorf(unknown[0].Pos, "%d unknown columns in %s: %s%s: %s has %s", len(unknown), clause,
		strings.Join(names, ", "), more, source, listed(cols.Names()))
}

// identNamed is the first of ids named name (case-insensitively).
func identNamed(ids []Ident, name string) Ident {
	for _, id := range ids {
		if strings.EqualFold(id.Name, name) {
			return id
		}
	}
	return Ident{}
}

// maxListed bounds the names an error lists.
const maxListed = 10

// listed joins names for an error: the first maxListed*2 and how many more.
func listed(names []string) string {
	if len(names) <= 2*maxListed {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:2*maxListed], ", "), len(names)-2*maxListed)
}

func (b *Bound) output(errs ErrorList) (schema.Columns, ErrorList) {
	spec := b.Columns
	source := sourceRef{b.Flow}
	out := make(schema.Columns, 0, len(b.Changelog))
	switch {
	case spec == nil || spec.All:
		excluded := map[string]bool{}
		if b.Version != nil {
			// A snapshot's version is not a target column: SCD 2 shows it
			// as __START_AT and __END_AT.
			excluded[b.Version.Name] = true
			if c, ok := b.Changelog.Lookup(b.Version.Name); ok {
				excluded[c.Name] = true
			}
		}
		if spec != nil {
			found, err := lookupAll(spec.Except, "COLUMNS * EXCEPT", b.Changelog, source)
			if err != nil {
				errs = append(errs, err)
			}
			for _, c := range found {
				excluded[c.Name] = true
			}
		}
		for _, c := range b.Changelog {
			if !excluded[c.Name] {
				out = append(out, c)
			}
		}
	default:
		found, err := lookupAll(spec.List, "COLUMNS", b.Changelog, source)
		if err != nil {
			errs = append(errs, err)
		}
		for _, c := range found {
			if b.Version != nil && strings.EqualFold(c.Name, b.Version.Name) {
				errs = append(errs, errorf(identNamed(spec.List, c.Name).Pos, "COLUMNS names the version column %s: a snapshot's version is not a target column (SCD 2 shows it as __START_AT and __END_AT); drop it here", c.Name))
				continue
			}
			out = append(out, c)
		}
	}
	for i, k := range b.Keys {
		if _, ok := out.Lookup(k.Name); !ok {
			errs = append(errs, errorf(b.Flow.Keys[i].Pos, "key column %s is not among the target's COLUMNS: the target must keep its keys", k.Name))
		}
	}
	return out, errs
}

func (b *Bound) isKey(name string) bool {
	_, ok := b.Keys.Lookup(name)
	return ok
}

// isSequence reports whether name orders events: a SEQUENCE BY column or
// the SYSTEM SEQUENCE BY column (both change with every event, so neither
// is tracked by default).
func (b *Bound) isSequence(name string) bool {
	_, ok := b.Sequence.Lookup(name)
	return ok || (b.SystemSequence != nil && strings.EqualFold(b.SystemSequence.Name, name))
}

// defaultSubset is what "*" means for TRACK HISTORY and IGNORE NULL UPDATES:
// every output column except keys, sequence columns and bqcdc's _cdc_*
// metadata (which changes with every event and would make every event a
// change), minus except.
func (b *Bound) defaultSubset(except map[string]bool, nullable bool) []string {
	var out []string
	for _, c := range b.Output {
		// A kept SEQUENCE BY column is tracked by default, as in Databricks
		// ("all output columns"); it is never NULL-ignored. bqcdc's own
		// _cdc_ columns are neither.
		if b.isKey(c.Name) || (nullable && b.isSequence(c.Name)) || strings.HasPrefix(strings.ToLower(c.Name), catalog.MetadataPrefix) || except[c.Name] {
			continue
		}
		if nullable && c.Repeated {
			continue // BigQuery arrays are never NULL: nothing to ignore
		}
		out = append(out, c.Name)
	}
	return out
}

// subset resolves TRACK HISTORY ON and IGNORE NULL UPDATES ON (rules.go has
// the rules and their sources).
//
// An explicit list names what the clause acts on, so each name must be an
// output column that is not a key (and, for IGNORE NULL UPDATES, not an
// ARRAY, which BigQuery never stores as NULL): anything else could not be
// honoured.
//
// * EXCEPT (...) only removes columns from the default set, so naming one
// that the set lacks anyway (a column COLUMNS drops, a key, an ARRAY) changes
// nothing and is accepted: Databricks runs COLUMNS * EXCEPT (operation,
// last_synced_at) with TRACK HISTORY ON * EXCEPT (last_synced_at). The name
// must still be a changelog column, which catches typos.
func (b *Bound) subset(spec *ColumnSpec, clause string, nullable bool) ([]string, *Error) {
	if spec.All {
		except := map[string]bool{}
		for _, id := range spec.Except {
			c, err := lookup(id, clause+" * EXCEPT", b.Changelog, sourceRef{b.Flow})
			if err != nil {
				return nil, err
			}
			except[c.Name] = true
		}
		return b.defaultSubset(except, nullable), nil
	}
	var out []string
	for _, id := range spec.List {
		c, ok := b.Output.Lookup(id.Name)
		if !ok {
			if _, inChangelog := b.Changelog.Lookup(id.Name); inChangelog {
				return nil, errorf(id.Pos, "%s names %s, which the target does not show: add it to COLUMNS or drop it here", clause, id.Name)
			}
			_, err := lookup(id, clause, b.Changelog, sourceRef{b.Flow})
			return nil, err
		}
		if b.isKey(c.Name) {
			return nil, errorf(id.Pos, "%s names key column %s: keys identify the row, so they never change and are never NULL-ignored; drop it here", clause, c.Name)
		}
		if nullable && c.Repeated {
			return nil, errorf(id.Pos, "%s names %s, an ARRAY: BigQuery arrays are never NULL, so there is nothing to ignore; drop it here", clause, c.Name)
		}
		out = append(out, c.Name)
	}
	return out, nil
}

// IsTracked reports whether a change in column name opens a new version.
func (b *Bound) IsTracked(name string) bool { return contains(b.Tracked, name) }

// IsIgnoreNull reports whether NULL in column name means "unchanged".
func (b *Bound) IsIgnoreNull(name string) bool { return contains(b.IgnoreNull, name) }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// snapshotTieBreaker is the column a snapshot flow's events carry to order
// two rows of one key in one snapshot (render names it the same).
const snapshotTieBreaker = catalog.ColMessageID

// sourceRef names what a flow reads in messages. It is text only when an
// error is formatted: binding a flow that has none builds no string.
type sourceRef struct{ f *Flow }

func (s sourceRef) String() string {
	if s.f.Snapshot != nil {
		return "the snapshot table " + s.f.Snapshot.String()
	}
	return "the changelog of " + s.f.Source.Name
}

func (b *Bound) sourcePos() Pos {
	if b.Snapshot != nil {
		return b.Snapshot.Pos
	}
	return b.Source.Pos
}

func changeFeedColumns(f *Flow) []string {
	if f.Snapshot != nil {
		return nil
	}
	return []string{catalog.ColChangeType, catalog.ColCommitPosition}
}

// VersionType reports whether c can be a snapshot flow's VERSION BY column.
func VersionType(c schema.Column) bool {
	if c.Repeated {
		return false
	}
	switch c.Type {
	case schema.Int64, schema.String, schema.Date, schema.Datetime, schema.Timestamp:
		return true
	}
	return false
}
