package cdc

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// snapshotKind says whether a change is a snapshot read, and from which kind
// of Debezium snapshot.
type snapshotKind int

const (
	// streamed: a change read from the log (op c, u, d or t).
	streamed snapshotKind = iota
	// fullSnapshot: a read of an initial or blocking snapshot, marked
	// source.snapshot true, first, first_in_data_collection,
	// last_in_data_collection or last (old connectors wrote a boolean true).
	fullSnapshot
	// incrementalSnapshot: a read of an incremental snapshot, marked
	// source.snapshot incremental; any other read (op r) is taken as one too,
	// since a read outside a full snapshot can only come from a snapshot run
	// while streaming.
	incrementalSnapshot
)

// snapshotKindOf classifies a change by its op and source.snapshot. Only op r
// is a read: Debezium emits nothing else from a snapshot.
func snapshotKindOf(op string, snapshot any) snapshotKind {
	if op != OpRead {
		return streamed
	}
	switch v := unwrapSingle(snapshot).(type) {
	case string:
		switch strings.ToLower(v) {
		case "true", "first", "first_in_data_collection", "last_in_data_collection", "last":
			return fullSnapshot
		}
	case bool:
		if v {
			return fullSnapshot
		}
	}
	return incrementalSnapshot
}

// phase is the sequence phase of a kind. Incremental snapshot reads are
// reads too, even though they are emitted during streaming: Debezium stamps
// an incremental chunk with the streaming position at which its window
// closes, drops from the chunk every row that a change inside the window
// touched, and emits the chunk before the change that follows the window. So
// by position a chunk row already sorts where it belongs, after every change
// it reflects; the only change that can share its position and its row is
// one Debezium handles after the chunk, which must sort after the read.
func (k snapshotKind) phase() Phase {
	if k == streamed {
		return PhaseChange
	}
	return PhaseRead
}

// sourcePosition reads Debezium's source block: the change time and, for the
// connectors whose log position is known, a sequence from that position; any
// other change is sequenced by its source time.
func sourcePosition(src map[string]any, op string) (time.Time, string) {
	ts := sourceTime(src)
	kind := snapshotKindOf(op, src["snapshot"])
	var seq string
	switch connector, _ := asString(src["connector"]); connector {
	case "mysql", "mariadb":
		seq = binlogPosition(src, kind)
	case "postgresql":
		seq = postgresPosition(src, kind)
	}
	if seq == "" && !ts.IsZero() {
		seq = TimestampSequence(ts)
	}
	return ts, seq
}

func sourceTime(src map[string]any) time.Time {
	if us, ok := asInt(src["ts_us"]); ok {
		return time.UnixMicro(us).UTC()
	}
	if ns, ok := asInt(src["ts_ns"]); ok {
		return time.Unix(0, ns).UTC()
	}
	if ms, ok := asInt(src["ts_ms"]); ok {
		return time.UnixMilli(ms).UTC()
	}
	return time.Time{}
}

// binlogPosition sequences a MySQL or MariaDB change by its binlog
// coordinates (source.file, pos, row). Snapshot reads carry the position the
// snapshot was taken at, which is where streaming resumes, so their phase puts
// them before the changes streamed from there.
//
// source.gtid is not used, even when present. A GTID names a transaction by
// its originating server (MySQL: server UUID; MariaDB: domain and server id)
// and a counter; counters of different servers do not compare, so GTID sets
// are only partially ordered and a change after a failover cannot be placed
// against one before it. A GTID also names a whole transaction, so it cannot
// order two changes of one row inside it. Debezium always writes file and
// pos (they are required fields of its source schema); a block that has only
// a GTID comes from some other producer and falls back to the source time,
// which at least compares across servers. Binlog coordinates are per server
// as well: after a failover the new primary's files and positions do not
// continue the old one's, which no per-event sequence can repair.
func binlogPosition(src map[string]any, kind snapshotKind) string {
	file, _ := asString(src["file"])
	idx, err := BinlogFileIndex(file)
	pos, okPos := asInt(src["pos"])
	if err != nil || !okPos || pos < 0 {
		return ""
	}
	row, ok := asInt(src["row"])
	if !ok || row < 0 {
		row = 0
	}
	return BinlogSequence(idx, uint64(pos), uint64(row), kind.phase())
}

