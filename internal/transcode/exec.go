package transcode

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"github.com/bqcdc/bqcdc/internal/failure"
	"github.com/bqcdc/bqcdc/internal/limits"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// vkind is the Go type of a canonical BigQuery value (see package avrobq).
type vkind uint8

const (
	vNull  vkind = iota
	vInt         // int64: INT64, TIMESTAMP
	vInt32       // int32: DATE
	vFloat       // float64
	vBool
	vString // string: STRING, JSON, NUMERIC, BIGNUMERIC, DATETIME, TIME
	vBytes
)

// val is one canonical value; b points into the payload or the state's
// scratch and is valid until the next value is converted.
type val struct {
	k   vkind
	i   int64
	f   float64
	b   []byte
	err error // the conversion failed: the value is not stored
}

// span is a range of a level's buffer.
type span struct{ start, end int32 }

// level holds the encoded fields of the record being converted at one
// nesting depth: each field's bytes (tag included) and where they are, by
// the field's slot in the table message, so that they can be put in field
// number order once the record is read.
type level struct {
	buf   []byte
	spans []span
}

// state is the per-call scratch of Append, pooled.
type state struct {
	levels  []level
	tmp     []byte // the text of a converted value
	convErr error  // the first conversion error of the image
	encErr  error  // the first encoding error of a fallback column
	dropped int
	src     [nSlots]scalar
}

// maxLevels bounds the nesting of records (avrobq allows 15 levels; array
// items add none). The levels are allocated once, so that a pointer to a
// parent level stays valid while a child level is written.
const maxLevels = 2*maxDepth + 2

func newState() *state { return &state{levels: make([]level, maxLevels)} }

func (st *state) level(d, slots int) *level {
	lv := &st.levels[d]
	lv.buf = lv.buf[:0]
	if cap(lv.spans) < slots {
		lv.spans = make([]span, slots)
	}
	lv.spans = lv.spans[:slots]
	clear(lv.spans)
	return lv
}

func (st *state) fail(f *field, err error) {
	st.failed(fmt.Errorf("column %q: %w", f.name, err))
}

// failed records err, which names its column, as the image's conversion
// error unless an earlier column failed.
func (st *state) failed(err error) {
	if st.convErr == nil {
		st.convErr = err
	}
}

// record converts the fields of a record value into level d. Fields go
// where their out says; a record whose plan is nil (its column is not in
// the table) is converted for its errors only.
func (st *state) record(r *reader, n *node, d int) error {
	var lv *level
	if n.rec != nil {
		lv = st.level(d, n.rec.slots)
	}
	for i := range n.fields {
		if err := st.column(r, &n.fields[i], lv, d); err != nil {
			return err
		}
	}
	return nil
}

// column reads and converts one field value. Decode errors are returned;
// conversion errors are recorded (the first one wins, as in avrobq's
// in-order Convert) and reading goes on, because the generic path decodes
// the whole payload before converting anything, so a later decode error
// takes precedence over a conversion error.
func (st *state) column(r *reader, f *field, lv *level, d int) error {
	n := f.n
	if n.conv == cFallback {
		return st.generic(r, f, lv)
	}
	if n.dec == dUnion {
		i, err := r.index(len(n.branches), errBranch)
		if err != nil {
			return err
		}
		n = n.branches[i]
	}
	o := f.out
	if lv == nil {
		o = nil
	}
	switch n.conv {
	case cNull:
		return nil
	case cRecord:
		if f.countDrop {
			st.dropped++
		}
		if o == nil {
			return st.record(r, n, d+1)
		}
		start := len(lv.buf)
		if err := st.record(r, n, d+1); err != nil {
			return err
		}
		lv.buf = st.appendMessage(lv.buf, o, n.rec, d+1)
		lv.spans[o.slot] = span{int32(start), int32(len(lv.buf))}
		return nil
	case cArray:
		if f.countDrop {
			st.dropped++
		}
		return st.array(r, f, n, o, lv, d)
	}
	v, err := st.leaf(r, n)
	if err != nil {
		return err
	}
	if v.err != nil {
		st.fail(f, v.err)
		return nil
	}
	if f.countDrop {
		st.dropped++
	}
	if o == nil {
		return nil
	}
	if v, err = st.promote(v, o.prom); err != nil {
		st.fail(f, err)
		return nil
	}
	start := len(lv.buf)
	lv.buf = appendValue(lv.buf, o, v)
	lv.spans[o.slot] = span{int32(start), int32(len(lv.buf))}
	return nil
}

