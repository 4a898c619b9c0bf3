package ingest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/bqwrite"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/cdc"
	"github.com/bqcdc/bqcdc/internal/failure"
	"github.com/bqcdc/bqcdc/internal/limits"
	"github.com/bqcdc/bqcdc/internal/registry"
	"github.com/bqcdc/bqcdc/internal/wire"
	"github.com/hamba/avro/v2"
	"google.golang.org/api/googleapi"
)

// customerVersion derives a version of the demo customers schema by editing
// the fields of its row image.
func customerVersion(t testing.TB, edit func(fields []any) []any) avro.Schema {
	t.Helper()
	edited, err := cdc.EditImage(customersAvsc(t), edit)
	if err != nil {
		t.Fatal(err)
	}
	s, err := registry.Parse(edited)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func setType(fields []any, name string, typ any) []any {
	for _, f := range fields {
		if m := f.(map[string]any); m["name"] == name {
			m["type"] = typ
		}
	}
	return fields
}

// message encodes an insert of row with schema s registered as id.
func message(t testing.TB, s avro.Schema, id int, row map[string]any) []byte {
	t.Helper()
	rec := map[string]any{"op": "c", "ts_ms": nil, "ts_us": nil, "ts_ns": nil, "transaction": nil, "before": nil,
		"source": map[string]any{"version": "2", "connector": "mysql", "name": "db", "ts_ms": int64(1000), "snapshot": "false", "db": "inventory",
			"sequence": nil, "ts_us": nil, "ts_ns": nil, "table": "customers", "server_id": int64(1), "gtid": nil, "file": "mysql-bin.000001",
			"pos": int64(100), "row": 0, "thread": nil, "query": nil},
		"after": map[string]any{customers + ".Value": row}}
	b, err := avro.Config{}.Freeze().Marshal(s, rec)
	if err != nil {
		t.Fatal(err)
	}
	return wire.Append(nil, int32(id), b)
}

func baseRow(id any) map[string]any {
	return map[string]any{"id": id, "first_name": "Ann", "last_name": "Lee", "email": "a@x", "tier": nil, "balance": nil, "birth_date": nil, "updated_at": nil}
}

func TestSchemaEvolution(t *testing.T) {
	v1 := customerVersion(t, func(f []any) []any { return f })
	// v2 widens id from int to long and adds a nullable column.
	v2 := customerVersion(t, func(f []any) []any {
		f = setType(f, "id", "long")
		return append(f, map[string]any{"name": "loyalty", "type": []any{"null", "long"}, "default": nil, "doc": "loyalty points"})
	})
	// v3 narrows the NUMERIC balance to a double: BigQuery cannot hold it.
	v3 := customerVersion(t, func(f []any) []any { return setType(f, "balance", []any{"null", "double"}) })
	reg := &fakeRegistry{schemas: map[int]avro.Schema{1: v1, 2: v2, 3: v3}}
	svc, tables, _ := newService(t, reg)
	ctx := context.Background()
	name := catalog.TableName(customers)
	handle := func(data []byte, want Outcome) {
		t.Helper()
		got, err := svc.Handle(ctx, Message{Topic: customers, MessageID: "m", PublishTime: time.Unix(1_799_999_999, 0), Data: data})
		if got != want || err != nil {
			t.Fatalf("Handle = %v, %v; want %v", got, err, want)
		}
	}
	handle(message(t, v1, 1, baseRow(1)), Appended)
	v2row := baseRow(int64(2))
	v2row["loyalty"] = map[string]any{"long": int64(42)}
	handle(message(t, v2, 2, v2row), Appended)
	handle(message(t, v1, 1, baseRow(3)), Appended) // an old-schema message still in flight
	if tables.evolutions != 1 {
		t.Errorf("evolutions = %d, want 1", tables.evolutions)
	}
	md := tables.tables[name].Metadata
	if col := md.Schema[len(md.Schema)-1]; col.Name != "loyalty" || col.Required || col.Description != "loyalty points" {
		t.Errorf("added column = %+v, want NULLABLE loyalty with its doc", col)
	}
	if md.Labels[catalog.ReaderSchemaLabel] != "2" {
		t.Errorf("reader schema label = %q, want 2", md.Labels[catalog.ReaderSchemaLabel])
	}
	rows := tables.rows[name]
	if len(rows) != 3 || rows[0]["loyalty"] != nil || rows[1]["loyalty"] != int64(42) || rows[2]["loyalty"] != nil || rows[1]["id"] != int64(2) {
		t.Errorf("rows = %v", rows)
	}

	handle(message(t, v3, 3, baseRow(4)), DeadLettered)
	dl := tables.rows[catalog.DeadLetterTable]
	if len(dl) != 1 || dl[0]["stage"] != string(failure.StageSchema) ||
		!strings.Contains(dl[0]["reason"].(string), "column balance: the changelog has NUMERIC, the writer schema has FLOAT64") {
		t.Errorf("dead letters = %v", dl)
	}
	handle(message(t, v2, 2, v2row), Appended) // the source keeps flowing for compatible writers
}

func TestFrozenSchemaIgnoresAndCounts(t *testing.T) {
	v1 := customerVersion(t, func(f []any) []any { return f })
	v2 := customerVersion(t, func(f []any) []any {
		return append(f, map[string]any{"name": "loyalty", "type": []any{"null", "long"}, "default": nil})
	})
	svc, tables, _ := newServiceWith(t, &fakeRegistry{schemas: map[int]avro.Schema{1: v1, 2: v2}}, Options{Frozen: []string{customers}})
	row := baseRow(5)
	row["loyalty"] = map[string]any{"long": int64(7)}
	got, err := svc.Handle(context.Background(), Message{Topic: customers, MessageID: "m", Data: message(t, v2, 2, row)})
	if got != Appended || err != nil {
		t.Fatalf("Handle = %v, %v", got, err)
	}
	if tables.evolutions != 0 {
		t.Error("a frozen source's changelog was evolved")
	}
	if st := svc.Stats(); st.IgnoredValues != 1 {
		t.Errorf("ignored values = %d, want 1", st.IgnoredValues)
	}
	if r := tables.rows[catalog.TableName(customers)][0]; r["id"] != int64(5) || len(tables.rows[catalog.DeadLetterTable]) != 0 {
		t.Errorf("row = %v", r)
	}
}

func TestMissingKeyIsDeadLettered(t *testing.T) {
	v1 := customerVersion(t, func(f []any) []any { return f })
	noID := customerVersion(t, func(f []any) []any { return f[1:] })
	svc, tables, _ := newServiceWith(t, &fakeRegistry{schemas: map[int]avro.Schema{1: v1, 2: noID}}, Options{Keys: map[string][]string{customers: {"id"}}})
	row := baseRow(nil)
	delete(row, "id")
	got, err := svc.Handle(context.Background(), Message{Topic: customers, MessageID: "m", Data: message(t, noID, 2, row)})
	if got != DeadLettered || err != nil {
		t.Fatalf("Handle = %v, %v", got, err)
	}
	if dl := tables.rows[catalog.DeadLetterTable]; len(dl) != 1 || !strings.Contains(dl[0]["reason"].(string), "key column id") {
		t.Errorf("dead letters = %v", dl)
	}
}

// A writer schema that drops a field leaves the column: the table is not
// touched, new rows leave it NULL.
func TestDroppedFieldKeepsItsColumn(t *testing.T) {
	v1 := customerVersion(t, func(f []any) []any { return f })
	noTier := customerVersion(t, func(f []any) []any {
		var out []any
		for _, x := range f {
			if x.(map[string]any)["name"] != "tier" {
				out = append(out, x)
			}
		}
		return out
	})
	svc, tables, _ := newService(t, &fakeRegistry{schemas: map[int]avro.Schema{1: v1, 2: noTier}})
	row := baseRow(7)
	delete(row, "tier")
	got, err := svc.Handle(context.Background(), Message{Topic: customers, MessageID: "m", Data: message(t, noTier, 2, row)})
	if got != Appended || err != nil {
		t.Fatalf("Handle = %v, %v", got, err)
	}
	name := catalog.TableName(customers)
	if tables.evolutions != 0 {
		t.Error("dropping a field changed the table")
	}
	if c := tables.tables[name].Metadata.Schema; c[4].Name != "tier" {
		t.Errorf("column 5 = %s, want tier kept", c[4].Name)
	}
	r := tables.rows[name][0]
	if v, set := r["tier"]; set || r["id"] != int64(7) {
		t.Errorf("row = %v (tier %v), want tier absent (NULL)", r, v)
	}
}

// A schema change BigQuery refuses (tables.update answers 400) is
// dead-lettered at once with its reason (stage schema), not retried until
// Pub/Sub gives up; a change it fails to serve (503) is retried.
func TestRefusedEvolutionIsDeadLettered(t *testing.T) {
	v1 := customerVersion(t, func(f []any) []any { return f })
	v2 := customerVersion(t, func(f []any) []any {
		return append(f, map[string]any{"name": "loyalty", "type": []any{"null", "long"}, "default": nil})
	})
	reg := &fakeRegistry{schemas: map[int]avro.Schema{1: v1, 2: v2}}
	svc, tables, _ := newService(t, reg)
	ctx := context.Background()
	msg := Message{Topic: customers, MessageID: "m", PublishTime: time.Unix(1_799_999_999, 0), Data: message(t, v2, 2, baseRow(1))}

	tables.evolveErr = &googleapi.Error{Code: 503, Message: "backend error"}
	if got, err := svc.Handle(ctx, msg); err == nil || failure.IsPermanent(err) {
		t.Fatalf("a 503: Handle = %v, %v; want a retryable error", got, err)
	}
	tables.evolveErr = &googleapi.Error{Code: 400, Message: "Provided Schema does not match Table", Errors: []googleapi.ErrorItem{{Reason: "invalid"}}}
	if got, err := svc.Handle(ctx, msg); got != DeadLettered || err != nil {
		t.Fatalf("a 400: Handle = %v, %v; want dead-lettered", got, err)
	}
	dl := tables.rows[catalog.DeadLetterTable]
	if len(dl) != 1 || dl[0]["stage"] != string(failure.StageSchema) || !strings.Contains(dl[0]["reason"].(string), "BigQuery refused evolving changelog") ||
		!strings.Contains(dl[0]["reason"].(string), "Provided Schema does not match Table") {
		t.Errorf("dead letters = %v", dl)
	}
}

// The columns of several writers together may exceed BigQuery's 10,000
// although each writer's alone does not: the writer that would cross it is
// dead-lettered (stage schema) naming the bound, and the others still flow.
func TestMergedColumnsPastTheLimit(t *testing.T) {
	v1 := customerVersion(t, func(f []any) []any { return f })
	v2 := customerVersion(t, func(f []any) []any {
		for i := range 10 {
			f = append(f, map[string]any{"name": fmt.Sprintf("b%d", i), "type": []any{"null", "long"}, "default": nil})
		}
		return f
	})
	svc, tables, _ := newService(t, &fakeRegistry{schemas: map[int]avro.Schema{1: v1, 2: v2}})
	// Earlier writers left the changelog 5 columns short of the limit.
	name := catalog.TableName(customers)
	md := *tables.tables[name].Metadata
	for i := len(md.Schema); i < limits.MaxColumns-5; i++ {
		md.Schema = append(md.Schema, &bigquery.FieldSchema{Name: fmt.Sprintf("a%d", i), Type: bigquery.IntegerFieldType})
	}
	enc, err := bqwrite.NewEncoder(md.Schema)
	if err != nil {
		t.Fatal(err)
	}
	tables.tables[name] = &bqwrite.Table{Name: name, Metadata: &md, Encoder: enc}

	ctx := context.Background()
	handle := func(data []byte, want Outcome) {
		t.Helper()
		if got, err := svc.Handle(ctx, Message{Topic: customers, MessageID: "m", PublishTime: time.Unix(1_799_999_999, 0), Data: data}); got != want || err != nil {
			t.Fatalf("Handle = %v, %v; want %v", got, err, want)
		}
	}
	handle(message(t, v2, 2, baseRow(1)), DeadLettered)
	dl := tables.rows[catalog.DeadLetterTable]
	if len(dl) != 1 || dl[0]["stage"] != string(failure.StageSchema) || !strings.Contains(dl[0]["reason"].(string), "BigQuery allows 10000") {
		t.Errorf("dead letters = %v", dl)
	}
	if n := len(tables.tables[name].Metadata.Schema); n != limits.MaxColumns-5 {
		t.Errorf("the changelog has %d columns, want %d", n, limits.MaxColumns-5)
	}
	handle(message(t, v1, 1, baseRow(3)), Appended)
}

// A column comment longer than BigQuery's 1,024-character description limit
// (Debezium copies comments into Avro doc) is cut, not sent whole for
// BigQuery to refuse the schema update.
func TestLongDocIsCut(t *testing.T) {
	v1 := customerVersion(t, func(f []any) []any { return f })
	doc := strings.Repeat("é", 3000)
	v2 := customerVersion(t, func(f []any) []any {
		return append(f, map[string]any{"name": "loyalty", "type": []any{"null", "long"}, "default": nil, "doc": doc})
	})
	svc, tables, _ := newService(t, &fakeRegistry{schemas: map[int]avro.Schema{1: v1, 2: v2}})
	if got, err := svc.Handle(context.Background(), Message{Topic: customers, MessageID: "m", Data: message(t, v2, 2, baseRow(1))}); got != Appended || err != nil {
		t.Fatalf("Handle = %v, %v", got, err)
	}
	md := tables.tables[catalog.TableName(customers)].Metadata
	col := md.Schema[len(md.Schema)-1]
	if n := utf8.RuneCountInString(col.Description); col.Name != "loyalty" || n != limits.MaxDescriptionLen || !strings.HasPrefix(doc, strings.TrimSuffix(col.Description, "…")) {
		t.Errorf("added column %s has a description of %d characters, want %d", col.Name, n, limits.MaxDescriptionLen)
	}
}

// A MySQL change without its source block (a nullable block left null) is
// dead-lettered on both paths (stage envelope): its changelog is sequenced
// by binlog position, and the timestamp layout it would get sorts after
// every one of them. A connector named MySQL (not mysql) gets the binlog
// layout, not the timestamp one.
func TestLogPositionSourcesThroughBothPaths(t *testing.T) {
	var env map[string]any
	if err := json.Unmarshal(customersAvsc(t), &env); err != nil {
		t.Fatal(err)
	}
	for _, f := range env["fields"].([]any) {
		if f := f.(map[string]any); f["name"] == "source" {
			f["type"], f["default"] = []any{"null", f["type"]}, nil
		}
	}
	edited, _ := json.Marshal(env)
	s, err := registry.Parse(string(edited))
	if err != nil {
		t.Fatal(err)
	}
	encode := func(src any) []byte {
		rec := map[string]any{"op": "c", "ts_ms": int64(1_700_000_000_000), "ts_us": nil, "ts_ns": nil, "transaction": nil, "before": nil,
			"source": src, "after": map[string]any{customers + ".Value": baseRow(1)}}
		b, err := avro.Config{}.Freeze().Marshal(s, rec)
		if err != nil {
			t.Fatal(err)
		}
		return wire.Append(nil, 1, b)
	}
	mysql := func(connector string) any {
		return map[string]any{"io.debezium.connector.mysql.Source": map[string]any{"version": "2", "connector": connector, "name": "db", "ts_ms": int64(1000),
			"snapshot": "false", "db": "inventory", "sequence": nil, "ts_us": nil, "ts_ns": nil, "table": "customers", "server_id": int64(1),
			"gtid": nil, "file": "mysql-bin.000001", "pos": int64(100), "row": 0, "thread": nil, "query": nil}}
	}
	{
		svc, tables, _ := newServiceWith(t, &fakeRegistry{schemas: map[int]avro.Schema{1: s}}, Options{})
		ctx := context.Background()
		if got, err := svc.Handle(ctx, Message{Topic: customers, MessageID: "null", Data: encode(nil)}); got != DeadLettered || err != nil {
			t.Fatalf("null source: Handle = %v, %v; want dead-lettered", got, err)
		}
		dl := tables.rows[catalog.DeadLetterTable]
		if reason, _ := dl[0]["reason"].(string); dl[0]["stage"] != string(failure.StageEnvelope) || !strings.Contains(reason, "null source block") {
			t.Errorf("dead letter %v", dl[0])
		}
		for _, c := range []string{"mysql", "MySQL"} {
			if got, err := svc.Handle(ctx, Message{Topic: customers, MessageID: c, Data: encode(mysql(c))}); got != Appended || err != nil {
				t.Fatalf("connector %s: Handle = %v, %v", c, got, err)
			}
		}
		rows := tables.rows[catalog.TableName(customers)]
		if len(rows) != 2 || rows[0][catalog.ColSequence] != rows[1][catalog.ColSequence] || !strings.Contains(fmt.Sprint(rows[0][catalog.ColSequence]), "/") {
			t.Errorf("sequences %v and %v, want one binlog sequence for mysql and MySQL", rows[0][catalog.ColSequence], rows[1][catalog.ColSequence])
		}
	}
}
