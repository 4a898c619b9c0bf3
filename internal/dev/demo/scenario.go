// Package demo plays a realistic Debezium change stream for the example
// MySQL "inventory" database (customers and orders) through the local stack,
// the way Debezium Server's Pub/Sub sink would: schemas registered in the
// Schema Registry, Confluent-framed Avro values, tombstones after deletes.
// It then checks that every message ended where it should.
package demo

import (
	"math/big"
	"time"

	"github.com/bqcdc/bqcdc/internal/cdc"
)

// Topics of the demo database.
const (
	Customers = "dbserver1.inventory.customers"
	Orders    = "dbserver1.inventory.orders"
)

// Event is one message of the scenario.
type Event struct {
	Topic string
	Key   int
	Op    string         // c u d r t; "" for a tombstone or raw bytes
	Row   map[string]any // the after image (before image for d)
	Pos   int64          // binlog position
	Raw   []byte         // sent as is instead of an Avro record (bad input)
	V2    bool           // encoded with version 2 of the customers schema (see Evolution)
	Note  string
}

// Tombstone reports whether the event is a Kafka tombstone.
func (e Event) Tombstone() bool { return e.Op == "" && e.Raw == nil }

// Sequence is the _cdc_sequence the event gets.
func (e Event) Sequence() string {
	phase := cdc.PhaseChange
	if cdc.ParseOp(e.Op) == cdc.OpRead {
		phase = cdc.PhaseRead
	}
	return cdc.BinlogSequence(3, uint64(e.Pos), 0, phase)
}

func dec(s string) *big.Rat { r, _ := new(big.Rat).SetString(s); return r }

func days(y int, m time.Month, d int) int {
	return int(time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / 86400)
}

func customer(id int, first, last, email string, tier any, balance string, birth any) map[string]any {
	return map[string]any{"id": id, "first_name": first, "last_name": last, "email": email,
		"tier": tier, "balance": dec(balance), "birth_date": birth, "updated_at": "2026-11-30T09:00:00Z"}
}

func order(n, purchaser, qty, product int) map[string]any {
	return orderOn(2, n, purchaser, qty, product)
}

// orderOn is an order placed on a day of November 2026.
func orderOn(day, n, purchaser, qty, product int) map[string]any {
	return map[string]any{"order_number": n, "order_date": days(2026, 11, day), "purchaser": purchaser,
		"quantity": qty, "product_id": product, "created_at": int64(1_795_000_000_000_000)}
}

func with(row map[string]any, k string, v any) map[string]any {
	out := map[string]any{}
	for kk, vv := range row {
		out[kk] = vv
	}
	out[k] = v
	return out
}

