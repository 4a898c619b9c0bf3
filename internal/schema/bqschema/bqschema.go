// Package bqschema converts between bqcdc's column model (its parent,
// package schema) and the BigQuery client library's schema type: the one
// column model, seen through the client library.
package bqschema

import (
	"unicode/utf8"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/limits"
	"github.com/bqcdc/bqcdc/internal/schema"
)

// float64Type is the standard SQL name of FLOAT, which a table created
// with it reports (the local emulator's tables are, see package emulator).
const float64Type bigquery.FieldType = "FLOAT64"

var toField = map[string]bigquery.FieldType{
	schema.Int64: bigquery.IntegerFieldType, schema.Float64: bigquery.FloatFieldType, schema.Bool: bigquery.BooleanFieldType,
	schema.String: bigquery.StringFieldType, schema.Bytes: bigquery.BytesFieldType, schema.Numeric: bigquery.NumericFieldType,
	schema.BigNumeric: bigquery.BigNumericFieldType, schema.Date: bigquery.DateFieldType, schema.Time: bigquery.TimeFieldType,
	schema.Datetime: bigquery.DateTimeFieldType, schema.Timestamp: bigquery.TimestampFieldType, schema.JSON: bigquery.JSONFieldType,
	schema.Geography: bigquery.GeographyFieldType, schema.Record: bigquery.RecordFieldType,
}

var fromField = func() map[bigquery.FieldType]string {
	m := map[bigquery.FieldType]string{}
	for k, v := range toField {
		m[v] = k
	}
	for std, legacy := range legacyName { // read both spellings
		if t, ok := m[std]; ok {
			m[legacy] = t
		} else {
			m[std] = m[legacy]
		}
	}
	return m
}()

// legacyName maps the standard SQL type names a table may report (the
// emulator reports what a table was created with) to the legacy names.
var legacyName = map[bigquery.FieldType]bigquery.FieldType{
	float64Type: bigquery.FloatFieldType, "INT64": bigquery.IntegerFieldType,
	"BOOL": bigquery.BooleanFieldType, "STRUCT": bigquery.RecordFieldType,
}

// LegacyNames returns s with standard SQL type names (FLOAT64, INT64, BOOL,
// STRUCT) renamed to the legacy ones, which the Storage Write API's schema
// adapter (managedwriter/adapt) requires. BigQuery itself reports legacy
// names.
func LegacyNames(s bigquery.Schema) bigquery.Schema {
	out := make(bigquery.Schema, len(s))
	for i, f := range s {
		c := *f
		if legacy, ok := legacyName[c.Type]; ok {
			c.Type = legacy
		}
		if c.Schema != nil {
			c.Schema = LegacyNames(c.Schema)
		}
		out[i] = &c
	}
	return out
}

// ToBigQuery converts columns to a client schema.
func ToBigQuery(cols schema.Columns) bigquery.Schema {
	out := make(bigquery.Schema, len(cols))
	for i, c := range cols {
		f := &bigquery.FieldSchema{Name: c.Name, Type: toField[c.Type], Repeated: c.Repeated, Required: c.Required, Description: description(c.Description)}
		if c.Type == schema.Numeric || c.Type == schema.BigNumeric {
			f.Precision, f.Scale = int64(c.Precision), int64(c.Scale)
		}
		if c.Type == schema.Record {
			f.Schema = ToBigQuery(c.Fields)
		}
		out[i] = f
	}
	return out
}

// description cuts a column description to BigQuery's limit (which
// refuses the whole schema update otherwise), at a character boundary,
// marking the cut with "…".
func description(d string) string {
	if len(d) <= limits.MaxDescriptionLen || utf8.RuneCountInString(d) <= limits.MaxDescriptionLen {
		return d
	}
	n := 0
	for i := range d {
		if n == limits.MaxDescriptionLen-1 {
			return d[:i] + "…"
		}
		n++
	}
	return d
}

// FromBigQuery converts a client schema to columns.
func FromBigQuery(s bigquery.Schema) schema.Columns {
	out := make(schema.Columns, len(s))
	for i, f := range s {
		t, ok := fromField[f.Type]
		if !ok {
			t = string(f.Type) // RANGE, INTERVAL: kept by name, never orderable keys
		}
		c := schema.Column{Name: f.Name, Type: t, Repeated: f.Repeated, Required: f.Required, Description: f.Description,
			Precision: int(f.Precision), Scale: int(f.Scale)}
		if f.Type == bigquery.RecordFieldType {
			c.Fields = FromBigQuery(f.Schema)
		}
		out[i] = c
	}
	return out
}
