package catalog

import (
	"sort"
	"time"

	"github.com/bqcdc/bqcdc/internal/schema"
)

// DeadLetterTable holds every message the ingest function could never turn
// into a changelog row, with the reason and the original bytes, so nothing is
// lost and a fixed message can be replayed.
const DeadLetterTable = "_bqcdc_dead_letters"

// DeadLetterColumns is the dead-letter table schema.
func DeadLetterColumns() schema.Columns {
	return schema.Columns{
		{Name: "dead_lettered_at", Type: schema.Timestamp, Required: true, Description: "When the function gave up on the message. Partitioning column."},
		{Name: "topic", Type: schema.String, Description: "Pub/Sub topic the message came from."},
		{Name: "subscription", Type: schema.String, Description: "Subscription that delivered it."},
		{Name: "message_id", Type: schema.String, Description: "Pub/Sub message id (the original one for a replayed message)."},
		{Name: "publish_time", Type: schema.Timestamp, Description: "Pub/Sub publish time."},
		{Name: "ordering_key", Type: schema.String, Description: "Pub/Sub ordering key, if any."},
		{Name: "attributes", Type: schema.Record, Repeated: true, Fields: []schema.Column{{Name: "key", Type: schema.String}, {Name: "value", Type: schema.String}}, Description: "Pub/Sub message attributes."},
		{Name: "data", Type: schema.Bytes, Description: "The message value, byte for byte."},
		{Name: "stage", Type: schema.String, Description: "Pipeline stage that failed: event, wire, registry, decode, envelope, convert, table, schema, encode, append, or internal (handling the message panicked)."},
		{Name: "reason", Type: schema.String, Description: "Why the message can never become a changelog row."},
		{Name: "schema_id", Type: schema.Int64, Description: "Writer schema id from the Confluent header, when it could be read."},
		{Name: "changelog_table", Type: schema.String, Description: "The changelog table the message was meant for."},
	}
}

// Delivery is one Pub/Sub message as delivered (ingest.Message): a dead
// letter keeps all of it, so that the message can be replayed as it came.
type Delivery struct {
	Topic        string
	Subscription string
	MessageID    string
	PublishTime  time.Time
	OrderingKey  string
	Attributes   map[string]string
	Data         []byte
}

// DeadLetter is one dead-letter row: the message, when and why the ingest
// function gave up on it.
type DeadLetter struct {
	At time.Time
	Delivery
	Stage    string
	Reason   string
	SchemaID int
	Table    string
}

// Row renders the dead letter in canonical form.
func (d DeadLetter) Row() map[string]any {
	row := map[string]any{
		"dead_lettered_at": d.At.UnixMicro(),
		"stage":            d.Stage,
		"reason":           d.Reason,
	}
	str := func(col, v string) {
		if v != "" {
			row[col] = v
		}
	}
	str("topic", d.Topic)
	str("subscription", d.Subscription)
	str("message_id", d.MessageID)
	str("ordering_key", d.OrderingKey)
	str("changelog_table", d.Table)
	if !d.PublishTime.IsZero() {
		row["publish_time"] = d.PublishTime.UnixMicro()
	}
	if d.Data != nil {
		row["data"] = d.Data
	}
	if d.SchemaID != 0 {
		row["schema_id"] = int64(d.SchemaID)
	}
	if len(d.Attributes) > 0 {
		keys := make([]string, 0, len(d.Attributes))
		for k := range d.Attributes {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		attrs := make([]any, len(keys))
		for i, k := range keys {
			attrs[i] = map[string]any{"key": k, "value": d.Attributes[k]}
		}
		row["attributes"] = attrs
	}
	return row
}

// PubSubDeadLetterTable holds the messages Pub/Sub gave up delivering (a
// source subscription's max_delivery_attempts reached): the dead-letter
// topics' BigQuery subscriptions write them (write_metadata = true,
// use_topic_schema = false). Terraform creates it in production (its schema
// there must equal PubSubDeadLetterColumns; a test checks); the local stack
// creates it and drains the dead-letter topics into it the same way.
// Failures the ingest function classifies as permanent never get here: it
// records them in DeadLetterTable itself.
const PubSubDeadLetterTable = "pubsub_dead_letters"

// PubSubDeadLetterColumns are the columns a BigQuery subscription with
// write_metadata writes.
func PubSubDeadLetterColumns() schema.Columns {
	return schema.Columns{
		{Name: "subscription_name", Type: schema.String, Description: "Dead-letter subscription that wrote the row (one per source, or the one the sources share)."},
		{Name: "message_id", Type: schema.String, Description: "Pub/Sub message id on the dead-letter topic."},
		{Name: "publish_time", Type: schema.Timestamp, Description: "Time the message was published to the dead-letter topic."},
		{Name: "data", Type: schema.Bytes, Description: "Original message payload (Confluent-framed Avro)."},
		{Name: "attributes", Type: schema.String, Description: "JSON object of message attributes, including CloudPubSubDeadLetterSourceSubscription and friends."},
	}
}
