package formats

import (
	"errors"
	"fmt"

	"github.com/hamba/avro/v2"
)

// Pub/Sub's two schema encodings, as googclient_schemaencoding names them.
const (
	EncodingBinary = "BINARY"
	EncodingJSON   = "JSON"
)

// PubSubRevision builds the two Writers of one Pub/Sub schema revision, one
// per encoding, from its Avro definition. id names the revision
// (projects/p/schemas/s@rev) and keys the Writers ("pubsub:"+id+"/binary",
// "/json"). The errors (a definition that does not parse, or whose top-level
// type is not a record) are not classified: the same definition never
// parses, so a caller fetching revisions treats them as permanent.
//
// Fetching revisions is not this package's business (it stays free of
// network clients); package pubsubschema fetches, caches and calls this.
func PubSubRevision(id, definition string) (binary, json *Writer, err error) {
	// A private schema cache: names are unique within one schema, not
	// across revisions, and hamba's shared cache would let a named type of
	// one revision stand in for another's.
	sch, err := avro.ParseWithCache(definition, "", &avro.SchemaCache{})
	if err != nil {
		return nil, nil, fmt.Errorf("parsing the Avro definition: %w", err)
	}
	if sch.Type() != avro.Record {
		return nil, nil, errors.New("top-level Avro type is " + string(sch.Type()) + ", want a record")
	}
	// The two Writers share the parsed schema; each has its own frozen
	// hamba config (newWriter).
	key := "pubsub:" + id
	return newWriter(key+"/binary", sch, nil), newWriter(key+"/json", sch, avroJSONToBinary), nil
}

func avroJSONToBinary(w *Writer, data []byte) ([]byte, error) {
	return transcode(avroJSON, w.api, w.Schema, data)
}
