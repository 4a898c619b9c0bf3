// Package ingest turns one Pub/Sub message into one changelog row, a counted
// tombstone, or a dead letter. It holds the pipeline the ingest function runs
// (format detection -> writer schema: registry, Pub/Sub schema revision or
// Connect schema -> Avro decoding -> fitting to the changelog, evolving it
// when the writer adds fields -> Debezium flattening -> BigQuery values ->
// Storage Write append) without any knowledge of HTTP or CloudEvents.
//
// Delivery semantics: Handle returns nil only once the row (or the dead
// letter) is acknowledged by BigQuery, or for a tombstone. Any other outcome
// returns an error and the message must be redelivered. A redelivered message
// that was in fact appended produces a second row with the same
// _cdc_message_id, which the views count once.
package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strconv"
	"sync/atomic"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/bqerror"
	"github.com/bqcdc/bqcdc/internal/bqwrite"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/evolve"
	"github.com/bqcdc/bqcdc/internal/failure"
	"github.com/bqcdc/bqcdc/internal/formats"
	"github.com/bqcdc/bqcdc/internal/limits"
	"github.com/bqcdc/bqcdc/internal/metrics"
	"github.com/bqcdc/bqcdc/internal/proof"
	"github.com/bqcdc/bqcdc/internal/pubsubschema"
	"github.com/bqcdc/bqcdc/internal/schema"
	"github.com/bqcdc/bqcdc/internal/transcode"
	"github.com/bqcdc/bqcdc/internal/wire"
)

// Message is one Pub/Sub message as delivered. It is the delivery a dead
// letter keeps, so the two cannot drift apart.
type Message = catalog.Delivery

// Outcome says how a message ended.
type Outcome int

// Outcomes of Handle.
const (
	Failed       Outcome = iota // retryable failure: redeliver
	Appended                    // one changelog row
	Tombstone                   // empty value, counted and acknowledged
	DeadLettered                // stored with its reason in the dead-letter table
)

func (o Outcome) String() string {
	return [...]string{"failed", "appended", "tombstone", "dead-lettered"}[o]
}

// Appender is the part of bqwrite.Writer the pipeline needs.
type Appender interface {
	Table(ctx context.Context, name string) (*bqwrite.Table, error)
	Append(ctx context.Context, table string, rows []map[string]any) error
	AppendTo(ctx context.Context, t *bqwrite.Table, rows []map[string]any) error
	AppendEncoded(ctx context.Context, t *bqwrite.Table, rows [][]byte) error
	Evolve(ctx context.Context, t *bqwrite.Table, cols schema.Columns, labels map[string]string) (bqwrite.Evolution, error)
}

// Stats are counters since the service started.
type Stats struct {
	Appended, Tombstones, DeadLetters, Retries int64
	// IgnoredValues counts non-NULL values dropped because their column is
	// not in the changelog and schema evolution is off for the source.
	IgnoredValues int64
	// Evolutions counts changelog schema changes this instance made.
	Evolutions int64
}

// FlowFollower brings the flows reading a topic (their state tables and
// views) up to its changelog after ingest added columns to it, so the views
// show them at once. package apply implements it with metadata calls only.
type FlowFollower interface {
	FollowChangelog(ctx context.Context, topic string, table *bigquery.TableMetadata) error
}