// array converts the items of an array column. BigQuery arrays cannot hold
// NULL, so a NULL item is a conversion error, as in avrobq.
func (st *state) array(r *reader, f *field, n *node, o *outField, lv *level, d int) error {
	start := -1
	if o != nil {
		start = len(lv.buf)
	}
	var p packing
	items, count := n.items, 0
	cost := limits.ItemCost + limits.ExpansionCost*items.expansion
	for {
		c, err := r.block(items.minSize, cost, "array block")
		if err != nil {
			return err
		}
		if c == 0 {
			break
		}
		for range c {
			if err := r.budget.Tick(); err != nil {
				return err
			}
			if err := st.element(r, f, items, o, lv, d, count, &p); err != nil {
				return err
			}
			count++
		}
	}
	if o == nil || start < 0 {
		return nil
	}
	if p.begun {
		lv.buf = endLen(lv.buf, p.mark)
	}
	if len(lv.buf) > start {
		lv.spans[o.slot] = span{int32(start), int32(len(lv.buf))}
	}
	return nil
}

// packing is a packed repeated field being written: begun once its tag
// and length (at mark) are.
type packing struct {
	begun bool
	mark  int
}

// element converts element idx of an array of in into o (nil: read and
// dropped); a bad value fails field f, not the message.
func (st *state) element(r *reader, f *field, in *node, o *outField, lv *level, d, idx int, p *packing) error {
	if in.dec == dUnion {
		i, err := r.index(len(in.branches), errBranch)
		if err != nil {
			return err
		}
		in = in.branches[i]
	}
	switch in.conv {
	case cNull:
		st.fail(f, valueErr("element %d is NULL and BigQuery arrays cannot hold NULL", idx))
		return nil
	case cRecord:
		if err := st.record(r, in, d+1); err != nil || o == nil {
			return err
		}
		lv.buf = st.appendMessage(lv.buf, o, in.rec, d+1)
		return nil
	}
	v, err := st.leaf(r, in)
	if err != nil {
		return err
	}
	if v.err != nil {
		st.fail(f, fmt.Errorf("element %d: %w", idx, v.err))
		return nil
	}
	if o == nil {
		return nil
	}
	if v, err = st.promote(v, o.prom); err != nil {
		st.fail(f, fmt.Errorf("element %d: %w", idx, err))
		return nil
	}
	if !o.packed {
		lv.buf = appendValue(lv.buf, o, v)
		return nil
	}
	if !p.begun {
		lv.buf = protowire.AppendTag(lv.buf, o.num, protowire.BytesType)
		lv.buf, p.mark = beginLen(lv.buf)
		p.begun = true
	}
	lv.buf = appendScalar(lv.buf, o.kind, v)
	return nil
}

// appendMessage writes the record converted at level d as field o of the
// level above: tag, length, and its fields in field number order.
func (st *state) appendMessage(dst []byte, o *outField, rp *recordPlan, d int) []byte {
	lv := &st.levels[d]
	dst = protowire.AppendTag(dst, o.num, protowire.BytesType)
	size := 0
	for _, slot := range rp.order {
		sp := lv.spans[slot]
		size += int(sp.end - sp.start)
	}
	dst = protowire.AppendVarint(dst, uint64(size))
	for _, slot := range rp.order {
		sp := lv.spans[slot]
		dst = append(dst, lv.buf[sp.start:sp.end]...)
	}
	return dst
}

// beginLen reserves one byte for a length that endLen fills in, moving
// the content when the length needs more bytes.
func beginLen(b []byte) ([]byte, int) { return append(b, 0), len(b) + 1 }

func endLen(b []byte, mark int) []byte {
	n := len(b) - mark
	if n < 0x80 {
		b[mark-1] = byte(n)
		return b
	}
	w := protowire.SizeVarint(uint64(n))
	b = append(b, make([]byte, w-1)...)
	copy(b[mark-1+w:], b[mark:mark+n])
	protowire.AppendVarint(b[:mark-1], uint64(n))
	return b
}

