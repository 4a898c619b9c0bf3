package transcode

import (
	"fmt"
	"math/big"
	"os"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/dev/oracle"
	"github.com/hamba/avro/v2"
	"github.com/linkedin/goavro/v2"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// The three paths of issue 10, on the same 12-column Debezium MySQL event
// (testdata/accounts.avsc: an update with every column set):
//
//	go test ./internal/transcode -run '^$' -bench . -benchmem -count 5
//
// compiled: Plan.Append, bytes to row bytes.
// generic:  bqcdc's current path, bytes to row bytes (formats.Writer
//           decode, oracle.Flatten, avrobq Convert, evolve Fit, oracle.Row,
//           bqwrite.Encoder.Encode): ingest's BenchmarkHandle without the
//           service around it.
// goavro:   the naive path: goavro decode into maps, a map walk setting a
//           dynamicpb message, proto.Marshal.

const accountsTopic = "dbserver1.inventory.accounts"

func accountsEvent(tb testing.TB) (avro.Schema, string, []byte) {
	tb.Helper()
	text, err := os.ReadFile("testdata/accounts.avsc")
	if err != nil {
		tb.Fatal(err)
	}
	w := loadSchema(tb, "testdata/accounts.avsc")
	row := map[string]any{"id": 7, "first_name": "Ann", "last_name": "Lee", "email": "ann.lee@example.com",
		"tier": map[string]any{"string": "gold"}, "balance": map[string]any{"bytes.decimal": big.NewRat(123456, 100)},
		"birth_date": map[string]any{"int": 7000}, "updated_at": map[string]any{"string": "2024-05-06T07:08:09.123456Z"},
		"created_at": map[string]any{"long": int64(1_700_000_000_123_456)}, "active": true,
		"score": map[string]any{"double": 4.25}, "visits": map[string]any{"long": int64(42)}}
	rec := map[string]any{"op": "u", "ts_ms": map[string]any{"long": int64(1_700_000_000_500)}, "ts_us": nil, "ts_ns": nil, "transaction": nil,
		"before": nil, "after": map[string]any{accountsTopic + ".Value": row},
		"source": map[string]any{"version": "2.5.0.Final", "connector": "mysql", "name": "dbserver1", "ts_ms": int64(1_700_000_000_000),
			"snapshot": "false", "db": "inventory", "sequence": nil, "ts_us": nil, "ts_ns": nil, "table": "accounts", "server_id": int64(223344),
			"gtid": nil, "file": "mysql-bin.000003", "pos": int64(154), "row": 0, "thread": map[string]any{"long": int64(7)}, "query": nil}}
	payload, err := avro.Marshal(w, rec)
	if err != nil {
		tb.Fatal(err)
	}
	return w, string(text), payload
}

var benchMeta = Meta{MessageID: "1234567890123", PublishTime: time.Unix(1_700_000_001, 0), IngestedAt: time.Unix(1_700_000_002, 0), SchemaID: 42}

func BenchmarkTranscode(b *testing.B) {
	w, text, payload := accountsEvent(b)
	table := tableFor(b, w)
	b.Run("compiled", func(b *testing.B) {
		p, err := Compile(Config{Writer: w, Table: table})
		if err != nil {
			b.Fatal(err)
		}
		buf := make([]byte, 0, 1024)
		b.ReportAllocs()
		for b.Loop() {
			if buf, _, err = p.Append(buf[:0], payload, benchMeta); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("generic", func(b *testing.B) {
		g := newGeneric(b, w, table, nil)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := g.encode(payload, benchMeta); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("goavro", func(b *testing.B) {
		codec, err := goavro.NewCodec(text)
		if err != nil {
			b.Fatal(err)
		}
		g := newGeneric(b, w, table, nil) // for its row descriptor only
		b.ReportAllocs()
		for b.Loop() {
			if _, err := naive(codec, g.md, payload, benchMeta); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// encode is the generic path as production runs it: no canonicalization.
func (g *generic) encode(payload []byte, m Meta) ([]byte, error) {
	rec, err := g.writer.Decode(payload)
	if err != nil {
		return nil, err
	}
	ch, err := oracle.Flatten(g.shape, rec)
	if err != nil {
		return nil, err
	}
	values, err := g.fields.Convert(ch.Image)
	if err != nil {
		return nil, err
	}
	if values, _, err = g.fitter.Fit(values); err != nil {
		return nil, err
	}
	row := oracle.Row(values, oracle.Meta{Op: ch.Op, SourceTS: ch.SourceTS, Sequence: ch.Sequence, IngestedAt: m.IngestedAt,
		PublishTime: m.PublishTime, MessageID: m.MessageID, SchemaID: m.SchemaID, Transaction: ch.Transaction})
	return g.enc.Encode(row)
}

// naive is the goavro path of issue 10: decode into maps, walk the row
// message's fields, convert each value by its Go type, marshal.
func naive(codec *goavro.Codec, md protoreflect.MessageDescriptor, payload []byte, m Meta) ([]byte, error) {
	native, _, err := codec.NativeFromBinary(payload)
	if err != nil {
		return nil, err
	}
	env := native.(map[string]any)
	after, _ := unwrapGoavro(env["after"]).(map[string]any)
	src, _ := env["source"].(map[string]any)
	msg := dynamicpb.NewMessage(md)
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		v, ok := after[string(fd.Name())]
		if !ok {
			continue
		}
		v = unwrapGoavro(v)
		if v == nil {
			continue
		}
		var pv protoreflect.Value
		switch x := v.(type) {
		case int32:
			if fd.Kind() == protoreflect.Int32Kind {
				pv = protoreflect.ValueOfInt32(x)
			} else {
				pv = protoreflect.ValueOfInt64(int64(x))
			}
		case int64:
			if fd.Kind() == protoreflect.StringKind { // MicroTimestamp -> DATETIME
				pv = protoreflect.ValueOfString(time.UnixMicro(x).UTC().Format("2006-01-02 15:04:05.000000"))
			} else {
				pv = protoreflect.ValueOfInt64(x)
			}
		case string:
			if fd.Kind() == protoreflect.Int64Kind { // ZonedTimestamp -> TIMESTAMP
				t, err := time.Parse(time.RFC3339Nano, x)
				if err != nil {
					return nil, err
				}
				pv = protoreflect.ValueOfInt64(t.UnixMicro())
			} else {
				pv = protoreflect.ValueOfString(x)
			}
		case *big.Rat:
			pv = protoreflect.ValueOfString(x.FloatString(2))
		case bool:
			pv = protoreflect.ValueOfBool(x)
		case float64:
			pv = protoreflect.ValueOfFloat64(x)
		default:
			return nil, fmt.Errorf("column %s: %T", fd.Name(), v)
		}
		msg.Set(fd, pv)
	}
	set := func(name string, v protoreflect.Value) { msg.Set(md.Fields().ByName(protoreflect.Name(name)), v) }
	op := env["op"].(string)
	set(catalog.ColOp, protoreflect.ValueOfString(op))
	tsMs := src["ts_ms"].(int64)
	set(catalog.ColSourceTS, protoreflect.ValueOfInt64(tsMs*1000))
	set(catalog.ColSequence, protoreflect.ValueOfString(fmt.Sprintf("%016X/%016X/%016X/%016X", 3, src["pos"].(int64), src["row"].(int32), 1)))
	set(catalog.ColIngestedAt, protoreflect.ValueOfInt64(m.IngestedAt.UnixMicro()))
	set(catalog.ColPublishTime, protoreflect.ValueOfInt64(m.PublishTime.UnixMicro()))
	set(catalog.ColMessageID, protoreflect.ValueOfString(m.MessageID))
	set(catalog.ColSchemaID, protoreflect.ValueOfInt64(int64(m.SchemaID)))
	return proto.Marshal(msg)
}

// unwrapGoavro takes the value out of goavro's {"type": value} union form.
func unwrapGoavro(v any) any {
	if m, ok := v.(map[string]any); ok && len(m) == 1 {
		for _, inner := range m {
			return inner
		}
	}
	return v
}

// TestBenchmarkPathsAgree checks that the three benchmarked paths make the
// same row of the benchmark event, so they are compared on equal work.
func TestBenchmarkPathsAgree(t *testing.T) {
	w, text, payload := accountsEvent(t)
	table := tableFor(t, w)
	p, err := Compile(Config{Writer: w, Table: table})
	if err != nil {
		t.Fatal(err)
	}
	g := newGeneric(t, w, table, nil)
	compiled, _, err := p.Append(nil, payload, benchMeta)
	if err != nil {
		t.Fatal(err)
	}
	generic, err := g.encode(payload, benchMeta)
	if err != nil {
		t.Fatal(err)
	}
	codec, err := goavro.NewCodec(text)
	if err != nil {
		t.Fatal(err)
	}
	nv, err := naive(codec, g.md, payload, benchMeta)
	if err != nil {
		t.Fatal(err)
	}
	for name, row := range map[string][]byte{"generic": generic, "goavro": nv} {
		c, err := Canonical(g.md, row)
		if err != nil {
			t.Fatal(err)
		}
		if string(c) != string(compiled) {
			t.Errorf("%s row differs:\n%s", name, diffRows(g.md, compiled, c))
		}
	}
}
