// Package oracle is the generic pipeline ingest ran before the transcoder,
// kept as the tests' reference (never deployed): hamba decodes a payload
// into maps, Flatten turns the record into a cdc.Change by cdc's rules,
// avrobq's converters convert the image, evolve fits it, Row adds the
// metadata columns, and bqwrite encodes the row. The transcoder
// (internal/transcode) must write the same bytes; its tests, the formats
// tests and the fuzz targets compare the two.
package oracle

import (
	"fmt"
	"time"

	"github.com/bqcdc/bqcdc/internal/avrobq"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/cdc"
	"github.com/hamba/avro/v2"
)

// Flatten turns one record hamba decoded with sh's schema into a Change.
func Flatten(sh cdc.Shape, rec map[string]any) (cdc.Change, error) {
	if !sh.Envelope {
		return cdc.Change{Image: rec}, nil
	}
	code, _ := rec["op"].(string)
	op := cdc.ParseOp(code)
	if op == cdc.OpNone {
		return cdc.Change{}, fmt.Errorf("%w: unknown op %q (want c, u, d, r or t)", cdc.ErrEnvelope, code)
	}
	ch := cdc.Change{Op: op}
	if imageField := op.ImageField(); imageField != "" {
		u := sh.After
		if imageField == "before" {
			u = sh.Before
		}
		if u == nil {
			return cdc.Change{}, fmt.Errorf("%w: op %q needs the %s image, which the schema lacks", cdc.ErrEnvelope, op, imageField)
		}
		img, _ := avrobq.Unwrap(u, rec[imageField])
		m, ok := img.(map[string]any)
		if !ok {
			return cdc.Change{}, fmt.Errorf("%w: op %q without its %s image", cdc.ErrEnvelope, op, imageField)
		}
		ch.Image = m
	}
	src, hasSource := record(sh.Source, rec["source"])
	b := BlockOf(src) // the zero block when the record's block is null
	if err := sh.CheckPosition(&b); err != nil {
		return cdc.Change{}, fmt.Errorf("%w: %w", cdc.ErrEnvelope, err)
	}
	if hasSource {
		ts, q, err := cdc.Position(&b, op)
		if err != nil {
			return cdc.Change{}, fmt.Errorf("%w: %w", cdc.ErrEnvelope, err)
		}
		ch.SourceTS, ch.Sequence = ts, q.String()
	}
	if sh.Transaction != nil {
		if tx, ok := record(sh.Transaction, rec["transaction"]); ok {
			ch.Transaction = transactionOf(tx)
		}
	}
	if ch.SourceTS.IsZero() {
		// Without source.ts_* fall back on the envelope's processing time, so
		// _cdc_source_ts is NULL only for records that carry no time at all.
		if ms, ok := asInt(rec["ts_ms"]); ok {
			ts, err := cdc.EnvelopeTime(cdc.Field{Kind: cdc.Int, Int: ms})
			if err != nil {
				return cdc.Change{}, fmt.Errorf("%w: %w", cdc.ErrEnvelope, err)
			}
			ch.SourceTS = ts
		}
	}
	if ch.Sequence == "" && !ch.SourceTS.IsZero() {
		ch.Sequence = cdc.TimestampSequence(ch.SourceTS)
	}
	return ch, nil
}

// BlockOf reads a source block from hamba's map.
func BlockOf(src map[string]any) cdc.SourceBlock {
	var b cdc.SourceBlock
	for name, v := range src {
		if f := b.Lookup(name); f != nil {
			*f = cdc.FieldOf(v, true)
		}
	}
	return b
}

// record returns the decoded value of a record field, or of a nullable
// union of one (Shape.Source, Shape.Transaction).
func record(s avro.Schema, v any) (map[string]any, bool) {
	if u, ok := s.(*avro.UnionSchema); ok {
		v, _ = avrobq.Unwrap(u, v)
	}
	m, ok := v.(map[string]any)
	return m, ok
}

func transactionOf(tx map[string]any) *cdc.Transaction {
	id, _ := asString(tx["id"])
	total, _ := asInt(tx["total_order"])
	perTable, _ := asInt(tx["data_collection_order"])
	return &cdc.Transaction{ID: id, TotalOrder: total, DataCollectionOrder: perTable}
}

// unwrapSingle returns the value of a union that hamba left wrapped, e.g.
// {"string": "true"}; anything else is returned as is.
func unwrapSingle(v any) any {
	if m, ok := v.(map[string]any); ok && len(m) == 1 {
		for _, inner := range m {
			return inner
		}
	}
	return v
}

func asString(v any) (string, bool) {
	s, ok := unwrapSingle(v).(string)
	return s, ok
}

func asInt(v any) (int64, bool) {
	return avrobq.Integer(unwrapSingle(v))
}

// Meta are the metadata values of one changelog row.
type Meta struct {
	Op          cdc.Op // OpNone: _cdc_op stays NULL (the record is not an envelope)
	SourceTS    time.Time
	Sequence    string
	IngestedAt  time.Time
	PublishTime time.Time
	MessageID   string
	SchemaID    int
	Transaction *cdc.Transaction // nil: _cdc_transaction stays NULL
}

// Row adds the metadata values, in canonical form (TIMESTAMP as
// microseconds), to a converted row image. The image map is modified.
func Row(image map[string]any, m Meta) map[string]any {
	if image == nil {
		image = map[string]any{}
	}
	set := func(col string, v any) { image[col] = v }
	if m.Op != cdc.OpNone {
		set(catalog.ColOp, m.Op.String())
	}
	if !m.SourceTS.IsZero() {
		set(catalog.ColSourceTS, m.SourceTS.UnixMicro())
	}
	if m.Sequence != "" {
		set(catalog.ColSequence, m.Sequence)
	}
	set(catalog.ColIngestedAt, m.IngestedAt.UnixMicro())
	if !m.PublishTime.IsZero() {
		set(catalog.ColPublishTime, m.PublishTime.UnixMicro())
	}
	if m.MessageID != "" {
		set(catalog.ColMessageID, m.MessageID)
	}
	if m.SchemaID != 0 {
		set(catalog.ColSchemaID, int64(m.SchemaID))
	}
	if tx := m.Transaction; tx != nil {
		set(catalog.ColTransaction, map[string]any{"id": tx.ID, "total_order": tx.TotalOrder, "data_collection_order": tx.DataCollectionOrder})
	}
	return image
}
