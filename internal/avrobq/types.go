// Package avrobq maps Avro schemas (as Debezium and other Confluent producers
// write them) to BigQuery column types, and decoded Avro values to the
// canonical Go values bqcdc's row writer sends to BigQuery.
//
// Both directions are compiled once per schema into a Fields plan, so the
// per-message work is a walk over precomputed converters. The package is pure:
// it knows BigQuery's type names, not its client library.
//
// Canonical values, by BigQuery type:
//
//	INT64 int64 · FLOAT64 float64 · BOOL bool · STRING, JSON string · BYTES []byte
//	NUMERIC, BIGNUMERIC string (exact decimal text) · DATE int32 (days since epoch)
//	TIME string "15:04:05.000000" · DATETIME string "2006-01-02 15:04:05.000000"
//	TIMESTAMP int64 (microseconds since epoch) · GEOGRAPHY string (WKT)
//	RECORD map[string]any · REPEATED []any
//
// NUMERIC, BIGNUMERIC, DATETIME and TIME travel as text because that encoding
// is accepted by the Storage Write API and, unlike the packed binary forms,
// also by the BigQuery emulator; GEOGRAPHY travels as WKT, which the Storage
// Write API accepts for GEOGRAPHY columns.
//
// No value is rounded through a float: decimals are converted with big.Int
// arithmetic, times keep their microseconds, and an instant written with a
// UTC offset becomes the same instant in UTC. The only precision BigQuery
// cannot hold, nanoseconds, is truncated to microseconds. A value that does
// not fit its column (a date past year 9999, a decimal wider than
// BIGNUMERIC, a geometry in another coordinate system than WGS84) fails with
// ErrValue rather than being altered.
//
// Column names follow ColumnName; a Field keeps the source field name it
// reads from in Source.
package avrobq

import (
	"fmt"

	"github.com/bqcdc/bqcdc/internal/limits"
	"github.com/bqcdc/bqcdc/internal/schema"
	"github.com/hamba/avro/v2"
)

// Field is one compiled column: its BigQuery shape and how to convert a
// decoded Avro value into the canonical value for that shape.
type Field struct {
	schema.Column
	// Source is the field's name in the Avro record; Column.Name is
	// ColumnName(Source).
	Source string
	// AvroType names the source type for descriptions and error messages,
	// e.g. "long (io.debezium.time.MicroTimestamp)".
	AvroType string

	// def is the reader's default, used when a record written with an older
	// or newer schema lacks the field (Avro schema resolution by name).
	def    any
	hasDef bool

	// Conv is what avrobq decided for the field's values; conv is the
	// generic converter built from it.
	Conv Conversion
	conv converter

	// padBytes is how many bytes converting one value may add beyond the
	// value's own (io.debezium.data.Bits is padded to its declared length),
	// summed over a record's fields.
	padBytes int
}

// Fields is the compiled plan of a record schema.
type Fields []Field

// Columns returns the BigQuery columns of the plan.
func (fs Fields) Columns() schema.Columns {
	out := make(schema.Columns, len(fs))
	for i, f := range fs {
		out[i] = f.Column
	}
	return out
}

// FromRecord compiles the columns of an Avro record schema.
//
// The schema must describe a table BigQuery can create: at most
// limits.MaxColumns columns (nested fields included), RECORDs nested at
// most limits.MaxRecordNesting levels, decimals BigQuery or a STRING can
// hold. Beyond those bounds it fails with an error wrapping limits.ErrLimit
// that names the bound, before compiling more than it counted.
func FromRecord(rec *avro.RecordSchema) (Fields, error) {
	c := &compiler{}
	fs, err := c.recordFields(rec, 0)
	if err != nil {
		return nil, err
	}
	if pad := fs.padBytes(); pad > limits.MaxMessageBytes {
		return nil, limits.Errorf("record %s: its io.debezium.data.Bits columns pad to %d bytes, more than a BigQuery row's %d", rec.FullName(), pad, limits.MaxMessageBytes)
	}
	return fs, nil
}

