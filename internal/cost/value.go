package cost

import (
	"fmt"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/bqcdc/bqcdc/internal/schema"
)

type vkind int

const (
	vNull vkind = iota
	vInt
	vFloat
	vNumeric
	vString
	vBytes
	vBool
	vDate      // days since 1970-01-01
	vDatetime  // microseconds since 1970-01-01 00:00:00, civil
	vTime      // microseconds since midnight
	vTimestamp // microseconds since the Unix epoch
)

// A Value is a constant of a column: a block's clustering bounds, or a
// literal of a statement. The zero Value is NULL.
type Value struct {
	k vkind
	i int64
	f float64
	r *big.Rat
	s string
}

// Null is the NULL value.
var Null = Value{}

// Int is an INT64 value.
func Int(n int64) Value { return Value{k: vInt, i: n} }

// Float is a FLOAT64 value.
func Float(f float64) Value { return Value{k: vFloat, f: f} }

// Numeric is a NUMERIC or BIGNUMERIC value.
func Numeric(r *big.Rat) Value { return Value{k: vNumeric, r: new(big.Rat).Set(r)} }

// String is a STRING value.
func String(s string) Value { return Value{k: vString, s: s} }

// Bytes is a BYTES value.
func Bytes(b []byte) Value { return Value{k: vBytes, s: string(b)} }

// Bool is a BOOL value.
func Bool(b bool) Value {
	if b {
		return Value{k: vBool, i: 1}
	}
	return Value{k: vBool}
}

// Timestamp is a TIMESTAMP value (microsecond precision, as BigQuery's).
func Timestamp(t time.Time) Value { return Value{k: vTimestamp, i: t.UnixMicro()} }

// Date is a DATE value: the day of t in UTC.
func Date(t time.Time) Value { return Value{k: vDate, i: floorDiv(t.UTC().Unix(), 86400)} }

// IsNull reports whether v is NULL.
func (v Value) IsNull() bool { return v.k == vNull }

func (v Value) String() string {
	switch v.k {
	case vNull:
		return "NULL"
	case vInt:
		return strconv.FormatInt(v.i, 10)
	case vFloat:
		return strconv.FormatFloat(v.f, 'g', -1, 64)
	case vNumeric:
		return "NUMERIC '" + v.r.FloatString(9) + "'"
	case vString:
		return strconv.Quote(v.s)
	case vBytes:
		return fmt.Sprintf("b%q", v.s)
	case vBool:
		return strconv.FormatBool(v.i == 1)
	case vDate:
		return "DATE '" + time.Unix(v.i*86400, 0).UTC().Format("2006-01-02") + "'"
	case vDatetime:
		return "DATETIME '" + time.UnixMicro(v.i).UTC().Format("2006-01-02 15:04:05.999999") + "'"
	case vTime:
		return fmt.Sprintf("TIME %d us", v.i)
	case vTimestamp:
		return "TIMESTAMP '" + time.UnixMicro(v.i).UTC().Format("2006-01-02 15:04:05.999999") + " UTC'"
	}
	return "?"
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func (v Value) rat() *big.Rat {
	switch v.k {
	case vInt:
		return new(big.Rat).SetInt64(v.i)
	case vFloat:
		r, ok := new(big.Rat).SetString(strconv.FormatFloat(v.f, 'g', -1, 64))
		if ok {
			return r
		}
	case vNumeric:
		return v.r
	}
	return nil
}

// compare orders two non-NULL values; ok is false when they are of types
// BigQuery would not compare (or that this model does not).
func compare(a, b Value) (c int, ok bool) {
	if a.k == b.k {
		switch a.k {
		case vInt, vBool, vDate, vDatetime, vTime, vTimestamp:
			return cmpInt(a.i, b.i), true
		case vFloat:
			switch {
			case a.f < b.f:
				return -1, true
			case a.f > b.f:
				return 1, true
			}
			return 0, true
		case vNumeric:
			return a.r.Cmp(b.r), true
		case vString, vBytes:
			return strings.Compare(a.s, b.s), true
		}
		return 0, false
	}
	if ra, rb := a.rat(), b.rat(); ra != nil && rb != nil {
		return ra.Cmp(rb), true
	}
	return 0, false
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// coerce converts a literal to the type of a column compared with it, as
// BigQuery coerces a string literal compared with a date or time column.
func coerce(v Value, colType string) (Value, bool) {
	if v.k != vString {
		return v, true
	}
	switch colType {
	case schema.Timestamp:
		return parseTimestamp(v.s)
	case schema.Date:
		return parseDate(v.s)
	case schema.Datetime:
		return parseDatetime(v.s)
	case schema.Time:
		return parseTime(v.s)
	}
	return v, true
}

func parseTimestamp(s string) (Value, bool) {
	s = strings.TrimSpace(s)
	for _, suffix := range []string{" UTC", " Z", "Z", " +00", " +00:00"} {
		if strings.HasSuffix(s, suffix) && len(s) > 10 {
			s = strings.TrimSuffix(s, suffix)
			break
		}
	}
	for _, layout := range []string{"2006-01-02 15:04:05Z07:00", "2006-01-02 15:04:05Z07", "2006-01-02T15:04:05Z07:00",
		"2006-01-02T15:04:05Z07", "2006-01-02 15:04:05", "2006-01-02T15:04:05", "2006-01-02 15:04Z07:00", "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return Timestamp(t), true
		}
	}
	return Null, false
}

func parseDate(s string) (Value, bool) {
	t, err := time.Parse("2006-01-02", strings.TrimSpace(s))
	if err != nil {
		return Null, false
	}
	return Date(t), true
}

func parseDatetime(s string) (Value, bool) {
	for _, layout := range []string{"2006-01-02 15:04:05", "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, strings.TrimSpace(s)); err == nil {
			return Value{k: vDatetime, i: t.UnixMicro()}, true
		}
	}
	return Null, false
}

