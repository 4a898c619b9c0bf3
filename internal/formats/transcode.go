package formats

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/bqcdc/bqcdc/internal/failure"
	"github.com/hamba/avro/v2"
)

// ErrValue marks a JSON value that does not fit its schema. It is
// permanent: the same message always fails the same way.
var ErrValue = errors.New("JSON value does not fit the schema")

// dialect is the JSON convention a message follows. The two differ in how
// they write unions and bytes; everything else is plain JSON.
type dialect int

const (
	// avroJSON is the JSON encoding of the Avro specification, which Pub/Sub
	// schemas use: a non-null union value is wrapped as {"branch": value},
	// bytes and fixed are strings of code points 0-255 (ISO-8859-1).
	avroJSON dialect = iota
	// connectJSON is Kafka Connect's JsonConverter payload: optional values
	// are bare or null, bytes (and Decimal) are base64, a map whose keys are
	// not strings is an array of [key, value] pairs.
	connectJSON
)

// parseJSON reads exactly one JSON value, keeping numbers as json.Number so
// that longs and decimals stay exact.
func parseJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("parsing JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("parsing JSON: data after the top-level value")
	}
	return v, nil
}

// transcode writes the Avro binary encoding of a JSON record for schema s.
func transcode(d dialect, api avro.API, s avro.Schema, data []byte) ([]byte, error) {
	if err := checkJSONBounds(data); err != nil {
		return nil, err
	}
	v, err := parseJSON(data)
	if err != nil {
		return nil, err
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, failure.Errorf("%w: the message is %s, want a JSON object", ErrValue, described{v})
	}
	t := &transcoder{d: d, api: api, buf: make([]byte, 0, len(data))}
	if err := t.value(s, v, ""); err != nil {
		return nil, err
	}
	return t.buf, nil
}

type transcoder struct {
	d   dialect
	api avro.API // encodes field defaults
	buf []byte
}

func (t *transcoder) fail(path, format string, args ...any) error {
	if path == "" {
		path = "(top level)"
	}
	// A message's values are withheld from the redacted reason: args made
	// with failure.Value or described (see failure.Reason).
	return failure.Errorf("%w: field %s: "+format, append([]any{ErrValue, path}, args...)...)
}

// long writes a zig-zag varint, Avro's encoding of int and long alike.
func (t *transcoder) long(n int64) { t.buf = binary.AppendVarint(t.buf, n) }

func (t *transcoder) bytes(b []byte) {
	t.long(int64(len(b)))
	t.buf = append(t.buf, b...)
}

func (t *transcoder) value(s avro.Schema, v any, path string) error {
	switch s.Type() {
	case avro.Ref:
		return t.value(s.(*avro.RefSchema).Schema(), v, path)
	case avro.Union:
		return t.union(s.(*avro.UnionSchema), v, path)
	case avro.Null:
		if v != nil {
			return t.fail(path, "want null, got %s", described{v})
		}
		return nil
	}
	if v == nil {
		return t.fail(path, "null, but its type %s is not nullable", typeName(s))
	}
	switch s.Type() {
	case avro.Boolean:
		b, ok := v.(bool)
		if !ok {
			return t.fail(path, "want boolean, got %s", described{v})
		}
		if b {
			t.buf = append(t.buf, 1)
		} else {
			t.buf = append(t.buf, 0)
		}
	case avro.Int, avro.Long:
		return t.integer(s, v, path)
	case avro.Float, avro.Double:
		return t.float(s.Type(), v, path)
	case avro.String:
		str, ok := v.(string)
		if !ok {
			return t.fail(path, "want string, got %s", described{v})
		}
		t.bytes([]byte(str))
	case avro.Bytes, avro.Fixed:
		return t.binary(s, v, path)
	case avro.Enum:
		return t.enum(s.(*avro.EnumSchema), v, path)
	case avro.Array:
		return t.array(s.(*avro.ArraySchema), v, path)
	case avro.Map:
		return t.mapValue(s.(*avro.MapSchema), v, path)
	case avro.Record:
		return t.record(s.(*avro.RecordSchema), v, path)
	default:
		return t.fail(path, "unsupported Avro type %s", s.Type())
	}
	return nil
}

