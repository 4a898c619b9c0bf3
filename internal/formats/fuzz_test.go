package formats_test

import (
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/avrobq"
	"github.com/bqcdc/bqcdc/internal/cdc"
	"github.com/bqcdc/bqcdc/internal/dev/oracle"
	"github.com/bqcdc/bqcdc/internal/dev/testfile"
	"github.com/bqcdc/bqcdc/internal/formats"
	"github.com/hamba/avro/v2"
)

// Fuzz targets. Their seeds (f.Add below and testdata/fuzz/<FuzzName>/) run
// with every plain `go test`; `go test -fuzz FuzzAvroDecode` explores.
// Whatever the bytes, decoding must return (a record or an error), never
// panic, and never allocate more than the payload bounds; a record must
// then go through the envelope and the BigQuery conversion the same way.

// envelopeSchema is Debezium's envelope for the inventory customers table,
// as the registry holds it.
func envelopeSchema(f *testing.F) avro.Schema {
	f.Helper()
	return parseSchema(f, testfile.Bytes(f, "../../schemas/dbserver1.inventory.customers-value.avsc"))
}

func FuzzAvroDecode(f *testing.F) {
	s := envelopeSchema(f)
	w := formats.AvroBinary("fuzz", s)
	shape, fields, err := readerOf(s)
	if err != nil {
		f.Fatal(err)
	}
	for i, seed := range avroSeeds(f, s) {
		if _, err := w.Decode(seed); i < 2 && err != nil {
			f.Fatalf("valid seed %d: %v", i, err)
		}
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		defer bounded(t, time.Now())
		rec, err := w.Decode(data)
		if err != nil {
			return
		}
		flattenConvert(shape, fields, rec)
	})
}

// avroSeeds are valid envelopes (a create and a delete) and the hostile
// shapes of the issue, in the envelope's first bytes.
func avroSeeds(f *testing.F, s avro.Schema) [][]byte {
	f.Helper()
	row := map[string]any{"id": int32(1001), "first_name": "Sally", "last_name": "Thomas", "email": "sally.thomas@acme.com"}
	source := map[string]any{"version": "2.7.0.Final", "connector": "mysql", "name": "dbserver1", "ts_ms": int64(1700000000000),
		"snapshot": map[string]any{"string": "false"}, "db": "inventory", "table": map[string]any{"string": "customers"},
		"server_id": int64(223344), "file": "mysql-bin.000003", "pos": int64(154), "row": int32(0)}
	var out [][]byte
	for _, env := range []map[string]any{
		{"before": nil, "after": map[string]any{"dbserver1.inventory.customers.Value": row}, "source": source, "op": "c", "ts_ms": map[string]any{"long": int64(1700000000001)}},
		{"before": map[string]any{"dbserver1.inventory.customers.Value": row}, "after": nil, "source": source, "op": "d", "ts_ms": nil},
	} {
		b, err := avro.Marshal(s, env)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, b)
	}
	return append(out,
		[]byte{},
		[]byte{0x02, 0x80, 0x80, 0x80, 0x80, 0x20, 0x02},                                       // union branch, then a length of 2^32
		[]byte{0x02, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},                     // a varint beyond 64 bits
		append(out[0][:len(out[0])-3:len(out[0])-3], 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40), // cut, then a huge length
	)
}

func FuzzConnectDecode(f *testing.F) {
	customers := testfile.Bytes(f, "testdata/debezium/customers.schema.json")
	for _, p := range []string{"customers-create.payload.json", "customers-update.payload.json", "customers-delete.payload.json"} {
		f.Add(wrap(customers, testfile.Bytes(f, "testdata/debezium/"+p)))
	}
	f.Add(wrap(testfile.Bytes(f, "testdata/debezium/orders.schema.json"), testfile.Bytes(f, "testdata/debezium/orders-create.payload.json")))
	for _, seed := range []string{
		`{"schema":null,"payload":null}`,
		`{"id":1}`,
		`{"schema":{"type":"struct","name":"t.Value","fields":[{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","parameters":{"scale":"100000000"},"field":"d"}]},"payload":{"d":1}}`,
		`{"schema":{"type":"struct","name":"t.Value","fields":[{"type":"bytes","optional":false,"name":"io.debezium.data.Bits","parameters":{"length":"2147483647"},"field":"b"}]},"payload":{"b":"AQ=="}}`,
		`{"schema":{"type":"struct","name":"t.Value","fields":[{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","parameters":{"scale":"5","connect.decimal.precision":"3"},"field":"d"}]},"payload":{"d":0.00123}}`,
		`{"schema":{"type":"struct","name":"t.Value","fields":[{"type":"int64","optional":false,"field":"n"}]},"payload":{"n":1e400}}`,
	} {
		f.Add([]byte(seed))
	}
	cs := formats.NewConnectSchemas()
	f.Fuzz(func(t *testing.T, data []byte) {
		defer bounded(t, time.Now())
		w, rec, err := cs.Decode(data)
		if err != nil {
			return
		}
		shape, fields, err := readerOf(w.Schema)
		if err != nil {
			return
		}
		flattenConvert(shape, fields, rec)
	})
}

// flattenConvert takes a decoded record through the envelope and the
// BigQuery conversion, as the pipeline does. An error ends the input: the
// targets check only that no step panics or runs unbounded.
func flattenConvert(shape cdc.Shape, fields avrobq.Fields, rec map[string]any) {
	ch, err := oracle.Flatten(shape, rec)
	if err != nil {
		return
	}
	_, _ = fields.Convert(ch.Image)
}

// bounded fails an input that takes more than a few seconds: a message's
// cost must be bounded by its size, and fuzz inputs are small.
func bounded(t *testing.T, start time.Time) {
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("took %v", d)
	}
}
