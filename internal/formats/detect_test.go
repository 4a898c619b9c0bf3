package formats

import "testing"

const schemaName = "projects/p/schemas/customers"

func TestDetect(t *testing.T) {
	schemaAttrs := map[string]string{AttrSchemaName: schemaName, AttrSchemaRevision: "r", AttrSchemaEncoding: EncodingBinary}
	tests := []struct {
		name  string
		attrs map[string]string
		data  string
		want  Format
	}{
		{name: "confluent", data: "\x00\x00\x00\x00\x2a\x02a", want: Confluent},
		{name: "confluent header only", data: "\x00\x00\x00\x00\x2a", want: Confluent},
		{name: "too short for confluent", data: "\x00\x00\x01", want: Unknown},
		// Avro binary from a schema topic can start with a zero byte: the
		// attributes decide.
		{name: "pubsub binary starting with 0", attrs: schemaAttrs, data: "\x00\x00\x00\x00\x2a\x02a", want: PubSubSchema},
		{name: "pubsub json", attrs: map[string]string{AttrSchemaName: schemaName, AttrSchemaRevision: "r", AttrSchemaEncoding: EncodingJSON}, data: `{"id":1}`, want: PubSubSchema},
		{name: "pubsub attributes incomplete", attrs: map[string]string{AttrSchemaName: schemaName}, data: `{}`, want: PubSubSchema},
		{name: "debezium json with schema", data: `{"schema":{"type":"struct"},"payload":{}}`, want: DebeziumJSON},
		{name: "debezium json leading space", attrs: map[string]string{"other": "x"}, data: " \n{\"op\":\"c\"}", want: DebeziumJSON},
		{name: "invalid json", data: `{"op":`, want: Unknown},
		{name: "json array", data: `[1]`, want: Unknown},
		{name: "avro binary without framing", data: "\x02\x04ab", want: Unknown},
		{name: "empty", data: "", want: Unknown},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Detect(tc.attrs, []byte(tc.data)); got != tc.want {
				t.Errorf("Detect = %s, want %s", got, tc.want)
			}
		})
	}
}
