package cdc

import "time"

// The map pipeline's reading of a source block (internal/dev/oracle has the
// same, for the other packages' tests): the position tests read hamba's
// map form through it.

// blockOf reads a source block from hamba's map.
func blockOf(src map[string]any) SourceBlock {
	var b SourceBlock
	for name, v := range src {
		if f := b.Lookup(name); f != nil {
			*f = FieldOf(v, true)
		}
	}
	return b
}

// sourcePosition reads Debezium's source block from hamba's map (see
// Position for the rules).
func sourcePosition(src map[string]any, op Op) (time.Time, string, error) {
	b := blockOf(src)
	ts, q, err := Position(&b, op)
	return ts, q.String(), err
}
