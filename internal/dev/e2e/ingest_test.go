package e2e

import (
	"bytes"
	"context"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"cloud.google.com/go/civil"
	"cloud.google.com/go/pubsub/v2"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/cdc"
	"github.com/bqcdc/bqcdc/internal/dev/localstack"
	"github.com/bqcdc/bqcdc/internal/dev/testfile"
	"github.com/bqcdc/bqcdc/internal/registry"
	"github.com/bqcdc/bqcdc/internal/wire"
	"github.com/google/go-cmp/cmp"
	"github.com/hamba/avro/v2"
	"github.com/riferrei/srclient"
)

const items = "test.shop.items"

// itemsSchema registers the test.shop.items schema the stack applied and
// returns its id, the parsed schema and its text.
func itemsSchema(t *testing.T) (int, avro.Schema, string) {
	t.Helper()
	text := testfile.Read(t, "testdata/schemas/"+catalog.Subject(items)+".avsc")
	id, parsed := registerSchema(t, catalog.Subject(items), text)
	return id, parsed, text
}

// registerSchema registers schema text under subject as Debezium's
// AvroConverter would (over HTTP, through srclient) and returns its id and
// the schema parsed.
func registerSchema(t *testing.T, subject, text string) (int, avro.Schema) {
	t.Helper()
	s, err := srclient.NewSchemaRegistryClient(stack.RegistryURL).CreateSchema(subject, text, srclient.Avro)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := registry.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	return s.ID(), parsed
}

var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func itemRow(id int64, sku string, price string) map[string]any {
	p, _ := new(big.Rat).SetString(price)
	return map[string]any{
		"id": id, "sku": sku, "price": p, "qty": 3, "active": true, "weight": 1.25,
		"tags": []any{"red", "sale"}, "attrs": map[string]any{"map": map[string]any{"k": "v"}},
		"dims":    map[string]any{"test.shop.items.Dims": map[string]any{"w": 2.5, "h": 4.0}},
		"created": t0.UnixMicro(), "updated": "2026-11-01T14:00:00.5+02:00", "ship_date": 20400,
		"open_at": int64(9*3600e6 + 30*60e6), "payload": `{"a":[1,2]}`, "photo": []byte{0xde, 0xad},
		"total": map[string]any{"io.debezium.data.VariableScaleDecimal": map[string]any{"scale": 4, "value": big.NewInt(123456789).Bytes()}},
	}
}

func pgEnvelope(op string, lsn int64, before, after map[string]any) map[string]any {
	wrap := func(m map[string]any) any {
		if m == nil {
			return nil
		}
		return map[string]any{"test.shop.items.Value": m}
	}
	return map[string]any{
		"op": op, "ts_ms": t0.UnixMilli() + 5, "transaction": nil, "before": wrap(before), "after": wrap(after),
		"source": map[string]any{"version": "2.7.3.Final", "connector": "postgresql", "name": "test", "ts_ms": t0.UnixMilli(),
			"snapshot": "false", "db": "shop", "sequence": nil, "ts_us": t0.UnixMicro() + lsn, "ts_ns": nil, "schema": "public",
			"table": "items", "txId": int64(777), "lsn": lsn, "xmin": nil},
	}
}

func encode(t *testing.T, s avro.Schema, id int, rec map[string]any) []byte {
	t.Helper()
	// A fresh config per call: hamba's shared codec cache confuses versions
	// of a record reached through a named reference (see internal/ingest).
	payload, err := avro.Config{}.Freeze().Marshal(s, rec)
	if err != nil {
		t.Fatalf("encoding %v: %v", rec, err)
	}
	return wire.Append(nil, int32(id), payload)
}

