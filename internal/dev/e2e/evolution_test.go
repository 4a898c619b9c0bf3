package e2e

import (
	"context"
	"fmt"
	"math/big"
	"strings"
	"testing"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/cdc"
	"github.com/bqcdc/bqcdc/internal/compact"
	"github.com/bqcdc/bqcdc/internal/dev/testfile"
	"github.com/bqcdc/bqcdc/internal/dev/viewcheck"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/hamba/avro/v2"
)

const evo = "test.evo.customers"

// evoVersion registers a version of the test.evo.customers schema, derived
// from the file the stack applied by editing the row image's fields, as
// Debezium registers a changed table.
func evoVersion(t *testing.T, edit func(fields []any) []any) (int, avro.Schema) {
	t.Helper()
	text, err := cdc.EditImage([]byte(testfile.Read(t, "testdata/schemas/"+catalog.Subject(evo)+".avsc")), edit)
	if err != nil {
		t.Fatal(err)
	}
	return registerSchema(t, catalog.Subject(evo), text)
}

func retype(fields []any, name string, typ any) []any {
	for _, f := range fields {
		if m := f.(map[string]any); m["name"] == name {
			m["type"] = typ
		}
	}
	return fields
}

// mysqlEnvelope is a Debezium MySQL change of the customers table at binlog
// position pos.
func mysqlEnvelope(op string, pos int64, after map[string]any) map[string]any {
	var img any
	if after != nil {
		img = map[string]any{"dbserver1.inventory.customers.Value": after}
	}
	return map[string]any{"op": op, "ts_ms": nil, "ts_us": nil, "ts_ns": nil, "transaction": nil, "before": nil, "after": img,
		"source": map[string]any{"version": "2.7.3.Final", "connector": "mysql", "name": "test", "ts_ms": t0.UnixMilli() + pos,
			"snapshot": "false", "db": "evo", "sequence": nil, "ts_us": nil, "ts_ns": nil, "table": "customers", "server_id": int64(1),
			"gtid": nil, "file": "mysql-bin.000003", "pos": pos, "row": 0, "thread": nil, "query": nil}}
}

func customer(id any, first string, balance string) map[string]any {
	var bal any
	if balance != "" {
		r, _ := new(big.Rat).SetString(balance)
		bal = r
	}
	return map[string]any{"id": id, "first_name": first, "last_name": "Lee", "email": strings.ToLower(first) + "@x",
		"tier": nil, "balance": bal, "birth_date": nil, "updated_at": nil}
}

