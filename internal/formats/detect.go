package formats

import (
	"encoding/json"

	"github.com/bqcdc/bqcdc/internal/wire"
)

// Format is the encoding of one message.
type Format int

// Formats Detect tells apart. The zero value is Unknown.
const (
	Unknown      Format = iota
	Confluent           // magic byte 0, 4-byte registry id, Avro binary
	PubSubSchema        // Avro checked by a Pub/Sub topic schema (BINARY or JSON)
	DebeziumJSON        // Kafka Connect JsonConverter, with or without the schema wrapper
)

func (f Format) String() string {
	switch f {
	case Confluent:
		return "confluent"
	case PubSubSchema:
		return "pubsub-schema"
	case DebeziumJSON:
		return "debezium-json"
	}
	return "unknown"
}

// Attributes Pub/Sub adds to every message it delivers from a topic with a
// schema.
const (
	AttrSchemaName     = "googclient_schemaname"       // projects/p/schemas/s
	AttrSchemaRevision = "googclient_schemarevisionid" // e.g. 3afd3cc8
	AttrSchemaEncoding = "googclient_schemaencoding"   // JSON or BINARY
)

// Detect tells which format a message is in. It only looks; it never fails.
//
// The checks run in this order, and the order matters:
//
//  1. PubSubSchema, when the message carries googclient_schemaname. The
//     attributes come first because they are the only unambiguous signal:
//     Avro binary validated by Pub/Sub may well begin with a zero byte (a
//     null union branch, a zero int) and would otherwise pass for Confluent
//     framing. A message with the name but without a revision or with an
//     encoding other than JSON or BINARY is still PubSubSchema, so that
//     Lookup reports what is missing instead of the payload being misread as
//     another format.
//  2. Confluent, when the data is at least 5 bytes and starts with the magic
//     byte 0. JSON text cannot start with a zero byte.
//  3. DebeziumJSON, when the data is a valid JSON object (leading JSON
//     whitespace allowed). Whether it carries the schema wrapper is decided
//     by ConnectSchemas.Decode.
//  4. Unknown otherwise, including empty data (a tombstone, which callers
//     handle before detecting).
func Detect(attrs map[string]string, data []byte) Format {
	switch {
	case attrs[AttrSchemaName] != "":
		return PubSubSchema
	case len(data) >= wire.HeaderLen && data[0] == wire.MagicByte:
		return Confluent
	case isJSONObject(data):
		return DebeziumJSON
	}
	return Unknown
}

func isJSONObject(b []byte) bool {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '{':
			return json.Valid(b)
		}
		return false
	}
	return false
}
