// Package formats recognises the message formats bqcdc ingests and turns
// each into the same thing: a writer schema (hamba/avro) and a record in
// hamba's generic decoded form (which the transcoder reads in one pass;
// the tests' reference pipeline, internal/dev/oracle, flattens and
// converts it).
//
// It is pure: bytes and schema texts in, Writers and records out, no
// network client. Where a writer schema comes from is the business of the
// schema sources: package registry (Confluent Schema Registry) and package
// pubsubschema (Pub/Sub schema revisions); Debezium JSON carries its own.
//
// Three formats are understood:
//
//   - Confluent: Avro binary behind a magic byte and a registry id (package
//     wire and the registry handle these; this package only detects them).
//   - PubSubSchema: Avro validated by a Pub/Sub topic schema. Pub/Sub names
//     the schema revision in the googclient_schema* attributes (AttrSchema*);
//     package pubsubschema fetches and caches revisions, and PubSubRevision
//     builds a revision's Writers for both of Pub/Sub's encodings, BINARY and
//     JSON.
//   - DebeziumJSON: Kafka Connect's JsonConverter output. With
//     schemas.enable=true every message carries its Connect schema, which
//     ConnectSchemas converts (once per distinct schema) into the Avro schema
//     Confluent's AvroConverter would have registered. With
//     schemas.enable=false there is no writer schema and SchemalessJSON (or
//     DecodeJSONWith) reads the payload with a reader schema the caller
//     supplies.
//
// # One decoded form
//
// JSON is never turned into generic values by hand. It is transcoded, along
// the schema, into Avro binary, which is then decoded exactly as the Confluent
// path decodes (a private frozen hamba config per schema, end of input taken
// as truncation). A JSON message therefore yields the very map, with the same
// union wrapping, time.Time, *big.Rat and [N]byte values, that the binary
// encoding of the same record yields; the downstream converters see no
// difference between formats.
//
// # Errors
//
// Errors returned by ConnectSchemas.Decode are classified with package
// failure (permanent: the same message can never succeed; retryable:
// redeliver). Errors from Writer.Decode and PubSubRevision are not
// classified; they are all permanent (the bytes do not fit the schema, the
// definition never parses) and name the field that failed where there is
// one.
//
// # Bounds
//
// Nothing a message declares is allocated or computed before it is checked
// against a bound of package limits, derived from Pub/Sub's message size
// and BigQuery's documented limits. Writer.Decode walks Avro binary along
// the writer schema first (validate.go): every block count, length and size
// is checked against the bytes left, items that take no bytes against a
// per-message budget, nesting and varints against fixed bounds; hamba's own
// limits are set from the message size, so values up to ~10 MB decode. JSON
// is scanned for nesting and number length before it is parsed, and a
// Connect schema's decimal parameters, Bits lengths, nesting and field
// counts are checked while it is converted. Such errors wrap
// limits.ErrLimit and name the bound.
package formats
