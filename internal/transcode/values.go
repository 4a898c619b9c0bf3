package transcode

import (
	"fmt"
	"math/big"
	"strconv"
	"time"

	"github.com/bqcdc/bqcdc/internal/avrobq"
	"github.com/bqcdc/bqcdc/internal/failure"
	"github.com/bqcdc/bqcdc/internal/schema"
)

// The conversions below are avrobq's, applied to values read straight from
// the payload instead of hamba's decoded forms. Where hamba's decoding
// itself changes a value (a time-micros long multiplied into a
// time.Duration, which can wrap; a local-timestamp shifted by the
// process's time zone), the same arithmetic is done here, so the results
// agree bit for bit, including on the values the generic path gets wrong.
// Errors wrap avrobq.ErrValue, as the generic converters' do.

// Arguments made with failure.Value are withheld from its redacted form
// (see failure.Reason), as in avrobq.
func valueErr(format string, args ...any) error {
	return failure.Errorf("%w: "+format, append([]any{avrobq.ErrValue}, args...)...)
}

func outOfRange(what string) error {
	return valueErr("%s is outside BigQuery's years 1 to 9999", failure.Value(what))
}

// days checks a DATE given as days since the epoch.
func days(n int64) (int32, error) {
	if n < avrobq.MinDays || n > avrobq.MaxDays {
		return 0, outOfRange(fmt.Sprintf("date %d days from 1970-01-01", n))
	}
	return int32(n), nil
}

// microsOfCount reads an instant written as a count of u.
func microsOfCount(n int64, u avrobq.Unit) (int64, error) {
	m, ok := u.ToMicros(n)
	if !ok || m < avrobq.MinMicros || m > avrobq.MaxMicros {
		return 0, outOfRange(fmt.Sprintf("%d %s from the epoch", n, u))
	}
	return m, nil
}

// microsOfTime reads an instant hamba decoded into a time.Time.
func microsOfTime(t time.Time) (int64, error) {
	if t.Before(avrobq.MinTime) || t.After(avrobq.MaxTime) {
		return 0, outOfRange(t.UTC().Format(time.RFC3339Nano))
	}
	return t.UnixMicro(), nil
}

// instantMicros reads a DATETIME or TIMESTAMP written as n's int or long i,
// as a count or as the time.Time hamba decodes it into.
func instantMicros(i int64, n *node) (int64, error) {
	if n.form == fInt || n.form == fLong {
		return microsOfCount(i, n.unit)
	}
	t := hambaTime(i, n.form)
	if n.conv == cDatetime && t.Location() == time.Local {
		t = avrobq.HambaLocalWallClock(t)
	}
	return microsOfTime(t)
}

// hambaTime is the time.Time hamba decodes a timestamp or local-timestamp
// long into (its timestampMillisCodec and timestampMicrosCodec).
func hambaTime(i int64, f form) time.Time {
	var t time.Time
	switch f {
	case fTSMillis, fLTSMillis:
		sec := i / 1e3
		t = time.Unix(sec, (i-sec*1e3)*1e6)
	default:
		sec := i / 1e6
		t = time.Unix(sec, (i-sec*1e6)*1e3)
	}
	if f == fLTSMillis || f == fLTSMicros {
		_, offset := t.Zone()
		return t.Add(time.Duration(-1*offset) * time.Second)
	}
	return t.UTC()
}

const datetimeLayout = "2006-01-02 15:04:05.000000"

func appendDatetime(dst []byte, m int64) []byte {
	return time.UnixMicro(m).UTC().AppendFormat(dst, datetimeLayout)
}

// appendTimeOfDay writes micros since midnight (below 24 h) as
// "15:04:05.000000".
func appendTimeOfDay(dst []byte, m int64) []byte {
	s := m / 1e6
	dst = append2(dst, s/3600)
	dst = append(dst, ':')
	dst = append2(dst, s/60%60)
	dst = append(dst, ':')
	dst = append2(dst, s%60)
	dst = append(dst, '.')
	f := m % 1e6
	for d := int64(100000); d > 0; d /= 10 {
		dst = append(dst, byte('0'+f/d%10))
	}
	return dst
}

func append2(dst []byte, v int64) []byte {
	if v >= 100 || v < 0 { // cannot happen below 24 h; keep fmt's output
		return fmt.Appendf(dst, "%02d", v)
	}
	return append(dst, byte('0'+v/10), byte('0'+v%10))
}

// timeOfDayMicros reads a TIME written as n's int or long i, as a count or
// as the Duration hamba decodes it into.
func timeOfDayMicros(i int64, n *node) (int64, error) {
	switch n.form {
	case fTimeMillis:
		return timeOfDayDuration(time.Duration(i) * time.Millisecond)
	case fTimeMicros:
		return timeOfDayDuration(time.Duration(i) * time.Microsecond)
	}
	return timeOfDayCount(i, n.unit)
}

