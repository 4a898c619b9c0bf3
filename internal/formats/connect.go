package formats

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"time"

	"github.com/bqcdc/bqcdc/internal/failure"
	"github.com/bqcdc/bqcdc/internal/limits"
	"github.com/hamba/avro/v2"
	"golang.org/x/sync/singleflight"
)

// Sentinels of ConnectSchemas.Decode, for conditions callers act on.
var (
	// ErrNoSchema: the message is JsonConverter output without the schema
	// wrapper (schemas.enable=false). There is no writer schema; read it with
	// SchemalessJSON and the source's reader schema.
	ErrNoSchema = errors.New("Debezium JSON without the schema wrapper (schemas.enable=false)")
	// ErrTombstone: the wrapper holds a null schema and a null payload, the
	// JSON form of a tombstone.
	ErrTombstone = errors.New("Debezium JSON tombstone (null payload)")
)

// Bounds of the ConnectSchemas caches. Their keys come from the messages, so
// they are bounded in entries and in age: a stream of distinct schemas (a
// Writer costs ~30 KB) evicts old ones rather than growing the process, and
// an entry is rebuilt at least once per connectCacheTTL.
const (
	maxConnectTexts   = 256 // raw schema texts (by textKey) -> Writer
	maxConnectWriters = 128 // canonical schemas -> Writer
	connectCacheTTL   = time.Hour
)

// ConnectSchemas decodes JsonConverter messages that carry their schema,
// building the Avro schema and Writer of each distinct Connect schema once.
// It is safe for concurrent use.
//
// Every message repeats its schema, so the lookup must be cheap: a message
// whose schema text is byte-for-byte one already seen finds its Writer by a
// 128-bit hash of that text (textKey). Other texts are canonicalised
// (parsed, keys sorted, whitespace dropped) and hashed into Writer.Key, so
// reformatted copies of one schema share one Writer; only a new Key builds
// one. Both caches are LRUs bounded in size and age (see maxConnectTexts).
type ConnectSchemas struct {
	byText *lru[textKey, *Writer]
	byKey  *lru[string, *Writer]
	group  singleflight.Group
}

// NewConnectSchemas returns an empty cache.
func NewConnectSchemas() *ConnectSchemas {
	return &ConnectSchemas{
		byText: newLRU[textKey, *Writer](maxConnectTexts, connectCacheTTL),
		byKey:  newLRU[string, *Writer](maxConnectWriters, connectCacheTTL),
	}
}

// Decode reads one JsonConverter message with the schema wrapper
// ({"schema": {...}, "payload": {...}}) and returns the Writer of its schema
// and the payload in hamba's generic form. It returns ErrNoSchema for a
// message without the wrapper and ErrTombstone for a null payload; other
// errors are permanent, at the registry stage for a schema that cannot be
// converted and at the decode stage for a payload that does not fit it.
func (c *ConnectSchemas) Decode(data []byte) (*Writer, map[string]any, error) {
	return c.DecodeContext(context.Background(), data)
}

// DecodeContext is Decode for a request: decoding stops once ctx is done,
// with a retryable error wrapping limits.ErrInterrupted (see
// Writer.DecodeContext).
func (c *ConnectSchemas) DecodeContext(ctx context.Context, data []byte) (*Writer, map[string]any, error) {
	w, payload, err := c.Split(data)
	if err != nil {
		return nil, nil, err
	}
	rec, err := w.DecodeContext(ctx, payload)
	if errors.Is(err, limits.ErrInterrupted) {
		return nil, nil, failure.Retryable(failure.StageDecode, fmt.Errorf("decoding Debezium JSON payload: %w", err))
	}
	if err != nil {
		return nil, nil, failure.Permanent(failure.StageDecode, fmt.Errorf("decoding Debezium JSON payload: %w", err))
	}
	return w, rec, nil
}

// Split reads the wrapper of one JsonConverter message and returns the
// Writer of its schema and the payload's JSON, which the Writer decodes
// (or turns into Avro binary with Binary, as ingest does). Its errors are
// Decode's, but for the payload's own, which come when it is decoded.
func (c *ConnectSchemas) Split(data []byte) (*Writer, []byte, error) {
	// The wrapper is split by encoding/json, which is linear in the input
	// and stops at 10,000 levels; the schema text is checked against
	// bqcdc's JSON bounds when it is first seen (canonicalJSON), the
	// payload whenever it is transcoded.
	if len(data) > limits.MaxMessageBytes {
		return nil, nil, failure.Permanent(failure.StageDecode, limits.Errorf("the JSON message is %d bytes, more than Pub/Sub's %d-byte message limit", len(data), limits.MaxMessageBytes))
	}
	schema, payload, err := splitWrapper(data)
	if err != nil {
		return nil, nil, err
	}
	w, err := c.writer(schema)
	if err != nil {
		return nil, nil, failure.Permanent(failure.StageRegistry, fmt.Errorf("Connect schema: %w", err))
	}
	return w, payload, nil
}

