package localstack

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"cloud.google.com/go/pubsub/v2"
	ingestfn "github.com/bqcdc/bqcdc/functions/ingest"
)

// Relay delivers a subscription's messages to the ingest function the way a
// Pub/Sub push subscription does in production: each message is POSTed as
// Pub/Sub's push body to URL + projects/PROJECT/topics/TOPIC (the push
// endpoint Terraform sets); a 2xx acknowledges it, anything else is retried
// with exponential backoff until the subscription's dead-letter policy moves
// it to the dead-letter topic. pstest never calls push endpoints, hence this
// relay.
type Relay struct {
	Project, Topic, Subscription string
	URL                          string
	HTTP                         *http.Client
	Log                          *slog.Logger
	// MaxBackoff caps the pause before a failed delivery is released.
	MaxBackoff time.Duration
	// MaxDeliveryAttempts is the subscription's dead-letter policy: after
	// that many failed deliveries the message is published to DeadLetters
	// (with the attributes Pub/Sub adds) and acknowledged.
	MaxDeliveryAttempts int
	DeadLetters         *pubsub.Publisher
	// Slots bounds the deliveries in flight, shared by every relay of a
	// stack: the request concurrency of the one function instance the
	// stack runs (Cloud Run queues what exceeds an instance's concurrency).
	Slots chan struct{}

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
	if r.Slots != nil {
		sub.ReceiveSettings.MaxOutstandingMessages = cap(r.Slots)
	}
	return sub.Receive(ctx, func(ctx context.Context, m *pubsub.Message) {
		if r.Slots != nil {
			select {
			case r.Slots <- struct{}{}:
			case <-ctx.Done():
				m.Nack()
				return
			}
		}
		err := r.Deliver(ctx, m)
		if r.Slots != nil {
			<-r.Slots
		}
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
		if r.DeadLetters != nil && r.MaxDeliveryAttempts > 0 && attempt >= r.MaxDeliveryAttempts {
			if err := r.deadLetter(ctx, m, attempt); err != nil {
				r.Log.Error("dead-lettering failed, will retry", "topic", r.Topic, "message_id", m.ID, "error", err.Error())
				m.Nack()
				return
			}
			r.Log.Warn("delivery attempts exhausted: message moved to the dead-letter topic", "topic", r.Topic, "message_id", m.ID, "attempts", attempt)
			m.Ack()
			return
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

// deadLetter publishes m to the dead-letter topic with the attributes
// Pub/Sub's dead-letter forwarding adds.
func (r *Relay) deadLetter(ctx context.Context, m *pubsub.Message, attempts int) error {
	attrs := map[string]string{}
	for k, v := range m.Attributes {
		attrs[k] = v
	}
	attrs["CloudPubSubDeadLetterSourceDeliveryCount"] = strconv.Itoa(attempts)
	attrs["CloudPubSubDeadLetterSourceSubscription"] = r.Subscription
	attrs["CloudPubSubDeadLetterSourceSubscriptionProject"] = r.Project
	attrs["CloudPubSubDeadLetterSourceTopicPublishTime"] = m.PublishTime.UTC().Format(time.RFC3339Nano)
	_, err := r.DeadLetters.Publish(ctx, &pubsub.Message{Data: m.Data, Attributes: attrs, OrderingKey: m.OrderingKey}).Get(ctx)
	return err
}

func backoff(attempt int, max time.Duration) time.Duration {
	d := 100 * time.Millisecond << min(attempt-1, 10)
	if max > 0 && d > max {
		d = max
	}
	return d
}

// Deliver posts one message to the function as Pub/Sub's push body; it
// fails unless the function answers 2xx.
func (r *Relay) Deliver(ctx context.Context, m *pubsub.Message) error {
	var body ingestfn.PushBody
	body.Message.Data = m.Data
	body.Message.Attributes = m.Attributes
	body.Message.MessageID = m.ID
	body.Message.PublishTime = m.PublishTime.UTC()
	body.Message.OrderingKey = m.OrderingKey
	body.Subscription = fmt.Sprintf("projects/%s/subscriptions/%s", r.Project, r.Subscription)
	if m.DeliveryAttempt != nil {
		body.DeliveryAttempt = *m.DeliveryAttempt
	}
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	endpoint := strings.TrimSuffix(r.URL, "/") + "/projects/" + r.Project + "/topics/" + r.Topic
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
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
