package formats

import (
	"context"
	"os"
	"testing"

	"github.com/bqcdc/bqcdc/internal/dev/avrocases"
	"github.com/hamba/avro/v2"
)

// The work the bounds add to each message, measured alone: the validator
// over an Avro record, the JSON bounds scan over a JsonConverter message,
// and the SHA-256 that keys the Connect schema cache.
func BenchmarkBounds(b *testing.B) {
	rev, err := parseRevision("projects/p/schemas/customers@r", avrocases.CustomerV2)
	if err != nil {
		b.Fatal(err)
	}
	bin, err := avro.Marshal(rev.binary.Schema, avrocases.JSONCases[0].Rec)
	if err != nil {
		b.Fatal(err)
	}
	schemaJSON, _ := os.ReadFile("testdata/debezium/customers.schema.json")
	payload, _ := os.ReadFile("testdata/debezium/customers-update.payload.json")
	wrapped := append(append(append([]byte(`{"schema":`), schemaJSON...), `,"payload":`...), append(payload, '}')...)
	b.Run("validate avro", func(b *testing.B) {
		for b.Loop() {
			if err := validate(context.Background(), rev.binary.plan, rev.binary.Schema, bin); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode avro (hamba, for scale)", func(b *testing.B) {
		for b.Loop() {
			if _, err := decodeBinary(rev.binary.api, rev.binary.Schema, bin); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json bounds scan", func(b *testing.B) {
		b.SetBytes(int64(len(wrapped)))
		for b.Loop() {
			if err := checkJSONBounds(wrapped); err != nil {
				b.Fatal(err)
			}
		}
	})
	cs := NewConnectSchemas()
	if _, _, err := cs.Decode(wrapped); err != nil {
		b.Fatal(err)
	}
	b.Run("connect schema cache hit", func(b *testing.B) {
		schema, _, _ := splitWrapper(wrapped)
		for b.Loop() {
			if _, err := cs.writer(schema); err != nil {
				b.Fatal(err)
			}
		}
	})
}
