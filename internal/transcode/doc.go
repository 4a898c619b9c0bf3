// Package transcode turns the Avro binary payload of a change event
// straight into the Storage Write API row bytes of its changelog table,
// through a plan compiled once per (writer schema, table version).
//
// # Why compiled
//
// The map pipeline, now the tests' reference (internal/dev/oracle:
// formats.Writer decoding into map[string]any, oracle.Flatten by cdc's
// rules, avrobq Convert, evolve Fit, oracle.Row, bqwrite.Encoder
// building a dynamicpb message and marshalling it) allocates a map per
// record, boxes every value in an interface, looks converters and proto
// fields up per value, and walks the message by reflection to marshal it:
// about 140 allocations per message. Everything it decides per message,
// except the values themselves, depends only on the writer schema and the
// table: which field becomes which column, which converter, which
// promotion, which proto field number and wire type. A Plan decides all of
// it once. Per message it reads the payload front to back, converts each
// value in place, and appends protowire encodings to a reusable buffer;
// bytes and strings are sub-slices of the payload, scratch buffers come
// from a pool, and a message costs no allocation in the common case.
//
// # Using it
//
//	p, err := transcode.Compile(transcode.Config{Writer: w, Table: md.Schema, Encoder: t.Encoder, Defaults: defaults})
//	if err != nil { /* every message of the writer schema is dead-lettered with err */ }
//	row, dropped, err := p.Append(buf[:0], frame.Payload, transcode.Meta{MessageID: id, PublishTime: pt, IngestedAt: now, SchemaID: sid})
//
// Config carries what ingest's codec already has for a writer schema and
// a table version; Defaults are the reader schema's defaults for table
// columns the writer lacks, in avrobq's canonical form (the codec's
// defaults map). Append's errors are classified with package failure, with
// the stage the generic path would give (decode, envelope or convert, all
// permanent), so a message is dead-lettered the same way on either path.
// dropped is the count evolve.Fitter.Fit reports (values of writer columns
// the table lacks, when schema evolution is off).
//
// # What it covers
//
// Natively: Debezium envelopes (before, after, source, transaction, op,
// ts_ms; every op, sequences for MySQL, MariaDB and PostgreSQL, the
// fallbacks to source and envelope time) and plain row records; null
// unions; boolean, int, long, float, double, string, bytes, enum, fixed;
// decimal on bytes and fixed (Avro logical type or Kafka Connect Decimal);
// date, time-millis, time-micros, timestamp-millis, timestamp-micros,
// local-timestamp-millis/micros, timestamp-nanos; Debezium's Date, Time,
// MicroTime, NanoTime, Timestamp, MicroTimestamp, NanoTimestamp,
// ZonedTimestamp, ZonedTime, Year, MicroDuration, VariableScaleDecimal,
// Json, Xml, Uuid, Enum, EnumSet and Bits; uuid (string and fixed 16);
// duration; arrays; nested records and arrays of records. Schema evolution
// is folded in: the promotions of package evolve (int and long to FLOAT64,
// NUMERIC and BIGNUMERIC; NUMERIC to BIGNUMERIC; string to bytes; bytes to
// string with its UTF-8 check), columns matched without regard to case
// and in any order, writer columns the table lacks converted (for their
// errors) and dropped, table columns the writer lacks set from Defaults.
// The changelog's metadata columns are written from the payload (_cdc_op,
// _cdc_source_ts, _cdc_sequence, _cdc_transaction) and from Meta
// (_cdc_ingested_at, _cdc_publish_time, _cdc_message_id, _cdc_schema_id).
//
// Column by column, what the compiler does not cover natively is a
// fallback column inside the plan (fallback.go): Avro maps; unions of
// several non-null types and arrays of arrays (stored as JSON); Debezium's
// spatial types (WKB to WKT); arrays of values that take no bytes; a
// converter paired with a decoded form it refuses (a mislabelled semantic
// type, such as io.debezium.time.Date on a time-millis int); a column the
// binder cannot tie to the row message natively. The plan's reader
// validates and skips such a column's bytes, hamba decodes exactly those
// bytes, and avrobq, evolve and the table's encoder convert, fit and write
// the one field; the rest of the row stays compiled. There is no second
// pipeline: ingest compiles every writer schema it accepts.
//
// Compile still returns ErrUnsupported for what no Debezium connector
// writes and no table bqcdc made has: before/after images that are not a
// union of null and one record; source or transaction blocks in a union
// with other types than null, or with a one-field record or map where cdc
// reads a scalar; tables that lack a metadata column (ingest adds it
// first), have required columns besides _cdc_ingested_at, or whose row
// message types a metadata column otherwise than bqwrite needs. Ingest
// dead-letters the messages of such a schema (stage schema) with the
// reason. Other errors from Compile are the ones ingest's codec meets for
// the schema (an unusable schema, a conflict with the table).
//
// # How it stays equal to the reference
//
// Every decision mirrors the generic code it replaces, and says so where
// it is made: the Avro reader accepts and refuses exactly what hamba's
// Reader does (varint lengths, boolean bytes, 10 MiB strings, union and
// enum indexes, negative block counts); the conversion of each column is
// the one avrobq decided (avrobq.Field.Conv, from which avrobq builds its
// own converter too), compiled for the Go value hamba would have decoded
// (so, for example, a time-micros long is multiplied into a time.Duration
// and may wrap exactly as hamba's does): the transcoder decides no column
// type of its own; the source block is read with cdc's rules for which Go
// types count; errors keep their order of precedence (the generic path
// decodes the whole payload before it flattens or converts, so a decode
// error anywhere beats an envelope error, which beats a conversion error,
// and among conversion errors the first column in field order wins).
//
// Equality is tested, not assumed: tests and a fuzz target (FuzzTranscode)
// run both paths on the same input, random valid records built with
// hamba's Marshal for several schemas and arbitrary bytes, and require
// the same row bytes and dropped count, or errors of the same stage.
// "Same bytes" means the canonical form: proto.Marshal of a dynamicpb
// message (what bqwrite.Encoder.Encode does) writes fields in Go map
// iteration order, which changes from call to call, so the generic row is
// compared after Canonical (unmarshal, marshal deterministically), which
// orders fields by number as Append writes them. BigQuery reads both
// forms as the same row.
//
// One deliberate difference: for a block count larger than the bytes left
// could hold, Append fails with a decode error at once, while the generic
// path allocates the declared count first and can exhaust memory; the
// tests check the transcoder's answer alone for such input.
package transcode
