package avrobq

import (
	"errors"
	"math/big"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hamba/avro/v2"
)

// value is a Debezium-shaped row image with one field per mapping rule.
const valueSchema = `{"type":"record","name":"Value","namespace":"db.inv.t","fields":[
 {"name":"id","type":"int"},
 {"name":"big","type":"long"},
 {"name":"name","type":["null","string"],"default":null,"doc":"customer name"},
 {"name":"active","type":"boolean"},
 {"name":"score","type":"double"},
 {"name":"ratio","type":"float"},
 {"name":"raw","type":"bytes"},
 {"name":"price","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2,"connect.name":"org.apache.kafka.connect.data.Decimal","connect.parameters":{"scale":"2","connect.decimal.precision":"10"}}},
 {"name":"huge","type":{"type":"bytes","logicalType":"decimal","precision":50,"scale":20}},
 {"name":"connect_dec","type":{"type":"bytes","connect.name":"org.apache.kafka.connect.data.Decimal","connect.parameters":{"scale":"3"}}},
 {"name":"vsd","type":{"type":"record","name":"VariableScaleDecimal","namespace":"io.debezium.data","fields":[{"name":"scale","type":"int"},{"name":"value","type":"bytes"}],"connect.name":"io.debezium.data.VariableScaleDecimal"}},
 {"name":"born","type":{"type":"int","connect.name":"io.debezium.time.Date"}},
 {"name":"avro_date","type":{"type":"int","logicalType":"date"}},
 {"name":"t_ms","type":{"type":"int","connect.name":"io.debezium.time.Time"}},
 {"name":"t_us","type":{"type":"long","connect.name":"io.debezium.time.MicroTime"}},
 {"name":"avro_time","type":{"type":"long","logicalType":"time-micros"}},
 {"name":"dt_ms","type":{"type":"long","connect.name":"io.debezium.time.Timestamp"}},
 {"name":"dt_us","type":{"type":"long","connect.name":"io.debezium.time.MicroTimestamp"}},
 {"name":"dt_ns","type":{"type":"long","connect.name":"io.debezium.time.NanoTimestamp"}},
 {"name":"zoned","type":{"type":"string","connect.name":"io.debezium.time.ZonedTimestamp"}},
 {"name":"ts_ms","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"local_ts","type":{"type":"long","logicalType":"local-timestamp-micros"}},
 {"name":"doc","type":["null",{"type":"string","connect.name":"io.debezium.data.Json"}],"default":null},
 {"name":"color","type":["null",{"type":"enum","name":"Color","symbols":["RED","BLUE"]}],"default":null},
 {"name":"uid","type":{"type":"string","logicalType":"uuid"}},
 {"name":"tags","type":{"type":"array","items":"string"}},
 {"name":"attrs","type":["null",{"type":"map","values":"long"}],"default":null},
 {"name":"addr","type":["null",{"type":"record","name":"Addr","fields":[{"name":"city","type":"string"},{"name":"zip","type":["null","int"]}]}],"default":null},
 {"name":"mixed","type":["null","string","long"],"default":null},
 {"name":"digest","type":{"type":"fixed","name":"Digest","size":2}}
]}`

func TestFromRecordTypes(t *testing.T) {
	cols, err := FromRecord(avro.MustParse(valueSchema).(*avro.RecordSchema))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range cols {
		got[c.Name] = c.SQLType()
	}
	want := map[string]string{
		"id": "INT64", "big": "INT64", "name": "STRING", "active": "BOOL", "score": "FLOAT64", "ratio": "FLOAT64",
		"raw": "BYTES", "price": "NUMERIC", "huge": "BIGNUMERIC", "connect_dec": "BIGNUMERIC", "vsd": "BIGNUMERIC",
		"born": "DATE", "avro_date": "DATE", "t_ms": "TIME", "t_us": "TIME", "avro_time": "TIME",
		"dt_ms": "DATETIME", "dt_us": "DATETIME", "dt_ns": "DATETIME", "zoned": "TIMESTAMP", "ts_ms": "TIMESTAMP",
		"local_ts": "DATETIME", "doc": "JSON", "color": "STRING", "uid": "STRING", "tags": "ARRAY<STRING>",
		"attrs": "ARRAY<STRUCT<`key` STRING, `value` INT64>>", "addr": "STRUCT<`city` STRING, `zip` INT64>",
		"mixed": "JSON", "digest": "BYTES",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("column types (-want +got):\n%s", d)
	}
	if c, _ := cols.Columns().Lookup("name"); c.Description != "customer name" {
		t.Errorf("doc not carried to description: %q", c.Description)
	}
	if c, _ := cols.Columns().Lookup("price"); c.Precision != 10 || c.Scale != 2 {
		t.Errorf("price precision/scale = %d/%d", c.Precision, c.Scale)
	}
}