// Options configure a Service. Writer and Log are required.
type Options struct {
	Writer Appender
	// Registry looks Confluent writer schemas up by id; nil means no
	// registry, and such messages are dead-lettered with that reason.
	Registry SchemaSource
	// PubSubSchemas fetches Pub/Sub schema revisions; nil means Pub/Sub
	// schema-encoded messages are dead-lettered with that reason.
	PubSubSchemas *pubsubschema.Cache
	// Keys are the KEYS columns of the flows reading each topic, so a writer
	// schema that lacks one is refused (none known: nothing checked).
	Keys map[string][]string
	// Frozen lists the topics whose changelog keeps its columns: values of
	// columns a writer schema adds are dropped and counted
	// (Stats.IgnoredValues, and a log line per writer schema).
	Frozen []string
	// Flows, when set, brings a topic's flows up to its changelog after
	// this instance added columns. It runs before the message is appended;
	// its failure is logged, not returned: the message is stored either
	// way, and the next compaction run brings the flows up to date too.
	Flows FlowFollower
	Log   *slog.Logger
	// Now stamps _cdc_ingested_at; nil means time.Now.
	Now func() time.Time
	// ReplayKey verifies the proof of a message `bqcdc replay` published
	// (catalog.ReplayProofAttribute). Without a key, or without a valid
	// proof, catalog.ReplayOfAttribute is ignored and the message keeps
	// its own id.
	ReplayKey []byte
	// LogValues lets dead-letter reasons and log lines quote values of the
	// row (BQCDC_LOG_VALUES). Off, the errors that quote one (a refused
	// timestamp's text, BigQuery's message about a row) name the column
	// and the kind of problem with failure.Withheld in the value's place;
	// the dead letter keeps the message's bytes either way.
	LogValues bool
	// Metrics records every message's outcome, its lag from publish and
	// its decode time; nil records nothing.
	Metrics *metrics.Recorder
	// Ledger, when set, covers each row's source in the append ledger
	// before the row is appended (see package appends), so compaction
	// finds the sources with rows to fold in one query.
	Ledger Coverer
}

// Coverer is the append ledger (appends.Ledger).
type Coverer interface {
	Cover(ctx context.Context, source string, at time.Time) error
}

// Service runs the pipeline. It is safe for concurrent use.
type Service struct {
	writer Appender
	codecs *codecs
	log    *slog.Logger
	now    func() time.Time

	frozen  map[string]struct{} // topics whose changelog keeps its columns
	flows   FlowFollower
	pubsub  *pubsubschema.Cache     // Pub/Sub schema revisions; nil if not configured
	connect *formats.ConnectSchemas // Debezium JSON (JsonConverter) schemas
	replay  []byte                  // verifies replay proofs; nil: replay ids ignored
	ledger  Coverer                 // nil: no append ledger
	values  bool                    // reasons may quote row values (Options.LogValues)
	metrics *metrics.Recorder

	appended, tombstones, deadLetters, retries, ignored, evolutions atomic.Int64
}

// New returns a service.
func New(o Options) *Service {
	s := &Service{writer: o.Writer, codecs: newCodecs(o.Registry), connect: formats.NewConnectSchemas(), log: o.Log, now: o.Now,
		frozen: map[string]struct{}{}, flows: o.Flows, pubsub: o.PubSubSchemas, replay: o.ReplayKey, values: o.LogValues, metrics: o.Metrics, ledger: o.Ledger}
	if s.now == nil {
		s.now = time.Now
	}
	for _, t := range o.Frozen {
		s.frozen[t] = struct{}{}
	}
	s.codecs.keys = make(map[string][]string, len(o.Keys))
	for topic, k := range o.Keys {
		s.codecs.keys[catalog.TableName(topic)] = k
	}
	return s
}

// Stats returns the counters.
func (s *Service) Stats() Stats {
	return Stats{Appended: s.appended.Load(), Tombstones: s.tombstones.Load(), DeadLetters: s.deadLetters.Load(), Retries: s.retries.Load(),
		IgnoredValues: s.ignored.Load(), Evolutions: s.evolutions.Load()}
}

