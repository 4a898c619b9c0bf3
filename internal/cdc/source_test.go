package cdc

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// Source blocks as Debezium 2.7 writes them (hamba's decoded form: nullable
// unions unwrapped), for the MySQL and PostgreSQL connectors.

var srcTime = time.Date(2026, 11, 30, 9, 0, 0, 123456000, time.UTC)

func mysqlSrc(snapshot, file string, pos int64, row int, gtid any) map[string]any {
	return map[string]any{
		"version": "2.7.3.Final", "connector": "mysql", "name": "dbserver1",
		"ts_ms": srcTime.UnixMilli(), "ts_us": srcTime.UnixMicro(), "ts_ns": srcTime.UnixNano(),
		"snapshot": snapshot, "db": "inventory", "sequence": nil, "table": "customers",
		"server_id": int64(223344), "gtid": gtid, "file": file, "pos": pos, "row": row,
		"thread": int64(7), "query": nil,
	}
}

// pgSrc builds a PostgreSQL source block; seq is source.sequence (nil for
// none), txID and lsn are nil for incremental snapshot reads.
func pgSrc(snapshot string, seq, txID, lsn any) map[string]any {
	return map[string]any{
		"version": "2.7.3.Final", "connector": "postgresql", "name": "pgserver1",
		"ts_ms": srcTime.UnixMilli(), "ts_us": srcTime.UnixMicro(), "ts_ns": srcTime.UnixNano(),
		"snapshot": snapshot, "db": "shop", "sequence": seq, "schema": "public", "table": "items",
		"txId": txID, "lsn": lsn, "xmin": nil,
	}
}

type sourceEvent struct {
	op  string
	src map[string]any
}

// TestSourceOrder lists the changes of one row in the order a view must apply
// them and checks that their sequences sort the same way.
func TestSourceOrder(t *testing.T) {
	const gtidA, gtidB = "3E11FA47-71CA-11E1-9E33-C80AA9429562", "5FDF8A7C-2B39-11EF-8F4A-0242AC120002"
	tests := []struct {
		name   string
		events []sourceEvent
	}{
		{name: "mysql initial snapshot, then streaming from the snapshot's position", events: []sourceEvent{
			{"r", mysqlSrc("true", "mysql-bin.000003", 154, 0, nil)},
			{"u", mysqlSrc("false", "mysql-bin.000003", 154, 0, nil)}, // same position as the snapshot
			{"u", mysqlSrc("false", "mysql-bin.000003", 484, 0, nil)},
			{"u", mysqlSrc("false", "mysql-bin.000003", 484, 1, nil)}, // next row of one multi-row event
		}},
		{name: "mysql with gtid keeps binlog order", events: []sourceEvent{
			{"r", mysqlSrc("last", "mysql-bin.000007", 1200, 0, nil)},
			{"u", mysqlSrc("false", "mysql-bin.000007", 1200, 0, gtidA+":23")},
			{"u", mysqlSrc("false", "mysql-bin.000007", 1650, 0, gtidB+":5")}, // other server, smaller counter
			{"d", mysqlSrc("false", "mysql-bin.000007", 2100, 0, gtidA+":24")},
		}},
		{name: "mysql binlog rollover", events: []sourceEvent{
			{"u", mysqlSrc("false", "mysql-bin.000999", 1073741000, 0, nil)},
			{"u", mysqlSrc("false", "mysql-bin.001000", 157, 0, nil)},
			{"u", mysqlSrc("false", "mysql-bin.001000", 620, 0, nil)},
		}},
		{name: "mysql incremental snapshot chunk between changes", events: []sourceEvent{
			{"u", mysqlSrc("false", "mysql-bin.000003", 5000, 0, nil)},
			{"r", mysqlSrc("incremental", "mysql-bin.000003", 6000, 0, nil)}, // stamped with the streaming position
			{"u", mysqlSrc("false", "mysql-bin.000003", 6000, 0, nil)},       // the change that closed the window
			{"r", mysqlSrc("false", "mysql-bin.000003", 6100, 0, nil)},       // a read without the incremental marker
			{"u", mysqlSrc("false", "mysql-bin.000003", 6100, 0, nil)},
		}},
		{name: "mariadb", events: []sourceEvent{
			{"r", withConnector(mysqlSrc("true", "mariadb-bin.000001", 330, 0, nil), "mariadb")},
			{"c", withConnector(mysqlSrc("false", "mariadb-bin.000001", 330, 0, "0-1-42"), "mariadb")},
			{"u", withConnector(mysqlSrc("false", "mariadb-bin.000002", 4, 0, "0-1-43"), "mariadb")},
		}},
		{name: "postgres fresh initial snapshot under write load", events: []sourceEvent{
			{"r", pgSrc("first", `[null,"24023128"]`, int64(555), int64(24023128))},
			// Transaction 554 wrote the row before the snapshot started (a
			// lower LSN) and committed after it: the snapshot did not see it.
			{"u", pgSrc("false", `[null,"24023096"]`, int64(554), int64(24023096))},
			{"u", pgSrc("false", `[null,"24023200"]`, int64(554), int64(24023200))},
			// The next transaction to change the row waited for 554's row lock.
			{"u", pgSrc("false", `["24023264","24023300"]`, int64(556), int64(24023300))},
			{"d", pgSrc("false", `["24023400","24023450"]`, int64(557), int64(24023450))},
		}},
		{name: "postgres incremental snapshot chunk between changes", events: []sourceEvent{
			{"u", pgSrc("false", `["24023264","24023300"]`, int64(560), int64(24023300))},
			{"r", pgSrc("incremental", `["24023400","24023450"]`, nil, nil)},
			{"u", pgSrc("false", `["24023400","24023450"]`, int64(561), int64(24023450))},
			{"r", pgSrc("false", `["24023480","24023490"]`, nil, nil)}, // a read without the incremental marker
			{"u", pgSrc("false", `["24023480","24023500"]`, int64(562), int64(24023500))},
		}},
		{name: "postgres blocking snapshot", events: []sourceEvent{
			{"u", pgSrc("false", `["24020000","24021000"]`, int64(600), int64(24021000))},
			// Streaming paused after the commit at 24022000; the blocking
			// snapshot is stamped with the live position.
			{"r", pgSrc("last", `["24022000","24022000"]`, int64(601), int64(24022000))},
			{"u", pgSrc("false", `["24022000","24021900"]`, int64(602), int64(24021900))}, // began before the snapshot
			{"u", pgSrc("false", `["24022300","24022400"]`, int64(603), int64(24022400))},
		}},
		{name: "postgres without source.sequence", events: []sourceEvent{
			{"c", pgSrc("false", nil, int64(770), int64(900))},
			{"u", pgSrc("false", nil, int64(771), int64(1000))},
			{"u", pgSrc("false", nil, int64(772), int64(0x1_0000_0000))},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seqs := make([]string, len(tt.events))
			for i, e := range tt.events {
				var err error
				if _, seqs[i], err = sourcePosition(e.src, ParseOp(e.op)); err != nil {
					t.Fatalf("event %d: %v", i, err)
				}
			}
			assertSourceOrder(t, seqs)
		})
	}
}

