// Package e2e holds the integration tests: one local stack per test binary
// (the BigQuery emulator, pstest, the registry, the functions served by the
// Functions Framework over HTTP and the Eventarc-like relay), driven only
// through public clients: srclient for the registry, the Pub/Sub client, and
// the BigQuery client.
package e2e

import (
	"context"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"cloud.google.com/go/pubsub/v2"
	"github.com/bqcdc/bqcdc/internal/dev/demo"
	"github.com/bqcdc/bqcdc/internal/dev/localstack"
	"github.com/bqcdc/bqcdc/internal/dev/testenv"
)

var stack *localstack.Stack

func TestMain(m *testing.M) { testenv.Main(m, "e2e", "testdata", &stack) }

func delivered() int64 {
	var n int64
	for _, r := range stack.Relays {
		n += r.Stats().Delivered
	}
	return n
}

func failedDeliveries() int64 {
	var n int64
	for _, r := range stack.Relays {
		n += r.Stats().Failed
	}
	return n
}

// publish sends one message and returns its id.
func publish(t *testing.T, topic string, data []byte, attrs map[string]string) string {
	t.Helper()
	id, err := stack.PubSub.Publisher(topic).Publish(context.Background(), &pubsub.Message{Data: data, Attributes: attrs}).Get(context.Background())
	if err != nil {
		t.Fatalf("publishing to %s: %v", topic, err)
	}
	return id
}

// waitDelivered waits until n more messages than base were acknowledged.
func waitDelivered(t *testing.T, base int64, n int) {
	t.Helper()
	// The emulator's SQLite waits up to 60 s on a lock held by a concurrent
	// statement (its busy timeout), so one delivery can legitimately take
	// longer than that.
	deadline := time.Now().Add(150 * time.Second)
	for delivered() < base+int64(n) {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d messages acknowledged after 150 s", delivered()-base, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func query(t *testing.T, sql string) []map[string]bigquery.Value {
	t.Helper()
	rows, err := demo.Query(context.Background(), stack.BigQuery, sql)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}