// Handle processes one message. A panic anywhere in it dead-letters the
// message at stage internal instead of taking the instance (and every
// message in flight on it) down; redelivering it would only repeat the
// panic on the next instance.
func (s *Service) Handle(ctx context.Context, m Message) (out Outcome, err error) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("panic while handling a message", "event", "panic", "topic", m.Topic, "message_id", m.MessageID,
				"panic", Truncate(fmt.Sprint(p)), "stack", string(debug.Stack()))
			out, err = s.deadLetter(ctx, m, catalog.TableName(m.Topic), 0,
				failure.Permanent(failure.StageInternal, fmt.Errorf("panic while handling the message (a bug: please report it): %v", p)))
		}
	}()
	published := m.PublishTime // the delivery's, for the latency metric
	if orig := m.Attributes[catalog.ReplayOfAttribute]; orig != "" {
		m.MessageID, m.PublishTime = s.replayedID(m, orig)
	}
	table := catalog.TableName(m.Topic)
	var schemaID int
	err = errTombstone // an empty value is a tombstone before any decoding
	if !wire.IsTombstone(m.Data) {
		schemaID, err = s.process(ctx, m, table)
	}
	if errors.Is(err, errTombstone) {
		s.tombstones.Add(1)
		s.metrics.Tombstone(ctx, m.Topic)
		s.log.Info("tombstone acknowledged", "event", "tombstone", "topic", m.Topic, "message_id", m.MessageID)
		return Tombstone, nil
	}
	if err == nil {
		s.appended.Add(1)
		s.metrics.Appended(ctx, m.Topic, published, s.now())
		return Appended, nil
	}
	if !failure.IsPermanent(err) {
		s.retries.Add(1)
		s.metrics.Failed(ctx, m.Topic, metrics.Retried, string(failure.StageOf(err)))
		s.log.Warn("message will be redelivered", "event", "retry", "topic", m.Topic, "message_id", m.MessageID,
			"stage", string(failure.StageOf(err)), "error", Truncate(s.Reason(err)))
		return Failed, err
	}
	return s.deadLetter(ctx, m, table, schemaID, err)
}

// replayedID is the id and publish time a message claiming to replay orig
// is stored under: orig and the original publish time when the message
// proves `bqcdc replay` published it (a dead letter published again keeps
// the identity of the original message, so views count it once, and its
// time, so a plain record sequenced by publish time is not taken for the
// newest change of its key), else the message's own. Any publisher to the
// topic can set the attributes; honouring them unproven would let them have
// a row counted under another message's id. An ignored claim is logged
// once, here, with the ids only. A proof without a publish time (signed by
// an older bqcdc replay) keeps the replay's publish time.
func (s *Service) replayedID(m Message, orig string) (string, time.Time) {
	why := "no replay key is configured (BQCDC_REPLAY_KEY)"
	at, hasAt := m.Attributes[catalog.ReplayPublishTimeAttribute]
	pf := m.Attributes[catalog.ReplayProofAttribute]
	switch {
	case len(s.replay) == 0:
	case pf == "":
		why = "the message has no " + catalog.ReplayProofAttribute + " attribute"
	case hasAt && proof.VerifyAt(s.replay, m.Topic, orig, at, m.Data, pf):
		t, err := proof.ParseTime(at)
		if err == nil {
			return orig, t
		}
		why = "its " + catalog.ReplayPublishTimeAttribute + " attribute is signed but unreadable: " + err.Error()
	case !hasAt && proof.Verify(s.replay, m.Topic, orig, m.Data, pf):
		return orig, m.PublishTime
	default:
		why = "its proof does not match the topic, the claimed id, the publish time and the data (forged, altered, or signed with another key)"
	}
	s.log.Warn("replay id ignored: the message keeps its own id", "event", "replay_unproven", "topic", m.Topic,
		"message_id", m.MessageID, "claimed_id", Truncate(orig), "why", why)
	return m.MessageID, m.PublishTime
}

// DeadLetter stores a message the caller could not even parse (for example a
// malformed push body) with its reason.
func (s *Service) DeadLetter(ctx context.Context, m Message, cause error) (Outcome, error) {
	return s.deadLetter(ctx, m, catalog.TableName(m.Topic), 0, cause)
}

func (s *Service) deadLetter(ctx context.Context, m Message, table string, schemaID int, cause error) (Outcome, error) {
	stage := failure.StageOf(cause)
	if stage == "" {
		stage = failure.StageEvent
	}
	dl := catalog.DeadLetter{At: s.now(), Delivery: m, Stage: string(stage), Reason: s.Reason(cause), SchemaID: schemaID, Table: table}
	if err := s.writer.Append(ctx, catalog.DeadLetterTable, []map[string]any{dl.Row()}); err != nil {
		// Not stored anywhere yet: the message must come back.
		s.retries.Add(1)
		s.metrics.Failed(ctx, m.Topic, metrics.Retried, string(stage))
		return Failed, fmt.Errorf("dead-lettering message %s (%s): %w", m.MessageID, s.Reason(cause), err)
	}
	s.deadLetters.Add(1)
	s.metrics.Failed(ctx, m.Topic, metrics.DeadLettered, string(stage))
	s.log.Error("message dead-lettered", "event", "dead_letter", "topic", m.Topic, "message_id", m.MessageID, "stage", string(stage), "reason", Truncate(dl.Reason))
	return DeadLettered, nil
}

