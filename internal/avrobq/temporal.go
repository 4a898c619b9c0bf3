package avrobq

import (
	"fmt"
	"math"
	"time"

	"github.com/bqcdc/bqcdc/internal/failure"
)

// Unit is the length of one count of an integer time value, in nanoseconds
// (transcode converts with it too).
type Unit int64

const (
	Nanos  Unit = 1
	Micros Unit = 1e3
	Millis Unit = 1e6
)

func (u Unit) String() string {
	switch u {
	case Nanos:
		return "ns"
	case Micros:
		return "µs"
	}
	return "ms"
}

// ToMicros converts n counts of u to microseconds, rounding toward negative
// infinity: nanoseconds are truncated the way a clock drops digits
// (-1.5 µs is 23:59:59.999998 on the day before the epoch). ok is false
// when the result does not fit an int64.
func (u Unit) ToMicros(n int64) (m int64, ok bool) {
	if u < Micros {
		return FloorDiv(n, int64(Micros/u)), true
	}
	f := int64(u / Micros)
	if n > math.MaxInt64/f || n < math.MinInt64/f {
		return 0, false
	}
	return n * f, true
}

// FloorDiv is a / b rounded toward negative infinity.
func FloorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// Integer reads a Go integer of the widths decoded Avro and JSON values
// take (int, int32, int64).
func Integer(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	}
	return 0, false
}

// BigQuery's DATE, DATETIME and TIMESTAMP range: years 1 to 9999 (transcode
// checks against them too).
var (
	MinTime   = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	MaxTime   = time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC)
	MinMicros = MinTime.UnixMicro()
	MaxMicros = MaxTime.UnixMicro()
	MinDays   = FloorDiv(MinTime.Unix(), 86400)
	MaxDays   = FloorDiv(MaxTime.Unix(), 86400)
)

func outOfRange(what string) error {
	return failure.Errorf("%w: %s is outside BigQuery's years 1 to 9999", ErrValue, failure.Value(what))
}

// daysConv converts a date: days since 1970-01-01 as an integer, or the
// time.Time hamba makes of an Avro date.
func daysConv(v any) (any, error) {
	var days int64
	switch x := v.(type) {
	case time.Time:
		days = FloorDiv(x.Unix(), 86400)
	default:
		n, ok := Integer(v)
		if !ok {
			return nil, badType("date (days since 1970-01-01)", v)
		}
		days = n
	}
	if days < MinDays || days > MaxDays {
		return nil, outOfRange(fmt.Sprintf("date %d days from 1970-01-01", days))
	}
	return int32(days), nil
}

// microsOf reads an instant as microseconds since the epoch: a count of u,
// or a time.Time (hamba's form of the Avro timestamp logical types).
func microsOf(v any, u Unit) (int64, error) {
	if t, ok := v.(time.Time); ok {
		if t.Before(MinTime) || t.After(MaxTime) {
			return 0, outOfRange(t.UTC().Format(time.RFC3339Nano))
		}
		return t.UnixMicro(), nil
	}
	n, ok := Integer(v)
	if !ok {
		return 0, badType("timestamp", v)
	}
	m, ok := u.ToMicros(n)
	if !ok || m < MinMicros || m > MaxMicros {
		return 0, outOfRange(fmt.Sprintf("%d %s from the epoch", n, u))
	}
	return m, nil
}

// timestampConv converts an instant to TIMESTAMP's microseconds.
func timestampConv(u Unit) converter {
	return func(v any) (any, error) {
		m, err := microsOf(v, u)
		if err != nil {
			return nil, err
		}
		return m, nil
	}
}

const datetimeLayout = "2006-01-02 15:04:05.000000"

// datetimeConv converts a wall-clock time written as if it were a UTC
// instant (Debezium's Timestamp types, Avro's local-timestamp types) to
// DATETIME text.
func datetimeConv(u Unit) converter {
	return func(v any) (any, error) {
		if t, ok := v.(time.Time); ok && t.Location() == time.Local {
			v = HambaLocalWallClock(t)
		}
		m, err := microsOf(v, u)
		if err != nil {
			return nil, err
		}
		return time.UnixMicro(m).UTC().Format(datetimeLayout), nil
	}
}