// TestSchemaEvolutionEndToEnd: v1 streams; v2 (an added column, a widened
// type) streams with v1 messages still interleaved; the changelog gains the
// column through tables.update, the views show it at once and after
// compaction, equal to the reference model; nothing is dead-lettered. Then an
// incompatible v3 is dead-lettered with a reason naming the column and both
// types, while another source keeps flowing.
func TestSchemaEvolutionEndToEnd(t *testing.T) {
	ctx := context.Background()
	table := "`cdc." + catalog.TableName(evo) + "`"
	v1id, v1 := evoVersion(t, func(f []any) []any { return f }) // the version the stack applied
	send := func(msgs ...[]byte) []string {
		t.Helper()
		base := delivered()
		ids := make([]string, len(msgs))
		for i, m := range msgs {
			ids[i] = publish(t, evo, m, nil)
		}
		waitDelivered(t, base, len(msgs))
		return ids
	}
	send(encode(t, v1, v1id, mysqlEnvelope("c", 100, customer(1, "Ann", "10.50"))),
		encode(t, v1, v1id, mysqlEnvelope("c", 110, customer(2, "Bob", ""))))

	v2id, v2 := evoVersion(t, func(f []any) []any {
		f = retype(f, "id", "long")
		return append(f, map[string]any{"name": "loyalty", "type": []any{"null", "long"}, "default": nil, "doc": "Loyalty points."})
	})
	if v2id == v1id {
		t.Fatal("the registry returned the same id for v2")
	}
	withLoyalty := func(m map[string]any, points int64) map[string]any {
		m["id"] = int64(m["id"].(int))
		m["loyalty"] = map[string]any{"long": points}
		return m
	}
	// The first v2 message evolves the table; then v1 and v2 interleave.
	send(encode(t, v2, v2id, mysqlEnvelope("u", 200, withLoyalty(customer(1, "Ann", "11.00"), 70))))
	send(encode(t, v1, v1id, mysqlEnvelope("u", 210, customer(2, "Bobby", "3.00"))),
		encode(t, v2, v2id, mysqlEnvelope("c", 220, withLoyalty(customer(3, "Cy", "0.01"), 5))),
		encode(t, v1, v1id, mysqlEnvelope("c", 230, customer(4, "Di", ""))),
		encode(t, v2, v2id, mysqlEnvelope("u", 240, withLoyalty(customer(3, "Cyrus", "0.02"), 6))))

	md, err := stack.BigQuery.Dataset("cdc").Table(catalog.TableName(evo)).Metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var added *bigquery.FieldSchema
	for _, f := range md.Schema {
		if f.Name == "loyalty" {
			added = f
		}
	}
	if added == nil || added.Required || added.Type != bigquery.IntegerFieldType || added.Description != "Loyalty points." {
		t.Fatalf("changelog column loyalty = %+v, want a NULLABLE INTEGER with the field's doc", added)
	}
	if got := md.Labels[catalog.ReaderSchemaLabel]; got != fmt.Sprint(v2id) {
		t.Errorf("reader schema label = %s, want %d", got, v2id)
	}
	rows := query(t, "SELECT id, first_name, loyalty, balance, _cdc_schema_id FROM "+table+" ORDER BY _cdc_sequence")
	var got []string
	for _, r := range rows {
		got = append(got, fmt.Sprintf("%v %v %s %s %v", r["id"], r["first_name"], viewcheck.Canon(r["loyalty"]), viewcheck.Canon(r["balance"]), r["_cdc_schema_id"]))
	}
	want := []string{
		fmt.Sprintf("1 Ann NULL N21/2 %d", v1id), fmt.Sprintf("2 Bob NULL NULL %d", v1id),
		fmt.Sprintf("1 Ann int64:70 N11 %d", v2id), fmt.Sprintf("2 Bobby NULL N3 %d", v1id),
		fmt.Sprintf("3 Cy int64:5 N1/100 %d", v2id), fmt.Sprintf("4 Di NULL NULL %d", v1id), fmt.Sprintf("3 Cyrus int64:6 N1/50 %d", v2id),
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("changelog rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if dead := query(t, "SELECT stage, reason FROM `cdc._bqcdc_dead_letters` WHERE topic = '"+evo+"'"); len(dead) != 0 {
		t.Fatalf("dead letters for %s: %v", evo, dead)
	}

	// The function that evolved the changelog brought the flows' state
	// tables and views up to it at once: the views show the new column
	// before any compaction, and still after one (which binds the flows to
	// the changelog again).
	var flows []*flow.Flow
	for _, f := range stack.Flows {
		if f.Source.Name == evo {
			flows = append(flows, f)
		}
	}
	bound, _, err := viewcheck.Bind(ctx, stack.BigQuery, stack.Location(), flows)
	if err != nil {
		t.Fatal(err)
	}
	checkViews := func(when string) {
		t.Helper()
		for _, b := range bound {
			if _, ok := b.Output.Lookup("loyalty"); !ok {
				t.Fatalf("flow %s bound to the evolved changelog has no loyalty column", b.Name)
			}
			if diff, err := viewcheck.Check(ctx, stack.BigQuery, b, stack.Location()); err != nil || diff != "" {
				t.Errorf("view %s %s (%v):\n%s", b.Target, when, err, diff)
			}
		}
	}
	checkViews("right after the evolution")
	reports, err := stack.Compact(ctx, []string{"evo_current", "evo_history"})
	if err != nil {
		t.Fatalf("compacting: %v (%+v)", err, reports)
	}
	for _, r := range reports {
		if r.Outcome == compact.Failed {
			t.Fatalf("compacting %s: %s", r.Flow, r.Error)
		}
	}
	checkViews("after compaction")
	current := query(t, "SELECT id, first_name, loyalty FROM `cdc.evo_customers` ORDER BY id")
	var cur []string
	for _, r := range current {
		cur = append(cur, fmt.Sprintf("%v %v %s", r["id"], r["first_name"], viewcheck.Canon(r["loyalty"])))
	}
	if strings.Join(cur, ", ") != "1 Ann int64:70, 2 Bobby NULL, 3 Cyrus int64:6, 4 Di NULL" {
		t.Errorf("SCD1 view = %s", strings.Join(cur, ", "))
	}

	// v3 turns the NUMERIC balance into a double: incompatible. Its messages
	// are dead-lettered; v2 messages and other sources keep flowing.
	v3id, v3 := evoVersion(t, func(f []any) []any { return retype(f, "balance", []any{"null", "double"}) })
	v3row := customer(5, "Eve", "")
	v3row["balance"] = map[string]any{"double": 1.5}
	itemsID, itemsSchema, _ := itemsSchema(t)
	base := delivered()
	v3msg := publish(t, evo, encode(t, v3, v3id, mysqlEnvelope("c", 300, v3row)), nil)
	v2msg := publish(t, evo, encode(t, v2, v2id, mysqlEnvelope("c", 310, withLoyalty(customer(6, "Fay", "1.00"), 1))), nil)
	itemMsg := publish(t, items, encode(t, itemsSchema, itemsID, pgEnvelope("c", 90_000, nil, itemRow(90, "SKU-90", "9.000"))), nil)
	waitDelivered(t, base, 3)
	dead := query(t, "SELECT stage, reason, schema_id FROM `cdc._bqcdc_dead_letters` WHERE message_id = '"+v3msg+"'")
	wantReason := "column balance: the changelog has NUMERIC, the writer schema has FLOAT64"
	if len(dead) != 1 || dead[0]["stage"] != "schema" || !strings.Contains(dead[0]["reason"].(string), wantReason) || dead[0]["schema_id"] != int64(v3id) {
		t.Errorf("v3 dead letter = %v, want stage schema with %q", dead, wantReason)
	}
	if n := query(t, "SELECT COUNT(*) AS n FROM "+table+" WHERE _cdc_message_id IN ('"+v2msg+"', '"+v3msg+"')"); n[0]["n"] != int64(1) {
		t.Errorf("want only the v2 message in the changelog, got %v rows", n[0]["n"])
	}
	if n := query(t, "SELECT COUNT(*) AS n FROM `cdc.test_shop_items_changelog` WHERE _cdc_message_id = '"+itemMsg+"'"); n[0]["n"] != int64(1) {
		t.Error("another source stopped flowing")
	}
}
