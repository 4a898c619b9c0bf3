package oracle

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/cdc"
	"github.com/google/go-cmp/cmp"
	"github.com/hamba/avro/v2"
)

// Flatten's tests: cdc's envelope rules (images by op, the source block's
// position, the envelope time, transactions, a plain record) as the
// generic form reads them.

func TestFlattenDebezium(t *testing.T) {
	s := customersSchema(t)
	sh, err := cdc.ShapeOf(s)
	if err != nil || !sh.Envelope {
		t.Fatalf("ShapeOf: envelope=%v err=%v", sh.Envelope, err)
	}
	if sh.Image.FullName() != valueName {
		t.Fatalf("image schema = %s", sh.Image.FullName())
	}
	wrap := func(m map[string]any) any { return map[string]any{valueName: m} }
	srcTS := time.UnixMicro(1700000000123456).UTC()
	tests := []struct {
		name string
		rec  map[string]any
		want cdc.Change
	}{
		{
			name: "create uses after",
			rec:  map[string]any{"op": "c", "before": nil, "after": wrap(image(1001, "a@x")), "source": source("mysql-bin.000003", 154, 0)},
			want: cdc.Change{Op: cdc.OpCreate, Image: image(1001, "a@x"), SourceTS: srcTS, Sequence: cdc.BinlogSequence(3, 154, 0, cdc.PhaseChange)},
		},
		{
			name: "update uses after",
			rec:  map[string]any{"op": "u", "before": wrap(image(1001, "a@x")), "after": wrap(image(1001, "b@x")), "source": source("mysql-bin.000003", 900, 1)},
			want: cdc.Change{Op: cdc.OpUpdate, Image: image(1001, "b@x"), SourceTS: srcTS, Sequence: cdc.BinlogSequence(3, 900, 1, cdc.PhaseChange)},
		},
		{
			name: "snapshot read uses after",
			rec:  map[string]any{"op": "r", "after": wrap(image(1002, "c@x")), "source": snapshotSource("mysql-bin.000003", 154)},
			want: cdc.Change{Op: cdc.OpRead, Image: image(1002, "c@x"), SourceTS: srcTS, Sequence: cdc.BinlogSequence(3, 154, 0, cdc.PhaseRead)},
		},
		{
			name: "delete uses before",
			rec:  map[string]any{"op": "d", "before": wrap(image(1001, "b@x")), "after": nil, "source": source("mysql-bin.000004", 4, 0)},
			want: cdc.Change{Op: cdc.OpDelete, Image: image(1001, "b@x"), SourceTS: srcTS, Sequence: cdc.BinlogSequence(4, 4, 0, cdc.PhaseChange)},
		},
		{
			name: "truncate keeps a marker with no image",
			rec:  map[string]any{"op": "t", "source": source("mysql-bin.000004", 800, 0)},
			want: cdc.Change{Op: cdc.OpTruncate, SourceTS: srcTS, Sequence: cdc.BinlogSequence(4, 800, 0, cdc.PhaseChange)},
		},
		{
			name: "transaction block kept",
			rec: map[string]any{"op": "u", "before": wrap(image(1001, "a@x")), "after": wrap(image(1001, "b@x")), "source": source("mysql-bin.000003", 1200, 0),
				"transaction": map[string]any{"event.block": map[string]any{"id": "3E11FA47-71CA-11E1-9E33-C80AA9429562:23", "total_order": int64(3), "data_collection_order": int64(2)}}},
			want: cdc.Change{Op: cdc.OpUpdate, Image: image(1001, "b@x"), SourceTS: srcTS, Sequence: cdc.BinlogSequence(3, 1200, 0, cdc.PhaseChange),
				Transaction: &cdc.Transaction{ID: "3E11FA47-71CA-11E1-9E33-C80AA9429562:23", TotalOrder: 3, DataCollectionOrder: 2}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Flatten(sh, roundTrip(t, s, tt.rec))
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("Flatten (-want +got):\n%s", d)
			}
		})
	}
}