// postgresPosition sequences a PostgreSQL change by Debezium's
// source.sequence, the JSON string array [lastCommitLsn, lsn], which Debezium
// documents for ordering its events: the stream is in commit order, and
// lastCommitLsn (the commit of the transaction streamed before) increases
// from one transaction to the next while the LSN increases inside one.
// source.txId adds nothing: transaction ids are handed out when a transaction
// first writes, not when it commits, and the pair already orders every change
// of a transaction. It is kept in _cdc_transaction when the connector provides
// transaction metadata.
//
// A read of a full (initial or blocking) snapshot takes LSN 0 instead of the
// snapshot's own LSN. Its lastCommitLsn is the one the first transaction
// streamed after the snapshot carries, so the read sorts after every earlier
// transaction and before every change of that first one, whatever their LSNs.
// That matters: a transaction open when the snapshot started can have written
// a row at an LSN below the snapshot's, invisible to the snapshot, and commit
// after it; its change must still win over the snapshot's read.
//
// A null lastCommitLsn means no commit was streamed yet since the connector
// started without stored offsets; it counts as 0, so such a fresh initial
// snapshot and its first transaction sort correctly. The price: after a start
// whose offsets were lost or reset (snapshot.mode always or when_needed, a
// recreated connector), the new snapshot and the first transaction after it
// sort before the changes already in the changelog.
// Blocking and incremental snapshots, started by signal, carry the live
// lastCommitLsn and have no such problem.
//
// Without source.sequence (Debezium before 1.5) the LSN alone is used, the
// layout bqcdc has always written for PostgreSQL.
func postgresPosition(src map[string]any, kind snapshotKind) string {
	lsn, okLSN := asInt(src["lsn"])
	okLSN = okLSN && lsn >= 0
	commit, at, hasAt, ok := debeziumSequence(src["sequence"])
	if !ok {
		if !okLSN {
			return ""
		}
		return PostgresSequence(uint64(lsn))
	}
	switch {
	case kind == fullSnapshot:
		at = 0
	case !hasAt && okLSN:
		at = uint64(lsn)
	case !hasAt:
		// [lastCommitLsn, null] before anything was streamed, with no
		// source.lsn either (incremental reads are stamped without one).
		at = 0
	}
	return PostgresCommitSequence(commit, at, kind.phase())
}

// debeziumSequence parses PostgreSQL's source.sequence, a JSON array of two
// decimal strings or nulls: the last commit LSN (null counts as 0) and the
// change's LSN (hasLSN false when null).
func debeziumSequence(v any) (lastCommit, lsn uint64, hasLSN, ok bool) {
	s, isString := asString(v)
	if !isString || s == "" {
		return 0, 0, false, false
	}
	var pair []*string
	if err := json.Unmarshal([]byte(s), &pair); err != nil || len(pair) != 2 {
		return 0, 0, false, false
	}
	var n [2]uint64
	for i, p := range pair {
		if p == nil {
			continue
		}
		v, err := strconv.ParseUint(*p, 10, 64)
		if err != nil {
			return 0, 0, false, false
		}
		n[i] = v
	}
	return n[0], n[1], pair[1] != nil, true
}

// unwrapSingle returns the value of a union that hamba left wrapped, e.g.
// {"string": "true"}; anything else is returned as is.
func unwrapSingle(v any) any {
	if m, ok := v.(map[string]any); ok && len(m) == 1 {
		for _, inner := range m {
			return inner
		}
	}
	return v
}

func asString(v any) (string, bool) {
	s, ok := unwrapSingle(v).(string)
	return s, ok
}

func asInt(v any) (int64, bool) {
	switch x := unwrapSingle(v).(type) {
	case int:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	}
	return 0, false
}
