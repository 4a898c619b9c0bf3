// Package wire parses the Confluent Schema Registry wire format that Debezium's
// AvroConverter writes: one magic byte (0), a 4-byte big-endian schema id, then
// the Avro binary payload.
//
// The package is pure: it never looks a schema up. An empty value is not a
// frame but a Kafka/Debezium tombstone, which callers must handle before
// calling Parse (see IsTombstone).
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// MagicByte is the only framing version the Confluent format defines.
const MagicByte byte = 0

// HeaderLen is the length of the magic byte plus the schema id.
const HeaderLen = 5

// Sentinel errors, so callers can classify a bad frame without string matching.
// Every one of them is permanent: the same bytes can never parse.
var (
	ErrEmpty     = errors.New("empty message (tombstone), not a frame")
	ErrShort     = errors.New("message shorter than the 5-byte Confluent header")
	ErrMagicByte = errors.New("unknown magic byte")
	ErrNoPayload = errors.New("frame has a header but no Avro payload")
	ErrSchemaID  = errors.New("schema id out of range")
)

// Frame is one parsed message value.
type Frame struct {
	SchemaID int32  // registry id of the writer schema
	Payload  []byte // Avro binary, aliasing the input slice
}

// IsTombstone reports whether a message value is a tombstone (a delete marker
// for log compaction, carrying no value at all).
func IsTombstone(value []byte) bool { return len(value) == 0 }

// Parse splits a Confluent-framed value. It does not copy: Payload aliases b.
func Parse(b []byte) (Frame, error) {
	switch {
	case len(b) == 0:
		return Frame{}, ErrEmpty
	case b[0] != MagicByte:
		return Frame{}, fmt.Errorf("%w 0x%02x (want 0x00): the value is not Confluent-framed Avro", ErrMagicByte, b[0])
	case len(b) < HeaderLen:
		return Frame{}, fmt.Errorf("%w: got %d bytes", ErrShort, len(b))
	case len(b) == HeaderLen:
		return Frame{}, ErrNoPayload
	}
	id := int32(binary.BigEndian.Uint32(b[1:HeaderLen]))
	if id <= 0 {
		// Registries number schemas from 1 (Confluent's ids are positive
		// Java ints): no lookup can find this one.
		return Frame{}, fmt.Errorf("%w: %d (registry ids run from 1 to %d)", ErrSchemaID, id, int32(1<<31-1))
	}
	return Frame{SchemaID: id, Payload: b[HeaderLen:]}, nil
}

// Append writes the framing for schemaID followed by payload to dst. Producers
// in the local demo and tests use it; bqcdc itself only reads frames.
func Append(dst []byte, schemaID int32, payload []byte) []byte {
	dst = append(dst, MagicByte)
	dst = binary.BigEndian.AppendUint32(dst, uint32(schemaID))
	return append(dst, payload...)
}
