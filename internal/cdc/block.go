package cdc

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The rules that turn a Debezium source block into a change time and a
// sequence live here once, on a SourceBlock of typed fields, so that both
// readers apply them identically: package transcode fills the block
// straight from the Avro bytes, and the tests' reference pipeline
// (internal/dev/oracle) from hamba's decoded map (FieldOf). Neither
// allocates on the common path.

// Kind is what a field of a Debezium block decoded to.
type Kind uint8

// Kinds. The zero Kind is Absent: the schema has no such field.
const (
	Absent Kind = iota
	Null        // present, NULL
	Int         // an Avro int or long
	String      // an Avro string or enum symbol
	Bool
	Other // any other type: never what a rule asks for
)

// Field is one decoded field of a block.
type Field struct {
	Kind Kind
	Int  int64
	Str  string
	Bool bool
}

// SourceBlock holds the fields of Debezium's source block that ordering
// reads.
type SourceBlock struct {
	TsUs, TsNs, TsMs              Field
	Snapshot, Connector           Field
	File, Pos, Row, LSN, Sequence Field
}

// Lookup is the SourceBlock field that holds the source block's field of
// that name, nil for a field ordering does not read.
func (b *SourceBlock) Lookup(name string) *Field {
	switch name {
	case "ts_us":
		return &b.TsUs
	case "ts_ns":
		return &b.TsNs
	case "ts_ms":
		return &b.TsMs
	case "snapshot":
		return &b.Snapshot
	case "connector":
		return &b.Connector
	case "file":
		return &b.File
	case "pos":
		return &b.Pos
	case "row":
		return &b.Row
	case "lsn":
		return &b.LSN
	case "sequence":
		return &b.Sequence
	}
	return nil
}

// FieldOf classifies a value hamba decoded (a union left wrapped, such as
// {"string": "x"}, is unwrapped first).
func FieldOf(v any, present bool) Field {
	if !present {
		return Field{}
	}
	switch x := unwrapSingle(v).(type) {
	case nil:
		return Field{Kind: Null}
	case int:
		return Field{Kind: Int, Int: int64(x)}
	case int32:
		return Field{Kind: Int, Int: int64(x)}
	case int64:
		return Field{Kind: Int, Int: x}
	case string:
		return Field{Kind: String, Str: x}
	case bool:
		return Field{Kind: Bool, Bool: x}
	}
	return Field{Kind: Other}
}

func (f Field) String() string {
	switch f.Kind {
	case Null:
		return "null"
	case Int:
		return strconv.FormatInt(f.Int, 10)
	case String:
		return f.Str
	case Bool:
		return strconv.FormatBool(f.Bool)
	}
	return "a value of another type"
}

// Seq is a change sequence by its sections (see sequence.go for the
// layouts); the zero Seq is no sequence.
type Seq struct {
	n        int
	sections [maxSections]uint64
}

func seqOf(sections ...uint64) Seq {
	var q Seq
	q.n = copy(q.sections[:], sections)
	return q
}

// IsZero reports whether q is no sequence.
func (q Seq) IsZero() bool { return q.n == 0 }

// Len is the length of q's text.
func (q Seq) Len() int {
	if q.n == 0 {
		return 0
	}
	return q.n*(sectionWidth+1) - 1
}

// AppendTo appends q's text, 16 upper-case hex digits a section.
func (q Seq) AppendTo(dst []byte) []byte {
	const hex = "0123456789ABCDEF"
	for i := range q.n {
		if i > 0 {
			dst = append(dst, '/')
		}
		v := q.sections[i]
		for sh := 60; sh >= 0; sh -= 4 {
			dst = append(dst, hex[v>>uint(sh)&0xf])
		}
	}
	return dst
}

// String is q's text ("" for no sequence).
func (q Seq) String() string {
	if q.n == 0 {
		return ""
	}
	return string(q.AppendTo(make([]byte, 0, q.n*(sectionWidth+1))))
}

// TimestampSeq is TimestampSequence as a Seq.
func TimestampSeq(t time.Time) Seq {
	us := t.UnixMicro()
	if us < 0 {
		us = 0
	}
	return seqOf(uint64(us))
}

