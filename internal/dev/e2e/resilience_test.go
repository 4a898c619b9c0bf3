package e2e

import (
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/cdc"
	"github.com/bqcdc/bqcdc/internal/dev/testfile"
)

// A new writer schema (v2, one added field) is fetched from a registry that
// first answers 503: the message is retried, never dead-lettered, and lands
// with the added field as a new changelog column.
func TestRegistryOutageIsRetriedAndNewWriterSchemaEvolves(t *testing.T) {
	_, _, text := itemsSchema(t)
	v2 := withField(t, text, map[string]any{"name": "color", "type": []any{"null", "string"}, "default": nil})
	v2ID, schema2 := registerSchema(t, catalog.Subject(items), v2)
	row := itemRow(50, "SKU-50", "5.000")
	row["color"] = map[string]any{"string": "teal"}
	data := encode(t, schema2, v2ID, pgEnvelope("c", 50_000, nil, row))

	base, failedBase := delivered(), failedDeliveries()
	stack.Registry.FailNext(2)
	msgID := publish(t, items, data, nil)
	waitDelivered(t, base, 1)
	if failedDeliveries()-failedBase < 1 {
		t.Errorf("no failed delivery recorded: the 503 was not surfaced as a retry")
	}
	rows := query(t, "SELECT sku, color, _cdc_schema_id, _cdc_sequence FROM `cdc.test_shop_items_changelog` WHERE _cdc_message_id = '"+msgID+"'")
	if len(rows) != 1 || rows[0]["sku"] != "SKU-50" || rows[0]["color"] != "teal" || rows[0]["_cdc_schema_id"] != int64(v2ID) || rows[0]["_cdc_sequence"] != cdc.PostgresSequence(50_000) {
		t.Fatalf("v2 message landed as %v; dead letters: %v", rows, query(t, "SELECT stage, reason FROM `cdc._bqcdc_dead_letters` WHERE message_id = '"+msgID+"'"))
	}
	if dead := query(t, "SELECT reason FROM `cdc._bqcdc_dead_letters` WHERE message_id = '"+msgID+"'"); len(dead) != 0 {
		t.Errorf("a transient registry failure was dead-lettered: %v", dead)
	}
}

// A record that is not a Debezium envelope is stored as the row image: no
// op, no source time, and a sequence from the publish time.
func TestIngestPlainRecord(t *testing.T) {
	text := testfile.Read(t, "testdata/schemas/app.users-value.avsc")
	id, schema := registerSchema(t, "app.users-value", text)
	base := delivered()
	msgID := publish(t, "app.users", encode(t, schema, id, map[string]any{
		"userId": 124, "name": map[string]any{"string": "Raul"}, "city": map[string]any{"string": "Oaxaca"}, "operation": "INSERT", "sequenceNum": int64(1)}), nil)
	waitDelivered(t, base, 1)
	rows := query(t, "SELECT * FROM `cdc.app_users_changelog` WHERE _cdc_message_id = '"+msgID+"'")
	if len(rows) != 1 {
		t.Fatalf("%d rows", len(rows))
	}
	r := rows[0]
	if r["userId"] != int64(124) || r["name"] != "Raul" || r["operation"] != "INSERT" || r["sequenceNum"] != int64(1) {
		t.Errorf("image = %v", r)
	}
	if r["_cdc_op"] != nil || r["_cdc_source_ts"] != nil {
		t.Errorf("plain record got Debezium metadata: op %v source_ts %v", r["_cdc_op"], r["_cdc_source_ts"])
	}
	if want := cdc.TimestampSequence(r["_cdc_publish_time"].(time.Time)); r["_cdc_sequence"] != want {
		t.Errorf("_cdc_sequence = %v, want the publish time %s", r["_cdc_sequence"], want)
	}
}

// withField returns the Debezium envelope schema text with one more field in
// its row image (the Value record, declared in "before").
func withField(t *testing.T, text string, field map[string]any) string {
	t.Helper()
	out, err := cdc.EditImage([]byte(text), func(f []any) []any { return append(f, field) })
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A message whose deliveries keep failing with a retryable error (here the
// registry answers 503 for as long as the test lasts) is moved by Pub/Sub to
// the source's dead-letter topic after MaxDeliveryAttempts, and the local
// stack drains that topic into pubsub_dead_letters, as the BigQuery
// subscription Terraform declares does in production: nothing disappears.
func TestExhaustedDeliveriesLandInPubSubDeadLetters(t *testing.T) {
	text := withField(t, testfile.Read(t, "testdata/schemas/test.shop.items-value.avsc"),
		map[string]any{"name": "exhausted", "type": []any{"null", "string"}, "default": nil})
	id, schema := registerSchema(t, catalog.Subject(items), text)
	row := itemRow(60, "SKU-60", "6.000")
	row["exhausted"] = map[string]any{"string": "yes"}
	stack.Registry.FailNext(1 << 30)
	defer stack.Registry.FailNext(0)
	data := encode(t, schema, id, pgEnvelope("c", 60_000, nil, row))
	msgID := publish(t, items, data, nil)
	deadline := time.Now().Add(2 * time.Minute)
	var copies []map[string]bigquery.Value
	for len(copies) == 0 {
		for _, r := range query(t, "SELECT message_id, subscription_name, attributes, data FROM `cdc.pubsub_dead_letters`") {
			if string(r["data"].([]byte)) == string(data) {
				copies = append(copies, r)
			}
		}
		if len(copies) == 0 && time.Now().After(deadline) {
			t.Fatalf("message %s is not in pubsub_dead_letters after 2 minutes", msgID)
		}
		time.Sleep(time.Second)
	}
	time.Sleep(3 * time.Second) // a redelivery of the dead letter would show by now
	n := 0
	for _, r := range query(t, "SELECT data FROM `cdc.pubsub_dead_letters`") {
		if string(r["data"].([]byte)) == string(data) {
			n++
		}
	}
	t.Logf("dead-lettered after its delivery attempts: message %v of %v, attributes %v; %d copies", copies[0]["message_id"], copies[0]["subscription_name"], copies[0]["attributes"], n)
	if n != 1 {
		t.Errorf("%d copies of the message in pubsub_dead_letters, want 1", n)
	}
	if changelog := query(t, "SELECT 1 FROM `cdc.test_shop_items_changelog` WHERE _cdc_message_id = '"+msgID+"'"); len(changelog) != 0 {
		t.Errorf("the message landed in the changelog too: %v", changelog)
	}
}