// TestIngestDebeziumEndToEnd publishes Confluent-framed Debezium messages
// with the Pub/Sub client and checks every value, op and metadata column of
// the changelog, the tombstone count, a redelivered message, and that each
// kind of bad input ends in the dead-letter table with its own reason.
func TestIngestDebeziumEndToEnd(t *testing.T) {
	id, schema, _ := itemsSchema(t)
	base := delivered()
	before := time.Now()
	item1 := itemRow(1, "SKU-1", "19.990")
	item1b := itemRow(1, "SKU-1", "17.500")
	item1b["tags"] = []any{}
	item2 := map[string]any{"id": int64(2), "sku": "SKU-2", "price": nil, "qty": nil, "active": false, "weight": nil,
		"tags": []any{"x"}, "attrs": nil, "dims": nil, "created": t0.UnixMicro(), "updated": nil, "ship_date": nil,
		"open_at": nil, "payload": nil, "photo": nil, "total": nil}

	type sent struct {
		name, op string
		lsn      int64
		data     []byte
		id       string
	}
	insert := pgEnvelope("c", 1000, nil, item1)
	// A realistic PostgreSQL source block names the last commit LSN too
	// (source.sequence): the sequence is then commit LSN / LSN / phase.
	src := insert["source"].(map[string]any)
	src["sequence"] = map[string]any{"string": `["936","1000"]`}
	insert["transaction"] = map[string]any{"event.block": map[string]any{"id": "571:53195832", "total_order": int64(3), "data_collection_order": int64(2)}}
	good := []*sent{
		{name: "insert", op: "c", lsn: 1000, data: encode(t, schema, id, insert)},
		{name: "update", op: "u", lsn: 1100, data: encode(t, schema, id, pgEnvelope("u", 1100, item1, item1b))},
		{name: "snapshot read with NULLs", op: "r", lsn: 900, data: encode(t, schema, id, pgEnvelope("r", 900, nil, item2))},
		{name: "delete", op: "d", lsn: 1200, data: encode(t, schema, id, pgEnvelope("d", 1200, item1b, nil))},
		{name: "truncate", op: "t", lsn: 1300, data: encode(t, schema, id, pgEnvelope("t", 1300, nil, nil))},
	}
	valid := encode(t, schema, id, pgEnvelope("c", 5000, nil, item2))
	badZoned := itemRow(3, "SKU-3", "1.000")
	badZoned["updated"] = "yesterday at noon"
	bad := []struct {
		name, stage, reason string
		data                []byte
	}{
		{"neither Avro nor JSON", "wire", "unknown magic byte 0x6e", []byte("not avro at all")},
		{"JSON that is not the source's record", "decode", "field source: missing", []byte(`{"id": 1}`)},
		{"header without payload", "wire", "no Avro payload", wire.Append(nil, int32(id), nil)},
		{"truncated payload", "decode", "payload truncated", valid[:len(valid)/2]},
		{"unknown schema id", "registry", "Schema not found", wire.Append(nil, 424242, valid[5:])},
		{"value that does not fit", "convert", `column "updated"`, encode(t, schema, id, pgEnvelope("c", 6000, nil, badZoned))},
		{"delete without before image", "envelope", `op "d" without its before image`, encode(t, schema, id, pgEnvelope("d", 7000, nil, nil))},
	}
	for _, g := range good {
		g.id = publish(t, items, g.data, map[string]string{"case": g.name})
	}
	tombstoneID := publish(t, items, nil, map[string]string{"key": "1"})
	badIDs := map[string]string{}
	for _, b := range bad {
		badIDs[publish(t, items, b.data, map[string]string{"case": b.name})] = b.name
	}
	waitDelivered(t, base, len(good)+1+len(bad))

	// Redelivery: Pub/Sub delivers the update again with the same message id.
	redeliver(t, items, good[1].id, good[1].data)

	rows := query(t, "SELECT * FROM `cdc.test_shop_items_changelog` WHERE _cdc_message_id IS NOT NULL ORDER BY _cdc_sequence, _cdc_ingested_at")
	byMsg := map[string][]map[string]bigquery.Value{}
	for _, r := range rows {
		byMsg[r["_cdc_message_id"].(string)] = append(byMsg[r["_cdc_message_id"].(string)], r)
	}
	for _, g := range good {
		want := 1
		if g.name == "update" {
			want = 2 // the redelivered copy lands again; views count the message id once
		}
		got := byMsg[g.id]
		if len(got) != want {
			t.Fatalf("%s: %d changelog rows for message %s, want %d", g.name, len(got), g.id, want)
		}
		r := got[0]
		wantSeq := cdc.PostgresSequence(uint64(g.lsn))
		if g.name == "insert" {
			wantSeq = cdc.PostgresCommitSequence(936, 1000, cdc.PhaseChange)
		}
		if r["_cdc_op"] != g.op || r["_cdc_sequence"] != wantSeq {
			t.Errorf("%s: op %v sequence %v, want %s %s", g.name, r["_cdc_op"], r["_cdc_sequence"], g.op, wantSeq)
		}
		if r["_cdc_schema_id"] != int64(id) {
			t.Errorf("%s: _cdc_schema_id = %v, want %d", g.name, r["_cdc_schema_id"], id)
		}
		if ts := r["_cdc_source_ts"].(time.Time); !ts.Equal(time.UnixMicro(t0.UnixMicro() + g.lsn)) {
			t.Errorf("%s: _cdc_source_ts = %v", g.name, ts)
		}
		ing := r["_cdc_ingested_at"].(time.Time)
		pub := r["_cdc_publish_time"].(time.Time)
		if ing.Before(before.Add(-time.Second)) || ing.After(time.Now()) || pub.After(ing) {
			t.Errorf("%s: ingested_at %v, publish_time %v, test start %v", g.name, ing, pub, before)
		}
	}
	// Every value of the insert, as BigQuery returns it.
	ins := byMsg[good[0].id][0]
	if got := fmt.Sprint(ins["_cdc_transaction"]); got != "map[data_collection_order:2 id:571:53195832 total_order:3]" {
		t.Errorf("_cdc_transaction of the insert = %s, want Debezium's transaction block", got)
	}
	if got := byMsg[good[1].id][0]["_cdc_transaction"]; got != nil {
		t.Errorf("_cdc_transaction of an event without a block = %v, want NULL", got)
	}
	wantIns := map[string]bigquery.Value{
		"id": int64(1), "sku": "SKU-1", "price": big.NewRat(19990, 1000), "qty": int64(3), "active": true, "weight": 1.25,
		"tags":      []bigquery.Value{"red", "sale"},
		"attrs":     []bigquery.Value{map[string]bigquery.Value{"key": "k", "value": "v"}},
		"dims":      map[string]bigquery.Value{"w": 2.5, "h": 4.0},
		"created":   civil.DateTime{Date: civil.Date{Year: 2026, Month: 11, Day: 1}, Time: civil.Time{Hour: 12}},
		"updated":   time.Date(2026, 11, 1, 12, 0, 0, 500e6, time.UTC),
		"ship_date": civil.DateOf(time.Unix(20400*86400, 0).UTC()),
		"open_at":   civil.Time{Hour: 9, Minute: 30},
		"payload":   `{"a":[1,2]}`, "photo": []byte{0xde, 0xad}, "total": big.NewRat(123456789, 10000),
	}
	gotIns := map[string]bigquery.Value{}
	for k := range wantIns {
		gotIns[k] = ins[k]
	}
	if d := cmp.Diff(wantIns, gotIns, cmp.Comparer(func(a, b *big.Rat) bool { return a.Cmp(b) == 0 })); d != "" {
		t.Errorf("insert values (-want +got):\n%s", d)
	}
	// The snapshot row kept its NULLs; the delete carried the before image;
	// the truncate is a marker with an empty image.
	if r := byMsg[good[2].id][0]; r["price"] != nil || r["qty"] != nil || r["dims"] != nil || r["sku"] != "SKU-2" {
		t.Errorf("snapshot row = %v", r)
	}
	if r := byMsg[good[3].id][0]; r["id"] != int64(1) || r["price"].(*big.Rat).Cmp(big.NewRat(35, 2)) != 0 {
		t.Errorf("delete row = id %v price %v", r["id"], r["price"])
	}
	if r := byMsg[good[4].id][0]; r["id"] != nil || r["sku"] != nil {
		t.Errorf("truncate row carries an image: %v", r)
	}
	if _, ok := byMsg[tombstoneID]; ok {
		t.Error("the tombstone became a changelog row")
	}

	dead := query(t, "SELECT message_id, stage, reason, data, topic, schema_id, changelog_table, attributes FROM `cdc._bqcdc_dead_letters`")
	stages := map[string]bool{}
	for _, b := range bad {
		var found map[string]bigquery.Value
		for _, d := range dead {
			if badIDs[d["message_id"].(string)] == b.name {
				found = d
			}
		}
		if found == nil {
			t.Errorf("%s: not in the dead-letter table", b.name)
			continue
		}
		stages[found["stage"].(string)] = true
		if found["stage"] != b.stage || !strings.Contains(found["reason"].(string), b.reason) {
			t.Errorf("%s: dead letter stage %v reason %q, want stage %s and reason containing %q", b.name, found["stage"], found["reason"], b.stage, b.reason)
		}
		// The stack runs without BQCDC_LOG_VALUES: no row value in a reason.
		if strings.Contains(found["reason"].(string), "yesterday") {
			t.Errorf("%s: reason %q quotes the row's value", b.name, found["reason"])
		}
		if !bytes.Equal(found["data"].([]byte), b.data) || found["topic"] != items || found["changelog_table"] != "test_shop_items_changelog" {
			t.Errorf("%s: dead letter lost the original bytes or topic: topic %v table %v", b.name, found["topic"], found["changelog_table"])
		}
		if attrs := fmt.Sprint(found["attributes"]); !strings.Contains(attrs, b.name) {
			t.Errorf("%s: attributes not kept: %s", b.name, attrs)
		}
	}
	if len(stages) < 5 {
		t.Errorf("bad inputs ended in %d distinct stages, want at least 5: %v", len(stages), stages)
	}
}

// redeliver delivers a message to the function again, as Pub/Sub does when
// an acknowledgement is lost: same message id, same bytes.
func redeliver(t *testing.T, topic, messageID string, data []byte) {
	t.Helper()
	var relay *localstack.Relay
	for _, r := range stack.Relays {
		if r.Topic == topic {
			relay = r
		}
	}
	m := &pubsub.Message{ID: messageID, Data: data, PublishTime: time.Now()}
	var err error
	for attempt := 0; attempt < 20; attempt++ { // the emulator may answer "database is locked"
		if err = relay.Deliver(context.Background(), m); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("redelivery failed: %v", err)
}
