package avrocases

import (
	"testing"

	"github.com/hamba/avro/v2"
)

// Parse parses an Avro schema's text with a cache of its own, so that
// schemas of the same name in different tests do not meet, and fails tb if
// it does not parse.
func Parse(tb testing.TB, text string) avro.Schema {
	tb.Helper()
	s, err := avro.ParseWithCache(text, "", &avro.SchemaCache{})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}
