// Package schema models BigQuery columns the way bqcdc reasons about them:
// a name, a standard SQL type and what the type allows (ordering, grouping,
// equality). Changelog schemas from Avro, from a live BigQuery table and from
// the flow renderer all meet in this one type. It is pure: the adapter to
// the BigQuery client library's schema type is the sub-package bqschema, so
// packages that only reason about columns (flow, avrobq, evolve) link no
// cloud client.
package schema

import "strings"

// BigQuery standard SQL type names used in Column.Type.
const (
	Int64      = "INT64"
	Float64    = "FLOAT64"
	Bool       = "BOOL"
	String     = "STRING"
	Bytes      = "BYTES"
	Numeric    = "NUMERIC"
	BigNumeric = "BIGNUMERIC"
	Date       = "DATE"
	Time       = "TIME"
	Datetime   = "DATETIME"
	Timestamp  = "TIMESTAMP"
	JSON       = "JSON"
	Geography  = "GEOGRAPHY"
	Record     = "RECORD"
)

// Column is one BigQuery column. Top-level changelog columns are NULLABLE
// unless Repeated (or Required, which only bqcdc's own metadata columns use).
type Column struct {
	Name        string
	Type        string
	Repeated    bool
	Required    bool
	Fields      []Column // for RECORD
	Precision   int      // for NUMERIC/BIGNUMERIC from a decimal, 0 if unknown
	Scale       int
	Description string
}

// SQLType renders the column type as BigQuery DDL would (ARRAY<...>, STRUCT<...>).
func (c Column) SQLType() string {
	t := c.Type
	if c.Type == Record {
		parts := make([]string, len(c.Fields))
		for i, f := range c.Fields {
			parts[i] = "`" + f.Name + "` " + f.SQLType()
		}
		t = "STRUCT<" + strings.Join(parts, ", ") + ">"
	}
	if c.Repeated {
		return "ARRAY<" + t + ">"
	}
	return t
}

// Orderable reports whether values of the column can be ORDER BY'd and
// compared with < in BigQuery (so it may be a SEQUENCE BY column).
func (c Column) Orderable() bool {
	if c.Repeated {
		return false
	}
	switch c.Type {
	case Record, JSON, Geography:
		return false
	}
	return true
}

// Groupable reports whether the column makes a sound key: BigQuery can
// GROUP BY and PARTITION BY it, and equal values mean the same row. FLOAT64
// is refused because NaN and -0 make poor identities.
func (c Column) Groupable() bool {
	if c.Repeated {
		return false
	}
	switch c.Type {
	case Record:
		for _, f := range c.Fields {
			if !f.Groupable() {
				return false
			}
		}
		return true
	case JSON, Float64, Geography:
		return false
	}
	return true
}

// Equatable reports whether BigQuery defines = on the column's values.
// Columns that are not (arrays, JSON, geography, structs holding them) are
// compared through TO_JSON_STRING when history tracking detects a change.
func (c Column) Equatable() bool {
	if c.Repeated || c.Type == JSON || c.Type == Geography {
		return false
	}
	if c.Type == Record {
		for _, f := range c.Fields {
			if !f.Equatable() {
				return false
			}
		}
	}
	return true
}

// Columns is an ordered column list.
type Columns []Column

// Lookup returns the column called name (BigQuery column names are
// case-insensitive).
func (cs Columns) Lookup(name string) (Column, bool) {
	if i := cs.Index(name); i >= 0 {
		return cs[i], true
	}
	return Column{}, false
}

// Index returns the position of the column called name, or -1.
func (cs Columns) Index(name string) int {
	for i, c := range cs {
		if strings.EqualFold(c.Name, name) {
			return i
		}
	}
	return -1
}

// Count counts the columns as BigQuery's limit on a table's columns does,
// nested fields included.
func (cs Columns) Count() int {
	n := len(cs)
	for _, c := range cs {
		n += Columns(c.Fields).Count()
	}
	return n
}

// Names lists the column names in order.
func (cs Columns) Names() []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name
	}
	return out
}
