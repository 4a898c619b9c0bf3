// Package ingest turns one Pub/Sub message into one changelog row, a counted
// tombstone, or a dead letter. It holds the pipeline the ingest function runs
// (wire framing -> registry -> Avro decoding -> Debezium flattening -> BigQuery
// values -> Storage Write append) without any knowledge of HTTP or CloudEvents.
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
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bqcdc/bqcdc/internal/bqwrite"
	"github.com/bqcdc/bqcdc/internal/cdc"
	"github.com/bqcdc/bqcdc/internal/changelog"
	"github.com/bqcdc/bqcdc/internal/failure"
	"github.com/bqcdc/bqcdc/internal/wire"
)

// Message is one Pub/Sub message as delivered.
type Message struct {
	Topic        string
	Subscription string
	MessageID    string
	PublishTime  time.Time
	OrderingKey  string
	Attributes   map[string]string
	Data         []byte
}

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
}

// Stats are counters since the service started.
type Stats struct {
	Appended, Tombstones, DeadLetters, Retries int64
}

// Service runs the pipeline. It is safe for concurrent use.
type Service struct {
	writer Appender
	codecs *codecs
	log    *slog.Logger
	now    func() time.Time

	appended, tombstones, deadLetters, retries atomic.Int64
	readerIDs                                  sync.Map // *bqwrite.Table -> int
}

// New returns a service appending with w and looking schemas up in reg.
func New(reg SchemaSource, w Appender, log *slog.Logger) *Service {
	return &Service{writer: w, codecs: newCodecs(reg), log: log, now: time.Now}
}

// SetClock replaces the clock that stamps _cdc_ingested_at (tests).
func (s *Service) SetClock(now func() time.Time) { s.now = now }

// Stats returns the counters.
func (s *Service) Stats() Stats {
	return Stats{Appended: s.appended.Load(), Tombstones: s.tombstones.Load(), DeadLetters: s.deadLetters.Load(), Retries: s.retries.Load()}
}

// Handle processes one message.
func (s *Service) Handle(ctx context.Context, m Message) (Outcome, error) {
	table := changelog.TableName(m.Topic)
	if wire.IsTombstone(m.Data) {
		s.tombstones.Add(1)
		s.log.Info("tombstone acknowledged", "event", "tombstone", "topic", m.Topic, "message_id", m.MessageID, "ordering_key", m.OrderingKey)
		return Tombstone, nil
	}
	schemaID, err := s.process(ctx, m, table)
	if err == nil {
		s.appended.Add(1)
		return Appended, nil
	}
	if !failure.IsPermanent(err) {
		s.retries.Add(1)
		s.log.Warn("message will be redelivered", "event", "retry", "topic", m.Topic, "message_id", m.MessageID,
			"stage", string(failure.StageOf(err)), "error", Truncate(err.Error()))
		return Failed, err
	}
	return s.deadLetter(ctx, m, table, schemaID, err)
}

// DeadLetter stores a message the caller could not even parse (for example a
// malformed push body) with its reason.
func (s *Service) DeadLetter(ctx context.Context, m Message, cause error) (Outcome, error) {
	return s.deadLetter(ctx, m, changelog.TableName(m.Topic), 0, cause)
}

func (s *Service) deadLetter(ctx context.Context, m Message, table string, schemaID int, cause error) (Outcome, error) {
	stage := failure.StageOf(cause)
	if stage == "" {
		stage = failure.StageEvent
	}
	dl := changelog.DeadLetter{At: s.now(), Topic: m.Topic, Subscription: m.Subscription, MessageID: m.MessageID,
		PublishTime: m.PublishTime, OrderingKey: m.OrderingKey, Attributes: m.Attributes, Data: m.Data,
		Stage: string(stage), Reason: cause.Error(), SchemaID: schemaID, Table: table}
	if err := s.writer.Append(ctx, changelog.DeadLetterTable, []map[string]any{dl.Row()}); err != nil {
		// Not stored anywhere yet: the message must come back.
		s.retries.Add(1)
		return Failed, fmt.Errorf("dead-lettering message %s (%v): %w", m.MessageID, cause, err)
	}
	s.deadLetters.Add(1)
	s.log.Error("message dead-lettered", "event", "dead_letter", "topic", m.Topic, "message_id", m.MessageID, "stage", string(stage), "reason", Truncate(cause.Error()))
	return DeadLettered, nil
}

// process runs the pipeline; it returns the writer schema id when known.
func (s *Service) process(ctx context.Context, m Message, table string) (int, error) {
	frame, err := wire.Parse(m.Data)
	if err != nil {
		return 0, failure.Permanent(failure.StageWire, fmt.Errorf("parsing Confluent framing: %w", err))
	}
	id := int(frame.SchemaID)
	t, err := s.writer.Table(ctx, table)
	if err != nil {
		if errors.Is(err, bqwrite.ErrNoTable) {
			return id, failure.Permanent(failure.StageTable, fmt.Errorf("no changelog table for topic %s (run bqcdc apply): %w", m.Topic, err))
		}
		return id, failure.Retryable(failure.StageTable, err)
	}
	cd, err := s.codecs.get(ctx, id, s.readerSchemaID(t))
	if err != nil {
		return id, err
	}
	rec, err := cd.decode(frame.Payload)
	if err != nil {
		return id, failure.Permanent(failure.StageDecode, fmt.Errorf("decoding Avro payload with schema %d: %w", id, err))
	}
	ch, err := cd.shape.Flatten(rec)
	if err != nil {
		return id, failure.Permanent(failure.StageEnvelope, err)
	}
	values, err := cd.fields.Convert(ch.Image)
	if err != nil {
		return id, failure.Permanent(failure.StageConvert, fmt.Errorf("converting to BigQuery values: %w", err))
	}
	if !cd.shape.Envelope {
		ch.Sequence = cdc.TimestampSequence(m.PublishTime)
	}
	row := changelog.Row(values, changelog.Meta{
		Op: ch.Op, SourceTS: ch.SourceTS, Sequence: ch.Sequence, IngestedAt: s.now(),
		PublishTime: m.PublishTime, MessageID: m.MessageID, SchemaID: id,
	})
	return id, s.writer.AppendTo(ctx, t, []map[string]any{row})
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

// readerSchemaID is the registry id the changelog was built from (0 if the
// table carries none, and then records are read as written). It is parsed
// once per table version: a refreshed table is a new *bqwrite.Table.
func (s *Service) readerSchemaID(t *bqwrite.Table) int {
	if id, ok := s.readerIDs.Load(t); ok {
		return id.(int)
	}
	id := 0
	if t.Metadata != nil {
		id, _ = strconv.Atoi(t.Metadata.Labels[changelog.ReaderSchemaLabel])
	}
	s.readerIDs.Store(t, id)
	return id
}
