package cdc_test

import (
	"os"
	"testing"

	"github.com/bqcdc/bqcdc/internal/cdc"
	"github.com/bqcdc/bqcdc/internal/dev/oracle"
	"github.com/hamba/avro/v2"
)

// FuzzFlatten feeds the envelope flattening (the generic form, oracle.Flatten,
// by cdc's rules: ParseOp, CheckPosition, Position) whatever a connector (or an
// attacker) can put in a Debezium envelope: any op, any source block
// (connector, binlog file and position, LSN, Debezium's sequence text,
// timestamps, snapshot marker), in both of hamba's decoded forms (plain and
// union-wrapped values). Flatten must return a Change or an error, never
// panic. Its seeds (f.Add below and testdata/fuzz/FuzzFlatten/) run with
// every plain `go test`.
func FuzzFlatten(f *testing.F) {
	text, err := os.ReadFile("../../schemas/dbserver1.inventory.customers-value.avsc")
	if err != nil {
		f.Fatal(err)
	}
	s, err := avro.ParseBytesWithCache(text, "", &avro.SchemaCache{})
	if err != nil {
		f.Fatal(err)
	}
	shape, err := cdc.ShapeOf(s)
	if err != nil {
		f.Fatal(err)
	}
	type seed struct {
		op, connector, file, sequence, snapshot string
		pos, row, lsn, tsMs, tsUs               int64
		wrapped                                 bool
	}
	for _, sd := range []seed{
		{op: "c", connector: "mysql", file: "mysql-bin.000003", pos: 154, row: 0, tsMs: 1700000000123, snapshot: "false"},
		{op: "r", connector: "mysql", file: "mysql-bin.000003", pos: 154, snapshot: "true", tsMs: 1700000000123, wrapped: true},
		{op: "u", connector: "postgresql", lsn: 24023128, sequence: `["24023000","24023128"]`, tsUs: 1700000000123456},
		{op: "d", connector: "postgresql", sequence: `[null,"24023128"]`, tsMs: 1700000000123},
		{op: "t", connector: "mysql"},
		// Hostile positions: an unusable binlog file, a negative position,
		// a file index beyond 19 digits, a source.ts_ms of 2^62.
		{op: "c", connector: "mysql", file: "../x", pos: -1, tsMs: 1 << 62},
		{op: "c", connector: "mysql", file: "mysql-bin.99999999999999999999", pos: 1 << 62},
		{op: "c", connector: "postgresql", lsn: -1, sequence: `not json`, tsMs: -1 << 62},
		{op: "x", connector: "", file: ""},
	} {
		f.Add(sd.op, sd.connector, sd.file, sd.sequence, sd.snapshot, sd.pos, sd.row, sd.lsn, sd.tsMs, sd.tsUs, sd.wrapped)
	}
	f.Fuzz(func(t *testing.T, op, connector, file, sequence, snapshot string, pos, row, lsn, tsMs, tsUs int64, wrapped bool) {
		opt := func(branch string, v any) any {
			if wrapped {
				return map[string]any{branch: v}
			}
			return v
		}
		source := map[string]any{
			"version": "2.7.0.Final", "connector": connector, "name": "dbserver1", "ts_ms": tsMs,
			"snapshot": opt("string", snapshot), "db": "inventory", "table": opt("string", "customers"),
			"server_id": int64(223344), "file": file, "pos": pos, "row": opt("int", int32(row)),
			"lsn": opt("long", lsn), "sequence": opt("string", sequence), "ts_us": opt("long", tsUs),
		}
		image := map[string]any{"id": int32(1), "first_name": "a", "last_name": "b", "email": "c"}
		rec := map[string]any{"op": op, "source": source, "ts_ms": opt("long", tsMs),
			"before": opt("dbserver1.inventory.customers.Value", image), "after": opt("dbserver1.inventory.customers.Value", image)}
		ch, err := oracle.Flatten(shape, rec)
		if err != nil {
			return
		}
		if ch.Op == cdc.OpNone || ch.Op.String() != op {
			t.Errorf("op %q flattened as %q", op, ch.Op)
		}
		if ch.Op != cdc.OpTruncate && ch.Image == nil {
			t.Errorf("op %q flattened without an image", op)
		}
	})
}
