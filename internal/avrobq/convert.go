package avrobq

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"slices"

	"github.com/bqcdc/bqcdc/internal/failure"
	"github.com/hamba/avro/v2"
)

// ErrValue marks a value that cannot be represented in its BigQuery column
// (for example an array holding NULL, or a decimal too large for NUMERIC).
// It is permanent: the same bytes will fail the same way.
var ErrValue = errors.New("value does not fit its BigQuery column")

type converter func(v any) (any, error)

// Convert turns a decoded Avro record (hamba's map form, keyed by source
// field name) into canonical values keyed by column name. A field the record
// lacks (it was written with another version of the schema) takes the
// field's default, else NULL; record fields the plan lacks are ignored.
func (fs Fields) Convert(rec map[string]any) (map[string]any, error) {
	out := make(map[string]any, len(fs))
	for _, c := range fs {
		v, ok := rec[c.Source]
		if !ok && c.hasDef {
			v = c.def
		}
		if v == nil {
			continue
		}
		cv, err := c.conv(v)
		if err != nil {
			if c.Source != c.Name {
				return nil, fmt.Errorf("field %q, column %q (%s): %w", c.Source, c.Name, c.AvroType, err)
			}
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
	if n, ok := Integer(v); ok {
		return n, nil
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
		return nil, failure.Errorf("%w: encoding as JSON: %v", ErrValue, failure.Value(err))
	}
	return string(b), nil
}

// jsonable makes decoded Avro values JSON-encodable (big.Rat as a decimal string).
func jsonable(v any) any {
	switch x := v.(type) {
	case *big.Rat:
		return ratText(x)
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
		keys := slices.Sorted(maps.Keys(m))
		out := make([]any, 0, len(m))
		for _, k := range keys {
			entry := map[string]any{"key": k}
			if m[k] != nil {
				cv, err := val(m[k])
				if err != nil {
					return nil, failure.Errorf("map key %q: %w", failure.Value(k), err)
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

// jsonTextConv passes JSON text (io.debezium.data.Json) to a JSON column
// after checking it parses: BigQuery refuses the whole append otherwise.
func jsonTextConv(v any) (any, error) {
	s, ok := v.(string)
	if !ok {
		return nil, badType("JSON text", v)
	}
	if !json.Valid([]byte(s)) {
		return nil, failure.Errorf("%w: not valid JSON: %.60q", ErrValue, failure.Value(s))
	}
	return s, nil
}

// uuidConv writes a UUID as its canonical text: a string as it is, and
// Avro 1.12's fixed(16) form as 8-4-4-4-12 lower-case hex.
func uuidConv(v any) (any, error) {
	if s, ok := v.(string); ok {
		return s, nil
	}
	if b, ok := fixedBytes(v); ok && len(b) == 16 {
		return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]), nil
	}
	return nil, badType("uuid", v)
}

// bitConv reads a one-bit io.debezium.data.Bits as a BOOL. Debezium writes
// java.util.BitSet.toByteArray, which is empty when no bit is set.
func bitConv(v any) (any, error) {
	b, ok := v.([]byte)
	if !ok {
		return nil, badType("bits", v)
	}
	return len(b) > 0 && b[0]&1 != 0, nil
}

// bitsConv pads io.debezium.data.Bits to ceil(length/8) bytes: BitSet drops
// high zero bytes, and a fixed width makes equal bit strings equal BYTES.
// Padding adds zero high bits only, so no value changes.
func bitsConv(length int) converter {
	want := (length + 7) / 8
	return func(v any) (any, error) {
		b, ok := v.([]byte)
		if !ok {
			return nil, badType("bits", v)
		}
		if length < 0 || len(b) >= want {
			return b, nil
		}
		out := make([]byte, want)
		copy(out, b)
		return out, nil
	}
}

// ratText writes a decoded Avro decimal as exact decimal text ("1.23"; a
// fraction without a finite decimal form, which decoding never makes, as
// "a/b").
func ratText(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	p := big.NewInt(10)
	var rem big.Int
	for digits := 1; digits <= 1000; digits++ {
		if rem.Mod(p, r.Denom()).Sign() == 0 {
			return r.FloatString(digits)
		}
		p.Mul(p, big.NewInt(10))
	}
	return r.RatString()
}