// timeOfDayCount checks a time of day written as a count of u.
func timeOfDayCount(n int64, u avrobq.Unit) (int64, error) {
	if n < 0 || n >= int64(24*time.Hour)/int64(u) {
		return 0, valueErr("time of day %d %s is outside 00:00 to 24:00 (MySQL TIME can be; BigQuery TIME cannot)", failure.Value(n), u)
	}
	m, _ := u.ToMicros(n)
	return m, nil
}

// timeOfDayDuration checks a time of day hamba decoded into a Duration.
func timeOfDayDuration(d time.Duration) (int64, error) {
	if d < 0 || d >= 24*time.Hour {
		return 0, valueErr("time of day %s is outside 00:00 to 24:00", failure.Value(d))
	}
	return int64(d / time.Microsecond), nil
}

// Layouts of avrobq's parseOffset, spelled out: concatenating them per
// value would allocate.
const (
	zonedTimestampLayout    = "2006-01-02T15:04:05Z07:00"
	zonedTimestampLayoutSec = "2006-01-02T15:04:05Z07:00:00"
	zonedTimeLayout         = "15:04:05Z07:00"
	zonedTimeLayoutSec      = "15:04:05Z07:00:00"
)

// parseOffset is avrobq's: a layout, optional fraction, and a UTC offset
// "Z", "+05:30" or "+05:30:15" (layoutSec is the last form).
func parseOffset(s, layout, layoutSec string) (time.Time, error) {
	t, err := time.Parse(layout, s)
	if err != nil {
		if t2, err2 := time.Parse(layoutSec, s); err2 == nil {
			return t2, nil
		}
	}
	return t, err
}

// decLim is what a decimal column accepts (avrobq's decimalLimits).
type decLim struct {
	typ              string
	precision, scale int
}

var pow10u = [...]uint64{1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19}

// appendDecimal writes the decimal whose unscaled value is the big-endian
// two's complement b at scale as exact text, after avrobq's checks
// (decimalText). Values of up to 8 bytes at a scale the column holds
// take a path without big.Int; everything else goes through avrobq's
// arithmetic, copied below.
func appendDecimal(dst, b []byte, scale int, lim decLim) ([]byte, error) {
	maxScale := 38
	if lim.typ == schema.Numeric {
		maxScale = 9
	}
	if len(b) > 8 || scale < 0 || (lim.typ != schema.String && scale > maxScale) {
		return appendBigDecimal(dst, avrobq.FromTwosComplement(b), scale, lim)
	}
	var v int64
	if len(b) > 0 && b[0]&0x80 != 0 {
		v = -1
	}
	for _, c := range b {
		v = v<<8 | int64(c)
	}
	abs := uint64(v)
	if v < 0 {
		abs = -abs
	}
	if lim.precision > 0 { // STRING too: it keeps the declared precision
		n := lim.precision - lim.scale + scale
		bound := uint64(1)
		if n > 0 {
			bound = 0 // 10^n above 2^63 cannot be reached
			if n < len(pow10u) {
				bound = pow10u[n]
			}
		}
		if bound != 0 && abs >= bound {
			return appendBigDecimal(dst, big.NewInt(v), scale, lim) // for its error
		}
	}
	// NUMERIC without precision holds 29 integer digits and an unsized
	// BIGNUMERIC ±5.7×10^38: no 8-byte value reaches either.
	var digits [20]byte
	d := strconv.AppendUint(digits[:0], abs, 10)
	if v < 0 {
		dst = append(dst, '-')
	}
	if len(d) <= scale { // 0.000ddd
		dst = append(dst, '0', '.')
		for range scale - len(d) {
			dst = append(dst, '0')
		}
		return append(dst, d...), nil
	}
	dst = append(dst, d[:len(d)-scale]...)
	if scale > 0 {
		dst = append(dst, '.')
		dst = append(dst, d[len(d)-scale:]...)
	}
	return dst, nil
}

// appendBigDecimal is avrobq's decimalText, which it calls: the values
// that do not fit in 64 bits are rare, and one implementation keeps the
// checks (and the bounds on their cost) the same on both paths.
func appendBigDecimal(dst []byte, unscaled *big.Int, scale int, lim decLim) ([]byte, error) {
	text, err := avrobq.DecimalText(unscaled, scale, lim.typ, lim.precision, lim.scale)
	if err != nil {
		return dst, err
	}
	return append(dst, text...), nil
}

const hexDigits = "0123456789abcdef"

// appendUUID writes 16 bytes as 8-4-4-4-12 lower-case hex.
func appendUUID(dst, b []byte) []byte {
	for i, c := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			dst = append(dst, '-')
		}
		dst = append(dst, hexDigits[c>>4], hexDigits[c&0xf])
	}
	return dst
}
