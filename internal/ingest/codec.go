package ingest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bqcdc/bqcdc/internal/avrobq"
	"github.com/bqcdc/bqcdc/internal/bqwrite"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/cdc"
	"github.com/bqcdc/bqcdc/internal/changelog"
	"github.com/bqcdc/bqcdc/internal/evolve"
	"github.com/bqcdc/bqcdc/internal/failure"
	"github.com/bqcdc/bqcdc/internal/formats"
	"github.com/bqcdc/bqcdc/internal/registry"
	"github.com/bqcdc/bqcdc/internal/schema"
	"github.com/bqcdc/bqcdc/internal/schema/bqschema"
	"github.com/bqcdc/bqcdc/internal/transcode"
	"github.com/hamba/avro/v2"
	"golang.org/x/sync/singleflight"
)

// codec decodes payloads written with one writer schema and fits them into
// one version of the changelog table, which is the reader.
//
// Resolution is by field name, done after decoding: the payload is decoded
// with its writer schema and converted by the writer's own type mapping;
// then every writer column goes to the table's column of the same name,
// directly or through a lossless promotion (int and long to FLOAT64,
// NUMERIC or BIGNUMERIC; NUMERIC to BIGNUMERIC; string and bytes both ways;
// see package evolve). A writer column the table lacks is added to the table
// first (schema evolution) or dropped and counted (evolution off for the
// source). A table column the writer lacks takes the reader schema's default,
// else NULL. A writer column the table cannot hold is a conflict: the codec
// records it and every message of that writer schema is dead-lettered with
// it. hamba/avro's own Resolve is not used: with Debezium envelopes, whose
// "after" refers to the record declared in "before", it decoded the row
// image as NULL.
type codec struct {
	writer   *formats.Writer // decodes payloads (one private hamba config per schema)
	shape    cdc.Shape       // of the writer schema: where the row image is
	columns  schema.Columns  // the full changelog the writer needs: image + metadata
	fitter   *evolve.Fitter  // writer columns -> this table version's columns
	missing  missing         // what the table lacks
	defaults map[string]any  // reader defaults for table columns the writer lacks
	conflict error           // permanent: messages of this writer cannot be stored
	warned   atomic.Bool     // the dropping of unknown fields was logged
	// plan transcodes a payload straight into this table version's row
	// bytes (package transcode); nil only for a codec with a conflict or
	// one replaced before use (the table lacks metadata columns, which
	// ingest adds first).
	plan *transcode.Plan

	built time.Time    // for the cache's age bound
	used  atomic.Int64 // last lookup, Unix ns: the cache evicts the least recently used
}

// missing classifies the writer columns a table version lacks.
type missing struct {
	image, metadata bool // source columns; bqcdc's own _cdc_ columns
}

// writerRef names a writer schema. It is a comparable value built without
// allocating, because every message makes one; the schema itself is loaded
// only when no codec for it is cached.
type writerRef struct {
	registryID int             // Confluent: the registry id in the frame
	readerID   int             // schemaless Debezium JSON: read with this registry schema
	writer     *formats.Writer // other formats: the writer already at hand
}

// key is the writer's identity in the codec cache.
type writerKey struct {
	registryID, readerID int
	name                 string // formats.Writer.Key
}

func (r writerRef) key() writerKey {
	k := writerKey{registryID: r.registryID, readerID: r.readerID}
	if r.writer != nil {
		k.name = r.writer.Key
	}
	return k
}

// String names the writer schema in errors and logs.
func (r writerRef) String() string {
	switch {
	case r.writer != nil:
		return r.writer.Key
	case r.readerID != 0:
		return "schemaless-json:reader:" + strconv.Itoa(r.readerID)
	}
	return "registry:" + strconv.Itoa(r.registryID)
}

// codecs caches codecs per writer schema for the current version of each
// table. Registry ids are immutable, so an entry only goes stale when its
// table changes; the first use of a new table version drops the table's old
// entries. Building a codec costs ~15 µs plus registry lookups (cached).
//
// Writer keys come from the message (a Debezium JSON message carries its
// own Connect schema, so every distinct one is a new writer), so the cache
// is bounded per table in entries (maxCodecsPerTable; the least recently
// used goes) and in age (codecTTL after it was built, however often it is
// used, as package formats bounds its Connect schema caches). Tables are
// bounded by the dataset: a topic without a changelog never gets here. A
// lookup takes only the read lock: the recency stamp is an atomic store.
type codecs struct {
	reg   SchemaSource
	keys  map[string][]string // flow KEYS by changelog table name; set by New
	now   func() time.Time
	mu    sync.RWMutex
	m     map[string]*tableCodecs // by table name
	group singleflight.Group
}

