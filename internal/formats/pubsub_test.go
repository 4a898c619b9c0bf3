package formats

import (
	"strings"
	"testing"

	"github.com/bqcdc/bqcdc/internal/dev/avrocases"
)

// PubSubRevision is what package pubsubschema builds a fetched revision
// with: two Writers keyed by revision and encoding, sharing one schema, and
// unclassified errors for definitions that can never decode (the fetcher
// makes them permanent).
func TestPubSubRevision(t *testing.T) {
	const id = schemaName + "@r1"
	binary, json, err := PubSubRevision(id, avrocases.CustomerV2)
	if err != nil {
		t.Fatal(err)
	}
	if binary.Key != "pubsub:"+id+"/binary" || json.Key != "pubsub:"+id+"/json" {
		t.Errorf("keys %q, %q", binary.Key, json.Key)
	}
	if binary.Schema != json.Schema {
		t.Error("the two encodings' Writers parsed the definition twice")
	}
	if binary.toBinary != nil || json.toBinary == nil {
		t.Error("BINARY must decode as is and JSON be transcoded")
	}
	for _, tc := range []struct{ definition, wantErr string }{
		{`{"type":"record","name":"R","fields":[`, "parsing the Avro definition"},
		{`"string"`, "top-level Avro type is string, want a record"},
	} {
		if _, _, err := PubSubRevision(id, tc.definition); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: error %v, want %q", tc.definition, err, tc.wantErr)
		}
	}
}