// splitWrapper recognises the wrapper JsonConverter writes with
// schemas.enable=true: an object of exactly "schema" and "payload".
func splitWrapper(data []byte) (schema, payload json.RawMessage, err error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, nil, failure.Permanent(failure.StageDecode, fmt.Errorf("parsing Debezium JSON: %w", err))
	}
	schema, hasSchema := top["schema"]
	payload, hasPayload := top["payload"]
	if len(top) != 2 || !hasSchema || !hasPayload {
		return nil, nil, ErrNoSchema
	}
	schema, payload = bytes.TrimSpace(schema), bytes.TrimSpace(payload)
	switch {
	case string(payload) == "null":
		return nil, nil, ErrTombstone
	case len(schema) == 0 || schema[0] != '{':
		return nil, nil, failure.Permanent(failure.StageRegistry, fmt.Errorf("the Debezium JSON schema is %.20s, want an object", schema))
	}
	return schema, payload, nil
}

// textKey identifies a schema text by two 64-bit hashes with seeds chosen
// at random for the process: a publisher cannot aim at a collision it
// cannot compute, and the pair hashes at memory speed, unlike SHA-256 (the
// lookup runs for every message).
type textKey [2]uint64

var textSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

func keyOf(text []byte) textKey {
	return textKey{maphash.Bytes(textSeeds[0], text), maphash.Bytes(textSeeds[1], text)}
}

func (c *ConnectSchemas) writer(text []byte) (*Writer, error) {
	textSum := keyOf(text)
	if w, ok := c.byText.Get(textSum); ok {
		return w, nil
	}
	canon, err := canonicalJSON(text)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(canon)
	key := "connect:" + hex.EncodeToString(sum[:])
	v, err, _ := c.group.Do(key, func() (any, error) {
		if w, ok := c.byKey.Get(key); ok {
			return w, nil
		}
		w, err := connectWriter(key, canon)
		if err != nil {
			return nil, err
		}
		c.byKey.Add(key, w)
		return w, nil
	})
	if err != nil {
		return nil, err
	}
	w := v.(*Writer)
	c.byText.Add(textSum, w)
	return w, nil
}

// canonicalJSON re-encodes JSON with sorted keys and no insignificant
// whitespace, numbers kept as written.
func canonicalJSON(text []byte) ([]byte, error) {
	if err := checkJSONBounds(text); err != nil {
		return nil, err
	}
	v, err := parseJSON(text)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// ConnectWriter builds the Writer for one Connect schema, given as the
// JSON of the wrapper's "schema" member. ConnectSchemas caches its results;
// call it directly only to inspect a schema.
func ConnectWriter(schema []byte) (*Writer, error) {
	canon, err := canonicalJSON(schema)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(canon)
	return connectWriter("connect:"+hex.EncodeToString(sum[:]), canon)
}

func connectWriter(key string, schema []byte) (*Writer, error) {
	var cs connectSchema
	if err := json.Unmarshal(schema, &cs); err != nil {
		return nil, fmt.Errorf("reading the Connect schema: %w", err)
	}
	text, err := avroSchemaJSON(&cs)
	if err != nil {
		return nil, err
	}
	// A private cache: names are only unique within one schema.
	s, err := avro.ParseBytesWithCache(text, "", &avro.SchemaCache{})
	if err != nil {
		return nil, fmt.Errorf("parsing the Avro schema converted from the Connect schema: %w", err)
	}
	return newWriter(key, s, connectToBinary), nil
}

func connectToBinary(w *Writer, data []byte) ([]byte, error) {
	return transcode(connectJSON, w.api, w.Schema, data)
}

// SchemalessJSON returns a Writer that reads JsonConverter payloads written
// without the schema wrapper (schemas.enable=false) according to reader, an
// Avro record schema such as the one AvroConverter registered for the same
// source: Connect's conventions (bare optional values, base64 bytes, Decimal
// as base64 or as a number, int8/int16 ranges from "connect.type") are read
// by the types and connect.* properties of reader.
//
// Resolution is by field name: members the reader lacks are ignored, a
// reader field the payload lacks takes its default, else null when it is
// nullable; otherwise the message fails with an error naming the field.
// Build one per reader schema and keep it: its hamba config compiles the
// decoder on first use. Its Key is empty.
func SchemalessJSON(reader avro.Schema) (*Writer, error) {
	if reader == nil || reader.Type() != avro.Record {
		return nil, errors.New("the reader schema must be a record")
	}
	return newWriter("", reader, connectToBinary), nil
}

// DecodeJSONWith reads one schemaless JsonConverter payload according to
// reader (see SchemalessJSON). It compiles the decoder on every call; keep a
// SchemalessJSON Writer per reader schema on hot paths.
func DecodeJSONWith(reader avro.Schema, data []byte) (map[string]any, error) {
	w, err := SchemalessJSON(reader)
	if err != nil {
		return nil, err
	}
	return w.Decode(data)
}
