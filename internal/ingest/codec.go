package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/bqcdc/bqcdc/internal/avrobq"
	"github.com/bqcdc/bqcdc/internal/cdc"
	"github.com/bqcdc/bqcdc/internal/failure"
	"github.com/bqcdc/bqcdc/internal/registry"
	"github.com/hamba/avro/v2"
	"golang.org/x/sync/singleflight"
)

// codec decodes payloads written with one writer schema and converts them
// to the changelog columns of one reader schema.
//
// Resolution is by field name, done after decoding: the payload is decoded
// with its writer schema, then every reader column takes the writer's value
// of the same name (NULL, or the reader's default, when the writer lacks it),
// and writer fields the reader lacks are dropped. Type promotions (int to
// long, float to double) happen in the conversion; an incompatible change
// fails the conversion and dead-letters the message. hamba/avro's own
// Resolve is not used: with Debezium envelopes, whose "after" refers to the
// record declared in "before", it decoded the row image as NULL.
type codec struct {
	// api is private to the codec. hamba/avro caches compiled codecs by
	// schema fingerprint, and a reference to a named record ("after" refers
	// to the "Value" declared in "before") has a fingerprint of its name
	// only: a shared config that has seen version 1 of a record decodes
	// version 2 with version 1's layout. One config per writer schema keeps
	// every cached codec unambiguous.
	api    avro.API
	writer avro.Schema
	shape  cdc.Shape     // of the writer schema: where the row image is
	fields avrobq.Fields // of the reader schema: the changelog columns
}

// codecs caches codecs per (writer id, reader id). Both ids are immutable
// registry ids, so entries never go stale; building one (schema resolution
// costs ~13 µs) happens once per pair per instance.
type codecs struct {
	reg   SchemaSource
	mu    sync.RWMutex
	m     map[[2]int]*codec
	group singleflight.Group
}

// SchemaSource looks schemas up by registry id (see package registry).
type SchemaSource interface {
	Schema(ctx context.Context, id int) (avro.Schema, error)
}

func newCodecs(reg SchemaSource) *codecs { return &codecs{reg: reg, m: map[[2]int]*codec{}} }

// get returns the codec for writer schema writerID read as readerID (0: read
// as written).
func (c *codecs) get(ctx context.Context, writerID, readerID int) (*codec, error) {
	key := [2]int{writerID, readerID}
	c.mu.RLock()
	cd := c.m[key]
	c.mu.RUnlock()
	if cd != nil {
		return cd, nil
	}
	v, err, _ := c.group.Do(strconv.Itoa(writerID)+"/"+strconv.Itoa(readerID), func() (any, error) {
		cd, err := c.build(ctx, writerID, readerID)
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		c.m[key] = cd
		c.mu.Unlock()
		return cd, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*codec), nil
}

func (c *codecs) schema(ctx context.Context, id int, role string) (avro.Schema, error) {
	s, err := c.reg.Schema(ctx, id)
	if err == nil {
		return s, nil
	}
	err = fmt.Errorf("%s schema: %w", role, err)
	if errors.Is(err, registry.ErrNotFound) || errors.Is(err, registry.ErrInvalidSchema) {
		return nil, failure.Permanent(failure.StageRegistry, err)
	}
	return nil, failure.Retryable(failure.StageRegistry, err)
}

func (c *codecs) build(ctx context.Context, writerID, readerID int) (*codec, error) {
	writer, err := c.schema(ctx, writerID, "writer")
	if err != nil {
		return nil, err
	}
	shape, err := cdc.ShapeOf(writer)
	if err != nil {
		return nil, failure.Permanent(failure.StageDecode, fmt.Errorf("writer schema %d: %w", writerID, err))
	}
	readerShape := shape
	if readerID != 0 && readerID != writerID {
		reader, err := c.reg.Schema(ctx, readerID)
		if err != nil {
			// The changelog's own schema missing is a deployment problem, not
			// the message's: keep the message and retry until it is fixed.
			return nil, failure.Retryable(failure.StageRegistry, fmt.Errorf("reader schema %d of the changelog: %w", readerID, err))
		}
		if readerShape, err = cdc.ShapeOf(reader); err != nil {
			return nil, failure.Retryable(failure.StageRegistry, fmt.Errorf("reader schema %d of the changelog: %w", readerID, err))
		}
		if readerShape.Envelope != shape.Envelope {
			return nil, failure.Permanent(failure.StageDecode, fmt.Errorf(
				"writer schema %d and the changelog's reader schema %d disagree on being a Debezium envelope", writerID, readerID))
		}
	}
	fields, err := avrobq.FromRecord(readerShape.Image)
	if err != nil {
		return nil, failure.Permanent(failure.StageConvert, fmt.Errorf("reader schema %d: %w", readerID, err))
	}
	return &codec{api: avro.Config{}.Freeze(), writer: writer, shape: shape, fields: fields}, nil
}

// decode reads one record. hamba's Unmarshal takes running out of input
// exactly at a field boundary for success (it ignores io.EOF), which would
// let a truncated message through with its last fields missing; reading
// through a Reader and treating any end-of-input as an error does not.
func (cd *codec) decode(payload []byte) (map[string]any, error) {
	r := avro.NewReader(nil, 0, avro.WithReaderConfig(cd.api)).Reset(payload)
	var rec map[string]any
	r.ReadVal(cd.writer, &rec)
	switch {
	case errors.Is(r.Error, io.EOF):
		return nil, fmt.Errorf("payload truncated: %w", io.ErrUnexpectedEOF)
	case r.Error != nil:
		return nil, r.Error
	}
	return rec, nil
}
