// Package cdc turns a decoded change record into one Change: the operation,
// the row image to store, the source timestamp and a sortable sequence.
//
// It understands the Debezium envelope (before, after, source, op, ts_ms and
// an optional transaction block). A record that is not an envelope is taken
// as the row image itself: application change logs carry their own operation
// and ordering columns, which a flow names in APPLY AS DELETE WHEN and
// SEQUENCE BY. The package is pure and works on hamba/avro's generic map form.
package cdc

import (
	"errors"
	"fmt"
	"time"

	"github.com/bqcdc/bqcdc/internal/avrobq"
	"github.com/hamba/avro/v2"
)

// Debezium operation codes, stored verbatim in the _cdc_op column.
const (
	OpCreate   = "c"
	OpUpdate   = "u"
	OpDelete   = "d"
	OpRead     = "r" // snapshot read
	OpTruncate = "t"
)

// ErrEnvelope marks a Debezium record that cannot become a changelog row (an
// unknown op, a delete without its before image). It is permanent.
var ErrEnvelope = errors.New("invalid Debezium envelope")

// Change is one flattened change event.
type Change struct {
	Op       string         // one of the Op constants; "" when the record is not a Debezium envelope
	Image    map[string]any // the row image, in hamba's decoded form; nil for a truncate
	SourceTS time.Time      // when the change happened in the source database; zero if unknown
	Sequence string         // sortable source position (see sequence.go); "" if the record has none
}

// Shape describes how to read records of one schema. Build it once per
// schema with ShapeOf; Flatten is then cheap.
type Shape struct {
	Envelope bool
	Image    *avro.RecordSchema // the row image's record schema

	before, after *avro.UnionSchema
	source        avro.Schema // a record, or a nullable union of one
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
	// Debezium declares source as a plain record; accept a nullable one too.
	var source avro.Schema
	if u, _ := nullableRecord(fields["source"]); u != nil {
		source = u
	} else if src, ok := fields["source"].(*avro.RecordSchema); ok {
		source = src
	}
	image := aImage
	if image == nil {
		image = bImage
	}
	if image == nil || source == nil {
		return sh, nil
	}
	return Shape{Envelope: true, Image: image, before: before, after: after, source: source}, nil
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

// Flatten turns one decoded record into a Change.
func (sh Shape) Flatten(rec map[string]any) (Change, error) {
	if !sh.Envelope {
		return Change{Image: rec}, nil
	}
	op, _ := rec["op"].(string)
	var ch Change
	ch.Op = op
	var imageField string
	switch op {
	case OpCreate, OpUpdate, OpRead:
		imageField = "after"
	case OpDelete:
		imageField = "before"
	case OpTruncate:
	default:
		return Change{}, fmt.Errorf("%w: unknown op %q (want c, u, d, r or t)", ErrEnvelope, op)
	}
	if imageField != "" {
		u := sh.after
		if imageField == "before" {
			u = sh.before
		}
		if u == nil {
			return Change{}, fmt.Errorf("%w: op %q needs the %s image, which the schema lacks", ErrEnvelope, op, imageField)
		}
		img, _ := avrobq.Unwrap(u, rec[imageField])
		m, ok := img.(map[string]any)
		if !ok {
			return Change{}, fmt.Errorf("%w: op %q without its %s image", ErrEnvelope, op, imageField)
		}
		ch.Image = m
	}
	src := rec["source"]
	if u, ok := sh.source.(*avro.UnionSchema); ok {
		src, _ = avrobq.Unwrap(u, src)
	}
	if m, ok := src.(map[string]any); ok {
		ch.SourceTS, ch.Sequence = sourcePosition(m)
	}
	if ch.SourceTS.IsZero() {
		// Without source.ts_* fall back on the envelope's processing time, so
		// _cdc_source_ts is NULL only for records that carry no time at all.
		if ms, ok := asInt(rec["ts_ms"]); ok {
			ch.SourceTS = time.UnixMilli(ms).UTC()
		}
	}
	if ch.Sequence == "" && !ch.SourceTS.IsZero() {
		ch.Sequence = TimestampSequence(ch.SourceTS)
	}
	return ch, nil
}

// sourcePosition reads Debezium's source block: the change time and, for the
// connectors whose log position is known, a sequence from that position.
func sourcePosition(src map[string]any) (time.Time, string) {
	var ts time.Time
	if us, ok := asInt(src["ts_us"]); ok {
		ts = time.UnixMicro(us).UTC()
	} else if ns, ok := asInt(src["ts_ns"]); ok {
		ts = time.Unix(0, ns).UTC()
	} else if ms, ok := asInt(src["ts_ms"]); ok {
		ts = time.UnixMilli(ms).UTC()
	}
	connector, _ := src["connector"].(string)
	switch connector {
	case "mysql":
		file, _ := src["file"].(string)
		pos, okPos := asInt(src["pos"])
		row, _ := asInt(src["row"])
		idx, err := BinlogFileIndex(file)
		if err == nil && okPos && pos >= 0 && row >= 0 {
			return ts, MySQLSequence(idx, uint64(pos), uint64(row))
		}
	case "postgresql":
		if lsn, ok := asInt(src["lsn"]); ok && lsn >= 0 {
			return ts, PostgresSequence(uint64(lsn))
		}
	}
	if !ts.IsZero() {
		return ts, TimestampSequence(ts)
	}
	return ts, ""
}

func asInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case map[string]any: // a union hamba left wrapped, e.g. {"long": 5}
		for _, inner := range x {
			return asInt(inner)
		}
	}
	return 0, false
}
