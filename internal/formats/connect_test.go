package formats_test

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/cdc"
	"github.com/bqcdc/bqcdc/internal/dev/testfile"
	"github.com/bqcdc/bqcdc/internal/failure"
	"github.com/bqcdc/bqcdc/internal/formats"
	"github.com/bqcdc/bqcdc/internal/schema"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/hamba/avro/v2"
)

// The Connect schemas in testdata are what JsonConverter writes for the
// tables whose AvroConverter schemas are in /schemas: converted, they must
// map to the same BigQuery columns, and carry the same connect.* props.
func TestConnectSchemaMapsLikeAvroConverter(t *testing.T) {
	tests := []struct{ name, connect, avsc string }{
		{name: "customers", connect: "customers.schema.json", avsc: "../../schemas/dbserver1.inventory.customers-value.avsc"},
		{name: "orders", connect: "orders.schema.json", avsc: "../../schemas/dbserver1.inventory.orders-value.avsc"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, err := formats.ConnectWriter(debezium(t, tc.connect))
			if err != nil {
				t.Fatal(err)
			}
			avsc := parseSchema(t, testfile.Bytes(t, tc.avsc)).(*avro.RecordSchema)
			got := w.Schema.(*avro.RecordSchema)
			if got.FullName() != avsc.FullName() {
				t.Errorf("record %s, want %s", got.FullName(), avsc.FullName())
			}
			// The whole envelope, so before/after/source/transaction too.
			want, have := fieldsOf(t, avsc), fieldsOf(t, got)
			if d := cmp.Diff(want.Columns(), have.Columns(), cmpopts.IgnoreFields(schema.Column{}, "Description")); d != "" {
				t.Errorf("columns (-avroconverter +converted):\n%s", d)
			}
			sh, err := cdc.ShapeOf(w.Schema)
			if err != nil || !sh.Envelope {
				t.Fatalf("ShapeOf: envelope=%v err=%v", sh.Envelope, err)
			}
			wantImage, _ := cdc.ShapeOf(avsc)
			if d := cmp.Diff(props(wantImage.Image), props(sh.Image)); d != "" {
				t.Errorf("connect props of the row image (-avroconverter +converted):\n%s", d)
			}
		})
	}
}

// props lists the connect.name and connect.parameters of every field's
// (non-null) type.
func props(rec *avro.RecordSchema) map[string]string {
	out := map[string]string{}
	for _, f := range rec.Fields() {
		s := f.Type()
		if u, ok := s.(*avro.UnionSchema); ok {
			for _, b := range u.Types() {
				if b.Type() != avro.Null {
					s = b
				}
			}
		}
		if p, ok := s.(interface{ Prop(string) any }); ok && p.Prop("connect.name") != nil {
			out[f.Name()] = fmt.Sprint(p.Prop("connect.name"), " ", p.Prop("connect.parameters"))
		}
	}
	return out
}