// HambaLocalWallClock undoes hamba's decoding of the local-timestamp logical
// types. hamba turns the written value e (a wall clock written as if it
// were a UTC instant) into the instant e minus the process's UTC offset at
// e, in time.Local, so that the local clock reading shows the wall clock.
// Recovering e from the instant, rather than reading the local clock, stays
// right next to a daylight saving change, where the offset at e and at the
// shifted instant differ.
func HambaLocalWallClock(t time.Time) time.Time {
	u := t.Unix()
	_, off := time.Unix(u, 0).Zone()
	for range 2 {
		_, at := time.Unix(u+int64(off), 0).Zone()
		if at == off {
			break
		}
		off = at
	}
	return time.Unix(u+int64(off), int64(t.Nanosecond())).UTC()
}

// timeConv converts a time of day: a count of u since midnight, or the
// time.Duration hamba makes of the Avro time logical types.
func timeConv(u Unit) converter {
	return func(v any) (any, error) {
		if d, ok := v.(time.Duration); ok {
			if d < 0 || d >= 24*time.Hour {
				return nil, failure.Errorf("%w: time of day %s is outside 00:00 to 24:00", ErrValue, failure.Value(d))
			}
			return formatTimeOfDay(int64(d / time.Microsecond)), nil
		}
		n, ok := Integer(v)
		if !ok {
			return nil, badType("time of day", v)
		}
		// Compare in the value's own unit so that no multiplication can wrap.
		if n < 0 || n >= int64(24*time.Hour)/int64(u) {
			return nil, failure.Errorf("%w: time of day %d %s is outside 00:00 to 24:00 (MySQL TIME can be; BigQuery TIME cannot)", ErrValue, failure.Value(n), u)
		}
		m, _ := u.ToMicros(n)
		return formatTimeOfDay(m), nil
	}
}

func formatTimeOfDay(Micros int64) string {
	s := Micros / 1e6
	return fmt.Sprintf("%02d:%02d:%02d.%06d", s/3600, s/60%60, s%60, Micros%1e6)
}

// zonedTimestampConv converts io.debezium.time.ZonedTimestamp, an ISO-8601
// timestamp with a UTC offset ("2024-05-06T09:08:09.123+05:30", up to nine
// fractional digits), to the same instant as TIMESTAMP microseconds:
// the offset is applied exactly and nanoseconds are truncated.
func zonedTimestampConv(v any) (any, error) {
	t, err := parseZoned(v, "timestamp", "2006-01-02T15:04:05")
	if err != nil {
		return nil, err
	}
	return timestampConv(Micros)(t)
}

// zonedTimeConv converts io.debezium.time.ZonedTime ("10:15:30.123456Z",
// "12:15:30+02:00") to the UTC time of day.
//
// TIME rather than STRING: a TIME column sorts, compares and works with
// TIME_DIFF and TIMESTAMP(date, time), and a column of offset-carrying text
// does none of that correctly once offsets differ. Nothing is lost for
// PostgreSQL, the main source of TIME WITH TIME ZONE: Debezium already
// normalises those values to UTC ("Z"). A value with another offset is moved
// to UTC modulo 24 hours, as SQL's AT TIME ZONE does for such times
// ("01:00+02:00" is 23:00 UTC). Nanoseconds are truncated.
func zonedTimeConv(v any) (any, error) {
	t, err := parseZoned(v, "time", "15:04:05")
	if err != nil {
		return nil, err
	}
	u := t.UTC()
	return formatTimeOfDay(int64(u.Hour()*3600+u.Minute()*60+u.Second())*1e6 + int64(u.Nanosecond()/1e3)), nil
}

// parseZoned parses v, Debezium's ISO-8601 text of a zoned timestamp or
// time (what), by parseOffset.
func parseZoned(v any, what, layout string) (time.Time, error) {
	s, ok := v.(string)
	if !ok {
		return time.Time{}, badType("ISO-8601 "+what+" string", v)
	}
	t, err := parseOffset(s, layout)
	if err != nil {
		return time.Time{}, failure.Errorf("%w: parsing zoned %s %q: %v", ErrValue, what, failure.Value(s), failure.Value(err))
	}
	return t, nil
}

// parseOffset parses text made of layout, optional fractional seconds and a
// UTC offset: "Z", "+05:30", or "+05:30:15" (Java writes seconds for
// historical offsets).
func parseOffset(s, layout string) (time.Time, error) {
	t, err := time.Parse(layout+"Z07:00", s)
	if err != nil {
		if t2, err2 := time.Parse(layout+"Z07:00:00", s); err2 == nil {
			return t2, nil
		}
	}
	return t, err
}
