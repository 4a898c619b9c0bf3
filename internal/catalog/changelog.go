// Package catalog owns every BigQuery object bqcdc creates: its name, its
// layout (columns with descriptions), and the labels and attributes that tie
// objects together. Nothing else spells a table name, a metadata column or a
// label:
//
//   - changelog.go: the per-source changelog (the row image plus the _cdc_*
//     metadata columns) and how a source topic names it;
//   - deadletter.go: the dead-letter table;
//   - flow.go: a flow's view and state table (names, event and state
//     columns) and where they live (Location);
//   - object.go: what catalog needs to know of a flow or a materialized
//     view, as interfaces their types implement (catalog sits below
//     package flow, so flow can take its names from here);
//   - report.go: the compaction report table.
//
// The SQL that reads and writes them is rendered from the templates in
// sql/render; the tables are created by package apply.
package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/bqcdc/bqcdc/internal/limits"
	"github.com/bqcdc/bqcdc/internal/schema"
)

// Metadata columns, added to every changelog after the row image's columns.
const (
	ColOp          = "_cdc_op"
	ColSourceTS    = "_cdc_source_ts"
	ColSequence    = "_cdc_sequence"
	ColIngestedAt  = "_cdc_ingested_at"
	ColPublishTime = "_cdc_publish_time"
	ColMessageID   = "_cdc_message_id"
	ColSchemaID    = "_cdc_schema_id"
	ColTransaction = "_cdc_transaction"
)

// MetadataColumns are the columns bqcdc adds to every changelog, documented
// in the README and carried as column descriptions.
func MetadataColumns() schema.Columns {
	return schema.Columns{
		{Name: ColOp, Type: schema.String, Description: "Debezium operation: c (insert), u (update), d (delete), r (snapshot read), t (truncate); NULL for records that are not Debezium envelopes."},
		{Name: ColSourceTS, Type: schema.Timestamp, Description: "When the change happened in the source database (Debezium source.ts_us, ts_ns or ts_ms; else the envelope ts_ms)."},
		{Name: ColSequence, Type: schema.String, Description: "Sortable source position, shaped like _CHANGE_SEQUENCE_NUMBER: '/'-separated 16-digit hex sections, compared as strings. " +
			"MySQL and MariaDB: binlog file index/position/row/phase. PostgreSQL: last commit LSN/LSN/phase from Debezium's source.sequence " +
			"(initial and blocking snapshot reads use LSN 0), or the LSN alone without source.sequence. " +
			"Phase is 0 for snapshot reads and 1 for streamed changes, so a read sorts before a change at the same position. " +
			"Otherwise the source timestamp (microseconds), or the Pub/Sub publish time for non-Debezium records."},
		{Name: ColIngestedAt, Type: schema.Timestamp, Required: true, Description: "When the ingest function appended the row (set just before the append). Partitioning column; compaction watermarks are on it."},
		{Name: ColPublishTime, Type: schema.Timestamp, Description: "Pub/Sub publish time of the message."},
		{Name: ColMessageID, Type: schema.String, Description: "Pub/Sub message id; a redelivered message keeps its id, so views count it once."},
		{Name: ColSchemaID, Type: schema.Int64, Description: "Schema Registry id of the writer schema the message was encoded with."},
		{Name: ColTransaction, Type: schema.Record, Description: "Debezium's transaction block, written by connectors run with provide.transaction.metadata=true; NULL when the event carries none and for non-Debezium records.",
			Fields: []schema.Column{
				{Name: "id", Type: schema.String, Description: "Source transaction id, as the connector reports it."},
				{Name: "total_order", Type: schema.Int64, Description: "1-based position of the event among all events of its transaction."},
				{Name: "data_collection_order", Type: schema.Int64, Description: "1-based position of the event among its transaction's events for this table."},
			}},
	}
}

// MetadataPrefix starts the name of every column bqcdc adds to a changelog
// (package flow spells it too, as it sits below this package).
const MetadataPrefix = "_cdc_"

// IsMetadata reports whether a column name is one of bqcdc's (the prefix
// compares case-insensitively, as BigQuery column names do).
func IsMetadata(name string) bool { return strings.HasPrefix(strings.ToLower(name), MetadataPrefix) }

// Schema is the full changelog schema for a row image. It fails when the
// image uses the metadata columns' prefix (avrobq.ColumnName never makes such
// a name) or when image and metadata together exceed BigQuery's
// limits.MaxColumns columns, nested fields included.
func Schema(image schema.Columns) (schema.Columns, error) {
	for _, c := range image {
		if IsMetadata(c.Name) {
			return nil, fmt.Errorf("source column %s uses the reserved prefix %s of bqcdc's metadata columns", c.Name, MetadataPrefix)
		}
	}
	meta := MetadataColumns()
	if n := countColumns(image) + countColumns(meta); n > limits.MaxColumns {
		return nil, limits.Errorf("the changelog would have %d columns (nested fields included) with bqcdc's %d metadata columns; BigQuery allows %d",
			n, countColumns(meta), limits.MaxColumns)
	}
	return append(append(schema.Columns{}, image...), meta...), nil
}

