package e2e

import (
	"context"
	"testing"

	"cloud.google.com/go/pubsub/v2"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/registry"
	"github.com/bqcdc/bqcdc/internal/replay"
	"github.com/riferrei/srclient"
)

type stackPublisher struct{}

func (stackPublisher) Publish(ctx context.Context, topic string, data []byte, attrs map[string]string) (string, error) {
	return stack.PubSub.Publisher(topic).Publish(ctx, &pubsub.Message{Data: data, Attributes: attrs}).Get(ctx)
}

// TestReplayDeadLetters: a producer publishes with a schema id the registry
// does not have yet (registry replication lag), so the message is
// dead-lettered; once the schema is registered, replaying the dead letter
// lands it with its original message id, and replaying it again is counted
// once (same _cdc_message_id).
func TestReplayDeadLetters(t *testing.T) {
	ctx := context.Background()
	sr := srclient.NewSchemaRegistryClient(stack.RegistryURL)
	// The registry numbers schemas in order: learn the next id.
	probe, err := sr.CreateSchema("replay-probe-value", `{"type":"record","name":"Probe","fields":[{"name":"x","type":"int"}]}`, srclient.Avro)
	if err != nil {
		t.Fatal(err)
	}
	next := probe.ID() + 1
	_, _, text := itemsSchema(t)
	late := withField(t, text, map[string]any{"name": "replay_note", "type": []any{"null", "string"}, "default": nil})
	schema, err := registry.Parse(late)
	if err != nil {
		t.Fatal(err)
	}
	row := itemRow(77, "SKU-77", "7.000")
	row["replay_note"] = map[string]any{"string": "late schema"}
	data := encode(t, schema, next, pgEnvelope("c", 77_000, nil, row))

	base := delivered()
	msgID := publish(t, items, data, map[string]string{"case": "replay"})
	waitDelivered(t, base, 1)
	dead := query(t, "SELECT stage FROM `cdc._bqcdc_dead_letters` WHERE message_id = '"+msgID+"'")
	if len(dead) != 1 || dead[0]["stage"] != "registry" {
		t.Fatalf("dead letters of %s = %v, want one at stage registry", msgID, dead)
	}

	if s, err := sr.CreateSchema(catalog.Subject(items), late, srclient.Avro); err != nil || s.ID() != next {
		t.Fatalf("registering the late schema: id %v, %v; want id %d (the id the message was written with)", s, err, next)
	}
	letters, err := replay.Select(ctx, stack.BigQuery, stack.Dataset, replay.Filter{Topic: items, Stage: "registry", MessageIDs: []string{msgID}})
	if err != nil {
		t.Fatal(err)
	}
	if len(letters) != 1 || string(letters[0].Data) != string(data) || letters[0].Attributes["case"] != "replay" {
		t.Fatalf("selected %+v, want the one dead letter with its bytes and attributes", letters)
	}
	for round := 1; round <= 2; round++ {
		base := delivered()
		if n, err := replay.Replay(ctx, letters, stackPublisher{}, stack.ReplayKey); n != 1 || err != nil {
			t.Fatalf("replay round %d: %d, %v", round, n, err)
		}
		waitDelivered(t, base, 1)
		rows := query(t, "SELECT sku, replay_note FROM `cdc.test_shop_items_changelog` WHERE _cdc_message_id = '"+msgID+"'")
		if len(rows) != round || rows[0]["sku"] != "SKU-77" || rows[0]["replay_note"] != "late schema" {
			t.Fatalf("after replay round %d: changelog rows with the original message id = %v, want %d", round, rows, round)
		}
	}
	if dead := query(t, "SELECT stage FROM `cdc._bqcdc_dead_letters` WHERE message_id = '"+msgID+"'"); len(dead) != 1 {
		t.Errorf("replays were dead-lettered again: %v", dead)
	}
}