func withConnector(src map[string]any, connector string) map[string]any {
	src["connector"] = connector
	return src
}

func without(src map[string]any, fields ...string) map[string]any {
	for _, f := range fields {
		delete(src, f)
	}
	return src
}

func TestSourcePosition(t *testing.T) {
	tests := []struct {
		name string
		op   string
		src  map[string]any
		want string
	}{
		{name: "mysql change", op: "u", src: mysqlSrc("false", "mysql-bin.000003", 484, 2, nil),
			want: BinlogSequence(3, 484, 2, PhaseChange)},
		{name: "mysql snapshot read", op: "r", src: mysqlSrc("true", "mysql-bin.000003", 154, 0, nil),
			want: BinlogSequence(3, 154, 0, PhaseRead)},
		{name: "mysql first snapshot read", op: "r", src: mysqlSrc("first", "mysql-bin.000003", 154, 0, nil),
			want: BinlogSequence(3, 154, 0, PhaseRead)},
		{name: "mysql last snapshot read", op: "r", src: mysqlSrc("last", "mysql-bin.000003", 154, 0, nil),
			want: BinlogSequence(3, 154, 0, PhaseRead)},
		{name: "mysql snapshot wrapped in a union", op: "r", src: withField(mysqlSrc("", "mysql-bin.000003", 154, 0, nil), "snapshot", map[string]any{"string": "last"}),
			want: BinlogSequence(3, 154, 0, PhaseRead)},
		{name: "mysql without row is the event's first row", op: "u", src: without(mysqlSrc("false", "mysql-bin.000003", 484, 0, nil), "row"),
			want: BinlogSequence(3, 484, 0, PhaseChange)},
		{name: "mysql largest file index", op: "u", src: mysqlSrc("false", "mysql-bin.18446744073709551615", 4, 0, nil),
			want: BinlogSequence(1<<64-1, 4, 0, PhaseChange)},
		{name: "postgres change", op: "u", src: pgSrc("false", `["24023119","24023128"]`, int64(555), int64(24023128)),
			want: PostgresCommitSequence(24023119, 24023128, PhaseChange)},
		{name: "postgres fresh snapshot read", op: "r", src: pgSrc("last", `[null,"24023128"]`, int64(555), int64(24023128)),
			want: PostgresCommitSequence(0, 0, PhaseRead)},
		{name: "postgres snapshot read after catch-up streaming", op: "r", src: pgSrc("true", `["24023119","24023128"]`, int64(555), int64(24023128)),
			want: PostgresCommitSequence(24023119, 0, PhaseRead)},
		{name: "postgres boolean snapshot flag", op: "r", src: withField(pgSrc("", `["24023119","24023128"]`, nil, nil), "snapshot", true),
			want: PostgresCommitSequence(24023119, 0, PhaseRead)},
		{name: "postgres incremental read", op: "r", src: pgSrc("incremental", `["24023119","24023128"]`, nil, nil),
			want: PostgresCommitSequence(24023119, 24023128, PhaseRead)},
		{name: "postgres sequence without lsn uses source.lsn", op: "u", src: pgSrc("false", `["24023119",null]`, int64(555), int64(24023128)),
			want: PostgresCommitSequence(24023119, 24023128, PhaseChange)},
		{name: "postgres without sequence", op: "u", src: pgSrc("false", nil, int64(555), int64(24023128)),
			want: PostgresSequence(24023128)},
		{name: "postgres largest lsn", op: "u", src: pgSrc("false", `["18446744073709551614","18446744073709551615"]`, nil, nil),
			want: PostgresCommitSequence(1<<64-2, 1<<64-1, PhaseChange)},
		// Connectors whose position cdc does not parse keep the documented
		// timestamp layout.
		{name: "other connector", op: "u", src: map[string]any{"connector": "sqlserver", "ts_ms": srcTime.UnixMilli(), "change_lsn": "00000027:00000758:0003"},
			want: TimestampSequence(srcTime.Truncate(time.Millisecond))},
		{name: "nothing to order by", op: "u", src: map[string]any{"connector": "sqlserver"}, want: ""},
		// (0001-01-01T00:00:00Z itself is Go's zero time, taken as no time.)
		{name: "earliest BigQuery timestamp", op: "u", src: map[string]any{"connector": "oracle", "ts_us": int64(-62135596799999999)},
			want: TimestampSequence(time.Unix(0, 0))}, // pre-epoch clamps
		{name: "latest BigQuery timestamp", op: "u", src: map[string]any{"connector": "oracle", "ts_ms": int64(253402300799999)},
			want: TimestampSequence(time.Date(9999, 12, 31, 23, 59, 59, 999000000, time.UTC))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, got, err := sourcePosition(tt.src, ParseOp(tt.op))
			if err != nil || got != tt.want {
				t.Errorf("sequence = %s, %v; want %s", got, err, tt.want)
			}
		})
	}
}