func TestDebeziumJSONMessages(t *testing.T) {
	customers := map[string]any{
		"id": int64(1005), "first_name": "Sarah", "last_name": "Thompson", "email": "sarah@example.com",
		"balance": "1234.56", "birth_date": int32(19000),
		"updated_at": time.Date(2024, 5, 6, 9, 8, 9, 123456000, time.UTC).UnixMicro(),
	}
	updated := map[string]any{
		"id": int64(1005), "first_name": "Sarah", "last_name": "Thompson", "email": "sarah@example.com",
		"tier": "gold", "balance": "-1234.56", "birth_date": int32(19000),
		"updated_at": time.Date(2024, 5, 6, 10, 0, 0, 0, time.UTC).UnixMicro(),
	}
	tests := []struct {
		name, schema, payload, avsc string
		op                          cdc.Op
		pos                         uint64
		want                        map[string]any
	}{
		{name: "create", schema: "customers", payload: "customers-create", op: cdc.OpCreate, pos: 1056, want: customers},
		{name: "update", schema: "customers", payload: "customers-update", op: cdc.OpUpdate, pos: 1402, want: updated},
		{name: "delete", schema: "customers", payload: "customers-delete", op: cdc.OpDelete, pos: 1789, want: updated},
		{name: "micro timestamp", schema: "orders", payload: "orders-create", op: cdc.OpCreate, pos: 2210, want: map[string]any{
			"order_number": int64(10005), "order_date": int32(19849), "purchaser": int64(1002), "quantity": int64(2),
			"product_id": int64(106), "created_at": "2024-05-06 09:08:09.123456",
		}},
	}
	type position struct {
		pos uint64
		seq string
	}
	seqs := map[string]position{}
	cs := formats.NewConnectSchemas()
	for _, tc := range tests {
		schemaJSON := debezium(t, tc.schema+".schema.json")
		payload := debezium(t, tc.payload+".payload.json")
		avsc := parseSchema(t, testfile.Bytes(t, "../../schemas/dbserver1.inventory."+tc.schema+"-value.avsc"))
		check := func(t *testing.T, writer avro.Schema, rec map[string]any) {
			t.Helper()
			ch, values := pipeline(t, writer, rec)
			if ch.Op != tc.op {
				t.Errorf("op %q, want %q", ch.Op, tc.op)
			}
			// The sequence comes from the binlog position (cdc's business);
			// here it only has to exist and grow with the position.
			if ch.Sequence == "" {
				t.Error("no sequence")
			}
			if prev, ok := seqs[tc.schema]; ok && tc.pos > prev.pos && ch.Sequence <= prev.seq {
				t.Errorf("sequence %s at pos %d does not sort after %s at pos %d", ch.Sequence, tc.pos, prev.seq, prev.pos)
			}
			seqs[tc.schema] = position{tc.pos, ch.Sequence}
			if d := cmp.Diff(tc.want, values); d != "" {
				t.Errorf("values (-want +got):\n%s", d)
			}
		}
		var withSchema map[string]any
		t.Run(tc.name+"/with schema", func(t *testing.T) {
			data := wrap(schemaJSON, payload)
			if f := formats.Detect(nil, data); f != formats.DebeziumJSON {
				t.Fatalf("Detect = %s", f)
			}
			w, rec, err := cs.Decode(data)
			if err != nil {
				t.Fatal(err)
			}
			check(t, w.Schema, rec)
			withSchema = rec
		})
		t.Run(tc.name+"/without schema", func(t *testing.T) {
			if f := formats.Detect(nil, payload); f != formats.DebeziumJSON {
				t.Fatalf("Detect = %s", f)
			}
			if _, _, err := cs.Decode(payload); !errors.Is(err, formats.ErrNoSchema) {
				t.Fatalf("Decode without the wrapper: %v, want ErrNoSchema", err)
			}
			// The reader schema the owner supplies: the source's AvroConverter schema.
			rec, err := formats.DecodeJSONWith(avsc, payload)
			if err != nil {
				t.Fatal(err)
			}
			check(t, avsc, rec)
			// Both paths produce the same generic record.
			if d := cmp.Diff(withSchema, rec, equateRats); withSchema != nil && d != "" {
				t.Errorf("schemaless record differs from the wrapped one (-wrapped +schemaless):\n%s", d)
			}
		})
	}
}

func TestConnectSchemasCache(t *testing.T) {
	customers := debezium(t, "customers.schema.json")
	payload := debezium(t, "customers-create.payload.json")
	// The same schema reformatted (as another producer might) is the same schema.
	pretty := strings.ReplaceAll(string(customers), `,"`, ",\n  \"")
	cs := formats.NewConnectSchemas()
	var (
		wg      sync.WaitGroup
		writers = make([]*formats.Writer, 16)
	)
	for i := range writers {
		wg.Go(func() {
			s := customers
			if i%2 == 1 {
				s = []byte(pretty)
			}
			w, _, err := cs.Decode(wrap(s, payload))
			if err != nil {
				t.Error(err)
			}
			writers[i] = w
		})
	}
	wg.Wait()
	for i, w := range writers {
		if w != writers[0] {
			t.Fatalf("writer %d is %p, want the shared %p", i, w, writers[0])
		}
	}
	if k := writers[0].Key; !strings.HasPrefix(k, "connect:") || len(k) != len("connect:")+64 {
		t.Errorf("key %q, want connect:<sha256 hex>", k)
	}
	fresh, err := formats.ConnectWriter(customers)
	if err != nil {
		t.Fatal(err)
	}
	if fresh.Key != writers[0].Key {
		t.Errorf("key not stable: %s vs %s", fresh.Key, writers[0].Key)
	}
	orders, _, err := cs.Decode(wrap(debezium(t, "orders.schema.json"), debezium(t, "orders-create.payload.json")))
	if err != nil {
		t.Fatal(err)
	}
	if orders.Key == writers[0].Key {
		t.Error("two schemas share a key")
	}
}

