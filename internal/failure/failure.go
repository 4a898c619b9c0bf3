// Package failure classifies errors as permanent or retryable, and records
// the pipeline stage where they happened.
//
// The ingest function acts on the class: a permanent failure (the same bytes
// can never succeed) is dead-lettered and acknowledged; a retryable one is
// returned so Pub/Sub redelivers the message. Unclassified errors count as
// retryable: redelivering is always safe, dropping is not.
package failure

import (
	"errors"
	"fmt"
)

// Stage names where in the pipeline a message failed; it is stored with
// every dead letter.
type Stage string

// Pipeline stages, in order.
const (
	StageEvent    Stage = "event"    // the CloudEvent / Pub/Sub envelope
	StageWire     Stage = "wire"     // Confluent framing
	StageRegistry Stage = "registry" // writer schema lookup
	StageDecode   Stage = "decode"   // Avro decoding and schema resolution
	StageEnvelope Stage = "envelope" // Debezium envelope flattening
	StageConvert  Stage = "convert"  // Avro value -> BigQuery value
	StageTable    Stage = "table"    // changelog table lookup
	StageSchema   Stage = "schema"   // writer schema vs changelog columns (evolution, conflicts)
	StageEncode   Stage = "encode"   // BigQuery value -> Storage Write row
	StageAppend   Stage = "append"   // Storage Write append

	// StageInternal: handling the message panicked (a bug, or an input no
	// check caught). The panic is the message's, not the instance's: it is
	// dead-lettered with the panic text, and the instance keeps serving.
	StageInternal Stage = "internal"
)

// Stages lists every stage a dead letter can carry, in pipeline order.
func Stages() []Stage {
	return []Stage{StageEvent, StageWire, StageRegistry, StageDecode, StageEnvelope, StageConvert,
		StageTable, StageSchema, StageEncode, StageAppend, StageInternal}
}

// Recovered turns the value of a recovered panic into a permanent failure
// at StageInternal whose text is the panic's. Use it in the deferred
// recover of the code that handles one message; log the stack beside it.
func Recovered(v any) error {
	if err, ok := v.(error); ok {
		return Permanent(StageInternal, fmt.Errorf("panic: %w", err))
	}
	return Permanent(StageInternal, fmt.Errorf("panic: %v", v))
}

// Error is a classified error.
type Error struct {
	Stage     Stage
	Permanent bool
	Err       error
}

func (e *Error) Error() string { return string(e.Stage) + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Permanent marks err as one that no retry can fix.
func Permanent(stage Stage, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Stage: stage, Permanent: true, Err: err}
}

// Retryable marks err as transient.
func Retryable(stage Stage, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Stage: stage, Err: err}
}

// IsPermanent reports whether err (or an error it wraps) was marked permanent.
func IsPermanent(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Permanent
}

// StageOf returns the stage recorded in err, or "" if none.
func StageOf(err error) Stage {
	var e *Error
	if errors.As(err, &e) {
		return e.Stage
	}
	return ""
}