// TestSourcePositionRefused: a known connector without a usable position,
// and a time BigQuery cannot store, are errors (the ingest service
// dead-letters them at stage envelope). Before, the first five fell back to
// a timestamp sequence, which sorts after every log position of the source.
func TestSourcePositionRefused(t *testing.T) {
	const gtid = "3E11FA47-71CA-11E1-9E33-C80AA9429562:23"
	tests := []struct {
		name string
		src  map[string]any
		want string // in the error
	}{
		{"mysql gtid only", without(mysqlSrc("false", "", 0, 0, gtid), "file", "pos", "row"), "mysql change without a usable source position: parsing binlog position: source.file is missing"},
		{"mysql file without index", mysqlSrc("false", "binlog", 484, 0, nil), `binlog file "binlog" has no numeric suffix`},
		{"postgres malformed sequence", pgSrc("false", `[24023119,24023128]`, int64(555), int64(24023128)), "postgresql change without a usable source position: parsing LSN: parsing source.sequence"},
		{"postgres without any position", pgSrc("false", nil, nil, nil), "neither source.sequence nor source.lsn is set"},
		{"mariadb without pos", without(withConnector(mysqlSrc("false", "mariadb-bin.000001", 330, 0, nil), "mariadb"), "pos"), "mariadb change without a usable source position: parsing binlog position: source.pos is missing"},
		{"mysql file ../x", mysqlSrc("false", "../x", 484, 0, nil), `binlog file "../x" has no numeric suffix`},
		{"mysql empty file", mysqlSrc("false", "", 484, 0, nil), `binlog file "" has no numeric suffix`},
		{"mysql file ending in a dot", mysqlSrc("false", "mysql-bin.", 484, 0, nil), "has no numeric suffix"},
		{"mysql signed file index", mysqlSrc("false", "mysql-bin.+3", 484, 0, nil), "has no numeric suffix"},
		{"mysql file index past 2^64", mysqlSrc("false", "mysql-bin.18446744073709551616", 4, 0, nil), "value out of range"},
		{"mysql file index of 25 digits", mysqlSrc("false", "mysql-bin.1000000000000000000000003", 4, 0, nil), "value out of range"},
		{"mysql negative pos", mysqlSrc("false", "mysql-bin.000003", -1, 0, nil), "source.pos -1 is negative"},
		{"mysql pos not a number", withField(mysqlSrc("false", "mysql-bin.000003", 0, 0, nil), "pos", "484"), "source.pos is missing"},
		{"mysql file not a string", withField(mysqlSrc("false", "", 484, 0, nil), "file", int64(3)), "source.file is missing"},
		{"mysql negative row", mysqlSrc("false", "mysql-bin.000003", 484, -2, nil), "source.row -2 is negative"},
		{"mysql row not a number", withField(mysqlSrc("false", "mysql-bin.000003", 484, 0, nil), "row", "2"), "source.row 2 is not an integer"},
		{"postgres negative lsn", pgSrc("false", nil, int64(555), int64(-1)), "source.lsn -1 is negative"},
		{"postgres lsn not a number", pgSrc("false", nil, int64(555), "24023128"), "source.lsn 24023128 is not an integer"},
		{"postgres sequence past 2^64", pgSrc("false", `["18446744073709551616","1"]`, nil, nil), "element 0: strconv.ParseUint"},
		{"postgres sequence of three", pgSrc("false", `["1","2","3"]`, nil, int64(2)), "has 3 elements, want 2"},
		{"postgres negative sequence", pgSrc("false", `["1","-2"]`, nil, int64(2)), "element 1"},
		{"postgres empty sequence", pgSrc("false", "", nil, int64(2)), "is not a JSON array"},
		{"postgres sequence not a string", pgSrc("false", int64(5), nil, int64(2)), "5 is not a string"},
		{"source.ts_ms 2^62", withField(without(mysqlSrc("false", "mysql-bin.000003", 4, 0, nil), "ts_us", "ts_ns"), "ts_ms", int64(1)<<62), "source.ts_ms 4611686018427387904 ms: outside BigQuery's TIMESTAMP range"},
		{"source.ts_ms after 9999", map[string]any{"connector": "sqlserver", "ts_ms": int64(253402300800000)}, "outside BigQuery's TIMESTAMP range"},
		{"source.ts_ms before year 1", map[string]any{"connector": "sqlserver", "ts_ms": int64(-62135596800001)}, "outside BigQuery's TIMESTAMP range"},
		{"source.ts_us 2^62", withField(mysqlSrc("false", "mysql-bin.000003", 4, 0, nil), "ts_us", int64(1)<<62), "source.ts_us 4611686018427387904 µs: outside"},
		{"source.ts_us minimum int64", map[string]any{"connector": "postgresql", "ts_us": int64(-1 << 63), "lsn": int64(5)}, "outside BigQuery's TIMESTAMP range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, seq, err := sourcePosition(tt.src, OpUpdate)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("sequence = %q, error = %v; want an error containing %q", seq, err, tt.want)
			}
		})
	}
	_, _, err := sourcePosition(map[string]any{"ts_ms": int64(1) << 62}, OpUpdate)
	if !errors.Is(err, ErrTimestampRange) {
		t.Errorf("err = %v, want ErrTimestampRange", err)
	}
}

func withField(src map[string]any, field string, v any) map[string]any {
	src[field] = v
	return src
}

func TestSnapshotKind(t *testing.T) {
	tests := []struct {
		op       string
		snapshot any
		want     snapshotKind
	}{
		{"r", "true", fullSnapshot},
		{"r", "first", fullSnapshot},
		{"r", "first_in_data_collection", fullSnapshot},
		{"r", "last_in_data_collection", fullSnapshot},
		{"r", "last", fullSnapshot},
		{"r", "TRUE", fullSnapshot},
		{"r", true, fullSnapshot},
		{"r", "incremental", incrementalSnapshot},
		{"r", "false", incrementalSnapshot},
		{"r", nil, incrementalSnapshot},
		{"c", "true", streamed}, // only reads come from snapshots
		{"u", "false", streamed},
		{"d", nil, streamed},
		{"t", "false", streamed},
	}
	for _, tt := range tests {
		if got := snapshotKindOf(ParseOp(tt.op), FieldOf(tt.snapshot, true)); got != tt.want {
			t.Errorf("snapshotKindOf(%q, %v) = %d, want %d", tt.op, tt.snapshot, got, tt.want)
		}
	}
}
