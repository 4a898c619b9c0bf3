package formats

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/bqcdc/bqcdc/internal/failure"
	"github.com/hamba/avro/v2"
)

// branchIndex finds the union branch an Avro JSON wrapper key names: the full
// name of a named type (the short name is accepted too), else the type name,
// with hamba's "long.timestamp-millis" style for logical types accepted.
func branchIndex(types []avro.Schema, key string) int {
	for i, b := range types {
		b = deref(b)
		if n, ok := b.(avro.NamedSchema); ok {
			if n.FullName() == key || n.Name() == key {
				return i
			}
			continue
		}
		if string(b.Type()) == key || logicalBranchName(b) == key {
			return i
		}
	}
	return -1
}

// hasObjectBranch reports whether a bare JSON object could be a value of
// the union (a record or map branch).
func hasObjectBranch(types []avro.Schema) bool {
	for _, b := range types {
		if t := deref(b).Type(); t == avro.Record || t == avro.Map {
			return true
		}
	}
	return false
}

func logicalBranchName(s avro.Schema) string {
	if lts, ok := s.(avro.LogicalTypeSchema); ok && lts.Logical() != nil {
		return string(s.Type()) + "." + string(lts.Logical().Type())
	}
	return ""
}

func unionNames(types []avro.Schema) string {
	names := make([]string, len(types))
	for i, b := range types {
		names[i] = typeName(b)
	}
	return "[" + strings.Join(names, ", ") + "]"
}

func prop(s avro.Schema, name string) string {
	if p, ok := s.(interface{ Prop(string) any }); ok {
		v, _ := p.Prop(name).(string)
		return v
	}
	return ""
}

func deref(s avro.Schema) avro.Schema {
	if r, ok := s.(*avro.RefSchema); ok {
		return r.Schema()
	}
	return s
}

func typeName(s avro.Schema) string {
	s = deref(s)
	if n, ok := s.(avro.NamedSchema); ok {
		return string(s.Type()) + " " + n.FullName()
	}
	if u, ok := s.(*avro.UnionSchema); ok {
		return unionNames(u.Types())
	}
	if l := logicalBranchName(s); l != "" {
		return l
	}
	return string(s.Type())
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// describe names a JSON value for an error message, quoting at most a few
// characters of it.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return fmt.Sprintf("boolean %t", x)
	case json.Number:
		return "number " + clip(string(x))
	case string:
		return "string " + strconv.Quote(clip(x))
	case []any:
		return fmt.Sprintf("an array of %d", len(x))
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// described is describe(v) as an argument of failure.Errorf: a value of
// the row, withheld from redacted reasons but for its kind ("string
// [value withheld]").
type described struct{ v any }

func (d described) Format(f fmt.State, _ rune) { f.Write([]byte(describe(d.v))) }

func (d described) Withheld() any {
	switch d.v.(type) {
	case bool:
		return "boolean " + failure.Withheld
	case json.Number:
		return "number " + failure.Withheld
	case string:
		return "string " + failure.Withheld
	}
	return describe(d.v) // null, an array of n, an object: no value in them
}

func clip(s string) string {
	const max = 40
	if len(s) <= max {
		return s
	}
	return s[:max] + "..."
}

// splitName splits a Connect name into an Avro namespace and name, each made
// a valid Avro name.
func splitName(full string) (namespace, name string) {
	i := strings.LastIndexByte(full, '.')
	if i < 0 {
		return "", avroName(full)
	}
	parts := strings.Split(full[:i], ".")
	for j, p := range parts {
		parts[j] = avroName(p)
	}
	return strings.Join(parts, "."), avroName(full[i+1:])
}

func avroName(s string) string {
	var b bytes.Buffer
	for i, r := range s {
		switch {
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
			b.WriteRune(r)
		case r >= '0' && r <= '9':
			if i == 0 {
				b.WriteByte('_')
			}
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "_"
	}
	return b.String()
}

func validName(s string) bool { return s != "" && avroName(s) == s }

func pathOr(path string) string {
	if path == "" {
		return "(top level)"
	}
	return path
}
