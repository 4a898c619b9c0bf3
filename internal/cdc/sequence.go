package cdc

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// A change sequence is a STRING shaped like BigQuery's _CHANGE_SEQUENCE_NUMBER:
// up to four '/'-separated sections of hexadecimal digits. bqcdc always writes
// every section as exactly 16 upper-case hex digits, so that plain string
// comparison (what ORDER BY and MAX do on a STRING column) orders sequences the
// same way as comparing the sections numerically, left to right. A sequence
// that is a prefix of another sorts first.
//
// Sequences are only ever compared between changes of the same source table,
// which all come from one connector, so the layouts of different connectors
// never meet. The layouts (see source.go for how a Debezium source block picks
// one):
//
//	MySQL, MariaDB       binlog file index / position / row / phase
//	PostgreSQL           last commit LSN / LSN / phase   (source.sequence present)
//	PostgreSQL, legacy   LSN                             (no source.sequence: Debezium < 1.5)
//	anything else        source timestamp in microseconds
//
// A MySQL, MariaDB or PostgreSQL change (the connector name compared in any
// case) whose block lacks a usable position is refused (see Position), never
// given the timestamp layout: it would sort after every position of its
// table. So is a change whose block is null, or names another connector,
// when the writer schema's source is one of theirs (Shape.CheckPosition).
// Only connectors whose position cdc does not parse, and records whose
// schema declares another source block, use it.
//
// Layouts written before the phase section existed are prefixes of, or sort
// below, the current ones for every streamed change that came later: binlog
// sequences gained a fourth section (a prefix sorts first), and a PostgreSQL
// change's last commit LSN is above every LSN of the changes streamed before
// it (those belong to transactions committed no later than that commit). The
// exception is the first transaction after a connector start without stored
// offsets, whose last commit LSN is unknown (see postgresPosition).
const (
	sectionWidth = 16
	maxSections  = 4
)

// Phase is the last section of a binlog or PostgreSQL sequence. It orders a
// snapshot read before a streamed change at the same log position: a snapshot
// records the position streaming resumes from, so the first streamed changes
// can carry exactly the snapshot's position, and they are newer than what the
// snapshot read.
type Phase uint64

// Phases.
const (
	PhaseRead   Phase = 0 // a snapshot read (op r), whatever kind of snapshot
	PhaseChange Phase = 1 // a change streamed from the log
)

// EncodeSections renders up to four unsigned sections as a sortable sequence.
func EncodeSections(sections ...uint64) string {
	if len(sections) == 0 || len(sections) > maxSections {
		panic(fmt.Sprintf("cdc: a change sequence has 1 to %d sections, got %d", maxSections, len(sections)))
	}
	var b strings.Builder
	b.Grow(len(sections) * (sectionWidth + 1))
	for i, s := range sections {
		if i > 0 {
			b.WriteByte('/')
		}
		fmt.Fprintf(&b, "%016X", s)
	}
	return b.String()
}

// BinlogSequence orders MySQL and MariaDB binlog events: binlog file index
// (the numeric suffix of mysql-bin.000042, so a file rollover sorts after
// every position of the previous file), the event's position in that file,
// the row number inside a multi-row event (rows of one event share a
// position), and the phase. The binlog holds whole transactions in commit
// order, so binlog order is commit order.
func BinlogSequence(fileIndex, pos, row uint64, ph Phase) string {
	return EncodeSections(fileIndex, pos, row, uint64(ph))
}

// PostgresCommitSequence orders PostgreSQL changes the way Debezium streams
// them, by its source.sequence pair [lastCommitLsn, lsn]. Logical decoding
// sends whole transactions in commit order, but the LSNs of concurrent
// transactions interleave, so the LSN alone is not stream order. The last
// commit LSN (the commit of the transaction streamed before this one) grows
// from one transaction to the next, and the LSN grows inside a transaction.
func PostgresCommitSequence(lastCommitLSN, lsn uint64, ph Phase) string {
	return EncodeSections(lastCommitLSN, lsn, uint64(ph))
}

// PostgresSequence is the legacy PostgreSQL layout, the LSN alone, kept for
// source blocks without Debezium's sequence field. Row locks keep two changes
// of the same row in commit order in the WAL, but a transaction that wrote a
// row before a snapshot started and committed after it sorts before that
// snapshot's read of the row, and a snapshot read does not sort before a
// change at its own LSN.
func PostgresSequence(lsn uint64) string { return EncodeSections(lsn) }

// TimestampSequence orders changes by a timestamp in microseconds since the
// Unix epoch. Times before the epoch clamp to zero.
func TimestampSequence(t time.Time) string {
	us := t.UnixMicro()
	if us < 0 {
		us = 0
	}
	return EncodeSections(uint64(us))
}

// BinlogFileIndex extracts the numeric suffix of a MySQL binlog file name
// ("mysql-bin.000042" -> 42). A suffix that is not all decimal digits, or that
// does not fit in 64 bits, is an error: wrapping it would sort a later file
// before an earlier one.
func BinlogFileIndex(file string) (uint64, error) {
	digits := file[strings.LastIndexByte(file, '.')+1:]
	if digits == "" || strings.TrimLeft(digits, "0123456789") != "" {
		return 0, fmt.Errorf("binlog file %q has no numeric suffix", file)
	}
	n, err := strconv.ParseUint(digits, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("binlog file %q: index: %w", file, err)
	}
	return n, nil
}
