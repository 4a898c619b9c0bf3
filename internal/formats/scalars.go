package formats

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/bqcdc/bqcdc/internal/avrobq"
	"github.com/bqcdc/bqcdc/internal/failure"
	"github.com/hamba/avro/v2"
)

// integer writes an int or long from a JSON number, refusing fractions and
// values outside the type's range.
func (t *transcoder) integer(s avro.Schema, v any, path string) error {
	n, ok := v.(json.Number)
	if !ok {
		return t.fail(path, "want %s, got %s", typeName(s), described{v})
	}
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	if s.Type() == avro.Int {
		lo, hi = math.MinInt32, math.MaxInt32
	}
	// Kafka Connect's INT8 and INT16 travel as Avro int marked connect.type.
	switch prop(s, "connect.type") {
	case "int8":
		lo, hi = math.MinInt8, math.MaxInt8
	case "int16":
		lo, hi = math.MinInt16, math.MaxInt16
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil {
		// 1e3 or 5.0 are still integers; 5.5 and 1e30 are not.
		r, ok := exactRat(string(n))
		if !ok || !r.IsInt() || !r.Num().IsInt64() {
			return t.fail(path, "want %s, got %s", typeName(s), described{v})
		}
		i = r.Num().Int64()
	}
	if i < lo || i > hi {
		return t.fail(path, "%d is out of range for %s", failure.Value(i), typeName(s))
	}
	t.long(i)
	return nil
}

// float writes a float or double from a JSON number or one of the strings
// Java writes for non-finite values.
func (t *transcoder) float(typ avro.Type, v any, path string) error {
	bits := 64
	if typ == avro.Float {
		bits = 32
	}
	var f float64
	switch x := v.(type) {
	case json.Number:
		var err error
		if f, err = strconv.ParseFloat(string(x), bits); err != nil {
			return t.fail(path, "%s does not fit %s", failure.Value(string(x)), typ)
		}
	case string:
		// Java's Jackson writes non-finite numbers as these strings.
		switch x {
		case "NaN":
			f = math.NaN()
		case "Infinity":
			f = math.Inf(1)
		case "-Infinity":
			f = math.Inf(-1)
		default:
			return t.fail(path, "want %s, got %s", typ, described{v})
		}
	default:
		return t.fail(path, "want %s, got %s", typ, described{v})
	}
	if bits == 32 {
		t.buf = binary.LittleEndian.AppendUint32(t.buf, math.Float32bits(float32(f)))
	} else {
		t.buf = binary.LittleEndian.AppendUint64(t.buf, math.Float64bits(f))
	}
	return nil
}

// binary writes bytes and fixed values, decimals included.
func (t *transcoder) binary(s avro.Schema, v any, path string) error {
	size := -1
	if fs, ok := s.(*avro.FixedSchema); ok {
		size = fs.Size()
	}
	scale, isDecimal := decimalScale(s)
	var b []byte
	switch x := v.(type) {
	case string:
		var err error
		if b, err = t.decodeBytes(x); err != nil {
			return t.fail(path, "%v", err)
		}
	case json.Number:
		// Connect's decimal.format=NUMERIC writes decimals as numbers.
		if !isDecimal {
			return t.fail(path, "want %s, got %s", t.bytesForm(), described{v})
		}
		n, err := unscaled(string(x), scale)
		if err != nil {
			return t.fail(path, "%w", err)
		}
		b = avrobq.ToTwosComplement(n)
		if size > len(b) {
			b = signExtend(b, size)
		}
	default:
		return t.fail(path, "want %s, got %s", t.bytesForm(), described{v})
	}
	if size < 0 {
		t.bytes(b)
		return nil
	}
	if len(b) != size {
		return t.fail(path, "%d bytes for fixed %s of size %d", len(b), typeName(s), size)
	}
	t.buf = append(t.buf, b...)
	return nil
}

// bytesForm names the dialect's form of bytes for error messages.
func (t *transcoder) bytesForm() string {
	if t.d == connectJSON {
		return "a base64 string"
	}
	return "a string of code points 0-255"
}

// decodeBytes reads a JSON string as bytes in the dialect's convention.
func (t *transcoder) decodeBytes(s string) ([]byte, error) {
	if t.d == connectJSON {
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("bytes are not base64: %v", err)
		}
		return b, nil
	}
	return latin1(s)
}

// enum writes a symbol as its index.
func (t *transcoder) enum(s *avro.EnumSchema, v any, path string) error {
	sym, ok := v.(string)
	if !ok {
		return t.fail(path, "want an enum symbol, got %s", described{v})
	}
	for i, x := range s.Symbols() {
		if x == sym {
			t.long(int64(i))
			return nil
		}
	}
	return t.fail(path, "%q is not a symbol of enum %s", failure.Value(sym), s.FullName())
}
