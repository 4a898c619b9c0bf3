// Package avrobq maps Avro schemas (as Debezium and other Confluent producers
// write them) to BigQuery column types, and decoded Avro values to the
// canonical Go values bqcdc's row writer sends to BigQuery.
//
// Both directions are compiled once per schema into a Columns plan, so the
// per-message work is a walk over precomputed converters. The package is pure:
// it knows BigQuery's type names, not its client library.
//
// Canonical values, by BigQuery type:
//
//	INT64 int64 · FLOAT64 float64 · BOOL bool · STRING, JSON string · BYTES []byte
//	NUMERIC, BIGNUMERIC string (exact decimal text) · DATE int32 (days since epoch)
//	TIME string "15:04:05.000000" · DATETIME string "2006-01-02 15:04:05.000000"
//	TIMESTAMP int64 (microseconds since epoch) · RECORD map[string]any · REPEATED []any
//
// NUMERIC, BIGNUMERIC, DATETIME and TIME travel as text because that encoding
// is accepted by the Storage Write API and, unlike the packed binary forms,
// also by the BigQuery emulator.
package avrobq

import (
	"fmt"
	"strings"

	"github.com/hamba/avro/v2"
)

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
	Record     = "RECORD"
)

// Column is one BigQuery column derived from an Avro field. Every top-level
// changelog column is NULLABLE (a delete's before image or a truncate marker
// leaves most of them empty) unless Repeated.
type Column struct {
	Name        string
	Type        string
	Repeated    bool
	Fields      []Column // for RECORD
	Precision   int      // for NUMERIC/BIGNUMERIC from a decimal, 0 if unknown
	Scale       int
	Description string

	// AvroType names the source type for descriptions and error messages,
	// e.g. "long (io.debezium.time.MicroTimestamp)".
	AvroType string

	conv converter
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
// compared with < in BigQuery (so it may be used as a SEQUENCE BY column).
func (c Column) Orderable() bool {
	if c.Repeated {
		return false
	}
	switch c.Type {
	case Record, JSON:
		return false
	}
	return true
}

// Groupable reports whether the column can be a GROUP BY / PARTITION BY key.
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
	case JSON, Float64:
		// FLOAT64 groups in BigQuery, but NaN and -0 make it a poor key;
		// reject it so a user picks an exact column.
		return c.Type != JSON && c.Type != Float64
	}
	return true
}

// Equatable reports whether BigQuery defines = on the column's values.
// Columns that are not (arrays, JSON, structs holding them) are compared
// through TO_JSON_STRING when history tracking needs to detect a change.
func (c Column) Equatable() bool {
	if c.Repeated || c.Type == JSON {
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

// Columns is the compiled plan of a record schema.
type Columns []Column

// Lookup returns the column called name.
func (cs Columns) Lookup(name string) (Column, bool) {
	for _, c := range cs {
		if c.Name == name {
			return c, true
		}
	}
	return Column{}, false
}

// FromRecord compiles the columns of an Avro record schema.
func FromRecord(rec *avro.RecordSchema) (Columns, error) {
	cols := make(Columns, 0, len(rec.Fields()))
	for _, f := range rec.Fields() {
		c, err := columnFor(f.Name(), f.Type(), 0)
		if err != nil {
			return nil, fmt.Errorf("field %q of %s: %w", f.Name(), rec.FullName(), err)
		}
		c.Description = f.Doc()
		cols = append(cols, c)
	}
	return cols, nil
}

const maxDepth = 15 // BigQuery allows 15 levels of nested RECORDs

func deref(s avro.Schema) avro.Schema {
	if r, ok := s.(*avro.RefSchema); ok {
		return r.Schema()
	}
	return s
}

// nonNull returns the only non-null branch of a union, or nil if there are
// several (or none).
func nonNull(u *avro.UnionSchema) avro.Schema {
	var only avro.Schema
	for _, t := range u.Types() {
		if t.Type() == avro.Null {
			continue
		}
		if only != nil {
			return nil
		}
		only = t
	}
	return only
}

func columnFor(name string, s avro.Schema, depth int) (Column, error) {
	if depth > maxDepth {
		return Column{}, fmt.Errorf("nested deeper than BigQuery's %d levels", maxDepth)
	}
	s = deref(s)
	if u, ok := s.(*avro.UnionSchema); ok {
		inner := nonNull(u)
		if inner == nil {
			// A union of several types has no single BigQuery type: keep the
			// value, tagged by its branch, as JSON.
			return Column{Name: name, Type: JSON, AvroType: u.String(), conv: unionJSONConv(u)}, nil
		}
		c, err := columnFor(name, inner, depth)
		if err != nil {
			return Column{}, err
		}
		c.conv = unionConv(u, c.conv)
		return c, nil
	}
	if c, ok := connectColumn(name, s); ok {
		return c, nil
	}
	if c, ok := logicalColumn(name, s); ok {
		return c, nil
	}
	switch s.Type() {
	case avro.Boolean:
		return Column{Name: name, Type: Bool, AvroType: "boolean", conv: boolConv}, nil
	case avro.Int, avro.Long:
		return Column{Name: name, Type: Int64, AvroType: string(s.Type()), conv: intConv}, nil
	case avro.Float, avro.Double:
		return Column{Name: name, Type: Float64, AvroType: string(s.Type()), conv: floatConv}, nil
	case avro.String:
		return Column{Name: name, Type: String, AvroType: "string", conv: stringConv}, nil
	case avro.Enum:
		return Column{Name: name, Type: String, AvroType: "enum " + s.(*avro.EnumSchema).FullName(), conv: stringConv}, nil
	case avro.Bytes:
		return Column{Name: name, Type: Bytes, AvroType: "bytes", conv: bytesConv}, nil
	case avro.Fixed:
		return Column{Name: name, Type: Bytes, AvroType: "fixed " + s.(*avro.FixedSchema).FullName(), conv: bytesConv}, nil
	case avro.Null:
		return Column{Name: name, Type: String, AvroType: "null", conv: nullConv}, nil
	case avro.Record:
		rec := s.(*avro.RecordSchema)
		c := Column{Name: name, Type: Record, AvroType: "record " + rec.FullName()}
		for _, f := range rec.Fields() {
			fc, err := columnFor(f.Name(), f.Type(), depth+1)
			if err != nil {
				return Column{}, fmt.Errorf("field %q: %w", f.Name(), err)
			}
			fc.Description = f.Doc()
			c.Fields = append(c.Fields, fc)
		}
		c.conv = recordConv(c.Fields)
		return c, nil
	case avro.Array:
		items, err := columnFor(name, s.(*avro.ArraySchema).Items(), depth)
		if err != nil {
			return Column{}, err
		}
		if items.Repeated {
			// BigQuery has no ARRAY<ARRAY<..>>: keep nested arrays as JSON.
			return Column{Name: name, Type: JSON, AvroType: "array of arrays", conv: jsonConv}, nil
		}
		items.Repeated = true
		items.AvroType = "array<" + items.AvroType + ">"
		items.conv = arrayConv(items.conv)
		return items, nil
	case avro.Map:
		val, err := columnFor("value", s.(*avro.MapSchema).Values(), depth+1)
		if err != nil {
			return Column{}, err
		}
		key := Column{Name: "key", Type: String, AvroType: "string", conv: stringConv}
		c := Column{Name: name, Type: Record, Repeated: true, Fields: []Column{key, val}, AvroType: "map<" + val.AvroType + ">"}
		c.conv = mapConv(val.conv)
		return c, nil
	}
	return Column{}, fmt.Errorf("unsupported Avro type %s", s.Type())
}
