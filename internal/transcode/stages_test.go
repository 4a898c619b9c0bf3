package transcode

import (
	"errors"
	"sync"
	"testing"

	"github.com/bqcdc/bqcdc/internal/failure"
	"github.com/bqcdc/bqcdc/internal/registry"
	"github.com/hamba/avro/v2"
	"google.golang.org/protobuf/encoding/protowire"
)

const customersTopic = "dbserver1.inventory.customers"

// customer builds a customers envelope as Debezium's MySQL connector
// writes it.
func customer(op string, after, before map[string]any) map[string]any {
	wrap := func(m map[string]any) any {
		if m == nil {
			return nil
		}
		return map[string]any{customersTopic + ".Value": m}
	}
	return map[string]any{"op": op, "ts_ms": map[string]any{"long": int64(1_700_000_000_123)}, "ts_us": nil, "ts_ns": nil, "transaction": nil,
		"before": wrap(before), "after": wrap(after),
		"source": map[string]any{"version": "2", "connector": "mysql", "name": "db", "ts_ms": int64(1_700_000_000_000), "snapshot": "false",
			"db": "inventory", "sequence": nil, "ts_us": nil, "ts_ns": nil, "table": "customers", "server_id": int64(1), "gtid": nil,
			"file": "mysql-bin.000003", "pos": int64(4711), "row": 2, "thread": nil, "query": nil}}
}

func customerRow(id int) map[string]any {
	return map[string]any{"id": id, "first_name": "Ann", "last_name": "Lee", "email": "a@x", "tier": "gold",
		"balance": nil, "birth_date": map[string]any{"int": 10_000}, "updated_at": "2024-05-06T07:08:09.5+02:00"}
}

func TestStages(t *testing.T) {
	ps := schemas(t)
	cust := ps["customers"]
	w := cust.ref.writer.Schema
	marshal := func(v map[string]any) []byte {
		b, err := avro.Marshal(w, v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	insert := marshal(customer("c", customerRow(1), nil))
	withTx := customer("u", customerRow(2), customerRow(2))
	withTx["transaction"] = map[string]any{"event.block": map[string]any{"id": "tx-9", "total_order": int64(3), "data_collection_order": int64(1)}}
	badZone := customerRow(3)
	badZone["updated_at"] = "yesterday"
	tests := []struct {
		name    string
		payload []byte
		stage   failure.Stage
	}{
		{"insert", insert, ""},
		{"update with a transaction block", marshal(withTx), ""},
		{"delete", marshal(customer("d", nil, customerRow(4))), ""},
		{"snapshot read", marshal(customer("r", customerRow(5), nil)), ""},
		{"truncate", marshal(customer("t", nil, nil)), ""},
		{"empty payload", nil, failure.StageDecode},
		{"truncated", insert[:len(insert)-3], failure.StageDecode},
		{"trailing byte", append(append([]byte{}, insert...), 0), failure.StageDecode},
		{"unknown union branch", append([]byte{0x08}, insert[1:]...), failure.StageDecode},
		{"negative string length", append([]byte{0x00, 0x02, 0x02, 0x01}, insert[4:]...), failure.StageDecode},
		{"string longer than 1 MiB", append([]byte{0x00, 0x02, 0x02, 0x80, 0x80, 0x81, 0x01}, insert[4:]...), failure.StageDecode},
		{"unknown op", marshal(customer("x", customerRow(6), nil)), failure.StageEnvelope},
		{"insert without after", marshal(customer("c", nil, nil)), failure.StageEnvelope},
		{"delete without before", marshal(customer("d", customerRow(7), nil)), failure.StageEnvelope},
		{"unparsable zoned timestamp", marshal(customer("c", badZone, nil)), failure.StageConvert},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := cust.compare(t, tt.payload, testMeta); got != tt.stage {
				t.Fatalf("stage = %q, want %q", got, tt.stage)
			}
		})
	}
}

func TestHostileCountIsRefusedWithoutAllocating(t *testing.T) {
	p := schemas(t)["plain"]
	// id 1, kind A, payload null, amount null, at 0, then labels declaring
	// 2^40 items in a 7-byte tail.
	payload := []byte{0x02, 0x00, 0x00, 0x00, 0x00}
	payload = protowire.AppendVarint(payload, protowire.EncodeZigZag(1<<40))
	allocs := testing.AllocsPerRun(10, func() {
		_, _, err := p.plan.Append(nil, payload, testMeta)
		if !errors.Is(err, errHostileCount) || failure.StageOf(err) != failure.StageDecode {
			t.Fatalf("err = %v", err)
		}
	})
	// A constant few: the classified error, whose text names the count,
	// its byte and the bytes left; nothing in proportion to the count.
	if allocs > 16 {
		t.Errorf("%v allocations to refuse a hostile count", allocs)
	}
}

func TestRowContent(t *testing.T) {
	p := schemas(t)["customers"]
	b, err := avro.Marshal(p.ref.writer.Schema, customer("c", customerRow(1), nil))
	if err != nil {
		t.Fatal(err)
	}
	row, _, err := p.plan.Append(nil, b, testMeta)
	if err != nil {
		t.Fatal(err)
	}
	got := describeRow(p.ref.md, row)
	for _, want := range []string{`id:1`, `first_name:"Ann"`, `birth_date:10000`, `updated_at:1714972089500000`,
		`_cdc_op:"c"`, `_cdc_sequence:"0000000000000003/0000000000001267/0000000000000002/0000000000000001"`,
		`_cdc_source_ts:1700000000000000`, `_cdc_message_id:"m-1"`, `_cdc_schema_id:7`} {
		if !contains(got, want) {
			t.Errorf("row lacks %s:\n%s", want, got)
		}
	}
}

func contains(s, sub string) bool {
	return len(s) >= len(sub) && (func() bool {
		for i := 0; i+len(sub) <= len(s); i++ {
			if s[i:i+len(sub)] == sub {
				return true
			}
		}
		return false
	})()
}

var (
	fuzzOnce  sync.Once
	fuzzPairs []pair
)

// fuzzTargets are the schemas the fuzz test decodes with, by index.
func fuzzTargets(t testing.TB) []pair {
	fuzzOnce.Do(func() {
		ps := schemas(t)
		w, err := registry.Parse(evolvedWriter)
		if err != nil {
			t.Fatal(err)
		}
		fuzzPairs = []pair{ps["customers"], ps["kitchen"], ps["accounts"], ps["plain"], ps["orders"],
			newPair(t, "evolved", w, evolvedTable(), evolvedDefaults), ps["fallback"]}
	})
	return fuzzPairs
}

// FuzzTranscode checks, for any payload, that the transcoder and the
// generic path give the same row bytes (and dropped count), or fail at
// the same stage.
//
//	go test ./internal/transcode -run '^$' -fuzz FuzzTranscode -fuzztime 60s
func FuzzTranscode(f *testing.F) {
	targets := fuzzTargets(f)
	for i, p := range targets {
		g := newGen(uint64(100 + i))
		for range 4 {
			b, err := g.payload(p.ref.writer.Schema)
			if err == nil {
				f.Add(uint8(i), b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, payload []byte) {
		p := targets[int(which)%len(targets)]
		p.compare(t, payload, testMeta)
	})
}
