package formats

import (
	"os"
	"testing"

	"github.com/bqcdc/bqcdc/internal/dev/avrocases"
	"github.com/hamba/avro/v2"
)

// Per-message costs with warm caches: JSON is transcoded to Avro binary and
// decoded, so a JSON message costs a binary decode plus the transcoding.
func BenchmarkDecode(b *testing.B) {
	schemaJSON, _ := os.ReadFile("testdata/debezium/customers.schema.json")
	payload, _ := os.ReadFile("testdata/debezium/customers-update.payload.json")
	wrapped := append(append(append([]byte(`{"schema":`), schemaJSON...), `,"payload":`...), append(payload, '}')...)
	avsc, _ := os.ReadFile("../../schemas/dbserver1.inventory.customers-value.avsc")
	reader, err := avro.ParseBytesWithCache(avsc, "", &avro.SchemaCache{})
	if err != nil {
		b.Fatal(err)
	}
	schemaless, _ := SchemalessJSON(reader)
	rev, err := parseRevision("projects/p/schemas/customers@r", avrocases.CustomerV2)
	if err != nil {
		b.Fatal(err)
	}
	bin, _ := avro.Marshal(rev.binary.Schema, avrocases.JSONCases[0].Rec)
	cs := NewConnectSchemas()
	cases := []struct {
		name   string
		decode func() error
	}{
		{"debezium json with schema", func() error { _, _, err := cs.Decode(wrapped); return err }},
		{"debezium json schemaless", func() error { _, err := schemaless.Decode(payload); return err }},
		{"pubsub binary", func() error { _, err := rev.binary.Decode(bin); return err }},
		{"pubsub json", func() error { _, err := rev.json.Decode([]byte(avrocases.JSONCases[0].JSON)); return err }},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if err := c.decode(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
