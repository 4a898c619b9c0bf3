// Package evolve decides how a changelog table follows its source's schema:
// which columns a writer schema adds, whether a writer's values can be stored
// in the table's existing columns, and how to fit converted values into them.
// It is pure: the ingest pipeline and `bqcdc apply` act on its answers.
//
// The table is the reader. A writer column the table has is stored in it,
// directly or through a lossless promotion; a writer column the table lacks
// is added (schema evolution on) or dropped and counted (off); a table column
// the writer lacks is NULL (or the reader schema's default) in new rows and
// keeps its values in old ones. Anything else is a Conflict: the message
// cannot be stored without losing information, so it is dead-lettered.
package evolve

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/bqcdc/bqcdc/internal/failure"
	"github.com/bqcdc/bqcdc/internal/limits"
	"github.com/bqcdc/bqcdc/internal/schema"
)

// Conflict is a writer column whose values the table cannot hold.
type Conflict struct {
	Column     string // dotted path
	TableType  string
	WriterType string
	Reason     string // why, in words
}

func (c *Conflict) Error() string {
	return fmt.Sprintf("column %s: the changelog has %s, the writer schema has %s: %s", c.Column, c.TableType, c.WriterType, c.Reason)
}

// promotion converts a canonical value (see package avrobq) of a writer
// column into the canonical value of the table column; nil means as is.
type promotion func(v any) (any, error)

// promote returns how writer values reach a table column of another type,
// or false when they cannot without loss. The allowed pairs are Avro's
// promotions (int and long to float and double, string and bytes both ways)
// plus BigQuery's lossless widenings of exact numbers (INT64 to NUMERIC and
// BIGNUMERIC, NUMERIC to BIGNUMERIC).
func promote(table, writer string) (promotion, bool) {
	if table == writer {
		return nil, true
	}
	switch {
	case writer == schema.Int64 && table == schema.Float64:
		return func(v any) (any, error) { return float64(v.(int64)), nil }, true
	case writer == schema.Int64 && (table == schema.Numeric || table == schema.BigNumeric):
		return func(v any) (any, error) { return strconv.FormatInt(v.(int64), 10), nil }, true
	case writer == schema.Numeric && table == schema.BigNumeric:
		return nil, true // both travel as exact decimal text
	case writer == schema.String && table == schema.Bytes:
		return func(v any) (any, error) { return []byte(v.(string)), nil }, true
	case writer == schema.Bytes && table == schema.String:
		return func(v any) (any, error) {
			b := v.([]byte)
			if !utf8.Valid(b) {
				// Avro's bytes-to-string promotion assumes UTF-8; anything
				// else would be silently mangled, so keep it reversible.
				return nil, failure.Errorf("bytes are not valid UTF-8 for a STRING column (base64: %s)", failure.Value(base64.StdEncoding.EncodeToString(b)))
			}
			return string(b), nil
		}, true
	}
	return nil, false
}

func typeName(c schema.Column) string { return c.SQLType() }