func TestConvertValues(t *testing.T) {
	schema := avro.MustParse(valueSchema)
	cols, err := FromRecord(schema.(*avro.RecordSchema))
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Date(2024, 5, 6, 7, 8, 9, 123000000, time.UTC)
	in := map[string]any{
		"id": 7, "big": int64(1) << 40, "name": "Ann", "active": true, "score": 1.5, "ratio": float32(0.25),
		"raw": []byte{1, 2}, "price": big.NewRat(123456, 100), "huge": big.NewRat(1, 3),
		"connect_dec": []byte{0xff, 0x85},                                      // -123 unscaled, scale 3
		"vsd":         map[string]any{"scale": 1, "value": []byte{0x04, 0xd2}}, // 1234 scale 1
		"born":        19849, "avro_date": time.Date(2024, 5, 6, 0, 0, 0, 0, time.UTC),
		"t_ms": 3723004, "t_us": int64(3723000005), "avro_time": 2 * time.Hour,
		"dt_ms": ts.UnixMilli(), "dt_us": ts.UnixMicro(), "dt_ns": ts.UnixNano(),
		"zoned": "2024-05-06T09:08:09.123+02:00", "ts_ms": ts, "local_ts": ts,
		"doc": map[string]any{"string": `{"a":1}`}, "color": map[string]any{"db.inv.t.Color": "BLUE"},
		"uid": "5f0c", "tags": []any{"a", "b"}, "attrs": map[string]any{"map": map[string]any{"z": int64(2), "a": int64(1)}},
		"addr":   map[string]any{"db.inv.t.Addr": map[string]any{"city": "Oslo", "zip": nil}},
		"mixed":  map[string]any{"long": int64(5)},
		"digest": [2]byte{0xca, 0xfe},
	}
	b, err := avro.Marshal(schema, in)
	if err != nil {
		t.Fatalf("encoding fixture: %v", err)
	}
	var decoded map[string]any
	if err := avro.Unmarshal(schema, b, &decoded); err != nil {
		t.Fatal(err)
	}
	got, err := cols.Convert(decoded)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"id": int64(7), "big": int64(1) << 40, "name": "Ann", "active": true, "score": 1.5, "ratio": 0.25,
		"raw": []byte{1, 2}, "price": "1234.56", "huge": "0.33333333333333333333", "connect_dec": "-0.123", "vsd": "123.4",
		"born": int32(19849), "avro_date": int32(19849), "t_ms": "01:02:03.004000", "t_us": "01:02:03.000005",
		"avro_time": "02:00:00.000000", "dt_ms": "2024-05-06 07:08:09.123000", "dt_us": "2024-05-06 07:08:09.123000",
		"dt_ns": "2024-05-06 07:08:09.123000", "zoned": ts.UnixMicro(), "ts_ms": ts.UnixMicro(),
		"local_ts": "2024-05-06 07:08:09.123000", "doc": `{"a":1}`, "color": "BLUE", "uid": "5f0c",
		"tags":   []any{"a", "b"},
		"attrs":  []any{map[string]any{"key": "a", "value": int64(1)}, map[string]any{"key": "z", "value": int64(2)}},
		"addr":   map[string]any{"city": "Oslo"},
		"mixed":  "5",
		"digest": []byte{0xca, 0xfe},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Convert (-want +got):\n%s", d)
	}
}

func TestConvertRejects(t *testing.T) {
	schema := avro.MustParse(`{"type":"record","name":"R","fields":[
	 {"name":"a","type":{"type":"array","items":["null","string"]}},
	 {"name":"z","type":{"type":"string","connect.name":"io.debezium.time.ZonedTimestamp"}}]}`).(*avro.RecordSchema)
	cols, err := FromRecord(schema)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []map[string]any{
		{"a": []any{"x", nil}},
		{"z": "yesterday"},
		{"z": "10000-01-01T00:00:00Z"},
	} {
		if _, err := cols.Convert(in); !errors.Is(err, ErrValue) {
			t.Errorf("Convert(%v) error = %v, want ErrValue", in, err)
		}
	}
}

func TestConvertResolvesByName(t *testing.T) {
	reader := avro.MustParse(`{"type":"record","name":"R","fields":[
	 {"name":"id","type":"long"},
	 {"name":"tier","type":"string","default":"std"},
	 {"name":"note","type":["null","string"],"default":null}]}`).(*avro.RecordSchema)
	fields, err := FromRecord(reader)
	if err != nil {
		t.Fatal(err)
	}
	// Written by an older producer (no tier, no note) and a newer one (extra field, int id).
	got, err := fields.Convert(map[string]any{"id": 7, "extra": "dropped"})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(map[string]any{"id": int64(7), "tier": "std"}, got); d != "" {
		t.Errorf("Convert (-want +got):\n%s", d)
	}
}
