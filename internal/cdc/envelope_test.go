package cdc

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hamba/avro/v2"
)

func customersSchema(t *testing.T) avro.Schema {
	t.Helper()
	b, err := os.ReadFile("../../schemas/dbserver1.inventory.customers-value.avsc")
	if err != nil {
		t.Fatal(err)
	}
	return avro.MustParse(string(b))
}

const valueName = "dbserver1.inventory.customers.Value"

func source(file string, pos int64, row int) map[string]any {
	return map[string]any{
		"version": "2.7.0", "connector": "mysql", "name": "dbserver1", "ts_ms": int64(1700000000123),
		"snapshot": "false", "db": "inventory", "table": "customers", "server_id": int64(223344),
		"file": file, "pos": pos, "row": row, "ts_us": int64(1700000000123456),
	}
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

func TestFlattenDebezium(t *testing.T) {
	s := customersSchema(t)
	sh, err := ShapeOf(s)
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
		want Change
	}{
		{
			name: "create uses after",
			rec:  map[string]any{"op": "c", "before": nil, "after": wrap(image(1001, "a@x")), "source": source("mysql-bin.000003", 154, 0)},
			want: Change{Op: OpCreate, Image: image(1001, "a@x"), SourceTS: srcTS, Sequence: MySQLSequence(3, 154, 0)},
		},
		{
			name: "update uses after",
			rec:  map[string]any{"op": "u", "before": wrap(image(1001, "a@x")), "after": wrap(image(1001, "b@x")), "source": source("mysql-bin.000003", 900, 1)},
			want: Change{Op: OpUpdate, Image: image(1001, "b@x"), SourceTS: srcTS, Sequence: MySQLSequence(3, 900, 1)},
		},
		{
			name: "snapshot read uses after",
			rec:  map[string]any{"op": "r", "after": wrap(image(1002, "c@x")), "source": source("mysql-bin.000003", 154, 0)},
			want: Change{Op: OpRead, Image: image(1002, "c@x"), SourceTS: srcTS, Sequence: MySQLSequence(3, 154, 0)},
		},
		{
			name: "delete uses before",
			rec:  map[string]any{"op": "d", "before": wrap(image(1001, "b@x")), "after": nil, "source": source("mysql-bin.000004", 4, 0)},
			want: Change{Op: OpDelete, Image: image(1001, "b@x"), SourceTS: srcTS, Sequence: MySQLSequence(4, 4, 0)},
		},
		{
			name: "truncate keeps a marker with no image",
			rec:  map[string]any{"op": "t", "source": source("mysql-bin.000004", 800, 0)},
			want: Change{Op: OpTruncate, SourceTS: srcTS, Sequence: MySQLSequence(4, 800, 0)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := sh.Flatten(roundTrip(t, s, tt.rec))
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
	sh, _ := ShapeOf(s)
	for name, rec := range map[string]map[string]any{
		"unknown op":               {"op": "x", "after": map[string]any{valueName: image(1, "e")}, "source": source("f.1", 1, 0)},
		"delete without before":    {"op": "d", "source": source("f.1", 1, 0)},
		"create without after":     {"op": "c", "source": source("f.1", 1, 0)},
		"logical decoding message": {"op": "m", "source": source("f.1", 1, 0)},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := sh.Flatten(roundTrip(t, s, rec))
			if !errors.Is(err, ErrEnvelope) {
				t.Errorf("err = %v, want ErrEnvelope", err)
			}
		})
	}
}

func TestFlattenPostgresAndFallbacks(t *testing.T) {
	s := avro.MustParse(`{"type":"record","name":"Envelope","namespace":"pg.public.t","fields":[
	 {"name":"before","type":["null",{"type":"record","name":"Value","fields":[{"name":"id","type":"long"}]}],"default":null},
	 {"name":"after","type":["null","Value"],"default":null},
	 {"name":"source","type":{"type":"record","name":"Source","namespace":"io.debezium.connector.postgresql","fields":[
	   {"name":"connector","type":"string"},{"name":"ts_ms","type":"long"},{"name":"lsn","type":["null","long"],"default":null}]}},
	 {"name":"op","type":"string"},{"name":"ts_ms","type":["null","long"],"default":null}]}`)
	sh, err := ShapeOf(s)
	if err != nil || !sh.Envelope {
		t.Fatalf("ShapeOf: %v %v", sh.Envelope, err)
	}
	after := map[string]any{"pg.public.t.Value": map[string]any{"id": int64(1)}}
	got, err := sh.Flatten(roundTrip(t, s, map[string]any{"op": "c", "after": after,
		"source": map[string]any{"connector": "postgresql", "ts_ms": int64(1000), "lsn": int64(0x16B3748)}}))
	if err != nil {
		t.Fatal(err)
	}
	if got.Sequence != PostgresSequence(0x16B3748) || !got.SourceTS.Equal(time.UnixMilli(1000)) {
		t.Errorf("postgres change = %+v", got)
	}
	// No LSN (e.g. a heartbeat-less snapshot of another connector): the source timestamp orders.
	got, err = sh.Flatten(roundTrip(t, s, map[string]any{"op": "c", "after": after,
		"source": map[string]any{"connector": "postgresql", "ts_ms": int64(2000), "lsn": nil}}))
	if err != nil {
		t.Fatal(err)
	}
	if got.Sequence != TimestampSequence(time.UnixMilli(2000)) {
		t.Errorf("fallback sequence = %q", got.Sequence)
	}
}

func TestFlattenPlainRecord(t *testing.T) {
	s := avro.MustParse(`{"type":"record","name":"User","fields":[{"name":"userId","type":"int"},{"name":"operation","type":"string"}]}`)
	sh, err := ShapeOf(s)
	if err != nil || sh.Envelope {
		t.Fatalf("plain record taken for an envelope: %v %v", sh.Envelope, err)
	}
	rec := map[string]any{"userId": 1, "operation": "DELETE"}
	got, err := sh.Flatten(rec)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(Change{Image: rec}, got); d != "" {
		t.Errorf("Flatten (-want +got):\n%s", d)
	}
}