// check compares one writer column with the table's column of the same name.
func check(path string, table, writer schema.Column) error {
	conflict := func(reason string) error {
		return &Conflict{Column: path, TableType: typeName(table), WriterType: typeName(writer), Reason: reason}
	}
	if table.Repeated != writer.Repeated {
		return conflict("BigQuery cannot change a column between repeated and not repeated")
	}
	if table.Type == schema.Record || writer.Type == schema.Record {
		if table.Type != writer.Type {
			return conflict("BigQuery cannot change a column between RECORD and a scalar type")
		}
		for _, w := range writer.Fields {
			if t, ok := schema.Columns(table.Fields).Lookup(w.Name); ok {
				if err := check(path+"."+w.Name, t, w); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if _, ok := promote(table.Type, writer.Type); !ok {
		return conflict("BigQuery cannot store one in the other without loss, and cannot change a column's type in place; " +
			"fix the source, or migrate the column (ALTER TABLE ... ALTER COLUMN ... SET DATA TYPE where BigQuery allows it) and replay the dead letters")
	}
	return nil
}

// Merge returns the table's columns with the writer's missing columns (and
// missing RECORD fields) added as NULLABLE, the dotted names of what was
// added, and a *Conflict if a writer column cannot be stored in the table's
// column of the same name. Columns the writer lacks stay. Names compare
// case-insensitively, as BigQuery's do. A merge beyond BigQuery's
// limits.MaxColumns columns (nested fields included) fails with a
// limits error: several writers' columns together can exceed what one
// writer's schema cannot, and BigQuery would refuse the update.
func Merge(table, writer schema.Columns) (schema.Columns, []string, error) {
	merged, added, err := merge("", table, writer)
	if err == nil && len(added) > 0 {
		if n := merged.Count(); n > limits.MaxColumns {
			return nil, nil, limits.Errorf("adding %d columns would give the table %d columns (nested fields included); BigQuery allows %d",
				len(added), n, limits.MaxColumns)
		}
	}
	return merged, added, err
}

func merge(prefix string, table, writer schema.Columns) (schema.Columns, []string, error) {
	merged := append(schema.Columns{}, table...)
	var added []string
	for _, w := range writer {
		i := merged.Index(w.Name)
		if i < 0 {
			merged = append(merged, nullable(w))
			added = append(added, prefix+w.Name)
			continue
		}
		if err := check(prefix+w.Name, merged[i], w); err != nil {
			return nil, nil, err
		}
		if merged[i].Type == schema.Record {
			fields, sub, err := merge(prefix+w.Name+".", merged[i].Fields, w.Fields)
			if err != nil {
				return nil, nil, err
			}
			merged[i].Fields = fields
			added = append(added, sub...)
		}
	}
	return merged, added, nil
}

// nullable makes an added column and its fields NULLABLE: BigQuery adds
// columns in place only as NULLABLE (or REPEATED).
func nullable(c schema.Column) schema.Column {
	c.Required = false
	if len(c.Fields) > 0 {
		fs := make([]schema.Column, len(c.Fields))
		for i, f := range c.Fields {
			fs[i] = nullable(f)
		}
		c.Fields = fs
	}
	return c
}

// Fitter fits the converted values of one writer schema into one table
// schema. Build it once per (writer schema, table version) with NewFitter.
type Fitter struct {
	fields   map[string]fit // by writer column name
	missing  []string       // writer columns the table lacks, dotted
	identity bool           // Fit returns its input: decided once, not per message
}

type fit struct {
	name   string    // the table's spelling of the column
	drop   bool      // the table lacks it
	conv   promotion // nil: as is
	record *Fitter   // for RECORD columns
	rep    bool      // repeated
	path   string    // for errors and counts
}

// NewFitter compiles how values of writer columns are stored in table
// columns. It fails with a *Conflict when a column cannot be stored.
func NewFitter(table, writer schema.Columns) (*Fitter, error) {
	return newFitter("", table, writer)
}

func newFitter(prefix string, table, writer schema.Columns) (*Fitter, error) {
	f := &Fitter{fields: make(map[string]fit, len(writer))}
	for _, w := range writer {
		path := prefix + w.Name
		i := table.Index(w.Name)
		if i < 0 {
			f.fields[w.Name] = fit{drop: true, path: path}
			f.missing = append(f.missing, path)
			continue
		}
		t := table[i]
		if err := check(path, t, w); err != nil {
			return nil, err
		}
		ft := fit{name: t.Name, rep: t.Repeated, path: path}
		if t.Type == schema.Record {
			sub, err := newFitter(path+".", t.Fields, w.Fields)
			if err != nil {
				return nil, err
			}
			f.missing = append(f.missing, sub.missing...)
			if !sub.identity {
				ft.record = sub
			}
		} else {
			ft.conv, _ = promote(t.Type, w.Type)
		}
		f.fields[w.Name] = ft
	}
	f.identity = len(f.missing) == 0 && !f.renames() && !f.converts()
	return f, nil
}

func (f *Fitter) renames() bool {
	for n, ft := range f.fields {
		if !ft.drop && ft.name != n {
			return true
		}
	}
	return false
}

func (f *Fitter) converts() bool {
	for _, ft := range f.fields {
		if ft.conv != nil || ft.record != nil {
			return true
		}
	}
	return false
}

// Missing lists the writer columns (dotted for RECORD fields) the table
// lacks; Fit drops their values.
func (f *Fitter) Missing() []string { return f.missing }

// Identity reports whether Fit returns its input unchanged.
func (f *Fitter) Identity() bool { return f.identity }

// Fit rewrites converted values (keyed by writer column) into table values.
// It returns how many non-NULL values were dropped because the table lacks
// their column.
func (f *Fitter) Fit(values map[string]any) (map[string]any, int, error) {
	if f.Identity() {
		return values, 0, nil
	}
	out := make(map[string]any, len(values))
	dropped := 0
	for k, v := range values {
		ft, ok := f.fields[k]
		if !ok { // not a writer column (e.g. a default or metadata): keep
			out[k] = v
			continue
		}
		if ft.drop {
			dropped++
			continue
		}
		nv, n, err := ft.apply(v)
		if err != nil {
			return nil, 0, err
		}
		dropped += n
		out[ft.name] = nv
	}
	return out, dropped, nil
}

func (ft fit) apply(v any) (any, int, error) {
	one := func(x any) (any, int, error) {
		switch {
		case ft.record != nil:
			m, ok := x.(map[string]any)
			if !ok {
				return nil, 0, fmt.Errorf("column %s: want a record, got %T", ft.path, x)
			}
			return ft.record.Fit(m)
		case ft.conv != nil:
			y, err := ft.conv(x)
			if err != nil {
				return nil, 0, fmt.Errorf("column %s: %w", ft.path, err)
			}
			return y, 0, nil
		}
		return x, 0, nil
	}
	if !ft.rep || (ft.record == nil && ft.conv == nil) {
		return one(v)
	}
	items, ok := v.([]any)
	if !ok {
		return nil, 0, fmt.Errorf("column %s: want an array, got %T", ft.path, v)
	}
	out := make([]any, len(items))
	dropped := 0
	for i, x := range items {
		y, n, err := one(x)
		if err != nil {
			return nil, 0, err
		}
		out[i], dropped = y, dropped+n
	}
	return out, dropped, nil
}
