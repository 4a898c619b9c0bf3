package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/hamba/avro/v2"
)

// Schema text is checked before hamba parses it, and the parsed schema
// after, so that a bad schema (a .avsc file, a registry's answer) gets an
// error that says what is wrong and where, never one that echoes the text
// (hamba's "avro: unknown type: <the whole text>") or runs for ever:
//
//   - empty text: "empty schema";
//   - not JSON: the syntax error at its line and column;
//   - JSON nested deeper than MaxSchemaDepth (records nested 10,000 deep
//     would make every walk of the schema recurse as deep);
//
// Every message is at most MaxErrorBytes. CheckFinite refuses, where a
// schema must give a changelog's columns, a record that contains itself.

// MaxSchemaDepth bounds the JSON nesting of a schema. A Debezium envelope
// of nested records takes about four levels per record.
const MaxSchemaDepth = 128

// MaxErrorBytes bounds the text of a schema error.
const MaxErrorBytes = 1024

// checkText checks schema text before it is parsed.
func checkText(text string) error {
	b := []byte(text)
	if len(bytes.TrimSpace(b)) == 0 {
		return errors.New("empty schema")
	}
	if depth, at := jsonDepth(b); depth > MaxSchemaDepth {
		line, col := lineCol(b, at)
		return fmt.Errorf("nested deeper than %d levels (at line %d, column %d)", MaxSchemaDepth, line, col)
	}
	if json.Valid(b) {
		return nil // hamba parses it; no tree is built here
	}
	var v any // only to say where the syntax fails
	if err := json.Unmarshal(b, &v); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			line, col := lineCol(b, int(syn.Offset)-1) // Offset counts the bad byte
			return fmt.Errorf("not JSON: %s at line %d, column %d", syn.Error(), line, col)
		}
		return fmt.Errorf("not JSON: %s", clip(err.Error(), text))
	}
	return nil
}

// jsonDepth is the deepest nesting of objects and arrays in b (outside
// strings), and the offset where it first passes MaxSchemaDepth.
func jsonDepth(b []byte) (deepest, at int) {
	depth, inString, escaped := 0, false, false
	for i, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			if depth > deepest {
				deepest = depth
				if depth == MaxSchemaDepth+1 {
					at = i
				}
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest, at
}

// lineCol is the 1-based line and column (in bytes) of offset in b.
func lineCol(b []byte, offset int) (line, col int) {
	offset = min(max(offset, 0), len(b))
	line = 1 + bytes.Count(b[:offset], []byte("\n"))
	col = offset - bytes.LastIndexByte(b[:offset], '\n')
	return line, col
}

// clip shortens a message to MaxErrorBytes, and removes from it any run of
// the schema text it echoes.
func clip(msg, text string) string {
	if t := strings.TrimSpace(text); len(t) > 16 {
		// hamba quotes the text it could not read, whole or from a point.
		for _, probe := range []string{t, t[:16]} {
			if i := strings.Index(msg, probe); i >= 0 {
				msg = msg[:i] + "(schema text omitted)"
				break
			}
		}
	}
	if len(msg) > MaxErrorBytes {
		msg = msg[:MaxErrorBytes-3] + "..."
	}
	return msg
}

// CheckFinite refuses a schema whose records contain themselves (a linked
// list: {"name": "next", "type": ["null", "Value"]}): the columns of a
// table are finite, so such a schema gives no changelog. (Ingest decodes
// a message of one against a changelog, and dead-letters one nested
// deeper than BigQuery allows.)
func CheckFinite(s avro.Schema) error {
	return recursion(s, nil, map[avro.Schema]bool{})
}

// recursion walks s; open are the records being walked (outermost first),
// done the schemas already walked whole.
func recursion(s avro.Schema, open []*avro.RecordSchema, done map[avro.Schema]bool) error {
	if done[s] {
		return nil
	}
	switch t := s.(type) {
	case *avro.RefSchema:
		if r, ok := t.Schema().(*avro.RecordSchema); ok {
			for _, o := range open {
				if o.FullName() == r.FullName() {
					return fmt.Errorf("recursive record %s", r.Name())
				}
			}
		}
		return recursion(t.Schema(), open, done)
	case *avro.RecordSchema:
		for _, o := range open {
			if o == t {
				return fmt.Errorf("recursive record %s", t.Name())
			}
		}
		for _, f := range t.Fields() {
			if err := recursion(f.Type(), append(open, t), done); err != nil {
				if strings.Contains(err.Error(), "(field ") {
					return err
				}
				return fmt.Errorf("%w (field %s)", err, f.Name())
			}
		}
	case *avro.UnionSchema:
		for _, u := range t.Types() {
			if err := recursion(u, open, done); err != nil {
				return err
			}
		}
	case *avro.ArraySchema:
		return recursion(t.Items(), open, done)
	case *avro.MapSchema:
		return recursion(t.Values(), open, done)
	}
	done[s] = true
	return nil
}