// Bounds of the codec cache. A table has a few writer schemas in flight at
// a time (schema versions, formats); 32 leaves room for many, and an
// evicted or expired codec is rebuilt in microseconds from schemas cached
// elsewhere (registry, Pub/Sub revisions, Connect schemas).
const (
	maxCodecsPerTable = 32
	codecTTL          = time.Hour
)

type tableCodecs struct {
	t      *bqwrite.Table
	codecs map[writerKey]*codec
}

// add caches cd under key, first dropping expired entries and then, while
// full, the least recently used. Callers hold the write lock.
func (tc *tableCodecs) add(key writerKey, cd *codec, now time.Time) {
	if _, ok := tc.codecs[key]; !ok && len(tc.codecs) >= maxCodecsPerTable {
		for k, old := range tc.codecs {
			if now.Sub(old.built) > codecTTL {
				delete(tc.codecs, k)
			}
		}
		for len(tc.codecs) >= maxCodecsPerTable {
			var lru writerKey
			oldest := int64(math.MaxInt64)
			for k, old := range tc.codecs {
				if u := old.used.Load(); u < oldest {
					lru, oldest = k, u
				}
			}
			delete(tc.codecs, lru)
		}
	}
	tc.codecs[key] = cd
}

// SchemaSource looks schemas up by registry id (see package registry).
type SchemaSource interface {
	Schema(ctx context.Context, id int) (avro.Schema, error)
}

func newCodecs(reg SchemaSource) *codecs {
	return &codecs{reg: reg, now: time.Now, m: map[string]*tableCodecs{}}
}

// lookup returns the cached codec, nil when there is none or it expired
// (get then builds it again).
func (c *codecs) lookup(key writerKey, t *bqwrite.Table) *codec {
	c.mu.RLock()
	var cd *codec
	if tc := c.m[t.Name]; tc != nil && tc.t == t {
		cd = tc.codecs[key]
	}
	c.mu.RUnlock()
	if cd == nil {
		return nil
	}
	now := c.now()
	if now.Sub(cd.built) > codecTTL {
		return nil
	}
	cd.used.Store(now.UnixNano())
	return cd
}

// load returns the writer schema ref names.
func (c *codecs) load(ctx context.Context, ref writerRef) (*formats.Writer, error) {
	switch {
	case ref.writer != nil:
		return ref.writer, nil
	case ref.readerID != 0:
		reader, err := c.schema(ctx, ref.readerID, "reader")
		if err != nil {
			return nil, err
		}
		w, err := formats.SchemalessJSON(reader)
		if err != nil {
			return nil, failure.Permanent(failure.StageRegistry, fmt.Errorf("reader schema %d: %w", ref.readerID, err))
		}
		w.Key = ref.String()
		return w, nil
	}
	s, err := c.schema(ctx, ref.registryID, "writer")
	if err != nil {
		return nil, err
	}
	return formats.AvroBinary(ref.String(), s), nil
}