func appendScalar(b []byte, k protoreflect.Kind, v val) []byte {
	switch k {
	case protoreflect.Int64Kind:
		return protowire.AppendVarint(b, uint64(v.i))
	case protoreflect.Int32Kind:
		return protowire.AppendVarint(b, uint64(int64(int32(v.i))))
	case protoreflect.DoubleKind:
		return protowire.AppendFixed64(b, math.Float64bits(v.f))
	case protoreflect.BoolKind:
		return protowire.AppendVarint(b, protowire.EncodeBool(v.i != 0))
	}
	return protowire.AppendBytes(b, v.b)
}

func appendValue(b []byte, o *outField, v val) []byte {
	b = append(b, o.tag...)
	return appendScalar(b, o.kind, v)
}

// promote applies evolve's lossless promotion of a writer value into a
// table column of another type.
func (st *state) promote(v val, p prom) (val, error) {
	switch p {
	case pIntToFloat:
		return val{k: vFloat, f: float64(v.i)}, nil
	case pIntToDecimal:
		st.tmp = strconv.AppendInt(st.tmp[:0], v.i, 10)
		return val{k: vString, b: st.tmp}, nil
	case pStringToBytes:
		return val{k: vBytes, b: v.b}, nil
	case pBytesToString:
		if !utf8.Valid(v.b) {
			return v, fmt.Errorf("bytes are not valid UTF-8 for a STRING column")
		}
		return val{k: vString, b: v.b}, nil
	}
	return v, nil
}

// errVal is a value whose conversion failed.
func errVal(err error) val { return val{k: vNull, err: err} }

// leaf reads and converts one scalar value.
func (st *state) leaf(r *reader, n *node) (val, error) {
	switch n.conv {
	case cBool:
		b, err := r.bool()
		v := val{k: vBool}
		if b {
			v.i = 1
		}
		return v, err
	case cInt:
		i, err := st.integer(r, n)
		return val{k: vInt, i: i}, err
	case cFloat:
		if n.dec == dFloat {
			f, err := r.float()
			return val{k: vFloat, f: float64(f)}, err
		}
		f, err := r.double()
		return val{k: vFloat, f: f}, err
	case cString, cJSONText, cZonedTS, cZonedTime, cUUID:
		return st.text(r, n)
	case cBytes, cBit, cBits:
		return st.binary(r, n)
	case cDate, cTime, cDatetime, cTimestamp:
		i, err := st.integer(r, n)
		if err != nil {
			return val{}, err
		}
		return st.temporal(i, n), nil
	case cDecimal:
		return st.decimal(r, n)
	case cVSD:
		return st.vsd(r, n)
	}
	return val{}, fmt.Errorf("transcode: conversion %d is not a leaf", n.conv)
}

// integer reads an int or long.
func (st *state) integer(r *reader, n *node) (int64, error) {
	if n.dec == dInt {
		i, err := r.int()
		return int64(i), err
	}
	return r.long()
}

func (st *state) text(r *reader, n *node) (val, error) {
	var b []byte
	var err error
	switch n.dec {
	case dEnum:
		var i int
		if i, err = r.index(n.size, errSymbol); err != nil {
			return val{}, err
		}
		s := n.symbols[i]
		b = unsafe.Slice(unsafe.StringData(s), len(s))
	case dFixed: // uuid fixed(16)
		if b, err = r.fixed(n.size); err != nil {
			return val{}, err
		}
		st.tmp = appendUUID(st.tmp[:0], b)
		return val{k: vString, b: st.tmp}, nil
	default:
		if b, err = r.bytesOf(n); err != nil {
			return val{}, err
		}
	}
	switch n.conv {
	case cJSONText:
		if !json.Valid(b) {
			return errVal(valueErr("not valid JSON: %.60q", failure.Value(b))), nil
		}
	case cZonedTS:
		s := unsafe.String(unsafe.SliceData(b), len(b))
		t, perr := parseOffset(s, zonedTimestampLayout, zonedTimestampLayoutSec)
		if perr != nil {
			return errVal(valueErr("parsing zoned timestamp %q: %v", failure.Value(s), failure.Value(perr))), nil
		}
		m, cerr := microsOfTime(t)
		if cerr != nil {
			return errVal(cerr), nil
		}
		return val{k: vInt, i: m}, nil
	case cZonedTime:
		s := unsafe.String(unsafe.SliceData(b), len(b))
		t, perr := parseOffset(s, zonedTimeLayout, zonedTimeLayoutSec)
		if perr != nil {
			return errVal(valueErr("parsing zoned time %q: %v", failure.Value(s), failure.Value(perr))), nil
		}
		u := t.UTC()
		st.tmp = appendTimeOfDay(st.tmp[:0], int64(u.Hour()*3600+u.Minute()*60+u.Second())*1e6+int64(u.Nanosecond()/1e3))
		return val{k: vString, b: st.tmp}, nil
	}
	return val{k: vString, b: b}, nil
}

