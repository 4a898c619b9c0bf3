package formats_test

import (
	"math/big"
	"path/filepath"
	"testing"

	"github.com/bqcdc/bqcdc/internal/avrobq"
	"github.com/bqcdc/bqcdc/internal/cdc"
	"github.com/bqcdc/bqcdc/internal/dev/oracle"
	"github.com/bqcdc/bqcdc/internal/dev/testfile"
	"github.com/google/go-cmp/cmp"
	"github.com/hamba/avro/v2"
)

// equateRats compares decoded decimals by value.
var equateRats = cmp.Comparer(func(a, b *big.Rat) bool { return a.Cmp(b) == 0 })

func debezium(t *testing.T, name string) []byte {
	t.Helper()
	return testfile.Bytes(t, filepath.Join("testdata", "debezium", name))
}

// wrap builds what JsonConverter writes with schemas.enable=true.
func wrap(schema, payload []byte) []byte {
	out := append([]byte(`{"schema":`), trim(schema)...)
	out = append(out, `,"payload":`...)
	out = append(out, trim(payload)...)
	return append(out, '}')
}

func trim(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	return b
}

// parseSchema parses with a private cache, as the registry path does.
func parseSchema(t testing.TB, text []byte) avro.Schema {
	t.Helper()
	s, err := avro.ParseBytesWithCache(text, "", &avro.SchemaCache{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// pipeline runs what ingest runs after decoding: flatten the envelope, then
// convert the row image to BigQuery values.
func pipeline(t *testing.T, writer avro.Schema, rec map[string]any) (cdc.Change, map[string]any) {
	t.Helper()
	sh, fields, err := readerOf(writer)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := oracle.Flatten(sh, rec)
	if err != nil {
		t.Fatal(err)
	}
	values, err := fields.Convert(ch.Image)
	if err != nil {
		t.Fatal(err)
	}
	return ch, values
}

// readerOf is how ingest reads the records of writer schema s: the
// envelope's shape, and the fields of its row image.
func readerOf(s avro.Schema) (cdc.Shape, avrobq.Fields, error) {
	sh, err := cdc.ShapeOf(s)
	if err != nil {
		return cdc.Shape{}, nil, err
	}
	fields, err := avrobq.FromRecord(sh.Image)
	return sh, fields, err
}

// fieldsOf is avrobq's mapping of rec.
func fieldsOf(t *testing.T, rec *avro.RecordSchema) avrobq.Fields {
	t.Helper()
	fields, err := avrobq.FromRecord(rec)
	if err != nil {
		t.Fatal(err)
	}
	return fields
}