// Connect types beyond the inventory tables, and how they come out of hamba.
func TestConnectTypes(t *testing.T) {
	schemaJSON := `{"type":"struct","name":"my-server.db.t.Value","fields":[
	 {"type":"int8","optional":false,"field":"i8"},
	 {"type":"int16","optional":false,"field":"i16"},
	 {"type":"float32","optional":false,"field":"f32"},
	 {"type":"float64","optional":true,"field":"f64"},
	 {"type":"boolean","optional":false,"field":"b"},
	 {"type":"bytes","optional":false,"field":"raw"},
	 {"type":"array","items":{"type":"string","optional":false},"optional":false,"field":"tags"},
	 {"type":"map","keys":{"type":"string","optional":false},"values":{"type":"int64","optional":true},"optional":false,"field":"attrs"},
	 {"type":"map","keys":{"type":"int32","optional":false},"values":{"type":"string","optional":false},"optional":false,"field":"names"},
	 {"type":"struct","fields":[{"type":"string","optional":false,"field":"city"}],"optional":true,"field":"addr"},
	 {"type":"int32","optional":false,"name":"org.apache.kafka.connect.data.Date","version":1,"field":"day"},
	 {"type":"int64","optional":false,"name":"org.apache.kafka.connect.data.Timestamp","version":1,"field":"at"},
	 {"type":"struct","fields":[{"type":"int32","optional":false,"field":"scale"},{"type":"bytes","optional":false,"field":"value"}],"optional":true,"name":"io.debezium.data.VariableScaleDecimal","version":1,"doc":"Variable scaled decimal","field":"vsd"},
	 {"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"3"},"default":"AA==","field":"price"}
	]}`
	payload := `{"i8":-128,"i16":32767,"f32":1.5,"f64":"NaN","b":true,"raw":"AQL/","tags":["a","b"],
	 "attrs":{"x":1,"y":null},"names":[[1,"one"],[2,"two"]],"addr":{"city":"Oslo"},
	 "day":19849,"at":1714986489123,"vsd":{"scale":3,"value":"MDk="},"price":12.345}`
	w, rec, err := formats.NewConnectSchemas().Decode([]byte(`{"schema":` + schemaJSON + `,"payload":` + payload + `}`))
	if err != nil {
		t.Fatal(err)
	}
	// Dashes in the topic prefix become underscores in the Avro name only.
	rs := w.Schema.(*avro.RecordSchema)
	if rs.FullName() != "my_server.db.t.Value" || rs.Prop("connect.name") != "my-server.db.t.Value" {
		t.Errorf("record %s connect.name %v", rs.FullName(), rs.Prop("connect.name"))
	}
	if ct := rs.Fields()[1].Type().(*avro.PrimitiveSchema).Prop("connect.type"); ct != "int16" {
		t.Errorf("int16 carries connect.type %v", ct)
	}
	want := map[string]any{
		"i8": -128, "i16": 32767, "f32": float32(1.5), "f64": math.NaN(), "b": true, "raw": []byte{1, 2, 0xff},
		"tags":  []any{"a", "b"},
		"attrs": map[string]any{"x": int64(1), "y": nil},
		"names": []any{map[string]any{"key": 1, "value": "one"}, map[string]any{"key": 2, "value": "two"}},
		"addr":  map[string]any{"io.confluent.connect.avro.ConnectDefault": map[string]any{"city": "Oslo"}},
		"day":   time.Date(2024, 5, 6, 0, 0, 0, 0, time.UTC),
		"at":    time.Date(2024, 5, 6, 9, 8, 9, 123000000, time.UTC),
		"vsd":   map[string]any{"io.debezium.data.VariableScaleDecimal": map[string]any{"scale": 3, "value": []byte("09")}},
		"price": mustRat("12.345"),
	}
	if d := cmp.Diff(want, rec, equateRats, cmpopts.EquateNaNs()); d != "" {
		t.Errorf("record (-want +got):\n%s", d)
	}
	values, err := fieldsOf(t, rs).Convert(rec)
	if err != nil {
		t.Fatal(err)
	}
	if values["vsd"] != "12.345" || values["price"] != "12.345" {
		t.Errorf("decimals converted to %v and %v", values["vsd"], values["price"])
	}
}