// Scenario is the demo stream in publish order. Binlog positions give the
// true order; two updates of customer 1003 are published out of order, one
// insert is sent twice (as Debezium does after a connector restart), deletes
// are followed by tombstones, and one message is not Avro at all.
func Scenario() []Event {
	sally := customer(1001, "Sally", "Thomas", "sally.thomas@acme.com", "gold", "120.50", days(1985, 3, 14))
	george := customer(1002, "George", "Bailey", "gbailey@foobar.com", "silver", "0.00", nil)
	edward := customer(1003, "Edward", "Walker", "ed@walker.com", nil, "55.25", days(1979, 7, 1))
	anne := customer(1004, "Anne", "Kretchmar", "annek@noanswer.org", "bronze", "10.00", nil)
	jane := customer(1005, "Jane", "Doe", "jane@doe.io", nil, "0.00", nil)
	georgeRich := with(george, "balance", dec("99.99"))
	return []Event{
		// Initial snapshot.
		{Topic: Customers, Key: 1001, Op: "r", Row: sally, Pos: 154, Note: "snapshot"},
		{Topic: Customers, Key: 1002, Op: "r", Row: george, Pos: 154, Note: "snapshot"},
		{Topic: Customers, Key: 1003, Op: "r", Row: edward, Pos: 154, Note: "snapshot"},
		{Topic: Customers, Key: 1004, Op: "r", Row: anne, Pos: 154, Note: "snapshot"},
		{Topic: Orders, Key: 10001, Op: "r", Row: order(10001, 1001, 1, 102), Pos: 154, Note: "snapshot"},
		{Topic: Orders, Key: 10002, Op: "r", Row: order(10002, 1002, 2, 105), Pos: 154, Note: "snapshot"},
		{Topic: Orders, Key: 10003, Op: "r", Row: order(10003, 1002, 2, 106), Pos: 154, Note: "snapshot"},
		{Topic: Orders, Key: 10004, Op: "r", Row: order(10004, 1003, 1, 107), Pos: 154, Note: "snapshot"},
		// Streaming changes.
		{Topic: Customers, Key: 1005, Op: "c", Row: jane, Pos: 1020, Note: "insert"},
		{Topic: Customers, Key: 1001, Op: "u", Row: with(sally, "email", "sally@thomas.dev"), Pos: 1300, Note: "email change"},
		{Topic: Customers, Key: 1002, Op: "u", Row: georgeRich, Pos: 1560, Note: "balance only: updates the history row in place"},
		{Topic: Customers, Key: 1003, Op: "u", Row: with(edward, "tier", "gold"), Pos: 2100, Note: "published before the update it follows"},
		{Topic: Customers, Key: 1003, Op: "u", Row: with(edward, "tier", "silver"), Pos: 1800, Note: "late: older position, arrives second"},
		{Topic: Orders, Key: 10005, Op: "c", Row: orderOn(3, 10005, 1005, 3, 104), Pos: 2300, Note: "insert, a day later"},
		{Topic: Orders, Key: 10002, Op: "u", Row: orderOn(3, 10002, 1002, 5, 105), Pos: 2450, Note: "quantity and day change: moves between the days of orders_per_day"},
		{Topic: Customers, Key: 1004, Op: "d", Row: anne, Pos: 2600, Note: "delete"},
		{Topic: Customers, Key: 1004, Note: "tombstone after the delete"},
		{Topic: Orders, Key: 10003, Op: "d", Row: order(10003, 1002, 2, 106), Pos: 2700, Note: "delete"},
		{Topic: Orders, Key: 10003, Note: "tombstone after the delete"},
		{Topic: Customers, Key: 1002, Op: "u", Row: with(georgeRich, "tier", "gold"), Pos: 2900, Note: "tier change: a new history version"},
		{Topic: Customers, Key: 1005, Op: "c", Row: jane, Pos: 1020, Note: "re-sent after a connector restart: counted once"},
		{Topic: Customers, Key: 0, Raw: []byte(`{"id": 1006, "note": "JSON sent to an Avro topic"}`), Note: "JSON that is not a Debezium record: dead-lettered"},
	}
}

// LoyaltyField is the field version 2 of the customers schema adds.
var LoyaltyField = map[string]any{"name": "loyalty", "type": []any{"null", "long"}, "default": nil,
	"doc": "Loyalty points (added in version 2 of the customers schema)."}

// Evolution is the schema-evolution part of the demo, in phases published
// one after the other: the source table gains a column (version 2 of the
// customers schema, registered by Produce), and a message written with
// version 1 is still in flight after it. The first phase is the message that
// makes ingest add the column.
func Evolution() [][]Event {
	sally := customer(1001, "Sally", "Thomas", "sally@thomas.dev", "gold", "120.50", days(1985, 3, 14))
	kim := customer(1006, "Kim", "Park", "kim@park.kr", "bronze", "5.00", nil)
	edward := customer(1003, "Edward", "Walker", "ed@walker.com", "gold", "55.25", days(1979, 7, 1))
	return [][]Event{
		{{Topic: Customers, Key: 1001, Op: "u", Row: with(sally, "loyalty", map[string]any{"long": int64(250)}), Pos: 3100, V2: true,
			Note: "schema v2 adds loyalty: the changelog gains a NULLABLE column"}},
		{{Topic: Customers, Key: 1006, Op: "c", Row: with(kim, "loyalty", map[string]any{"long": int64(10)}), Pos: 3200, V2: true, Note: "insert with schema v2"},
			{Topic: Customers, Key: 1003, Op: "u", Row: with(edward, "balance", dec("60.00")), Pos: 3300, Note: "schema v1 still in flight: loyalty NULL"}},
	}
}