// countColumns counts columns as BigQuery's column limit does, nested
// fields included.
func countColumns(cols []schema.Column) int {
	n := len(cols)
	for _, c := range cols {
		n += countColumns(c.Fields)
	}
	return n
}

var (
	notNameChar  = regexp.MustCompile(`[^A-Za-z0-9_]`)
	notLabelChar = regexp.MustCompile(`[^a-z0-9_-]`)
)

// TableName is the changelog table of a source topic: the topic with every
// character BigQuery does not allow replaced by '_', plus "_changelog".
func TableName(source string) string {
	return notNameChar.ReplaceAllString(source, "_") + ChangelogSuffix
}

// Subject is the Schema Registry subject of a topic's value schema under
// Confluent's default TopicNameStrategy.
func Subject(source string) string { return source + "-value" }

// ReaderSchemaLabel is the table label recording which registry schema id the
// changelog columns were built from; ingest resolves every writer schema
// against it, so decoded records always fit the table.
const ReaderSchemaLabel = "bqcdc-reader-schema-id"

// ReplayOfAttribute marks a message `bqcdc replay` published again from the
// dead-letter table; its value is the original Pub/Sub message id, which
// ingest keeps as the message's identity (_cdc_message_id), so replays are
// counted once. Ingest honours it only with a valid ReplayProofAttribute.
const ReplayOfAttribute = "bqcdc-replay-of"

// ReplayProofAttribute carries the proof (package proof) that
// `bqcdc replay` set ReplayOfAttribute: an HMAC, under the replay key, of the
// topic, the original id and the data's SHA-256.
const ReplayProofAttribute = "bqcdc-replay-proof"

// ReplayPublishTimeAttribute carries the publish time of the message a
// replay publishes again (package proof's FormatTime), covered by
// its proof: ingest stores it as _cdc_publish_time and sequences a plain
// record by it, not by the replay's own publish time.
const ReplayPublishTimeAttribute = "bqcdc-replay-publish-time"

// SourceLabel records the topic a changelog table belongs to, readably: as
// LabelValue writes it, which maps several characters to '_' (and cuts at
// 63), so it cannot tell look-alike topics apart (a.b, a_b, a+b). Ingest
// compares SourceHashLabel instead, which names the topic exactly.
const SourceLabel = "bqcdc-source"

// SourceHashLabel records the exact topic a changelog table belongs to:
// SourceHash of it. Ingest appends a message to the changelog only when the
// hash of the message's topic is this label; only a table labelled by an
// older bqcdc (without it) is checked by SourceLabel, until bqcdc apply
// adds it.
const SourceHashLabel = "bqcdc-source-sha256"

// SourceHash is the label value of SourceHashLabel for a topic: the first
// 128 bits of the SHA-256 of its exact bytes, in lowercase hex (label
// values are lowercase and at most 63 characters). Making another topic
// hash the same is a 128-bit second preimage.
func SourceHash(topic string) string {
	sum := sha256.Sum256([]byte(topic))
	return hex.EncodeToString(sum[:16])
}

// IsSourceHashOf reports whether v == SourceHash(topic), without
// allocating: ingest asks it for every message.
func IsSourceHashOf(v, topic string) bool {
	if len(v) != 32 {
		return false
	}
	sum := sha256.Sum256([]byte(topic))
	var buf [32]byte
	hex.Encode(buf[:], sum[:16])
	return string(buf[:]) == v
}

// LabelValue makes a string usable as a label value (lowercase letters,
// digits, '_' and '-', at most 63 characters).
func LabelValue(s string) string {
	v := notLabelChar.ReplaceAllString(strings.ToLower(s), "_")
	if len(v) > 63 {
		v = v[:63]
	}
	return v
}

// IsLabelValueOf reports whether v == LabelValue(s), without allocating for
// ASCII names (every Pub/Sub topic name is ASCII). Look-alike topics share
// a label value: it identifies a source only where SourceHashLabel is
// missing.
func IsLabelValueOf(v, s string) bool {
	n := min(len(s), 63)
	if len(v) != n {
		return LabelValue(s) == v // a longer label: only non-ASCII lowercasing changes lengths
	}
	for i := 0; i < n; i++ {
		c := s[i]
		switch {
		case c >= utf8.RuneSelf:
			return LabelValue(s) == v
		case c >= 'A' && c <= 'Z':
			c += 'a' - 'A'
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '_', c == '-':
		default:
			c = '_'
		}
		if v[i] != c {
			return false
		}
	}
	return true
}
