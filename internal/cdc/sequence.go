package cdc

import (
	"fmt"
	"strings"
	"time"
)

// A change sequence is a STRING shaped like BigQuery's _CHANGE_SEQUENCE_NUMBER:
// up to four '/'-separated sections of hexadecimal digits. bqcdc always writes
// every section as exactly 16 upper-case hex digits, so that plain string
// comparison (what ORDER BY and MAX do on a STRING column) orders sequences the
// same way as comparing the sections numerically, left to right.
//
// Sequences are only ever compared between changes of the same source table,
// which all come from one connector, so the section layouts below never meet.
const (
	sectionWidth = 16
	maxSections  = 4
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

// MySQLSequence orders MySQL binlog events: binlog file index (the numeric
// suffix of mysql-bin.000042, so a file rollover sorts after every position
// of the previous file), the event's position in that file, and the row
// number inside a multi-row event (rows of one event share a position).
func MySQLSequence(fileIndex, pos, row uint64) string {
	return EncodeSections(fileIndex, pos, row)
}

// PostgresSequence orders PostgreSQL changes by their WAL log sequence number.
// Row locks guarantee that two changes of the same row appear in the WAL in
// commit order, which is all a per-key ordering needs.
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
// ("mysql-bin.000042" -> 42).
func BinlogFileIndex(file string) (uint64, error) {
	i := strings.LastIndexByte(file, '.')
	digits := file[i+1:]
	if digits == "" {
		return 0, fmt.Errorf("binlog file %q has no numeric suffix", file)
	}
	var n uint64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("binlog file %q has no numeric suffix", file)
		}
		n = n*10 + uint64(c-'0')
	}
	return n, nil
}