func (t *transcoder) record(s *avro.RecordSchema, v any, path string) error {
	obj, ok := v.(map[string]any)
	if !ok {
		return t.fail(path, "want an object (record %s), got %s", s.FullName(), described{v})
	}
	// JSON members the schema lacks are ignored, as Avro schema resolution
	// drops writer fields the reader lacks.
	for _, f := range s.Fields() {
		fp := join(path, f.Name())
		fv, present := obj[f.Name()]
		var err error
		if present {
			err = t.value(f.Type(), fv, fp)
		} else {
			err = t.missing(f, fp)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// missing writes a field the JSON lacks: its default, else null when the
// field is nullable. Avro resolution would use the default too; taking null
// for a nullable field without one is lenient, and matches what the row
// converter does for a column the writer lacks.
func (t *transcoder) missing(f *avro.Field, path string) error {
	s := f.Type()
	if f.HasDefault() {
		if u, ok := s.(*avro.UnionSchema); ok {
			// A union's default is a value of its first branch.
			t.long(0)
			s = u.Types()[0]
		}
		if s.Type() == avro.Null {
			return nil
		}
		b, err := t.api.Marshal(s, f.Default())
		if err != nil {
			return t.fail(path, "missing, and its default does not encode: %v", err)
		}
		t.buf = append(t.buf, b...)
		return nil
	}
	if u, ok := s.(*avro.UnionSchema); ok {
		for i, b := range u.Types() {
			if b.Type() == avro.Null {
				t.long(int64(i))
				return nil
			}
		}
	}
	if s.Type() == avro.Null {
		return nil
	}
	return t.fail(path, "missing, and the schema gives it no default")
}

func (t *transcoder) union(u *avro.UnionSchema, v any, path string) error {
	types := u.Types()
	if v == nil {
		for i, b := range types {
			if b.Type() == avro.Null {
				t.long(int64(i))
				return nil
			}
		}
		return t.fail(path, "null, but the union %s has no null branch", unionNames(types))
	}
	if m, ok := v.(map[string]any); ok && len(m) == 1 && t.d == avroJSON {
		for k, inner := range m {
			if i := branchIndex(types, k); i >= 0 {
				t.long(int64(i))
				return t.value(types[i], inner, path)
			}
			if !hasObjectBranch(types) {
				return t.fail(path, "union branch %q is not one of %s", k, unionNames(types))
			}
		}
	}
	// A bare value (Connect's form, and a leniency in Avro JSON): the only
	// non-null branch, else the first branch the value fits.
	var branches []int
	for i, b := range types {
		if b.Type() != avro.Null {
			branches = append(branches, i)
		}
	}
	if len(branches) == 1 {
		t.long(int64(branches[0]))
		return t.value(types[branches[0]], v, path)
	}
	mark := len(t.buf)
	for _, i := range branches {
		t.long(int64(i))
		if t.value(types[i], v, path) == nil {
			return nil
		}
		t.buf = t.buf[:mark]
	}
	return t.fail(path, "%s fits no branch of the union %s", described{v}, unionNames(types))
}

func (t *transcoder) array(s *avro.ArraySchema, v any, path string) error {
	arr, ok := v.([]any)
	if !ok {
		return t.fail(path, "want an array, got %s", described{v})
	}
	entry := t.d == connectJSON && isMapEntry(s.Items())
	if len(arr) > 0 {
		t.long(int64(len(arr)))
		for i, e := range arr {
			if pair, ok := e.([]any); ok && entry && len(pair) == 2 {
				// Connect writes a map with non-string keys as [key, value]
				// pairs; AvroConverter makes it an array of MapEntry records.
				e = map[string]any{"key": pair[0], "value": pair[1]}
			}
			if err := t.value(s.Items(), e, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	t.long(0)
	return nil
}

func isMapEntry(s avro.Schema) bool {
	rec, ok := deref(s).(*avro.RecordSchema)
	if !ok || len(rec.Fields()) != 2 {
		return false
	}
	return rec.Fields()[0].Name() == "key" && rec.Fields()[1].Name() == "value"
}

func (t *transcoder) mapValue(s *avro.MapSchema, v any, path string) error {
	obj, ok := v.(map[string]any)
	if !ok {
		return t.fail(path, "want an object (map), got %s", described{v})
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(keys) > 0 {
		t.long(int64(len(keys)))
		for _, k := range keys {
			t.bytes([]byte(k))
			if err := t.value(s.Values(), obj[k], fmt.Sprintf("%s[%q]", path, k)); err != nil {
				return err
			}
		}
	}
	t.long(0)
	return nil
}