func (fs Fields) padBytes() int {
	n := 0
	for _, f := range fs {
		n += f.padBytes
	}
	return n
}

// compiler counts what BigQuery bounds across a whole schema.
type compiler struct {
	columns int // columns so far, nested fields included
	nest    int // schema nesting now: records, arrays and maps
}

func (c *compiler) enter() error {
	c.nest++
	if c.nest > limits.MaxSchemaNesting {
		return limits.Errorf("the schema nests deeper than %d levels", limits.MaxSchemaNesting)
	}
	return nil
}

// recordFields compiles the fields of a record at one nesting level: the
// top-level columns, or the subfields of a RECORD column.
func (c *compiler) recordFields(rec *avro.RecordSchema, depth int) (Fields, error) {
	if c.columns += len(rec.Fields()); c.columns > limits.MaxColumns {
		return nil, limits.Errorf("record %s: more than BigQuery's %d columns (nested fields included)", rec.FullName(), limits.MaxColumns)
	}
	if err := c.enter(); err != nil {
		return nil, err
	}
	defer func() { c.nest-- }()
	fs := make(Fields, 0, len(rec.Fields()))
	for _, f := range rec.Fields() {
		col, err := c.columnFor(ColumnName(f.Name()), f.Type(), depth)
		if err != nil {
			return nil, fmt.Errorf("field %q of %s: %w", f.Name(), rec.FullName(), err)
		}
		col.Source = f.Name()
		col.Description = f.Doc()
		if f.HasDefault() && f.Default() != nil {
			col.def, col.hasDef = f.Default(), true
		}
		fs = append(fs, col)
	}
	if err := checkColumnNames(fs); err != nil {
		return nil, fmt.Errorf("record %s: %w", rec.FullName(), err)
	}
	return fs, nil
}

const maxDepth = limits.MaxRecordNesting

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

func newField(name, typ, avroType string, cv Conversion) Field {
	return Field{Column: schema.Column{Name: name, Type: typ}, AvroType: avroType, Conv: cv, conv: cv.converter()}
}

// convert sets f's decision to cv, and its converter.
func (f *Field) convert(cv Conversion) {
	f.Conv, f.conv = cv, cv.converter()
}

func (c *compiler) columnFor(name string, s avro.Schema, depth int) (Field, error) {
	if depth > maxDepth {
		return Field{}, limits.Errorf("nested deeper than BigQuery's %d levels of RECORD", maxDepth)
	}
	s = deref(s)
	if u, ok := s.(*avro.UnionSchema); ok {
		inner := nonNull(u)
		if inner == nil {
			// A union of several types has no single BigQuery type: keep the
			// value as JSON.
			return newField(name, schema.JSON, u.String(), Conversion{Kind: ConvUnionJSON, Union: u}), nil
		}
		f, err := c.columnFor(name, inner, depth)
		if err != nil {
			return Field{}, err
		}
		elem := f
		f.convert(Conversion{Kind: ConvUnion, Union: u, Elem: &elem})
		return f, nil
	}
	if f, ok, err := connectColumn(name, s); ok || err != nil {
		return f, err
	}
	if f, ok, err := logicalColumn(name, s); ok || err != nil {
		return f, err
	}
	switch s.Type() {
	case avro.Boolean:
		return newField(name, schema.Bool, "boolean", Conversion{Kind: ConvBool}), nil
	case avro.Int, avro.Long:
		return newField(name, schema.Int64, string(s.Type()), Conversion{Kind: ConvInt}), nil
	case avro.Float, avro.Double:
		return newField(name, schema.Float64, string(s.Type()), Conversion{Kind: ConvFloat}), nil
	case avro.String:
		return newField(name, schema.String, "string", Conversion{Kind: ConvString}), nil
	case avro.Enum:
		return newField(name, schema.String, "enum "+s.(*avro.EnumSchema).FullName(), Conversion{Kind: ConvString}), nil
	case avro.Bytes:
		return newField(name, schema.Bytes, "bytes", Conversion{Kind: ConvBytes}), nil
	case avro.Fixed:
		return newField(name, schema.Bytes, "fixed "+s.(*avro.FixedSchema).FullName(), Conversion{Kind: ConvBytes}), nil
	case avro.Null:
		return newField(name, schema.String, "null", Conversion{Kind: ConvNull}), nil
	case avro.Record:
		return c.recordColumn(name, s.(*avro.RecordSchema), depth)
	case avro.Array:
		return c.arrayColumn(name, s.(*avro.ArraySchema), depth)
	case avro.Map:
		return c.mapColumn(name, s.(*avro.MapSchema), depth)
	}
	return Field{}, fmt.Errorf("unsupported Avro type %s", s.Type())
}