// Position reads a source block: the change time and, for the connectors
// whose log position cdc knows (mysql, mariadb, postgresql), a sequence
// from that position.
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
func Position(b *SourceBlock, op Op) (time.Time, Seq, error) {
	ts, err := b.time()
	if err != nil {
		return time.Time{}, Seq{}, err
	}
	kind := snapshotKindOf(op, b.Snapshot)
	if c := b.logConnector(); c != "" {
		switch c {
		case "mysql", "mariadb":
			q, err := binlogPosition(b, kind)
			if err != nil {
				return time.Time{}, Seq{}, fmt.Errorf("%s change without a usable source position: parsing binlog position: %w", c, err)
			}
			return ts, q, nil
		case "postgresql":
			q, err := postgresPosition(b, kind)
			if err != nil {
				return time.Time{}, Seq{}, fmt.Errorf("%s change without a usable source position: parsing LSN: %w", c, err)
			}
			return ts, q, nil
		}
	}
	if ts.IsZero() {
		return ts, Seq{}, nil
	}
	return ts, TimestampSeq(ts), nil
}

// logConnector is the block's connector when cdc reads its log position
// ("mysql", "mariadb" or "postgresql"), else "". Debezium writes the names
// in lower case; MySQL or PostgreSQL cased otherwise (a fork, a hand-built
// record) is the same connector, whose changes must not get the timestamp
// layout, which sorts after every log position.
func (b *SourceBlock) logConnector() string {
	if b.Connector.Kind != String {
		return ""
	}
	c := b.Connector.Str
	if !isLowerASCII(c) {
		c = strings.ToLower(c)
	}
	switch c {
	case "mysql", "mariadb", "postgresql":
		return c
	}
	return ""
}

// EnvelopeTime is the envelope's ts_ms (Debezium's processing time), the
// change time of a record whose source block gives none.
func EnvelopeTime(tsMs Field) (time.Time, error) {
	if tsMs.Kind != Int {
		return time.Time{}, nil
	}
	return timestampMillis("ts_ms", tsMs.Int)
}

// time reads the most precise of source.ts_us, ts_ns and ts_ms.
func (b *SourceBlock) time() (time.Time, error) {
	if b.TsUs.Kind == Int {
		return timestampMicros("source.ts_us", b.TsUs.Int)
	}
	if b.TsNs.Kind == Int {
		// int64 nanoseconds span 1677 to 2262, inside BigQuery's range.
		return time.Unix(0, b.TsNs.Int).UTC(), nil
	}
	if b.TsMs.Kind == Int {
		return timestampMillis("source.ts_ms", b.TsMs.Int)
	}
	return time.Time{}, nil
}

// snapshotKindOf classifies a change by its op and source.snapshot. Only op r
// is a read: Debezium emits nothing else from a snapshot.
func snapshotKindOf(op Op, snapshot Field) snapshotKind {
	if op != OpRead {
		return streamed
	}
	switch snapshot.Kind {
	case String:
		s := snapshot.Str
		if !isLowerASCII(s) {
			s = strings.ToLower(s)
		}
		switch s {
		case "true", "first", "first_in_data_collection", "last_in_data_collection", "last":
			return fullSnapshot
		}
	case Bool:
		if snapshot.Bool {
			return fullSnapshot
		}
	}
	return incrementalSnapshot
}

func isLowerASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x80 || ('A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

// binlogPosition: see BinlogSequence and the notes on source.gtid in
// source.go.
func binlogPosition(b *SourceBlock, kind snapshotKind) (Seq, error) {
	if b.File.Kind != String {
		return Seq{}, errors.New("source.file is missing")
	}
	idx, err := BinlogFileIndex(b.File.Str)
	if err != nil {
		return Seq{}, err
	}
	if b.Pos.Kind != Int {
		return Seq{}, errors.New("source.pos is missing")
	}
	if b.Pos.Int < 0 {
		return Seq{}, fmt.Errorf("source.pos %d is negative", b.Pos.Int)
	}
	// source.row numbers the rows of one multi-row event; Debezium always
	// writes it, and a block without it is taken as the event's first row.
	var row int64
	switch b.Row.Kind {
	case Absent, Null:
	case Int:
		if row = b.Row.Int; row < 0 {
			return Seq{}, fmt.Errorf("source.row %d is negative", row)
		}
	default:
		return Seq{}, fmt.Errorf("source.row %v is not an integer", b.Row)
	}
	return seqOf(idx, uint64(b.Pos.Int), uint64(row), uint64(kind.phase())), nil
}

// postgresPosition: see the notes on PostgreSQL ordering in source.go.
func postgresPosition(b *SourceBlock, kind snapshotKind) (Seq, error) {
	var lsn uint64
	hasLSN := false
	switch b.LSN.Kind {
	case Absent, Null:
	case Int:
		if b.LSN.Int < 0 {
			return Seq{}, fmt.Errorf("source.lsn %d is negative", b.LSN.Int)
		}
		lsn, hasLSN = uint64(b.LSN.Int), true
	default:
		return Seq{}, fmt.Errorf("source.lsn %v is not an integer", b.LSN)
	}
	commit, at, hasAt, hasSeq, err := debeziumSequence(b.Sequence)
	if err != nil {
		return Seq{}, fmt.Errorf("parsing source.sequence: %w", err)
	}
	if !hasSeq {
		if !hasLSN {
			return Seq{}, errors.New("neither source.sequence nor source.lsn is set")
		}
		return seqOf(lsn), nil
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
	return seqOf(commit, at, uint64(kind.phase())), nil
}

// debeziumSequence parses PostgreSQL's source.sequence, a JSON array of two
// decimal strings or nulls: the last commit LSN (null counts as 0) and the
// change's LSN (hasLSN false when null). present is false when the field is
// absent or null; a value that is not such an array, or a number past
// 2^64-1, is an error rather than silently ignored. The usual spelling is
// read without allocating; anything else goes through encoding/json.
func debeziumSequence(v Field) (lastCommit, lsn uint64, hasLSN, present bool, err error) {
	switch v.Kind {
	case Absent, Null:
		return 0, 0, false, false, nil
	case String:
	default:
		return 0, 0, false, false, fmt.Errorf("%v is not a string", v)
	}
	s := v.Str
	if a, b, hasB, ok, sure := quickPair(s); sure && ok {
		return a, b, hasB, true, nil
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
		x, err := strconv.ParseUint(*p, 10, 64)
		if err != nil {
			return 0, 0, false, false, fmt.Errorf("element %d: %w", i, err)
		}
		n[i] = x
	}
	return n[0], n[1], pair[1] != nil, true, nil
}

// quickPair reads `[e,e]` where each e is null or a quoted run of decimal
// digits; ok is false when a number exceeds 2^64-1. sure is false for any
// other text, which encoding/json then decides.
func quickPair(s string) (a, b uint64, hasB, ok, sure bool) {
	i := 0
	elem := func() (uint64, bool, bool, bool) { // value, present, valid, sure
		if len(s)-i >= 4 && s[i:i+4] == "null" {
			i += 4
			return 0, false, true, true
		}
		if i >= len(s) || s[i] != '"' {
			return 0, false, false, false
		}
		i++
		start := i
		var n uint64
		valid := true
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			d := uint64(s[i] - '0')
			if n > (1<<64-1-d)/10 {
				valid = false
			}
			n = n*10 + d
			i++
		}
		if i == start || i >= len(s) || s[i] != '"' {
			return 0, false, false, false
		}
		i++
		return n, true, valid, true
	}
	if len(s) < 2 || s[0] != '[' {
		return 0, 0, false, false, false
	}
	i = 1
	a, _, va, sa := elem()
	if !sa || i >= len(s) || s[i] != ',' {
		return 0, 0, false, false, false
	}
	i++
	b, hasB, vb, sb := elem()
	if !sb || i != len(s)-1 || s[i] != ']' {
		return 0, 0, false, false, false
	}
	if !va || !vb {
		return 0, 0, false, false, true
	}
	return a, b, hasB, true, true
}
