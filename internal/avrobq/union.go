package avrobq

import (
	"reflect"

	"github.com/hamba/avro/v2"
)

// BranchName is the key hamba uses when it wraps a union value: the full name
// of a named type, else the type name ("map", "array", "string", ...), with
// the logical type appended ("long.local-timestamp-micros").
func BranchName(s avro.Schema) string {
	s = deref(s)
	if n, ok := s.(avro.NamedSchema); ok {
		return n.FullName()
	}
	if lts, ok := s.(avro.LogicalTypeSchema); ok && lts.Logical() != nil {
		return string(s.Type()) + "." + string(lts.Logical().Type())
	}
	return string(s.Type())
}

// Unwrap returns the value of a decoded union and the schema of its branch.
// hamba decodes a union holding a named type (record, enum, fixed) or a map
// as map{"branch name": value} and plain primitives unwrapped (except the
// local-timestamp types, which it wraps); both forms are accepted, and a
// logical type's branch may be named with or without its logical type. A
// nil value is the null branch (schema nil).
func Unwrap(u *avro.UnionSchema, v any) (any, avro.Schema) {
	if v == nil {
		return nil, nil
	}
	if m, ok := v.(map[string]any); ok && len(m) == 1 {
		for k, inner := range m {
			for _, t := range u.Types() {
				if BranchName(t) == k || string(deref(t).Type()) == k {
					return inner, deref(t)
				}
			}
		}
	}
	if only := nonNull(u); only != nil {
		return v, deref(only)
	}
	return v, nil
}

func fixedBytes(v any) ([]byte, bool) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Array || rv.Type().Elem().Kind() != reflect.Uint8 {
		return nil, false
	}
	b := make([]byte, rv.Len())
	reflect.Copy(reflect.ValueOf(b), rv)
	return b, true
}

// plain unwraps a value of a nullable union inside a record that is
// converted as a whole (VariableScaleDecimal, the geometry records): hamba
// may give it as {"int": 4326} rather than 4326.
func plain(v any) any {
	if m, ok := v.(map[string]any); ok && len(m) == 1 {
		for _, inner := range m {
			return inner
		}
	}
	return v
}
