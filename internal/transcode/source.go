package transcode

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/hamba/avro/v2"
)

// The Debezium source and transaction blocks are read the way package cdc
// reads them from hamba's map: a few fields by name, each taken only when
// it decoded to the Go type cdc asks for (an int, int32 or int64 for
// asInt; a string for asString; a string or bool for source.snapshot).
// A probe compiles that question per union branch, so the payload's scalar
// is kept only when the generic path would have used it.

type skind uint8

const (
	skNone   skind = iota // absent, NULL or of a type cdc ignores
	skInt                 // asInt succeeds
	skString              // asString succeeds
	skBool
)

type scalar struct {
	kind skind
	i    int64
	s    []byte
	b    bool
}

func (s scalar) str() string { return unsafe.String(unsafe.SliceData(s.s), len(s.s)) }

// probe reads one field of a block into a scalar slot.
type probe struct {
	slot  int // -1: skip the field
	n     *node
	kinds []skind // by union branch (one entry when not a union)
}

func kindOf(n *node) skind {
	switch n.form {
	case fInt, fLong:
		return skInt
	case fString, fEnum:
		return skString
	case fBool:
		return skBool
	}
	return skNone
}

// newProbe compiles the read of field s into slot. cdc unwraps any
// one-entry map (its unwrapSingle), which would make a one-field record
// or a map look like its content; such fields are left to the generic
// path.
func newProbe(s avro.Schema, slot int) (probe, error) {
	n := skipNode(s, map[*avro.RecordSchema]*node{})
	p := probe{slot: slot, n: n}
	if n.dec == dUnion {
		for _, b := range n.branches {
			p.kinds = append(p.kinds, kindOf(b))
		}
		return p, nil
	}
	if n.dec == dMap || (n.dec == dRecord && len(n.fields) == 1) {
		return p, unsupported("a Debezium block field of type %s", n.dec)
	}
	p.kinds = []skind{kindOf(n)}
	return p, nil
}

func (r *reader) probe(p *probe, out *scalar) error {
	n, k := p.n, p.kinds[0]
	if n.dec == dUnion {
		i, err := r.index(len(n.branches), errBranch)
		if err != nil {
			return err
		}
		n, k = n.branches[i], p.kinds[i]
	}
	*out = scalar{}
	var err error
	switch {
	case k == skNone:
		return r.skip(n)
	case n.dec == dInt:
		var v int32
		v, err = r.int()
		*out = scalar{kind: skInt, i: int64(v)}
	case n.dec == dLong:
		out.i, err = r.long()
		out.kind = skInt
	case n.dec == dBytes:
		out.s, err = r.bytes()
		out.kind = skString
	case n.dec == dEnum:
		var i int
		i, err = r.index(n.size, errSymbol)
		if err == nil {
			*out = scalar{kind: skString, s: unsafe.Slice(unsafe.StringData(n.symbols[i]), len(n.symbols[i]))}
		}
	case n.dec == dBool:
		out.b, err = r.bool()
		out.kind = skBool
	default:
		return r.skip(n)
	}
	return err
}

// Scalar slots of the source and transaction blocks.
const (
	srcTsUs = iota
	srcTsNs
	srcTsMs
	srcSnapshot
	srcConnector
	srcFile
	srcPos
	srcRow
	srcLsn
	srcSequence
	txID
	txTotal
	txPerTable
	envTsMs
	nSlots
)

var sourceSlots = map[string]int{
	"ts_us": srcTsUs, "ts_ns": srcTsNs, "ts_ms": srcTsMs, "snapshot": srcSnapshot, "connector": srcConnector,
	"file": srcFile, "pos": srcPos, "row": srcRow, "lsn": srcLsn, "sequence": srcSequence,
}

var txSlots = map[string]int{"id": txID, "total_order": txTotal, "data_collection_order": txPerTable}

// seq is a change sequence as its sections (cdc.EncodeSections).
type seq struct {
	n int
	s [4]uint64
}

func timestampSeq(t time.Time) seq {
	us := t.UnixMicro()
	if us < 0 {
		us = 0
	}
	return seq{n: 1, s: [4]uint64{uint64(us)}}
}

func appendSeq(dst []byte, q seq) []byte {
	const hex = "0123456789ABCDEF"
	for i := range q.n {
		if i > 0 {
			dst = append(dst, '/')
		}
		v := q.s[i]
		for sh := 60; sh >= 0; sh -= 4 {
			dst = append(dst, hex[v>>uint(sh)&0xf])
		}
	}
	return dst
}

