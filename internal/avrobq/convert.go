package avrobq

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"time"

	"github.com/hamba/avro/v2"
)

// ErrValue marks a value that cannot be represented in its BigQuery column
// (for example an array holding NULL, or a decimal too large for NUMERIC).
// It is permanent: the same bytes will fail the same way.
var ErrValue = errors.New("value does not fit its BigQuery column")

type converter func(v any) (any, error)

// Convert turns a decoded Avro record (hamba's map form) into canonical
// values keyed by column name. A field the record lacks (it was written with
// another version of the schema) takes the field's default, else NULL;
// record fields the plan lacks are ignored.
func (fs Fields) Convert(rec map[string]any) (map[string]any, error) {
	out := make(map[string]any, len(fs))
	for _, c := range fs {
		v, ok := rec[c.Name]
		if !ok && c.hasDef {
			v = c.def
		}
		if v == nil {
			continue
		}
		cv, err := c.conv(v)
		if err != nil {
			return nil, fmt.Errorf("column %q (%s): %w", c.Name, c.AvroType, err)
		}
		if cv != nil {
			out[c.Name] = cv
		}
	}
	return out, nil
}

func badType(want string, v any) error {
	return fmt.Errorf("%w: want %s, got %T", ErrValue, want, v)
}

func nullConv(any) (any, error) { return nil, nil }

func boolConv(v any) (any, error) {
	if b, ok := v.(bool); ok {
		return b, nil
	}
	return nil, badType("boolean", v)
}

func intConv(v any) (any, error) {
	switch x := v.(type) {
	case int:
		return int64(x), nil
	case int32:
		return int64(x), nil
	case int64:
		return x, nil
	}
	return nil, badType("int or long", v)
}

func floatConv(v any) (any, error) {
	switch x := v.(type) {
	case float32:
		return float64(x), nil
	case float64:
		return x, nil
	}
	return nil, badType("float or double", v)
}

func stringConv(v any) (any, error) {
	if s, ok := v.(string); ok {
		return s, nil
	}
	return nil, badType("string", v)
}

func bytesConv(v any) (any, error) {
	switch x := v.(type) {
	case []byte:
		return x, nil
	case string:
		return []byte(x), nil
	}
	// hamba decodes fixed(N) as a [N]byte array of any length N.
	if b, ok := fixedBytes(v); ok {
		return b, nil
	}
	if d, ok := v.(avro.LogicalDuration); ok {
		b := make([]byte, 12)
		putLE32(b[0:], d.Months)
		putLE32(b[4:], d.Days)
		putLE32(b[8:], d.Milliseconds)
		return b, nil
	}
	return nil, badType("bytes", v)
}

func putLE32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}

func jsonConv(v any) (any, error) {
	b, err := json.Marshal(jsonable(v))
	if err != nil {
		return nil, fmt.Errorf("%w: encoding as JSON: %v", ErrValue, err)
	}
	return string(b), nil
}

// jsonable makes decoded Avro values JSON-encodable (big.Rat as a decimal string).
func jsonable(v any) any {
	switch x := v.(type) {
	case *big.Rat:
		return x.RatString()
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = jsonable(e)
		}
		return m
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = jsonable(e)
		}
		return a
	}
	if b, ok := fixedBytes(v); ok {
		return b
	}
	return v
}

const epochDay = 24 * time.Hour

func daysConv(v any) (any, error) {
	switch x := v.(type) {
	case time.Time:
		return int32(math.Floor(float64(x.Unix()) / 86400)), nil
	case int:
		return int32(x), nil
	case int32:
		return x, nil
	case int64:
		return int32(x), nil
	}
	return nil, badType("date", v)
}

func formatTimeOfDay(d time.Duration) (any, error) {
	if d < 0 || d >= epochDay {
		return nil, fmt.Errorf("%w: time of day %s out of range", ErrValue, d)
	}
	t := time.Unix(0, 0).UTC().Add(d)
	return t.Format("15:04:05.000000"), nil
}

// timeOfDayConv converts an integer count since midnight; unit is the number
// of microseconds per count, or -n for n counts per microsecond.
func timeOfDayConv(unit int64) converter {
	return func(v any) (any, error) {
		n, err := intConv(v)
		if err != nil {
			return nil, err
		}
		return formatTimeOfDay(scaleMicros(n.(int64), unit) * time.Microsecond)
	}
}

func scaleMicros(n, unit int64) time.Duration {
	if unit < 0 {
		return time.Duration(n / -unit)
	}
	return time.Duration(n * unit)
}

func durationTimeConv(v any) (any, error) {
	if d, ok := v.(time.Duration); ok {
		return formatTimeOfDay(d)
	}
	return nil, badType("time", v)
}

const datetimeLayout = "2006-01-02 15:04:05.000000"

// BigQuery's DATETIME and TIMESTAMP range.
var (
	minTime = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	maxTime = time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC)
)

func inRange(t time.Time) error {
	if t.Before(minTime) || t.After(maxTime) {
		return fmt.Errorf("%w: %s is outside BigQuery's years 1-9999", ErrValue, t.Format(time.RFC3339Nano))
	}
	return nil
}