func TestFlattenRejects(t *testing.T) {
	s := customersSchema(t)
	sh, _ := cdc.ShapeOf(s)
	for name, rec := range map[string]map[string]any{
		"unknown op":               {"op": "x", "after": map[string]any{valueName: image(1, "e")}, "source": source("f.1", 1, 0)},
		"delete without before":    {"op": "d", "source": source("f.1", 1, 0)},
		"create without after":     {"op": "c", "source": source("f.1", 1, 0)},
		"logical decoding message": {"op": "m", "source": source("f.1", 1, 0)},
		// A known connector without a usable position, or with a time
		// BigQuery cannot store (2^62 ms used to wrap to 1970).
		"binlog file ../x":  {"op": "c", "after": map[string]any{valueName: image(1, "e")}, "source": source("../x", 1, 0)},
		"empty binlog file": {"op": "c", "after": map[string]any{valueName: image(1, "e")}, "source": source("", 1, 0)},
		"binlog pos -1":     {"op": "u", "after": map[string]any{valueName: image(1, "e")}, "source": source("mysql-bin.000003", -1, 0)},
		"binlog index 2^64": {"op": "u", "after": map[string]any{valueName: image(1, "e")}, "source": source("mysql-bin.18446744073709551616", 4, 0)},
		"source.ts_us 2^62": {"op": "u", "after": map[string]any{valueName: image(1, "e")}, "source": withField(source("mysql-bin.000003", 4, 0), "ts_us", int64(1)<<62)},
		"source.ts_ms 2^62": {"op": "u", "after": map[string]any{valueName: image(1, "e")}, "source": withField(withField(source("mysql-bin.000003", 4, 0), "ts_us", nil), "ts_ms", int64(1)<<62)},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Flatten(sh, roundTrip(t, s, rec))
			if !errors.Is(err, cdc.ErrEnvelope) {
				t.Errorf("err = %v, want cdc.ErrEnvelope", err)
			}
		})
	}
}

// TestFlattenEnvelopeTime: without a source time, the envelope's ts_ms is the
// change time and (for a connector whose position cdc does not parse) its
// sequence; it must lie in BigQuery's TIMESTAMP range too.
func TestFlattenEnvelopeTime(t *testing.T) {
	s := avro.MustParse(`{"type":"record","name":"Envelope","fields":[
 {"name":"before","type":["null",{"type":"record","name":"Value","fields":[{"name":"id","type":"long"}]}],"default":null},
 {"name":"after","type":["null","Value"],"default":null},
 {"name":"source","type":{"type":"record","name":"Source","fields":[{"name":"connector","type":"string"},{"name":"ts_ms","type":["null","long"],"default":null}]}},
 {"name":"op","type":"string"},{"name":"ts_ms","type":["null","long"],"default":null}]}`)
	sh, err := cdc.ShapeOf(s)
	if err != nil || !sh.Envelope {
		t.Fatalf("ShapeOf: %v %v", sh.Envelope, err)
	}
	rec := func(ms int64) map[string]any {
		return roundTrip(t, s, map[string]any{"op": "c", "after": map[string]any{"Value": map[string]any{"id": int64(1)}},
			"source": map[string]any{"connector": "db2", "ts_ms": nil}, "ts_ms": ms})
	}
	at := time.UnixMilli(1_732_957_200_123).UTC()
	got, err := Flatten(sh, rec(at.UnixMilli()))
	if err != nil || !got.SourceTS.Equal(at) || got.Sequence != cdc.TimestampSequence(at) {
		t.Errorf("Flatten = %v, %q, %v; want %v, %q", got.SourceTS, got.Sequence, err, at, cdc.TimestampSequence(at))
	}
	for _, ms := range []int64{1 << 62, 253402300800000, -62135596800001} {
		if _, err := Flatten(sh, rec(ms)); !errors.Is(err, cdc.ErrEnvelope) || !errors.Is(err, cdc.ErrTimestampRange) {
			t.Errorf("ts_ms %d: err = %v, want cdc.ErrEnvelope and cdc.ErrTimestampRange", ms, err)
		}
	}
}

// pgEnvelopeSchema is the Avro schema Debezium 2.7's PostgreSQL connector
// registers for a table, with the transaction block.
const pgEnvelopeSchema = `{"type":"record","name":"Envelope","namespace":"pg.public.t","fields":[
 {"name":"before","type":["null",{"type":"record","name":"Value","fields":[{"name":"id","type":"long"}]}],"default":null},
 {"name":"after","type":["null","Value"],"default":null},
 {"name":"source","type":{"type":"record","name":"Source","namespace":"io.debezium.connector.postgresql","fields":[
   {"name":"version","type":"string"},{"name":"connector","type":"string"},{"name":"name","type":"string"},
   {"name":"ts_ms","type":"long"},
   {"name":"snapshot","type":[{"type":"string","connect.version":1,"connect.parameters":{"allowed":"true,first,first_in_data_collection,last_in_data_collection,last,false,incremental"},"connect.default":"false","connect.name":"io.debezium.data.Enum"},"null"],"default":"false"},
   {"name":"db","type":"string"},{"name":"sequence","type":["null","string"],"default":null},
   {"name":"ts_us","type":["null","long"],"default":null},{"name":"ts_ns","type":["null","long"],"default":null},
   {"name":"schema","type":"string"},{"name":"table","type":"string"},
   {"name":"txId","type":["null","long"],"default":null},{"name":"lsn","type":["null","long"],"default":null},
   {"name":"xmin","type":["null","long"],"default":null}]}},
 {"name":"transaction","type":["null",{"type":"record","name":"block","namespace":"event","fields":[
   {"name":"id","type":"string"},{"name":"total_order","type":"long"},{"name":"data_collection_order","type":"long"}]}],"default":null},
 {"name":"op","type":"string"},{"name":"ts_ms","type":["null","long"],"default":null}]}`

