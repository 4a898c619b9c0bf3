package cdc

import (
	"encoding/json"
	"fmt"
)

// EditImage returns a Debezium envelope schema (Avro JSON text) whose row
// image — the record "before" declares and "after" refers to — has the
// fields edit returns. The demo and the tests use it to derive the next
// version of a source's schema the way a changed table would.
func EditImage(envelope []byte, edit func(fields []any) []any) (string, error) {
	var env map[string]any
	if err := json.Unmarshal(envelope, &env); err != nil {
		return "", fmt.Errorf("parsing envelope schema: %w", err)
	}
	fields, _ := env["fields"].([]any)
	for _, f := range fields {
		field, _ := f.(map[string]any)
		if field["name"] != "before" {
			continue
		}
		union, _ := field["type"].([]any)
		for _, branch := range union {
			if rec, ok := branch.(map[string]any); ok && rec["type"] == "record" {
				list, _ := rec["fields"].([]any)
				rec["fields"] = edit(list)
				b, err := json.Marshal(env)
				return string(b), err
			}
		}
	}
	return "", fmt.Errorf("envelope schema has no \"before\" record to edit")
}
