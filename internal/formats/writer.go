package formats

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/bqcdc/bqcdc/internal/limits"
	"github.com/hamba/avro/v2"
)

// Writer decodes the messages written with one schema.
type Writer struct {
	// Key identifies the schema and the encoding: two Writers with equal
	// keys decode the same bytes to the same records. Anything built from
	// Schema (a cdc.Shape, avrobq.Fields) can be cached per Key. It is
	//   "pubsub:projects/p/schemas/s@<revision>/binary" (or /json) for a
	//   Pub/Sub schema revision,
	//   "connect:<sha256 hex of the canonical Connect schema JSON>" for a
	//   JsonConverter schema,
	//   "" for SchemalessJSON, whose schema the caller supplied.
	Key string
	// Schema is the writer schema, always a record.
	Schema avro.Schema

	// api is private to the Writer: hamba caches compiled codecs by schema
	// fingerprint, and a reference to a named record has the fingerprint of
	// its name only, so a config shared between versions of one record
	// decodes one version with another's layout (see ingest's codec).
	api avro.API
	// toBinary transcodes one message into Avro binary for Schema; nil when
	// the messages are Avro binary already.
	toBinary func(data []byte) ([]byte, error)
	// plan is what the validator run before every decode knows of Schema.
	plan *plan
}

// decodeConfig bounds what hamba allocates for one value. Nothing a message
// holds is longer than the message: a string or bytes value, and the items
// of an array, are bounded by Pub/Sub's message size. The validator checks
// every length and count against the bytes actually left before hamba runs;
// these limits are the backstop should a path ever skip it. (hamba v2.31.0
// has no map limit: it grows maps as entries are read, never from a count.)
var decodeConfig = avro.Config{
	MaxByteSliceSize:  limits.MaxMessageBytes,
	MaxSliceAllocSize: limits.MaxMessageBytes,
}

func newWriter(key string, s avro.Schema, toBinary func(*Writer, []byte) ([]byte, error)) *Writer {
	w := &Writer{Key: key, Schema: s, api: decodeConfig.Freeze(), plan: newPlan(s)}
	if toBinary != nil {
		w.toBinary = func(b []byte) ([]byte, error) { return toBinary(w, b) }
	}
	return w
}

// Binary returns one message as Avro binary for Schema: the message itself
// for binary encodings, else transcoded from its JSON encoding (errors are
// permanent, as Decode's).
func (w *Writer) Binary(data []byte) ([]byte, error) {
	if w.toBinary == nil {
		return data, nil
	}
	return w.toBinary(data)
}

// Decode reads one message into hamba's generic form. Every error is
// permanent: the same bytes always fail the same way. A message (or a
// schema) beyond one of bqcdc's limits fails with an error wrapping
// limits.ErrLimit that names the limit, before anything it declares is
// allocated.
func (w *Writer) Decode(data []byte) (map[string]any, error) {
	return w.DecodeContext(context.Background(), data)
}

// DecodeContext is Decode for a request: the validator charges the
// message's decoded-size budget (limits.Budget) and stops, with an error
// wrapping limits.ErrInterrupted, once ctx is done. That error is the
// request's, not the message's: the message is to be redelivered.
func (w *Writer) DecodeContext(ctx context.Context, data []byte) (map[string]any, error) {
	if w.toBinary != nil {
		b, err := w.toBinary(data)
		if err != nil {
			return nil, err
		}
		data = b
	}
	if err := validate(ctx, w.plan, w.Schema, data); err != nil {
		if err == errTruncated {
			return nil, fmt.Errorf("payload truncated: %w", io.ErrUnexpectedEOF)
		}
		return nil, err
	}
	return decodeBinary(w.api, w.Schema, data)
}

// decodeBinary reads one record as ingest's codec does. hamba's Unmarshal
// takes running out of input at a field boundary for success, which would
// let a truncated message through with its last fields missing; reading
// through a Reader and treating any end of input as an error does not.
// Unlike the codec it also refuses trailing bytes: a schema-validated
// message is exactly one record.
func decodeBinary(api avro.API, s avro.Schema, data []byte) (map[string]any, error) {
	r := avro.NewReader(nil, 0, avro.WithReaderConfig(api)).Reset(data)
	var rec map[string]any
	r.ReadVal(s, &rec)
	switch {
	case errors.Is(r.Error, io.EOF), errors.Is(r.Error, io.ErrUnexpectedEOF):
		return nil, fmt.Errorf("payload truncated: %w", io.ErrUnexpectedEOF)
	case r.Error != nil:
		return nil, r.Error
	}
	if r.Peek(); r.Error == nil {
		return nil, errors.New("trailing bytes after the record")
	}
	return rec, nil
}

// AvroBinary returns the Writer of messages that are plain Avro binary
// encoded with s (the Confluent wire format's payload); key names s, e.g.
// "registry:42".
func AvroBinary(key string, s avro.Schema) *Writer { return newWriter(key, s, nil) }

// ErrNotUTF8 marks a string, a map key or a JSON message that is not UTF-8.
// Avro strings and JSON text are UTF-8 by their specifications, and so are
// BigQuery's STRING values: bqcdc refuses such a message (stage decode) in
// every format rather than keep bytes BigQuery would read as another text,
// or turn them into U+FFFD as encoding/json does.
var ErrNotUTF8 = errors.New("not valid UTF-8")

func notUTF8(what string, at int) error {
	return fmt.Errorf("%s at byte %d: %w (the message is refused, not altered)", what, at, ErrNotUTF8)
}
