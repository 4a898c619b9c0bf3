package cdc

import (
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
				_, seqs[i] = sourcePosition(e.src, e.op)
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
		{name: "mysql gtid only falls back to the source time", op: "u",
			src:  without(mysqlSrc("false", "", 0, 0, "3E11FA47-71CA-11E1-9E33-C80AA9429562:23"), "file", "pos", "row"),
			want: TimestampSequence(srcTime)},
		{name: "mysql file without index falls back to the source time", op: "u", src: mysqlSrc("false", "binlog", 484, 0, nil),
			want: TimestampSequence(srcTime)},
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
		{name: "postgres malformed sequence", op: "u", src: pgSrc("false", `[24023119,24023128]`, int64(555), int64(24023128)),
			want: PostgresSequence(24023128)},
		{name: "postgres without any position", op: "u", src: pgSrc("false", nil, nil, nil),
			want: TimestampSequence(srcTime)},
		{name: "other connector", op: "u", src: map[string]any{"connector": "sqlserver", "ts_ms": srcTime.UnixMilli(), "change_lsn": "00000027:00000758:0003"},
			want: TimestampSequence(srcTime.Truncate(time.Millisecond))},
		{name: "nothing to order by", op: "u", src: map[string]any{"connector": "sqlserver"}, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, got := sourcePosition(tt.src, tt.op); got != tt.want {
				t.Errorf("sequence = %s, want %s", got, tt.want)
			}
		})
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
		if got := snapshotKindOf(tt.op, tt.snapshot); got != tt.want {
			t.Errorf("snapshotKindOf(%q, %v) = %d, want %d", tt.op, tt.snapshot, got, tt.want)
		}
	}
}
