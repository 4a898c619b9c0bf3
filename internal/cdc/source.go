package cdc

import (
	"encoding/json"
	"errors"
	"fmt"
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
// connectors whose log position cdc knows (mysql, mariadb, postgresql), a
// sequence from that position.
//
// A change of a known connector without a usable position is an error, never
// a timestamp sequence: a timestamp section sorts after every log position of
// the same source (a binlog file index or an LSN is far below a time in
// microseconds), so a stale change would win the view. The caller
// dead-letters it (stage envelope).
//
// Any other connector (sqlserver, oracle, mongodb, ...) is sequenced by its
// source time, the documented "anything else" layout of sequence.go: its
// changes all share that layout, so they compare with one another. A
// timestamp outside BigQuery's TIMESTAMP range is an error too.
func sourcePosition(src map[string]any, op string) (time.Time, string, error) {
	ts, err := sourceTime(src)
	if err != nil {
		return time.Time{}, "", err
	}
	kind := snapshotKindOf(op, src["snapshot"])
	switch connector, _ := asString(src["connector"]); connector {
	case "mysql", "mariadb":
		seq, err := binlogPosition(src, kind)
		if err != nil {
			return time.Time{}, "", fmt.Errorf("%s change without a usable source position: parsing binlog position: %w", connector, err)
		}
		return ts, seq, nil
	case "postgresql":
		seq, err := postgresPosition(src, kind)
		if err != nil {
			return time.Time{}, "", fmt.Errorf("%s change without a usable source position: parsing LSN: %w", connector, err)
		}
		return ts, seq, nil
	}
	if ts.IsZero() {
		return ts, "", nil
	}
	return ts, TimestampSequence(ts), nil
}

// BigQuery's TIMESTAMP range, in microseconds since the Unix epoch:
// 0001-01-01 00:00:00 to 9999-12-31 23:59:59.999999 UTC. A time outside it
// cannot be stored, and converting it to microseconds can overflow int64
// (a ts_ms of 2^62 would wrap to a time in 1970).
const (
	minTimestampMicros = -62135596800000000
	maxTimestampMicros = 253402300799999999
)

// ErrTimestampRange marks a source time outside BigQuery's TIMESTAMP range.
var ErrTimestampRange = errors.New("outside BigQuery's TIMESTAMP range (0001-01-01 to 9999-12-31)")

// sourceTime reads the most precise of source.ts_us, ts_ns and ts_ms.
func sourceTime(src map[string]any) (time.Time, error) {
	if us, ok := asInt(src["ts_us"]); ok {
		return timestampMicros("source.ts_us", us)
	}
	if ns, ok := asInt(src["ts_ns"]); ok {
		// int64 nanoseconds span 1677 to 2262, inside BigQuery's range.
		return time.Unix(0, ns).UTC(), nil
	}
	if ms, ok := asInt(src["ts_ms"]); ok {
		return timestampMillis("source.ts_ms", ms)
	}
	return time.Time{}, nil
}

func timestampMicros(field string, us int64) (time.Time, error) {
	if us < minTimestampMicros || us > maxTimestampMicros {
		return time.Time{}, fmt.Errorf("%s %d µs: %w", field, us, ErrTimestampRange)
	}
	return time.UnixMicro(us).UTC(), nil
}

func timestampMillis(field string, ms int64) (time.Time, error) {
	if ms < minTimestampMicros/1000 || ms > maxTimestampMicros/1000 {
		return time.Time{}, fmt.Errorf("%s %d ms: %w", field, ms, ErrTimestampRange)
	}
	return time.UnixMilli(ms).UTC(), nil
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
// a GTID comes from some other producer and is refused: its source time
// would sort after every binlog position of the table. Binlog coordinates are per server
// as well: after a failover the new primary's files and positions do not
// continue the old one's, which no per-event sequence can repair.
func binlogPosition(src map[string]any, kind snapshotKind) (string, error) {
	file, ok := asString(src["file"])
	if !ok {
		return "", errors.New("source.file is missing")
	}
	idx, err := BinlogFileIndex(file)
	if err != nil {
		return "", err
	}
	pos, ok := asInt(src["pos"])
	if !ok {
		return "", errors.New("source.pos is missing")
	}
	if pos < 0 {
		return "", fmt.Errorf("source.pos %d is negative", pos)
	}
	// source.row numbers the rows of one multi-row event; Debezium always
	// writes it, and a block without it is taken as the event's first row.
	var row int64
	if v := unwrapSingle(src["row"]); v != nil {
		if row, ok = asInt(v); !ok {
			return "", fmt.Errorf("source.row %v is not an integer", v)
		}
		if row < 0 {
			return "", fmt.Errorf("source.row %d is negative", row)
		}
	}
	return BinlogSequence(idx, uint64(pos), uint64(row), kind.phase()), nil
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
// layout bqcdc has always written for PostgreSQL. A change with neither, or
// with a source.sequence or source.lsn that does not parse, is an error.
func postgresPosition(src map[string]any, kind snapshotKind) (string, error) {
	lsn, hasLSN, err := optionalLSN(src["lsn"])
	if err != nil {
		return "", err
	}
	commit, at, hasAt, hasSeq, err := debeziumSequence(src["sequence"])
	if err != nil {
		return "", fmt.Errorf("parsing source.sequence: %w", err)
	}
	if !hasSeq {
		if !hasLSN {
			return "", errors.New("neither source.sequence nor source.lsn is set")
		}
		return PostgresSequence(lsn), nil
	}
	switch {
	case kind == fullSnapshot:
		at = 0
	case !hasAt && hasLSN:
		at = lsn
	case !hasAt:
		// [lastCommitLsn, null] before anything was streamed, with no
		// source.lsn either (incremental reads are stamped without one).
		at = 0
	}
	return PostgresCommitSequence(commit, at, kind.phase()), nil
}

// optionalLSN reads source.lsn: absent or null is no LSN; anything but a
// non-negative integer is an error.
func optionalLSN(v any) (uint64, bool, error) {
	v = unwrapSingle(v)
	if v == nil {
		return 0, false, nil
	}
	n, ok := asInt(v)
	if !ok {
		return 0, false, fmt.Errorf("source.lsn %v is not an integer", v)
	}
	if n < 0 {
		return 0, false, fmt.Errorf("source.lsn %d is negative", n)
	}
	return uint64(n), true, nil
}

// debeziumSequence parses PostgreSQL's source.sequence, a JSON array of two
// decimal strings or nulls: the last commit LSN (null counts as 0) and the
// change's LSN (hasLSN false when null). present is false when the field is
// absent or null; a value that is not such an array, or a number past
// 2^64-1, is an error rather than silently ignored.
func debeziumSequence(v any) (lastCommit, lsn uint64, hasLSN, present bool, err error) {
	v = unwrapSingle(v)
	if v == nil {
		return 0, 0, false, false, nil
	}
	s, isString := v.(string)
	if !isString {
		return 0, 0, false, false, fmt.Errorf("%v is not a string", v)
	}
	var pair []*string
	if err := json.Unmarshal([]byte(s), &pair); err != nil {
		return 0, 0, false, false, fmt.Errorf("%q is not a JSON array of two decimal strings: %w", s, err)
	}
	if len(pair) != 2 {
		return 0, 0, false, false, fmt.Errorf("%q has %d elements, want 2", s, len(pair))
	}
	var n [2]uint64
	for i, p := range pair {
		if p == nil {
			continue
		}
		v, err := strconv.ParseUint(*p, 10, 64)
		if err != nil {
			return 0, 0, false, false, fmt.Errorf("element %d: %w", i, err)
		}
		n[i] = v
	}
	return n[0], n[1], pair[1] != nil, true, nil
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