// Reason is err's text for a dead letter, a log line or an HTTP answer:
// values of the row quoted in it are withheld unless Options.LogValues
// (see failure.Reason). A tombstone's ordering key is not logged either:
// Debezium sets it to the row's key.
func (s *Service) Reason(err error) string { return failure.Reason(err, s.values) }

// errTombstone is process telling Handle that the message is a delete
// marker in a format that wraps it (a JsonConverter null payload).
var errTombstone = errors.New("tombstone")

// process runs the pipeline; it returns the writer schema id when known.
func (s *Service) process(ctx context.Context, m Message, table string) (int, error) {
	p, err := s.prepare(ctx, m, table)
	if err != nil {
		return p.schemaID, err
	}
	// One stamp per row, covered in the ledger before the row is sent.
	at := s.now()
	start := time.Now()
	row, err := s.transcode(ctx, m, p, at)
	if err != nil {
		return p.schemaID, err
	}
	s.metrics.Decoded(ctx, time.Since(start))
	if err := rowFits(len(row)); err != nil {
		return p.schemaID, err
	}
	return p.schemaID, s.append(ctx, m, p, row, at)
}

// append appends one changelog row stamped at, its source covered in the
// ledger first.
func (s *Service) append(ctx context.Context, m Message, p prepared, row []byte, at time.Time) error {
	if s.ledger != nil {
		if err := s.ledger.Cover(ctx, m.Topic, at); err != nil {
			return err
		}
	}
	return s.writer.AppendEncoded(ctx, p.table, [][]byte{row})
}

// rowFits refuses a row over the Storage Write API's row limit before it
// is appended: BigQuery would refuse the request that carries it, and the
// message would come back on every redelivery. The message's size does not
// bound its row: padding (io.debezium.data.Bits) and decimal text make a
// row larger than the payload it came from.
func rowFits(n int) error {
	if n <= limits.MaxRowBytes {
		return nil
	}
	return failure.Permanent(failure.StageConvert, limits.Errorf("the row is %d bytes encoded, more than BigQuery's %d-byte row limit", n, limits.MaxRowBytes))
}

// prepared is a message whose writer schema is known and fits the table.
type prepared struct {
	format   formats.Format
	schemaID int // Confluent registry id, 0 for other formats
	table    *bqwrite.Table
	ref      writerRef
	payload  []byte // to decode with the codec's writer schema
	codec    *codec
}

// prepare finds the message's format, writer schema and table, and the
// codec between them, evolving the table first when the writer adds
// columns.
func (s *Service) prepare(ctx context.Context, m Message, table string) (prepared, error) {
	p := prepared{format: formats.Detect(m.Attributes, m.Data)}
	var frame wire.Frame
	if p.format == formats.Confluent || p.format == formats.Unknown {
		var err error
		if frame, err = wire.Parse(m.Data); err != nil {
			return p, failure.Permanent(failure.StageWire, fmt.Errorf(
				"not a known message format (Confluent Avro, Pub/Sub schema-encoded Avro, Debezium JSON): parsing Confluent framing: %w", err))
		}
	}
	p.schemaID = int(frame.SchemaID)
	t, err := s.writer.Table(ctx, table)
	if err != nil {
		if errors.Is(err, bqwrite.ErrNoTable) {
			return p, failure.Permanent(failure.StageTable, fmt.Errorf("no changelog table for topic %s (run bqcdc apply): %w", m.Topic, err))
		}
		return p, failure.Retryable(failure.StageTable, err)
	}
	if err := sourceOf(t, m.Topic); err != nil {
		return p, err
	}
	if p.ref, p.payload, err = s.identify(ctx, p.format, m, frame, t); err != nil {
		return p, err
	}
	cd, err := s.codecs.get(ctx, p.ref, t)
	if err != nil {
		return p, err
	}
	if cd.conflict == nil && (cd.missing.metadata || (cd.missing.image && s.evolves(m.Topic))) {
		if t, cd, err = s.evolve(ctx, m.Topic, t, p.ref, cd); err != nil {
			return p, err
		}
	}
	if cd.conflict != nil {
		return p, failure.Permanent(failure.StageSchema, cd.conflict)
	}
	p.table, p.codec = t, cd
	return p, nil
}