func TestDebeziumJSONErrors(t *testing.T) {
	customers := debezium(t, "customers.schema.json")
	create := string(debezium(t, "customers-create.payload.json"))
	edit := func(old, new string) []byte { return wrap(customers, []byte(strings.Replace(create, old, new, 1))) }
	tests := []struct {
		name    string
		data    []byte
		wantErr string // substring
		is      error
	}{
		{name: "wrong type", data: edit(`"first_name":"Sarah"`, `"first_name":5`), wantErr: "field after.first_name: want string, got number 5", is: formats.ErrValue},
		{name: "null for a required field", data: edit(`"id":1005`, `"id":null`), wantErr: "field after.id: null", is: formats.ErrValue},
		{name: "int32 overflow", data: edit(`"id":1005`, `"id":3000000000`), wantErr: "field after.id: 3000000000 is out of range", is: formats.ErrValue},
		{name: "bad base64", data: edit(`"balance":"AeJA"`, `"balance":"not base64!"`), wantErr: "field after.balance: bytes are not base64", is: formats.ErrValue},
		{name: "numeric decimal too precise", data: edit(`"balance":"AeJA"`, `"balance":1234.567`), wantErr: "field after.balance: 1234.567 has more than 2 decimal places", is: formats.ErrValue},
		{name: "absurd exponent", data: edit(`"balance":"AeJA"`, `"balance":1e1000000`), wantErr: "field after.balance: 1e1000000 is not a number bqcdc reads exactly", is: formats.ErrValue},
		{name: "exponent in an int", data: edit(`"id":1005`, `"id":1e999`), wantErr: "field after.id: want int, got number 1e999", is: formats.ErrValue},
		{name: "truncated", data: wrap(customers, []byte(create[:len(create)/2])), wantErr: "parsing Debezium JSON"},
		{name: "not a schema", data: []byte(`{"schema":"x","payload":{}}`), wantErr: "want an object"},
		{name: "schema not a struct", data: []byte(`{"schema":{"type":"string","optional":false},"payload":"x"}`), wantErr: "top-level Connect schema is \"string\""},
		{name: "tombstone", data: []byte(`{"schema":null,"payload":null}`), is: formats.ErrTombstone},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := formats.NewConnectSchemas().Decode(tc.data)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %q, want it to contain %q", err, tc.wantErr)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %q is not %v", err, tc.is)
			}
			if tc.is != formats.ErrTombstone && !failure.IsPermanent(err) {
				t.Errorf("error %q is not permanent", err)
			}
		})
	}
}

func TestDecimalAsNumber(t *testing.T) {
	// decimal.format=NUMERIC writes decimals as JSON numbers; the result is
	// the same as from base64.
	customers := debezium(t, "customers.schema.json")
	create := string(debezium(t, "customers-create.payload.json"))
	w, rec, err := formats.NewConnectSchemas().Decode(wrap(customers, []byte(strings.Replace(create, `"AeJA"`, `1234.56`, 1))))
	if err != nil {
		t.Fatal(err)
	}
	if _, values := pipeline(t, w.Schema, rec); values["balance"] != "1234.56" {
		t.Errorf("balance %v", values["balance"])
	}
}

func TestSchemalessErrors(t *testing.T) {
	avsc := parseSchema(t, testfile.Bytes(t, "../../schemas/dbserver1.inventory.customers-value.avsc"))
	create := string(debezium(t, "customers-create.payload.json"))
	tests := []struct{ name, payload, wantErr string }{
		{name: "missing required field", payload: strings.Replace(create, `"email":"sarah@example.com",`, "", 1), wantErr: "field after.email: missing"},
		{name: "wrong type in source", payload: strings.Replace(create, `"pos":1056`, `"pos":"1056"`, 1), wantErr: "field source.pos: want long, got string"},
		{name: "not an object", payload: `[1,2]`, wantErr: "want a JSON object"},
		{name: "trailing data", payload: create + `{}`, wantErr: "data after the top-level value"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := formats.DecodeJSONWith(avsc, []byte(tc.payload))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
	// A nullable reader field the payload lacks reads as null, one with a
	// default takes it; extra members are ignored.
	payload := strings.Replace(create, `"tier":null,`, `"loyalty":7,`, 1)
	payload = strings.Replace(payload, `"snapshot":"false",`, "", 1)
	rec, err := formats.DecodeJSONWith(avsc, []byte(payload))
	if err != nil {
		t.Fatal(err)
	}
	if _, values := pipeline(t, avsc, rec); values["first_name"] != "Sarah" || values["tier"] != nil {
		t.Errorf("values %v", values)
	}
	if snapshot := rec["source"].(map[string]any)["snapshot"]; snapshot != "false" {
		t.Errorf("source.snapshot %v, want its default \"false\"", snapshot)
	}
}

func mustRat(s string) any {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		panic(s)
	}
	return r
}