// recordColumn is a record field: a RECORD of its fields' columns.
func (c *compiler) recordColumn(name string, rec *avro.RecordSchema, depth int) (Field, error) {
	sub, err := c.recordFields(rec, depth+1)
	if err != nil {
		return Field{}, err
	}
	f := newField(name, schema.Record, "record "+rec.FullName(), Conversion{Kind: ConvRecord, Fields: sub})
	f.Fields = sub.Columns()
	f.padBytes = sub.padBytes()
	return f, nil
}

// arrayColumn is an array field: its items' column, repeated; an array of
// arrays is kept as JSON (BigQuery has no ARRAY<ARRAY<..>>).
func (c *compiler) arrayColumn(name string, a *avro.ArraySchema, depth int) (Field, error) {
	if err := c.enter(); err != nil {
		return Field{}, err
	}
	defer func() { c.nest-- }()
	items, err := c.columnFor(name, a.Items(), depth)
	if err != nil {
		return Field{}, err
	}
	if err := repeatedPadding(items); err != nil {
		return Field{}, err
	}
	if items.Repeated {
		return newField(name, schema.JSON, "array of arrays", Conversion{Kind: ConvJSON}), nil
	}
	elem := items
	items.Repeated = true
	items.AvroType = "array<" + items.AvroType + ">"
	items.convert(Conversion{Kind: ConvArray, Elem: &elem})
	return items, nil
}

// mapColumn is a map field: a repeated RECORD of key and value.
func (c *compiler) mapColumn(name string, m *avro.MapSchema, depth int) (Field, error) {
	if err := c.enter(); err != nil {
		return Field{}, err
	}
	defer func() { c.nest-- }()
	if c.columns += 2; c.columns > limits.MaxColumns {
		return Field{}, limits.Errorf("more than BigQuery's %d columns (nested fields included)", limits.MaxColumns)
	}
	val, err := c.columnFor("value", m.Values(), depth+1)
	if err != nil {
		return Field{}, err
	}
	if err := repeatedPadding(val); err != nil {
		return Field{}, err
	}
	val.Source = "value"
	key := newField("key", schema.String, "string", Conversion{Kind: ConvString})
	key.Source = "key"
	f := newField(name, schema.Record, "map<"+val.AvroType+">", Conversion{Kind: ConvMap, Elem: &val})
	f.Repeated = true
	f.Fields = Fields{key, val}.Columns()
	return f, nil
}

// repeatedPadding bounds the padding of each element of an array or map:
// the elements are as many as the payload's bytes, so padding each to a
// declared length multiplies the message.
func repeatedPadding(item Field) error {
	if item.padBytes > limits.MaxRepeatedBitsLength/8 {
		return limits.Errorf("io.debezium.data.Bits inside an array or map pads each element to %d bytes; bqcdc allows %d bits (%d bytes) there",
			item.padBytes, limits.MaxRepeatedBitsLength, limits.MaxRepeatedBitsLength/8)
	}
	return nil
}
