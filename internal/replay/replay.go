// Package replay sends dead letters back through the pipeline once their
// cause is fixed (a schema registered late, a changelog created, a column
// migrated): it reads messages from the dead-letter table and publishes each
// again to its topic, byte for byte with its attributes, plus the attribute
// ReplayOf naming the original Pub/Sub message id, the original publish
// time, and their proof (package proof: an HMAC under the replay key). Ingest stores that id as the row's
// _cdc_message_id when the proof verifies, so a message replayed twice, or
// replayed after it landed after all, is still counted once by the views.
package replay

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/clients"
	"github.com/bqcdc/bqcdc/internal/config"
	"github.com/bqcdc/bqcdc/internal/proof"
)

// Filter selects dead letters. Empty fields select everything.
type Filter struct {
	Topic      string
	Stage      string
	MessageIDs []string
	Since      time.Time // dead-lettered at or after; zero: any time
}

// Letter is one dead-lettered message.
type Letter struct {
	Topic, MessageID, Stage, Reason string
	Attributes                      map[string]string
	Data                            []byte
	DeadLetteredAt                  time.Time
	PublishTime                     time.Time // the original message's; zero when unknown
}

// Select reads the dead letters matching f from project.dataset, one per
// message id (the newest, when a message was dead-lettered more than once),
// oldest first. Topic and stage are query parameters, never spliced.
func Select(ctx context.Context, bq *bigquery.Client, dataset string, f Filter) ([]Letter, error) {
	since := f.Since
	if since.IsZero() {
		since = time.Unix(0, 0)
	}
	q := bq.Query(fmt.Sprintf("SELECT topic, message_id, stage, reason, attributes, data, dead_lettered_at, publish_time FROM `%s.%s` "+
		"WHERE (@topic = '' OR topic = @topic) AND (@stage = '' OR stage = @stage) AND dead_lettered_at >= TIMESTAMP_MICROS(@since) "+
		"ORDER BY dead_lettered_at", dataset, catalog.DeadLetterTable))
	q.Parameters = []bigquery.QueryParameter{{Name: "topic", Value: f.Topic}, {Name: "stage", Value: f.Stage}, {Name: "since", Value: since.UnixMicro()}}
	it, err := q.Read(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading dead letters: %w", err)
	}
	rows, err := clients.Collect(it)
	if err != nil {
		return nil, fmt.Errorf("reading dead letters: %w", err)
	}
	want := map[string]bool{}
	for _, id := range f.MessageIDs {
		want[id] = true
	}
	byID := map[string]Letter{}
	for _, r := range rows {
		l := Letter{Attributes: map[string]string{}}
		l.Topic, _ = r["topic"].(string)
		l.MessageID, _ = r["message_id"].(string)
		l.Stage, _ = r["stage"].(string)
		l.Reason, _ = r["reason"].(string)
		l.Data, _ = r["data"].([]byte)
		l.DeadLetteredAt, _ = r["dead_lettered_at"].(time.Time)
		l.PublishTime, _ = r["publish_time"].(time.Time)
		if len(want) > 0 && !want[l.MessageID] {
			continue
		}
		if l.Topic == "" {
			continue // an event the function could not even read a topic from
		}
		attrs, _ := r["attributes"].([]bigquery.Value)
		for _, a := range attrs {
			if kv, ok := a.(map[string]bigquery.Value); ok {
				k, _ := kv["key"].(string)
				v, _ := kv["value"].(string)
				l.Attributes[k] = v
			}
		}
		byID[l.MessageID] = l // rows are oldest first: the newest wins
	}
	out := make([]Letter, 0, len(byID))
	for _, l := range byID {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].DeadLetteredAt.Before(out[j].DeadLetteredAt) })
	return out, nil
}

// Publisher publishes one message to a topic and returns its new id.
type Publisher interface {
	Publish(ctx context.Context, topic string, data []byte, attrs map[string]string) (string, error)
}

// ErrNoKey is Replay refusing to publish without the replay key: ingest
// honours a replay id only with its proof, so without a key a replayed
// message would land under a new id and be counted twice if the original
// landed after all.
var ErrNoKey = errors.New("no replay key: set " + config.EnvReplayKey + " to the ingest function's replay key (Secret Manager: the secret named by Terraform's replay_key_secret_id)")

// Replay publishes every letter again, marked with ReplayOf (the letter's
// message id) and its proof under key. It stops at the first failure and
// returns how many were published.
//
// The id replayed is the dead letter's message_id, never a ReplayOf
// attribute the letter already carries: ingest stores the original id as
// message_id when it honoured a proven replay, and the message's own id
// when it ignored an unproven one, so re-signing an attribute found in the
// table would launder a forged id.
func Replay(ctx context.Context, letters []Letter, pub Publisher, key []byte) (int, error) {
	return ReplayProgress(ctx, letters, pub, key, nil)
}

// ReplayProgress is Replay reporting each published letter to progress
// (nil: none) with the count so far.
func ReplayProgress(ctx context.Context, letters []Letter, pub Publisher, key []byte, progress func(done int)) (int, error) {
	if len(key) == 0 {
		return 0, ErrNoKey
	}
	for i, l := range letters {
		if progress != nil {
			progress(i)
		}
		attrs := make(map[string]string, len(l.Attributes)+2)
		for k, v := range l.Attributes {
			attrs[k] = v
		}
		attrs[catalog.ReplayOfAttribute] = l.MessageID
		delete(attrs, catalog.ReplayPublishTimeAttribute) // only a signed one is honoured, and it is set here
		if l.PublishTime.IsZero() {
			attrs[catalog.ReplayProofAttribute] = proof.Sign(key, l.Topic, l.MessageID, l.Data)
		} else {
			// The original publish time travels with the replay, signed:
			// ingest stores it and sequences a plain record by it, so an
			// old dead letter is not taken for its key's newest change.
			at := proof.FormatTime(l.PublishTime)
			attrs[catalog.ReplayPublishTimeAttribute] = at
			attrs[catalog.ReplayProofAttribute] = proof.SignAt(key, l.Topic, l.MessageID, at, l.Data)
		}
		if _, err := pub.Publish(ctx, l.Topic, l.Data, attrs); err != nil {
			return i, fmt.Errorf("replaying message %s to %s: %w", l.MessageID, l.Topic, err)
		}
	}
	if progress != nil {
		progress(len(letters))
	}
	return len(letters), nil
}