// sourceOf refuses to append a message of topic to changelog t when t
// belongs to another source. Topics that differ only in characters
// BigQuery does not allow in names (db.inv.t, db-inv-t) map to one
// changelog name, and anyone who can create a topic and have it pushed
// could otherwise write into another source's changelog. The changelog's
// label catalog.SourceHashLabel (set by bqcdc apply) names its source
// exactly: the hash of the message's topic must be it. A table labelled by
// an older bqcdc has only catalog.SourceLabel, which look-alike topics
// share (a.b and a_b label alike); it is checked by that until bqcdc apply
// adds the hash. A table with neither label takes any topic.
func sourceOf(t *bqwrite.Table, topic string) error {
	if t.Metadata == nil {
		return nil
	}
	if hash, ok := t.Metadata.Labels[catalog.SourceHashLabel]; ok {
		if catalog.IsSourceHashOf(hash, topic) {
			return nil
		}
		return failure.Permanent(failure.StageTable, fmt.Errorf(
			"topic %s is not the source of changelog %s: the table belongs to the source labelled %s (label %s=%s is not the hash of topic %s)",
			topic, t.Name, t.Metadata.Labels[catalog.SourceLabel], catalog.SourceHashLabel, hash, topic))
	}
	label, ok := t.Metadata.Labels[catalog.SourceLabel]
	if !ok || catalog.IsLabelValueOf(label, topic) {
		return nil
	}
	return failure.Permanent(failure.StageTable, fmt.Errorf(
		"topic %s is not the source of changelog %s: the table belongs to source %s (label %s=%s; topic %s would be labelled %s)",
		topic, t.Name, label, catalog.SourceLabel, label, topic, catalog.LabelValue(topic)))
}

// transcode is row, compiled: the payload straight to the row's bytes.
func (s *Service) transcode(ctx context.Context, m Message, p prepared, at time.Time) ([]byte, error) {
	payload, err := p.codec.writer.Binary(p.payload)
	if err != nil {
		return nil, failure.Permanent(failure.StageDecode, fmt.Errorf("decoding %s payload with schema %s: %w", p.format, p.ref, err))
	}
	// One buffer per row, sized so the common row never grows it: the batcher
	// holds the row until its append is acknowledged.
	row, dropped, err := p.codec.plan.AppendContext(ctx, make([]byte, 0, 2*len(payload)+256), payload, transcode.Meta{MessageID: m.MessageID, PublishTime: m.PublishTime,
		IngestedAt: at, SchemaID: p.schemaID})
	if err != nil {
		return nil, err // classified by the plan, with the stage the generic steps would give
	}
	s.dropped(m, p, dropped)
	return row, nil
}

// dropped counts the values of fields the changelog lacks (schema
// evolution off for the topic), logging once per writer schema.
func (s *Service) dropped(m Message, p prepared, n int) {
	if n == 0 {
		return
	}
	s.ignored.Add(int64(n))
	if !p.codec.warned.Swap(true) {
		s.log.Warn("values of fields the changelog lacks are dropped (schema evolution is off for the topic)",
			"event", "fields_ignored", "topic", m.Topic, "writer", p.ref.String(), "fields", p.codec.fitter.Missing())
	}
}