func parseTime(s string) (Value, bool) {
	t, err := time.Parse("15:04:05", strings.TrimSpace(s))
	if err != nil {
		return Null, false
	}
	mid := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	return Value{k: vTime, i: t.Sub(mid).Microseconds()}, true
}

// bound is one end of an interval; inf marks an open end (-inf or +inf).
type bound struct {
	v   Value
	inc bool
	inf bool
}

type interval struct{ lo, hi bound }

// A set is the values a column may take under a predicate: intervals of
// non-NULL values, and whether NULL is among them.
type set struct {
	ivs  []interval
	null bool
}

func everything() set {
	return set{ivs: []interval{{lo: bound{inf: true}, hi: bound{inf: true}}}, null: true}
}

func point(v Value) set {
	if v.IsNull() {
		return set{}
	}
	return set{ivs: []interval{{lo: bound{v: v, inc: true}, hi: bound{v: v, inc: true}}}}
}

// compared is the set {x : x op v}.
func compared(op string, v Value) (set, bool) {
	if v.IsNull() {
		return set{}, true // a comparison with NULL is never true
	}
	switch op {
	case "=":
		return point(v), true
	case "<":
		return set{ivs: []interval{{lo: bound{inf: true}, hi: bound{v: v}}}}, true
	case "<=":
		return set{ivs: []interval{{lo: bound{inf: true}, hi: bound{v: v, inc: true}}}}, true
	case ">":
		return set{ivs: []interval{{lo: bound{v: v}, hi: bound{inf: true}}}}, true
	case ">=":
		return set{ivs: []interval{{lo: bound{v: v, inc: true}, hi: bound{inf: true}}}}, true
	}
	return set{}, false
}

// cmpLo orders lower bounds, cmpHi upper bounds: the same order, mirrored,
// since an unbounded or inclusive lower bound comes first and an unbounded
// or inclusive upper bound last.
func cmpLo(a, b bound) (int, bool) { return cmpBound(a, b, 1) }

func cmpHi(a, b bound) (int, bool) { return cmpBound(a, b, -1) }

