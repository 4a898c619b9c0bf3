package cdc

import (
	"errors"
	"fmt"
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

// Ordering MySQL and MariaDB changes: a change is sequenced by its binlog
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
//
// (The rules are applied by binlogPosition in block.go.)

// Ordering PostgreSQL changes: a change is sequenced by Debezium's
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
//
// (The rules are applied by postgresPosition in block.go.)

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