// identify finds the writer schema of a message by its format and the
// payload to transcode with it.
func (s *Service) identify(ctx context.Context, format formats.Format, m Message, frame wire.Frame, t *bqwrite.Table) (writerRef, []byte, error) {
	switch format {
	case formats.Confluent:
		return writerRef{registryID: int(frame.SchemaID)}, frame.Payload, nil
	case formats.PubSubSchema:
		if s.pubsub == nil {
			return writerRef{}, nil, failure.Permanent(failure.StageRegistry, errors.New("message is Pub/Sub schema-encoded but the function has no Pub/Sub schema client"))
		}
		w, err := s.pubsub.Lookup(ctx, m.Attributes)
		if err != nil {
			return writerRef{}, nil, err
		}
		return writerRef{writer: w}, m.Data, nil
	case formats.DebeziumJSON:
		w, payload, err := s.connect.Split(m.Data)
		switch {
		case err == nil:
			return writerRef{writer: w}, payload, nil
		case errors.Is(err, formats.ErrTombstone):
			return writerRef{}, nil, errTombstone
		case !errors.Is(err, formats.ErrNoSchema):
			return writerRef{}, nil, err
		}
		// schemas.enable=false: read the payload with the changelog's
		// reader schema.
		readerID := readerSchemaID(t)
		if readerID == 0 {
			return writerRef{}, nil, failure.Permanent(failure.StageRegistry, fmt.Errorf(
				"Debezium JSON without its schema needs the changelog's reader schema, and table %s names none (label %s): run bqcdc apply with a registry, or enable schemas in the JsonConverter", t.Name, catalog.ReaderSchemaLabel))
		}
		return writerRef{readerID: readerID}, m.Data, nil
	}
	return writerRef{}, nil, failure.Permanent(failure.StageWire, errors.New("not a known message format"))
}

// evolves reports whether the changelog of topic follows its source's
// schema (the default) or keeps its columns.
func (s *Service) evolves(topic string) bool {
	_, frozen := s.frozen[topic]
	return !frozen
}

// evolve adds the columns the writer schema of cd has and table t lacks
// (only bqcdc's metadata columns when evolution is off for the topic),
// then returns the table as it now is and the codec for it. The reader
// schema label moves to the writer's id when that is newer, so later writers
// resolve against the newest defaults. A change BigQuery refuses (400), a
// type conflict and a column count past its limit are permanent (dead
// letter, stage schema); other failures are retryable: the message comes
// back and evolution is tried again.
func (s *Service) evolve(ctx context.Context, topic string, t *bqwrite.Table, ref writerRef, cd *codec) (*bqwrite.Table, *codec, error) {
	labels := map[string]string{}
	cols := cd.columns
	if s.evolves(topic) {
		if ref.registryID > readerSchemaID(t) {
			labels[catalog.ReaderSchemaLabel] = strconv.Itoa(ref.registryID)
		}
	} else {
		// The source's columns stay; bqcdc's own metadata columns are
		// always added (a changelog made by an older bqcdc lacks new ones).
		cols = catalog.MetadataColumns()
	}
	ev, err := s.writer.Evolve(ctx, t, cols, labels)
	if err != nil {
		var conflict *evolve.Conflict
		switch {
		case errors.As(err, &conflict), errors.Is(err, limits.ErrLimit):
			// The table changed under us in a way this writer cannot follow,
			// or the writers' columns together exceed BigQuery's limit.
			return nil, nil, failure.Permanent(failure.StageSchema, fmt.Errorf("writer schema %s: %w", ref, err))
		case bqerror.RequestRefused(err):
			// BigQuery refuses the update itself (400): retrying sends the
			// same update, so the message would only exhaust its deliveries.
			return nil, nil, failure.Permanent(failure.StageSchema, fmt.Errorf("BigQuery refused evolving changelog %s for writer schema %s: %w", t.Name, ref, err))
		}
		return nil, nil, failure.Retryable(failure.StageSchema, fmt.Errorf("evolving changelog %s for writer schema %s: %w", t.Name, ref, err))
	}
	if len(ev.Added) > 0 {
		s.evolutions.Add(1)
		s.log.Info("changelog evolved", "event", "schema_evolved", "topic", topic, "table", t.Name,
			"writer", ref.String(), "added", ev.Added)
		if s.flows != nil {
			if err := s.flows.FollowChangelog(ctx, topic, ev.Table.Metadata); err != nil {
				s.log.Warn("flows not brought up to the evolved changelog; the next compaction will",
					"event", "flows_not_evolved", "topic", topic, "error", Truncate(err.Error()))
			}
		}
	}
	ncd, err := s.codecs.get(ctx, ref, ev.Table)
	if err != nil {
		return nil, nil, err
	}
	return ev.Table, ncd, nil
}

// Truncate shortens an error for a log line. Errors from BigQuery can quote
// the rejected row; the full text is kept in the dead-letter table, the log
// gets the gist.
func Truncate(s string) string {
	const max = 300
	if len(s) <= max {
		return s
	}
	return s[:max] + "... (truncated)"
}