func (st *state) binary(r *reader, n *node) (val, error) {
	b, err := r.fixedOrBytes(n)
	if err != nil {
		return val{}, err
	}
	switch n.conv {
	case cBit:
		v := val{k: vBool}
		if len(b) > 0 && b[0]&1 != 0 {
			v.i = 1
		}
		return v, nil
	case cBits:
		want := (n.bits + 7) / 8
		if n.bits >= 0 && len(b) < want {
			st.tmp = append(st.tmp[:0], b...)
			for len(st.tmp) < want {
				st.tmp = append(st.tmp, 0)
			}
			return val{k: vBytes, b: st.tmp}, nil
		}
	}
	return val{k: vBytes, b: b}, nil
}

// temporal converts a DATE, TIME, DATETIME or TIMESTAMP count. A count
// BigQuery cannot hold fails the value (errVal), not the read.
func (st *state) temporal(i int64, n *node) val {
	switch n.conv {
	case cDate:
		d, err := days(i)
		if err != nil {
			return errVal(err)
		}
		return val{k: vInt32, i: int64(d)}
	case cTime:
		m, err := timeOfDayMicros(i, n)
		if err != nil {
			return errVal(err)
		}
		st.tmp = appendTimeOfDay(st.tmp[:0], m)
		return val{k: vString, b: st.tmp}
	}
	m, err := instantMicros(i, n)
	if err != nil {
		return errVal(err)
	}
	if n.conv == cTimestamp {
		return val{k: vInt, i: m}
	}
	st.tmp = appendDatetime(st.tmp[:0], m)
	return val{k: vString, b: st.tmp}
}

func (st *state) decimal(r *reader, n *node) (val, error) {
	b, err := r.fixedOrBytes(n)
	if err != nil {
		return val{}, err
	}
	var cerr error
	st.tmp, cerr = appendDecimal(st.tmp[:0], b, n.dec10.scale, n.dec10)
	if cerr != nil {
		return errVal(cerr), nil
	}
	return val{k: vString, b: st.tmp}, nil
}

// vsd converts io.debezium.data.VariableScaleDecimal {scale, value}.
func (st *state) vsd(r *reader, n *node) (val, error) {
	var scale int64
	var b []byte
	for i := range n.fields {
		fn := n.fields[i].n
		var err error
		switch i {
		case n.vsdIdx[0]:
			scale, err = st.integer(r, fn)
		case n.vsdIdx[1]:
			b, err = r.bytes("bytes")
		default:
			err = r.skip(fn)
		}
		if err != nil {
			return val{}, err
		}
	}
	if err := r.chargeScale(scale); err != nil {
		return val{}, err
	}
	if scale > limits.MaxVariableScale || scale < -limits.MaxVariableScale {
		return errVal(valueErr("VariableScaleDecimal scale %d is beyond the %d a source writes (PostgreSQL's largest NUMERIC display scale)", scale, limits.MaxVariableScale)), nil
	}
	var cerr error
	st.tmp, cerr = appendDecimal(st.tmp[:0], b, int(scale), n.dec10)
	if cerr != nil {
		return errVal(cerr), nil
	}
	return val{k: vString, b: st.tmp}, nil
}