func epochDatetimeConv(unit int64) converter {
	return func(v any) (any, error) {
		n, err := intConv(v)
		if err != nil {
			return nil, err
		}
		t := time.UnixMicro(int64(scaleMicros(n.(int64), unit))).UTC()
		if err := inRange(t); err != nil {
			return nil, err
		}
		return t.Format(datetimeLayout), nil
	}
}

func localTimestampConv(v any) (any, error) {
	t, ok := v.(time.Time)
	if !ok {
		return nil, badType("local timestamp", v)
	}
	if err := inRange(t.UTC()); err != nil {
		return nil, err
	}
	return t.UTC().Format(datetimeLayout), nil
}

func timestampConv(v any) (any, error) {
	t, ok := v.(time.Time)
	if !ok {
		return nil, badType("timestamp", v)
	}
	if err := inRange(t.UTC()); err != nil {
		return nil, err
	}
	return t.UnixMicro(), nil
}

func zonedTimestampConv(v any) (any, error) {
	s, ok := v.(string)
	if !ok {
		return nil, badType("ISO-8601 timestamp string", v)
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return nil, fmt.Errorf("%w: parsing zoned timestamp %q: %v", ErrValue, s, err)
	}
	return timestampConv(t)
}

func ratConv(scale int) converter {
	return func(v any) (any, error) {
		r, ok := v.(*big.Rat)
		if !ok {
			return nil, badType("decimal", v)
		}
		return r.FloatString(scale), nil
	}
}

// unscaledDecimalConv decodes Kafka Connect's Decimal when the schema lacks
// the Avro logical type: big-endian two's-complement unscaled bytes.
func unscaledDecimalConv(scale int) converter {
	return func(v any) (any, error) {
		b, ok := v.([]byte)
		if !ok {
			return nil, badType("decimal bytes", v)
		}
		return new(big.Rat).SetFrac(twosComplement(b), pow10(scale)).FloatString(scale), nil
	}
}

func twosComplement(b []byte) *big.Int {
	n := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		n.Sub(n, new(big.Int).Lsh(big.NewInt(1), uint(len(b)*8)))
	}
	return n
}

func pow10(n int) *big.Int { return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil) }

// variableScaleDecimalConv decodes io.debezium.data.VariableScaleDecimal, a
// record {scale int, value bytes} used for PostgreSQL NUMERIC without a scale.
func variableScaleDecimalConv(v any) (any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, badType("VariableScaleDecimal record", v)
	}
	scale, err := intConv(m["scale"])
	if err != nil {
		return nil, err
	}
	b, ok := m["value"].([]byte)
	if !ok {
		return nil, badType("VariableScaleDecimal bytes", m["value"])
	}
	s := int(scale.(int64))
	if s > 38 || s < 0 {
		return nil, fmt.Errorf("%w: scale %d does not fit BIGNUMERIC (%s)", ErrValue, s, describeDecimal(76, 38))
	}
	return new(big.Rat).SetFrac(twosComplement(b), pow10(s)).FloatString(s), nil
}

func recordConv(fields Fields) converter {
	return func(v any) (any, error) {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, badType("record", v)
		}
		return fields.Convert(m)
	}
}

func arrayConv(item converter) converter {
	return func(v any) (any, error) {
		a, ok := v.([]any)
		if !ok {
			return nil, badType("array", v)
		}
		out := make([]any, len(a))
		for i, e := range a {
			if e == nil {
				return nil, fmt.Errorf("%w: element %d is NULL and BigQuery arrays cannot hold NULL", ErrValue, i)
			}
			cv, err := item(e)
			if err != nil {
				return nil, fmt.Errorf("element %d: %w", i, err)
			}
			if cv == nil {
				return nil, fmt.Errorf("%w: element %d is NULL and BigQuery arrays cannot hold NULL", ErrValue, i)
			}
			out[i] = cv
		}
		return out, nil
	}
}

func mapConv(val converter) converter {
	return func(v any) (any, error) {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, badType("map", v)
		}
		keys := sortedKeys(m)
		out := make([]any, 0, len(m))
		for _, k := range keys {
			entry := map[string]any{"key": k}
			if m[k] != nil {
				cv, err := val(m[k])
				if err != nil {
					return nil, fmt.Errorf("map key %q: %w", k, err)
				}
				if cv != nil {
					entry["value"] = cv
				}
			}
			out = append(out, entry)
		}
		return out, nil
	}
}

// unionConv unwraps hamba's {"branch name": value} form of a nullable union
// before converting with the branch's converter.
func unionConv(u *avro.UnionSchema, inner converter) converter {
	return func(v any) (any, error) {
		v, _ = Unwrap(u, v)
		if v == nil {
			return nil, nil
		}
		return inner(v)
	}
}

func unionJSONConv(u *avro.UnionSchema) converter {
	return func(v any) (any, error) {
		v, _ = Unwrap(u, v)
		if v == nil {
			return nil, nil
		}
		return jsonConv(v)
	}
}
