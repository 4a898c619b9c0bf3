package formats

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"github.com/bqcdc/bqcdc/internal/avrobq"
	"strconv"
	"strings"
)

// avroDefault converts a Connect default (as JsonConverter writes it) into
// an Avro default: bytes and decimals from base64 (or a number) to a string
// of code points 0-255, structs, arrays and maps element by element. A null
// default is no default.
func avroDefault(cs *connectSchema, raw json.RawMessage) (any, bool, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, false, nil
	}
	v, err := parseJSON(raw)
	if err != nil {
		return nil, false, err
	}
	def, err := convertDefault(cs, v)
	return def, err == nil, err
}

func convertDefault(cs *connectSchema, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch cs.Type {
	case "bytes":
		var b []byte
		switch x := v.(type) {
		case string:
			var err error
			if b, err = base64.StdEncoding.DecodeString(x); err != nil {
				return nil, fmt.Errorf("bytes default is not base64: %v", err)
			}
		case json.Number:
			scale, _ := strconv.Atoi(cs.Parameters["scale"])
			n, err := unscaled(string(x), scale)
			if err != nil {
				return nil, err
			}
			b = avrobq.ToTwosComplement(n)
		default:
			return nil, fmt.Errorf("bytes default is %s", describe(v))
		}
		var s strings.Builder
		for _, c := range b {
			s.WriteRune(rune(c))
		}
		return s.String(), nil
	case "struct":
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("struct default is %s", describe(v))
		}
		out := make(map[string]any, len(cs.Fields))
		for _, f := range cs.Fields {
			fv, err := convertDefault(f, obj[f.Field])
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f.Field, err)
			}
			out[f.Field] = fv
		}
		return out, nil
	case "array":
		arr, ok := v.([]any)
		if !ok || cs.Items == nil {
			return nil, fmt.Errorf("array default is %s", describe(v))
		}
		out := make([]any, len(arr))
		for i, e := range arr {
			var err error
			if out[i], err = convertDefault(cs.Items, e); err != nil {
				return nil, err
			}
		}
		return out, nil
	case "map":
		return convertMapDefault(cs, v)
	}
	return v, nil
}

func convertMapDefault(cs *connectSchema, v any) (any, error) {
	if cs.Keys == nil || cs.Values == nil {
		return nil, fmt.Errorf("map default without key and value schemas")
	}
	if obj, ok := v.(map[string]any); ok {
		out := make(map[string]any, len(obj))
		for k, e := range obj {
			ev, err := convertDefault(cs.Values, e)
			if err != nil {
				return nil, err
			}
			out[k] = ev
		}
		if cs.Keys.Type == "string" {
			return out, nil
		}
		v = pairs(out)
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("map default is %s", describe(v))
	}
	out := make([]any, 0, len(arr))
	for _, e := range arr {
		pair, ok := e.([]any)
		if !ok || len(pair) != 2 {
			return nil, fmt.Errorf("map default entry is %s, want [key, value]", describe(e))
		}
		k, err := convertDefault(cs.Keys, pair[0])
		if err != nil {
			return nil, err
		}
		val, err := convertDefault(cs.Values, pair[1])
		if err != nil {
			return nil, err
		}
		out = append(out, map[string]any{"key": k, "value": val})
	}
	return out, nil
}

func pairs(m map[string]any) []any {
	out := make([]any, 0, len(m))
	for k, v := range m {
		out = append(out, []any{k, v})
	}
	return out
}