func TestFlattenPostgres(t *testing.T) {
	s := avro.MustParse(pgEnvelopeSchema)
	sh, err := cdc.ShapeOf(s)
	if err != nil || !sh.Envelope {
		t.Fatalf("ShapeOf: %v %v", sh.Envelope, err)
	}
	at := time.UnixMicro(1_732_957_200_123_456).UTC()
	src := func(snapshot string, seq, txID, lsn any) map[string]any {
		return map[string]any{"version": "2.7.3.Final", "connector": "postgresql", "name": "pg", "ts_ms": at.UnixMilli(),
			"snapshot": snapshot, "db": "shop", "sequence": seq, "ts_us": at.UnixMicro(), "ts_ns": nil,
			"schema": "public", "table": "t", "txId": txID, "lsn": lsn, "xmin": nil}
	}
	after := map[string]any{"pg.public.t.Value": map[string]any{"id": int64(1)}}
	block := func(id string, total, perTable int64) any {
		return map[string]any{"event.block": map[string]any{"id": id, "total_order": total, "data_collection_order": perTable}}
	}
	tests := []struct {
		name string
		rec  map[string]any
		want cdc.Change
	}{
		{
			name: "streamed change in a transaction",
			rec: map[string]any{"op": "c", "after": after, "source": src("false", `["24023119","24023128"]`, int64(556), int64(24023128)),
				"transaction": block("556", 2, 1)},
			want: cdc.Change{Op: cdc.OpCreate, SourceTS: at, Sequence: cdc.PostgresCommitSequence(24023119, 24023128, cdc.PhaseChange),
				Transaction: &cdc.Transaction{ID: "556", TotalOrder: 2, DataCollectionOrder: 1}},
		},
		{
			name: "initial snapshot read",
			rec:  map[string]any{"op": "r", "after": after, "source": src("first", `[null,"24023128"]`, int64(555), int64(24023128))},
			want: cdc.Change{Op: cdc.OpRead, SourceTS: at, Sequence: cdc.PostgresCommitSequence(0, 0, cdc.PhaseRead)},
		},
		{
			name: "incremental snapshot read",
			rec:  map[string]any{"op": "r", "after": after, "source": src("incremental", `["24023119","24023128"]`, nil, nil)},
			want: cdc.Change{Op: cdc.OpRead, SourceTS: at, Sequence: cdc.PostgresCommitSequence(24023119, 24023128, cdc.PhaseRead)},
		},
		{
			name: "without source.sequence",
			rec:  map[string]any{"op": "u", "after": after, "source": src("false", nil, int64(556), int64(24023128))},
			want: cdc.Change{Op: cdc.OpUpdate, SourceTS: at, Sequence: cdc.PostgresSequence(24023128)},
		},
	}
	// No position at all: dead-lettered (it used to be ordered by its source
	// timestamp, which sorts after every LSN of the table).
	noPosition := map[string]any{"op": "c", "after": after, "source": src("false", nil, nil, nil)}
	if _, err := Flatten(sh, roundTrip(t, s, noPosition)); !errors.Is(err, cdc.ErrEnvelope) {
		t.Errorf("change without a position: err = %v, want cdc.ErrEnvelope", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Flatten(sh, roundTrip(t, s, tt.rec))
			if err != nil {
				t.Fatal(err)
			}
			got.Image = nil // the image is TestFlattenDebezium's business
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("Flatten (-want +got):\n%s", d)
			}
		})
	}
}

func TestFlattenPlainRecord(t *testing.T) {
	s := avro.MustParse(`{"type":"record","name":"User","fields":[{"name":"userId","type":"int"},{"name":"operation","type":"string"}]}`)
	sh, err := cdc.ShapeOf(s)
	if err != nil || sh.Envelope {
		t.Fatalf("plain record taken for an envelope: %v %v", sh.Envelope, err)
	}
	rec := map[string]any{"userId": 1, "operation": "DELETE"}
	got, err := Flatten(sh, rec)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(cdc.Change{Image: rec}, got); d != "" {
		t.Errorf("Flatten (-want +got):\n%s", d)
	}
}