// cmpBound orders bounds of one side: lower (dir 1) or upper (dir -1).
func cmpBound(a, b bound, dir int) (int, bool) {
	switch {
	case a.inf && b.inf:
		return 0, true
	case a.inf:
		return -dir, true
	case b.inf:
		return dir, true
	}
	c, ok := compare(a.v, b.v)
	if !ok || c != 0 {
		return c, ok
	}
	switch {
	case a.inc == b.inc:
		return 0, true
	case a.inc:
		return -dir, true
	}
	return dir, true
}

// empty reports whether no value lies between lower bound lo and upper
// bound hi.
func empty(lo, hi bound) (bool, bool) {
	if lo.inf || hi.inf {
		return false, true
	}
	c, ok := compare(lo.v, hi.v)
	if !ok {
		return false, false
	}
	return c > 0 || c == 0 && !(lo.inc && hi.inc), true
}

// touches reports whether two intervals overlap or abut (so their union is
// one interval).
func touches(a, b interval) (bool, bool) {
	// a starts before b (by the caller's sort): they join when b.lo is not
	// after a.hi.
	if a.hi.inf || b.lo.inf {
		return true, true
	}
	c, ok := compare(b.lo.v, a.hi.v)
	if !ok {
		return false, false
	}
	return c < 0 || c == 0 && (b.lo.inc || a.hi.inc), true
}

// normalize sorts and merges a set's intervals; ok is false when they hold
// values this model cannot order.
func (s set) normalize() (set, bool) {
	ok := true
	ivs := make([]interval, 0, len(s.ivs))
	for _, iv := range s.ivs {
		e, k := empty(iv.lo, iv.hi)
		ok = ok && k
		if !e {
			ivs = append(ivs, iv)
		}
	}
	sort.SliceStable(ivs, func(i, j int) bool {
		c, k := cmpLo(ivs[i].lo, ivs[j].lo)
		ok = ok && k
		return c < 0
	})
	var out []interval
	for _, iv := range ivs {
		if n := len(out); n > 0 {
			t, k := touches(out[n-1], iv)
			ok = ok && k
			if t {
				if c, k := cmpHi(iv.hi, out[n-1].hi); k && c > 0 {
					out[n-1].hi = iv.hi
				} else {
					ok = ok && k
				}
				continue
			}
		}
		out = append(out, iv)
	}
	return set{ivs: out, null: s.null}, ok
}

func intersect(a, b set) (set, bool) {
	out := set{null: a.null && b.null}
	for _, x := range a.ivs {
		for _, y := range b.ivs {
			lo, hi := x.lo, x.hi
			c, ok := cmpLo(y.lo, lo)
			if !ok {
				return set{}, false
			}
			if c > 0 {
				lo = y.lo
			}
			if c, ok = cmpHi(y.hi, hi); !ok {
				return set{}, false
			}
			if c < 0 {
				hi = y.hi
			}
			out.ivs = append(out.ivs, interval{lo, hi})
		}
	}
	return out.normalize()
}

// overlaps reports whether some value of [lo, hi] (bounds as given; both
// NULL: none) or, when nulls, NULL lies in s. Values it cannot compare
// overlap (pruning must never drop a block it cannot rule out).
func (s set) overlaps(r interval, nulls bool) bool {
	if nulls && s.null {
		return true
	}
	if r.lo.v.IsNull() && !r.lo.inf {
		return false // no non-NULL values
	}
	// s is normalized: find the first interval whose upper end is not
	// below r's lower end.
	i := sort.Search(len(s.ivs), func(i int) bool {
		e, ok := empty(r.lo, s.ivs[i].hi)
		return !ok || !e
	})
	if i == len(s.ivs) {
		return false
	}
	e, ok := empty(s.ivs[i].lo, r.hi)
	return !ok || !e
}

// contains reports whether every value of [lo, hi] lies in s (and NULL,
// when nulls).
func (s set) contains(r interval, nulls bool) bool {
	if nulls && !s.null {
		return false
	}
	if r.lo.v.IsNull() && !r.lo.inf {
		return true
	}
	for _, iv := range s.ivs {
		c1, ok1 := cmpLo(iv.lo, r.lo)
		c2, ok2 := cmpHi(iv.hi, r.hi)
		if ok1 && ok2 && c1 <= 0 && c2 >= 0 {
			return true
		}
	}
	return false
}
