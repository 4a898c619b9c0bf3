package flow

import (
	"strings"

	"github.com/bqcdc/bqcdc/internal/schema"
)

// MetadataPrefix starts the name of every column bqcdc adds to a changelog.
const MetadataPrefix = "_cdc_"

// Names of the SCD type 2 interval columns, as in Databricks.
const (
	StartAt = "__START_AT"
	EndAt   = "__END_AT"
)

// Bound is a flow checked against its changelog's columns, with everything
// the SQL renderer needs resolved.
type Bound struct {
	*Flow
	Changelog schema.Columns // every changelog column

	Keys     schema.Columns
	Sequence schema.Columns
	Output   schema.Columns // what the target shows, in order

	// Tracked are the output columns whose change opens a new SCD 2 version.
	Tracked []string
	// IgnoreNull are the output columns where a NULL in an upsert means
	// "unchanged" (IGNORE NULL UPDATES).
	IgnoreNull []string

	// Conditions rendered as safe BigQuery SQL; "" when absent.
	Where, Delete, Truncate string
}

// Bind checks f against the columns of its source changelog.
func Bind(f *Flow, changelog schema.Columns) (*Bound, error) {
	b := &Bound{Flow: f, Changelog: changelog}
	var errs ErrorList
	add := func(err *Error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	source := f.Source.Name
	for _, c := range changelog {
		if strings.HasPrefix(c.Name, "__") && !strings.EqualFold(c.Name, StartAt) && !strings.EqualFold(c.Name, EndAt) {
			add(errorf(f.Source.Pos, "the changelog of %s has column %s: names starting with __ are reserved for bqcdc's internal columns; rename the source column", source, c.Name))
		}
	}

	for _, k := range f.Keys {
		c, err := lookup(k, "KEYS", changelog, source)
		if err != nil {
			add(err)
			continue
		}
		if !c.Groupable() {
			add(errorf(k.Pos, "key column %s is %s, which cannot identify a row: pick columns of an exact scalar type (INT64, STRING, DATE, NUMERIC, ...)", k.Name, c.SQLType()))
		}
		b.Keys = append(b.Keys, c)
	}
	for _, s := range f.Sequence {
		c, err := lookup(s, "SEQUENCE BY", changelog, source)
		if err != nil {
			add(err)
			continue
		}
		if !c.Orderable() {
			add(errorf(s.Pos, "sequence column %s is %s, which BigQuery cannot order: use a scalar column, or SEQUENCE BY STRUCT(a, b) to order by several", s.Name, c.SQLType()))
		}
		b.Sequence = append(b.Sequence, c)
	}

	b.Output, errs = b.output(errs)
	if f.SCDType == 2 {
		for _, name := range []string{StartAt, EndAt} {
			if _, clash := b.Output.Lookup(name); clash {
				add(errorf(f.Pos, "the changelog column %s clashes with the SCD type 2 interval column of the same name: exclude it with COLUMNS * EXCEPT (%s)", name, name))
			}
		}
	}
	if f.TrackHistory != nil {
		var err *Error
		b.Tracked, err = b.subset(f.TrackHistory, "TRACK HISTORY ON", false)
		add(err)
		if err == nil && len(b.Tracked) == 0 {
			add(errorf(f.TrackHistory.Pos, "TRACK HISTORY ON selects no column: every change would update the current version in place; list at least one non-key column"))
		}
	} else if f.SCDType == 2 {
		b.Tracked = b.defaultSubset(nil, false)
	}
	if f.IgnoreNull != nil {
		var err *Error
		b.IgnoreNull, err = b.subset(f.IgnoreNull, "IGNORE NULL UPDATES ON", true)
		add(err)
	}

	refs := map[string]bool{}
	cond := func(e *Expr, clause string) string {
		if e == nil {
			return ""
		}
		s, err := renderExpr(e, clause, changelog, source, refs)
		add(err)
		return s
	}
	b.Where = cond(f.Where, "WHERE")
	b.Delete = cond(f.DeleteWhen, "APPLY AS DELETE WHEN")
	b.Truncate = cond(f.TruncateWhen, "APPLY AS TRUNCATE WHEN")
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return b, nil
}

func lookup(id Ident, clause string, cols schema.Columns, source string) (schema.Column, *Error) {
	c, ok := cols.Lookup(id.Name)
	if !ok {
		return schema.Column{}, unknownColumn(token{Kind: tokIdent, Text: id.Name, Pos: id.Pos}, clause, cols, source)
	}
	return c, nil
}

func (b *Bound) output(errs ErrorList) (schema.Columns, ErrorList) {
	spec := b.Columns
	source := b.Source.Name
	var out schema.Columns
	switch {
	case spec == nil || spec.All:
		excluded := map[string]bool{}
		if spec != nil {
			for _, e := range spec.Except {
				c, err := lookup(e, "COLUMNS * EXCEPT", b.Changelog, source)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				excluded[c.Name] = true
			}
		}
		for _, c := range b.Changelog {
			if !excluded[c.Name] {
				out = append(out, c)
			}
		}
	default:
		for _, id := range spec.List {
			c, err := lookup(id, "COLUMNS", b.Changelog, source)
			if err != nil {
				errs = append(errs, err)
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

func (b *Bound) isSequence(name string) bool {
	_, ok := b.Sequence.Lookup(name)
	return ok
}

// defaultSubset is what "*" means for TRACK HISTORY and IGNORE NULL UPDATES:
// every output column except keys, sequence columns and bqcdc's _cdc_*
// metadata (which changes with every event and would make every event a
// change), minus except.
func (b *Bound) defaultSubset(except map[string]bool, nullable bool) []string {
	var out []string
	for _, c := range b.Output {
		if b.isKey(c.Name) || b.isSequence(c.Name) || strings.HasPrefix(strings.ToLower(c.Name), MetadataPrefix) || except[c.Name] {
			continue
		}
		if nullable && c.Repeated {
			continue // BigQuery arrays are never NULL: nothing to ignore
		}
		out = append(out, c.Name)
	}
	return out
}

func (b *Bound) subset(spec *ColumnSpec, clause string, nullable bool) ([]string, *Error) {
	check := func(id Ident) (string, *Error) {
		c, ok := b.Output.Lookup(id.Name)
		if !ok {
			if _, inChangelog := b.Changelog.Lookup(id.Name); inChangelog {
				return "", errorf(id.Pos, "%s names %s, which the target does not show: add it to COLUMNS or drop it here", clause, id.Name)
			}
			_, err := lookup(id, clause, b.Changelog, b.Source.Name)
			return "", err
		}
		if b.isKey(c.Name) {
			return "", errorf(id.Pos, "%s names key column %s: keys identify the row, so they never change and are never NULL-ignored; drop it here", clause, c.Name)
		}
		if nullable && c.Repeated {
			return "", errorf(id.Pos, "%s names %s, an ARRAY: BigQuery arrays are never NULL, so there is nothing to ignore; drop it here", clause, c.Name)
		}
		return c.Name, nil
	}
	if spec.All {
		except := map[string]bool{}
		for _, id := range spec.Except {
			name, err := check(id)
			if err != nil {
				return nil, err
			}
			except[name] = true
		}
		return b.defaultSubset(except, nullable), nil
	}
	var out []string
	for _, id := range spec.List {
		name, err := check(id)
		if err != nil {
			return nil, err
		}
		out = append(out, name)
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