// sourcePosition is cdc's, on scalars.
func sourcePosition(src *[nSlots]scalar, read bool) (time.Time, seq) {
	ts := sourceTime(src)
	full := read && fullSnapshot(src[srcSnapshot])
	phase := uint64(1)
	if read {
		phase = 0
	}
	var q seq
	if c := src[srcConnector]; c.kind == skString {
		switch c.str() {
		case "mysql", "mariadb":
			q = binlogPosition(src, phase)
		case "postgresql":
			q = postgresPosition(src, full, phase)
		}
	}
	if q.n == 0 && !ts.IsZero() {
		q = timestampSeq(ts)
	}
	return ts, q
}

func sourceTime(src *[nSlots]scalar) time.Time {
	if v := src[srcTsUs]; v.kind == skInt {
		return time.UnixMicro(v.i).UTC()
	}
	if v := src[srcTsNs]; v.kind == skInt {
		return time.Unix(0, v.i).UTC()
	}
	if v := src[srcTsMs]; v.kind == skInt {
		return time.UnixMilli(v.i).UTC()
	}
	return time.Time{}
}

// fullSnapshot is cdc's snapshotKindOf for an op r.
func fullSnapshot(v scalar) bool {
	switch v.kind {
	case skString:
		s := v.str()
		if !isLowerASCII(s) {
			s = strings.ToLower(s)
		}
		switch s {
		case "true", "first", "first_in_data_collection", "last_in_data_collection", "last":
			return true
		}
	case skBool:
		return v.b
	}
	return false
}

func isLowerASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x80 || ('A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

func binlogPosition(src *[nSlots]scalar, phase uint64) seq {
	file, pos := src[srcFile], src[srcPos]
	if file.kind != skString {
		return seq{}
	}
	idx, ok := binlogFileIndex(file.s)
	if !ok || pos.kind != skInt || pos.i < 0 {
		return seq{}
	}
	row := src[srcRow]
	r := row.i
	if row.kind != skInt || r < 0 {
		r = 0
	}
	return seq{n: 4, s: [4]uint64{idx, uint64(pos.i), uint64(r), phase}}
}

// binlogFileIndex is cdc.BinlogFileIndex: the digits after the last '.'.
func binlogFileIndex(file []byte) (uint64, bool) {
	digits := file
	for i := len(file) - 1; i >= 0; i-- {
		if file[i] == '.' {
			digits = file[i+1:]
			break
		}
	}
	if len(digits) == 0 {
		return 0, false
	}
	var n uint64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	return n, true
}

func postgresPosition(src *[nSlots]scalar, full bool, phase uint64) seq {
	lsnV := src[srcLsn]
	okLSN := lsnV.kind == skInt && lsnV.i >= 0
	commit, at, hasAt, ok := debeziumSequence(src[srcSequence])
	if !ok {
		if !okLSN {
			return seq{}
		}
		return seq{n: 1, s: [4]uint64{uint64(lsnV.i)}}
	}
	switch {
	case full:
		at = 0
	case !hasAt && okLSN:
		at = uint64(lsnV.i)
	case !hasAt:
		at = 0
	}
	return seq{n: 3, s: [4]uint64{commit, at, phase}}
}

// debeziumSequence parses source.sequence, ["lastCommitLsn","lsn"]. The
// common spelling (two quoted digit strings or nulls, no spaces) is read
// without allocating; anything else goes through json.Unmarshal as cdc
// does, so unusual spellings decide the same way.
func debeziumSequence(v scalar) (lastCommit, lsn uint64, hasLSN, ok bool) {
	if v.kind != skString || len(v.s) == 0 {
		return 0, 0, false, false
	}
	if a, b, hasB, ok, sure := quickPair(v.s); sure {
		return a, b, hasB, ok
	}
	var pair []*string
	if err := json.Unmarshal(v.s, &pair); err != nil || len(pair) != 2 {
		return 0, 0, false, false
	}
	var n [2]uint64
	for i, p := range pair {
		if p == nil {
			continue
		}
		x, err := strconv.ParseUint(*p, 10, 64)
		if err != nil {
			return 0, 0, false, false
		}
		n[i] = x
	}
	return n[0], n[1], pair[1] != nil, true
}

// quickPair reads `[e,e]` where each e is null or a quoted run of digits.
// sure is false for any other text.
func quickPair(s []byte) (a, b uint64, hasB, ok, sure bool) {
	i := 0
	elem := func() (uint64, bool, bool, bool) { // value, present, valid, sure
		if len(s)-i >= 4 && string(s[i:i+4]) == "null" {
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
				valid = false // ParseUint: value out of range
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
