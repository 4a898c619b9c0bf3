package localstack

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"cloud.google.com/go/pubsub/v2"
	ingestfn "github.com/bqcdc/bqcdc/functions/ingest"
)

// Relay delivers a subscription's messages to a CloudEvent function the way
// Eventarc does in production: each message becomes a binary-mode CloudEvent
// (type google.cloud.pubsub.topic.v1.messagePublished) POSTed to the function;
// a 2xx acknowledges it, anything else is retried with exponential backoff
// until the subscription's dead-letter policy moves it to the dead-letter
// topic. pstest never calls push endpoints, hence this relay.
type Relay struct {
	Project, Topic, Subscription string
	URL                          string
	HTTP                         *http.Client
	Log                          *slog.Logger
	// MaxBackoff caps the pause before a failed delivery is released.
	MaxBackoff time.Duration

	delivered, failed atomic.Int64
}

// RelayStats counts deliveries.
type RelayStats struct{ Delivered, Failed int64 }

// Stats returns the counters.
func (r *Relay) Stats() RelayStats {
	return RelayStats{Delivered: r.delivered.Load(), Failed: r.failed.Load()}
}

// Run delivers until ctx ends.
func (r *Relay) Run(ctx context.Context, sub *pubsub.Subscriber) error {
	return sub.Receive(ctx, func(ctx context.Context, m *pubsub.Message) {
		err := r.Deliver(ctx, m)
		if err == nil {
			r.delivered.Add(1)
			m.Ack()
			return
		}
		r.failed.Add(1)
		attempt := 1
		if m.DeliveryAttempt != nil {
			attempt = *m.DeliveryAttempt
		}
		r.Log.Warn("delivery failed, will retry", "topic", r.Topic, "message_id", m.ID, "attempt", attempt, "error", err.Error())
		// pstest ignores RetryPolicy backoff, so back off here before the nack.
		select {
		case <-time.After(backoff(attempt, r.MaxBackoff)):
		case <-ctx.Done():
		}
		m.Nack()
	})
}

func backoff(attempt int, max time.Duration) time.Duration {
	d := 100 * time.Millisecond << min(attempt-1, 10)
	if max > 0 && d > max {
		d = max
	}
	return d
}

// Deliver posts one message to the function as a messagePublished
// CloudEvent; it fails unless the function answers 2xx.
func (r *Relay) Deliver(ctx context.Context, m *pubsub.Message) error {
	var body ingestfn.PushBody
	body.Message.Data = m.Data
	body.Message.Attributes = m.Attributes
	body.Message.MessageID = m.ID
	body.Message.PublishTime = m.PublishTime.UTC()
	body.Message.OrderingKey = m.OrderingKey
	body.Subscription = fmt.Sprintf("projects/%s/subscriptions/%s", r.Project, r.Subscription)
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("ce-id", m.ID)
	req.Header.Set("ce-specversion", "1.0")
	req.Header.Set("ce-type", "google.cloud.pubsub.topic.v1.messagePublished")
	req.Header.Set("ce-source", fmt.Sprintf("//pubsub.googleapis.com/projects/%s/topics/%s", r.Project, r.Topic))
	req.Header.Set("ce-time", m.PublishTime.UTC().Format(time.RFC3339Nano))
	resp, err := r.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("function answered %s: %s", resp.Status, bytes.TrimSpace(msg))
	}
	return nil
}
