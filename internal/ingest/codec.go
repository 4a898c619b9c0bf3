package ingest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/bqcdc/bqcdc/internal/avrobq"
	"github.com/bqcdc/bqcdc/internal/cdc"
	"github.com/bqcdc/bqcdc/internal/failure"
	"github.com/bqcdc/bqcdc/internal/registry"
	"github.com/hamba/avro/v2"
	"golang.org/x/sync/singleflight"
)

// codec decodes payloads written with one writer schema into the shape of
// one reader schema, and converts them to changelog values.
type codec struct {
	resolved avro.Schema
	shape    cdc.Shape
	fields   avrobq.Fields
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
	reader, resolved := writer, writer
	if readerID != 0 && readerID != writerID {
		if reader, err = c.reg.Schema(ctx, readerID); err != nil {
			// The changelog's own schema missing is a deployment problem, not
			// the message's: keep the message and retry until it is fixed.
			return nil, failure.Retryable(failure.StageRegistry, fmt.Errorf("reader schema %d of the changelog: %w", readerID, err))
		}
		resolved, err = avro.NewSchemaCompatibility().Resolve(reader, writer)
		if err != nil {
			return nil, failure.Permanent(failure.StageDecode,
				fmt.Errorf("writer schema %d cannot be read as the changelog's reader schema %d: %w", writerID, readerID, err))
		}
	}
	shape, err := cdc.ShapeOf(reader)
	if err != nil {
		return nil, failure.Permanent(failure.StageDecode, fmt.Errorf("schema %d: %w", readerID, err))
	}
	fields, err := avrobq.FromRecord(shape.Image)
	if err != nil {
		return nil, failure.Permanent(failure.StageConvert, fmt.Errorf("schema %d: %w", readerID, err))
	}
	return &codec{resolved: resolved, shape: shape, fields: fields}, nil
}