// get returns the codec for writer ref into table version t.
func (c *codecs) get(ctx context.Context, ref writerRef, t *bqwrite.Table) (*codec, error) {
	key := ref.key()
	if cd := c.lookup(key, t); cd != nil {
		return cd, nil
	}
	v, err, _ := c.group.Do(fmt.Sprintf("%s/%p/%v", t.Name, t, key), func() (any, error) {
		cd, err := c.build(ctx, ref, t)
		if err != nil {
			return nil, err
		}
		now := c.now()
		cd.built = now
		cd.used.Store(now.UnixNano())
		c.mu.Lock()
		tc := c.m[t.Name]
		if tc == nil || tc.t != t {
			tc = &tableCodecs{t: t, codecs: map[writerKey]*codec{}}
			c.m[t.Name] = tc
		}
		tc.add(key, cd, now)
		c.mu.Unlock()
		return cd, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*codec), nil
}

func (c *codecs) schema(ctx context.Context, id int, role string) (avro.Schema, error) {
	if c.reg == nil {
		return nil, failure.Permanent(failure.StageRegistry, fmt.Errorf("%s schema %d: no Schema Registry is configured (%s)", role, id, "BQCDC_REGISTRY_URL"))
	}
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

// readerSchemaID is the registry id the changelog was last built or evolved
// from (0 if the table carries none).
func readerSchemaID(t *bqwrite.Table) int {
	if t.Metadata == nil {
		return 0
	}
	id, _ := strconv.Atoi(t.Metadata.Labels[catalog.ReaderSchemaLabel])
	return id
}

func (c *codecs) build(ctx context.Context, ref writerRef, t *bqwrite.Table) (*codec, error) {
	w, err := c.load(ctx, ref)
	if err != nil {
		return nil, err
	}
	name := ref.String()
	l, err := changelog.Of(w.Schema)
	var fe *failure.Error
	if errors.As(err, &fe) && fe.Stage != failure.StageSchema {
		return nil, failure.Permanent(fe.Stage, fmt.Errorf("writer schema %s: %w", name, fe.Err))
	}
	cd := &codec{writer: w, shape: l.Shape, columns: l.Columns}
	if fe != nil {
		// The image cannot sit beside the metadata: every message of the
		// writer fails alike, so the codec remembers it.
		cd.conflict = fmt.Errorf("writer schema %s: %w", name, fe.Err)
		return cd, nil
	}
	var table schema.Columns
	if t.Metadata != nil {
		table = bqschema.FromBigQuery(t.Metadata.Schema)
	}
	if cd.fitter, err = evolve.NewFitter(table, cd.columns); err != nil {
		cd.conflict = fmt.Errorf("writer schema %s does not fit changelog %s: %w", name, t.Name, err)
		return cd, nil
	}
	for _, col := range cd.fitter.Missing() {
		if catalog.IsMetadata(col) {
			cd.missing.metadata = true
		} else {
			cd.missing.image = true
		}
	}
	if err := keysPresent(t.Name, c.keys[t.Name], cd.columns); err != nil {
		cd.conflict = fmt.Errorf("writer schema %s: %w", name, err)
		return cd, nil
	}
	if err := c.readerDefaults(ctx, ref, t, table, cd); err != nil {
		return nil, err
	}
	if cd.conflict != nil || cd.missing.metadata {
		// A table without bqcdc's metadata columns gets them before any
		// row is written (Service.prepare), and a codec for the new version.
		return cd, nil
	}
	if t.Metadata == nil {
		cd.conflict = fmt.Errorf("changelog %s: its schema is not known", t.Name)
		return cd, nil
	}
	// Compile covers every writer schema the steps above accept (columns of
	// types it does not compile natively fall back column by column), but
	// for shapes no Debezium connector writes (an image or source block in
	// a union with other types than null) and tables altered by hand
	// (required columns, retyped metadata columns): their messages cannot
	// be stored, so they are dead-lettered with the reason.
	if cd.plan, err = transcode.Compile(transcode.Config{Writer: w.Schema, Table: t.Metadata.Schema, Encoder: t.Encoder, Defaults: cd.defaults}); err != nil {
		cd.conflict = fmt.Errorf("writer schema %s into changelog %s: %w", name, t.Name, err)
	}
	return cd, nil
}

// readerDefaults sets cd.defaults: Avro resolution gives a reader field the
// writer lacks its default, and the changelog's reader schema (its label)
// is the reader. A conflict between writer and reader is recorded in
// cd.conflict; a reader schema that cannot be read is retryable (a
// deployment problem, not the message's).
func (c *codecs) readerDefaults(ctx context.Context, ref writerRef, t *bqwrite.Table, table schema.Columns, cd *codec) error {
	readerID := readerSchemaID(t)
	if readerID == 0 || readerID == ref.registryID || c.reg == nil {
		return nil
	}
	name := ref.String()
	reader, err := c.reg.Schema(ctx, readerID)
	if err != nil {
		// The changelog's own schema missing is a deployment problem, not
		// the message's: keep the message and retry until it is fixed.
		return failure.Retryable(failure.StageRegistry, fmt.Errorf("reader schema %d of the changelog: %w", readerID, err))
	}
	// The reader made the changelog (apply maps it by the same
	// changelog.Of), so any error of it is the deployment's: retry.
	rl, err := changelog.Of(reader)
	if err != nil {
		return failure.Retryable(failure.StageRegistry, fmt.Errorf("reader schema %d of the changelog: %w", readerID, err))
	}
	if rl.Shape.Envelope != cd.shape.Envelope {
		cd.conflict = fmt.Errorf("writer schema %s and the changelog's reader schema %d disagree on being a Debezium envelope", name, readerID)
		return nil
	}
	readerFields := rl.Image
	// Avro resolution: a reader field the writer lacks takes its default.
	var onlyReader avrobq.Fields
	for _, f := range readerFields {
		if _, ok := cd.columns.Lookup(f.Name); !ok {
			if _, inTable := table.Lookup(f.Name); inTable {
				onlyReader = append(onlyReader, f)
			}
		}
	}
	if cd.defaults, err = onlyReader.Convert(map[string]any{}); err != nil {
		return failure.Retryable(failure.StageRegistry, fmt.Errorf("defaults of reader schema %d: %w", readerID, err))
	}
	return nil
}

// keysPresent refuses a writer schema that lacks a key column: a row
// without its key cannot be placed in any view. keys are the KEYS of the
// flows reading the changelog (none known: nothing to check).
func keysPresent(table string, keys []string, writer schema.Columns) error {
	for _, k := range keys {
		if _, ok := writer.Lookup(k); !ok {
			return fmt.Errorf("key column %s of changelog %s (a KEYS column of its flows) is missing from the writer schema: a changed key cannot be applied to existing rows", k, table)
		}
	}
	return nil
}