// A change whose source block is null, or names another connector, is
// refused in a schema whose source is MySQL's; another connector's schema
// keeps the timestamp layout.
func TestNullSourceRefused(t *testing.T) {
	after := map[string]any{valueName: image(1, "e")}
	mysql := nullableSource(t, "")
	sh, _ := cdc.ShapeOf(mysql)
	for name, rec := range map[string]map[string]any{
		"null source":      {"op": "u", "after": after, "source": nil, "ts_ms": int64(1700000000999)},
		"sqlserver source": {"op": "u", "after": after, "source": map[string]any{"io.debezium.connector.mysql.Source": withField(source("mysql-bin.000003", 4, 0), "connector", "sqlserver")}},
	} {
		if _, err := Flatten(sh, roundTrip(t, mysql, rec)); !errors.Is(err, cdc.ErrEnvelope) || !strings.Contains(err.Error(), "io.debezium.connector.mysql.Source") {
			t.Errorf("%s in a MySQL schema: err = %v, want cdc.ErrEnvelope naming the source record", name, err)
		}
	}
	if ch, err := Flatten(sh, roundTrip(t, mysql, map[string]any{"op": "u", "after": after, "source": map[string]any{"io.debezium.connector.mysql.Source": withField(source("mysql-bin.000003", 4, 0), "connector", "MySQL")}})); err != nil || !strings.Contains(ch.Sequence, "/") {
		t.Errorf("MySQL source: %v, %v; want a binlog sequence", ch.Sequence, err)
	}
	// Another connector's schema keeps the timestamp layout for a null block.
	other := nullableSource(t, "io.debezium.connector.sqlserver")
	sh, _ = cdc.ShapeOf(other)
	if ch, err := Flatten(sh, roundTrip(t, other, map[string]any{"op": "u", "after": after, "source": nil, "ts_ms": int64(1700000000999)})); err != nil || ch.Sequence != cdc.TimestampSequence(time.UnixMilli(1700000000999)) {
		t.Errorf("null source of another connector: %q, %v; want the envelope time's sequence", ch.Sequence, err)
	}
}

// nullableSource is the customers schema with its source block nullable
// (["null", Source]), in the namespace given ("" keeps Debezium's MySQL one).
func nullableSource(t *testing.T, namespace string) avro.Schema {
	t.Helper()
	var env map[string]any
	if err := json.Unmarshal(customersAvsc(t), &env); err != nil {
		t.Fatal(err)
	}
	for _, f := range env["fields"].([]any) {
		if f := f.(map[string]any); f["name"] == "source" {
			if namespace != "" {
				f["type"].(map[string]any)["namespace"] = namespace
			}
			f["type"], f["default"] = []any{"null", f["type"]}, nil
		}
	}
	out, _ := json.Marshal(env)
	return avro.MustParse(string(out))
}

const valueName = "dbserver1.inventory.customers.Value"

// customersAvsc is the demo customers value schema, a Debezium MySQL
// envelope.
func customersAvsc(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("../../../schemas/dbserver1.inventory.customers-value.avsc")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func customersSchema(t *testing.T) avro.Schema {
	t.Helper()
	return avro.MustParse(string(customersAvsc(t)))
}

func source(file string, pos int64, row int) map[string]any {
	return map[string]any{
		"version": "2.7.0", "connector": "mysql", "name": "dbserver1", "ts_ms": int64(1700000000123),
		"snapshot": "false", "db": "inventory", "table": "customers", "server_id": int64(223344),
		"file": file, "pos": pos, "row": row, "ts_us": int64(1700000000123456),
	}
}

func snapshotSource(file string, pos int64) map[string]any {
	src := source(file, pos, 0)
	src["snapshot"] = "true"
	return src
}

func image(id int, email string) map[string]any {
	return map[string]any{"id": id, "first_name": "Sally", "last_name": "Thomas", "email": email,
		"tier": nil, "balance": nil, "birth_date": nil, "updated_at": nil}
}

// roundTrip encodes a record with the schema and decodes it as bqcdc does, so
// the test sees hamba's real union wrapping rather than a hand-made map.
func roundTrip(t *testing.T, s avro.Schema, rec map[string]any) map[string]any {
	t.Helper()
	b, err := avro.Marshal(s, rec)
	if err != nil {
		t.Fatalf("encoding fixture: %v", err)
	}
	var out map[string]any
	if err := avro.Unmarshal(s, b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func withField(src map[string]any, field string, v any) map[string]any {
	src[field] = v
	return src
}
