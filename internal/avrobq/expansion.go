package avrobq

import (
	"github.com/bqcdc/bqcdc/internal/limits"
	"github.com/hamba/avro/v2"
)

// Expansion is how many bytes converting one value of s may add beyond
// the value's own bytes, as far as the schema tells: the padding of
// io.debezium.data.Bits to its declared length, and the text of a decimal
// of declared scale (its digits come from its bytes; the scale's zeros,
// a point and a sign do not). A record sums its fields, a union takes its
// widest branch; arrays and maps count nothing here, their items being
// charged as their blocks are read (see limits.Budget), and neither does a
// VariableScaleDecimal, whose scale is in each value.
//
// Both decode paths charge array and map items by it, so they refuse the
// same messages.
func Expansion(s avro.Schema) int64 { return expansion(s, map[avro.Schema]bool{}) }

func expansion(s avro.Schema, open map[avro.Schema]bool) int64 {
	if r, ok := s.(*avro.RefSchema); ok {
		s = r.Schema()
	}
	switch s.Type() {
	case avro.Record:
		if _, semantic := semantics[connectName(s)]; open[s] || semantic {
			return 0 // a recursion (bounded by its union or array), or a value converted whole
		}
		open[s] = true
		var n int64
		for _, f := range s.(*avro.RecordSchema).Fields() {
			n += expansion(f.Type(), open)
		}
		delete(open, s)
		return n
	case avro.Union:
		var n int64
		for _, t := range s.(*avro.UnionSchema).Types() {
			n = max(n, expansion(t, open))
		}
		return n
	case avro.Bytes, avro.Fixed:
		if connectName(s) == "io.debezium.data.Bits" {
			if length, ok := ConnectParam(s, "length"); ok && length > 1 {
				return int64(min(length, limits.MaxBitsLength)+7) / 8
			}
			return 0
		}
		scale, ok := 0, false
		if d, isDec := decimalLogical(s); isDec {
			scale, ok = d.Scale(), true
		} else if connectName(s) == "org.apache.kafka.connect.data.Decimal" {
			scale, ok = ConnectParam(s, "scale")
		}
		if ok {
			return int64(min(abs(scale), limits.MaxDecimalScale)) + 2
		}
	}
	return 0
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// VariableScaleText is what the text of a VariableScaleDecimal of scale
// may add beyond its bytes, for limits.Budget: a scale beyond
// limits.MaxVariableScale is refused before any text is made, so it costs
// what the largest allowed one does.
func VariableScaleText(scale int64) int64 {
	if scale < 0 {
		scale = -scale
	}
	return min(scale, limits.MaxVariableScale) + 2
}

// IsVariableScaleDecimal reports a record that is Debezium's
// VariableScaleDecimal, and the index of its scale field (an int or long
// that both decode paths read as they pass it); ok is false when s is not
// one or its scale is not a plain int or long.
func IsVariableScaleDecimal(s avro.Schema) (scaleField int, ok bool) {
	if r, isRef := s.(*avro.RefSchema); isRef {
		s = r.Schema()
	}
	rec, isRec := s.(*avro.RecordSchema)
	if !isRec || connectName(s) != "io.debezium.data.VariableScaleDecimal" {
		return 0, false
	}
	for i, f := range rec.Fields() {
		if f.Name() == "scale" {
			t := f.Type().Type()
			return i, t == avro.Int || t == avro.Long
		}
	}
	return 0, false
}
