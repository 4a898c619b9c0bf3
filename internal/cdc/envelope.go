// Package cdc holds the rules that make a change record one Change: the
// operation, the row image to store, the source timestamp and a sortable
// sequence.
//
// It understands the Debezium envelope (before, after, source, op, ts_ms and
// an optional transaction block: ShapeOf, ParseOp, Position, CheckPosition,
// EnvelopeTime). A record that is not an envelope is taken as the row image
// itself: application change logs carry their own operation and ordering
// columns, which a flow names in APPLY AS DELETE WHEN and SEQUENCE BY. The
// package is pure; the transcoder applies its rules to Avro bytes, the
// tests' reference (internal/dev/oracle) to hamba's generic map form.
package cdc

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hamba/avro/v2"
)

// Op is a Debezium operation. Its zero value, OpNone, is not one: a record
// that is not a Debezium envelope has no operation, and ParseOp returns it
// for a code Debezium does not write, so an unchecked Op can never be stored
// as a valid one.
type Op uint8

// Debezium's operations. String gives the code stored in the _cdc_op column.
const (
	OpNone Op = iota
	OpCreate
	OpUpdate
	OpDelete
	OpRead // snapshot read
	OpTruncate
)

// ParseOp reads a Debezium op code ("c", "u", "d", "r" or "t"); anything else
// is OpNone. It takes the decoded string and the compiled path's raw bytes
// alike, without allocating.
func ParseOp[T string | []byte](code T) Op {
	if len(code) != 1 {
		return OpNone
	}
	switch code[0] {
	case 'c':
		return OpCreate
	case 'u':
		return OpUpdate
	case 'd':
		return OpDelete
	case 'r':
		return OpRead
	case 't':
		return OpTruncate
	}
	return OpNone
}

// String is the op's Debezium code; "" for OpNone.
func (o Op) String() string {
	if o == OpNone || o > OpTruncate {
		return ""
	}
	return "cudrt"[o-1 : o]
}

// ImageField names the envelope field holding the row image the op stores:
// "after" for a create, update or read, "before" for a delete, "" for a
// truncate (which has no row) and for OpNone.
func (o Op) ImageField() string {
	switch o {
	case OpCreate, OpUpdate, OpRead:
		return "after"
	case OpDelete:
		return "before"
	}
	return ""
}

// ErrEnvelope marks a Debezium record that cannot become a changelog row (an
// unknown op, a delete without its before image, a change of a known
// connector without a usable source position, a time BigQuery cannot store).
// It is permanent.
var ErrEnvelope = errors.New("invalid Debezium envelope")

// Change is one flattened change event.
type Change struct {
	Op          Op             // OpNone when the record is not a Debezium envelope
	Image       map[string]any // the row image, in hamba's decoded form; nil for a truncate
	SourceTS    time.Time      // when the change happened in the source database; zero if unknown
	Sequence    string         // sortable source position (see sequence.go); "" if the record has none
	Transaction *Transaction   // Debezium's transaction block; nil if the record has none
}

// Transaction is Debezium's transaction block, present on the changes of
// connectors run with provide.transaction.metadata=true.
type Transaction struct {
	ID                  string // the source transaction id, as the connector writes it
	TotalOrder          int64  // 1-based position of the change among all changes of the transaction
	DataCollectionOrder int64  // 1-based position among the transaction's changes of this table
}

// Shape describes how to read records of one schema. Build it once per
// schema with ShapeOf.
type Shape struct {
	Envelope bool
	Image    *avro.RecordSchema // the row image's record schema

	Before, After *avro.UnionSchema // an envelope's images (nil: the schema lacks it)
	Source        avro.Schema       // a record, or a nullable union of one
	Transaction   avro.Schema       // like Source; nil if the envelope has no transaction field
	// logSource names the source record when it is the block of a connector
	// whose changes are sequenced by log position (see logSourceOf); "" else.
	logSource string
}

// ShapeOf inspects a top-level record schema. A record with the fields op,
// source and at least one of before/after holding the same nullable record is
// a Debezium envelope; anything else is a plain row image.
func ShapeOf(s avro.Schema) (Shape, error) {
	rec, ok := s.(*avro.RecordSchema)
	if !ok {
		return Shape{}, fmt.Errorf("top-level schema is %s, want a record", s.Type())
	}
	fields := map[string]avro.Schema{}
	for _, f := range rec.Fields() {
		fields[f.Name()] = f.Type()
	}
	sh := Shape{Image: rec}
	op, hasOp := fields["op"]
	if !hasOp || op.Type() != avro.String {
		return sh, nil
	}
	before, bImage := nullableRecord(fields["before"])
	after, aImage := nullableRecord(fields["after"])
	source := recordOrNullable(fields["source"])
	image := aImage
	if image == nil {
		image = bImage
	}
	if image == nil || source == nil {
		return sh, nil
	}
	return Shape{Envelope: true, Image: image, Before: before, After: after, Source: source,
		Transaction: recordOrNullable(fields["transaction"]), logSource: logSourceOf(source)}, nil
}

// logSourceOf returns the name of a source record declared by a connector
// whose changes cdc sequences by log position: Debezium's MySQL, MariaDB or
// PostgreSQL Source record (io.debezium.connector.mysql.Source, ..., the
// name the Avro and JSON converters give it, compared in any case). "" for
// any other record.
func logSourceOf(s avro.Schema) string {
	rec, ok := s.(*avro.RecordSchema)
	if !ok {
		_, rec = nullableRecord(s)
	}
	if rec == nil {
		return ""
	}
	switch strings.ToLower(rec.FullName()) {
	case "io.debezium.connector.mysql.source", "io.debezium.connector.mariadb.source", "io.debezium.connector.postgresql.source":
		return rec.FullName()
	}
	return ""
}

// CheckPosition refuses a change whose source block (b; zero when the
// record's block is null) names no connector whose log position cdc reads,
// when the writer schema's source record is such a connector's: the other
// changes of its changelog are sequenced by log position, and the timestamp
// layout a change without one would get sorts after every position, so an
// old change would become the newest of its key.
func (sh Shape) CheckPosition(b *SourceBlock) error {
	if sh.logSource == "" || b.logConnector() != "" {
		return nil
	}
	what := "a null source block"
	if b.Connector.Kind != Absent {
		what = "a source block naming connector " + b.Connector.String()
	}
	return fmt.Errorf("change with %s: the writer schema's source is %s, whose changes are sequenced by log position, and a time sequence would sort after every one of them", what, sh.logSource)
}

// recordOrNullable returns s if it is a record or a nullable union of one,
// else nil. Debezium declares source as a plain record and transaction as a
// nullable one; either form is accepted for both.
func recordOrNullable(s avro.Schema) avro.Schema {
	if u, _ := nullableRecord(s); u != nil {
		return u
	}
	if rec, ok := s.(*avro.RecordSchema); ok {
		return rec
	}
	return nil
}

func nullableRecord(s avro.Schema) (*avro.UnionSchema, *avro.RecordSchema) {
	u, ok := s.(*avro.UnionSchema)
	if !ok {
		return nil, nil
	}
	for _, t := range u.Types() {
		if r, ok := t.(*avro.RefSchema); ok {
			t = r.Schema()
		}
		if rec, ok := t.(*avro.RecordSchema); ok {
			return u, rec
		}
	}
	return nil, nil
}
