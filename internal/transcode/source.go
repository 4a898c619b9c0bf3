package transcode

import (
	"unsafe"

	"github.com/bqcdc/bqcdc/internal/cdc"
	"github.com/hamba/avro/v2"
)

// The Debezium source and transaction blocks are read the way package cdc
// reads them from hamba's map: a few fields by name, each taken only when
// it decoded to the Go type cdc asks for (an int, int32 or int64 for
// asInt; a string for asString; a string or bool for source.snapshot).
// A probe compiles that question per union branch, so the payload's scalar
// is kept only when the generic path would have used it.

type skind uint8

// Kinds, as cdc.Kind classifies them (see fieldOf).
const (
	skNone   skind = iota // absent: the schema has no such field
	skNull                // NULL
	skInt                 // an int or long
	skString              // a string or enum symbol
	skBool
	skOther // any other type
)

type scalar struct {
	kind skind
	i    int64
	s    []byte
	b    bool
}

func (s scalar) str() string { return unsafe.String(unsafe.SliceData(s.s), len(s.s)) }

// probe reads one field of a block into a scalar slot.
type probe struct {
	slot  int // -1: skip the field
	n     *node
	kinds []skind // by union branch (one entry when not a union)
}

func kindOf(n *node) skind {
	switch n.form {
	case fNull:
		return skNull
	case fInt, fLong:
		return skInt
	case fString, fEnum:
		return skString
	case fBool:
		return skBool
	}
	return skOther
}

// newProbe compiles the read of field s into slot. cdc unwraps any
// one-entry map (its unwrapSingle), which would make a one-field record
// or a map look like its content; such fields are left to the generic
// path.
func newProbe(s avro.Schema, slot int) (probe, error) {
	n := skipNode(s, map[*avro.RecordSchema]*node{})
	p := probe{slot: slot, n: n}
	if n.dec == dUnion {
		for _, b := range n.branches {
			p.kinds = append(p.kinds, kindOf(b))
		}
		return p, nil
	}
	if n.dec == dMap || (n.dec == dRecord && len(n.fields) == 1) {
		return p, unsupported("a Debezium block field of type %s", n.dec)
	}
	p.kinds = []skind{kindOf(n)}
	return p, nil
}

func (r *reader) probe(p *probe, out *scalar) error {
	n, k := p.n, p.kinds[0]
	if n.dec == dUnion {
		i, err := r.index(len(n.branches), errBranch)
		if err != nil {
			return err
		}
		n, k = n.branches[i], p.kinds[i]
	}
	*out = scalar{}
	var err error
	switch {
	case k == skNull || k == skOther || k == skNone:
		out.kind = k
		return r.skip(n)
	case n.dec == dInt:
		var v int32
		v, err = r.int()
		*out = scalar{kind: skInt, i: int64(v)}
	case n.dec == dLong:
		out.i, err = r.long()
		out.kind = skInt
	case n.dec == dBytes:
		out.s, err = r.bytesOf(n)
		out.kind = skString
	case n.dec == dEnum:
		var i int
		i, err = r.index(n.size, errSymbol)
		if err == nil {
			*out = scalar{kind: skString, s: unsafe.Slice(unsafe.StringData(n.symbols[i]), len(n.symbols[i]))}
		}
	case n.dec == dBool:
		out.b, err = r.bool()
		out.kind = skBool
	default:
		return r.skip(n)
	}
	return err
}

// Scalar slots of the source and transaction blocks.
const (
	srcTsUs = iota
	srcTsNs
	srcTsMs
	srcSnapshot
	srcConnector
	srcFile
	srcPos
	srcRow
	srcLsn
	srcSequence
	txID
	txTotal
	txPerTable
	envTsMs
	nSlots
)

var sourceSlots = map[string]int{
	"ts_us": srcTsUs, "ts_ns": srcTsNs, "ts_ms": srcTsMs, "snapshot": srcSnapshot, "connector": srcConnector,
	"file": srcFile, "pos": srcPos, "row": srcRow, "lsn": srcLsn, "sequence": srcSequence,
}

var txSlots = map[string]int{"id": txID, "total_order": txTotal, "data_collection_order": txPerTable}

// block is the source block of the message as package cdc reads it; its
// strings point into the payload.
func block(src *[nSlots]scalar) cdc.SourceBlock {
	f := func(v scalar) cdc.Field {
		switch v.kind {
		case skNull:
			return cdc.Field{Kind: cdc.Null}
		case skInt:
			return cdc.Field{Kind: cdc.Int, Int: v.i}
		case skString:
			return cdc.Field{Kind: cdc.String, Str: v.str()}
		case skBool:
			return cdc.Field{Kind: cdc.Bool, Bool: v.b}
		case skOther:
			return cdc.Field{Kind: cdc.Other}
		}
		return cdc.Field{}
	}
	return cdc.SourceBlock{
		TsUs: f(src[srcTsUs]), TsNs: f(src[srcTsNs]), TsMs: f(src[srcTsMs]),
		Snapshot: f(src[srcSnapshot]), Connector: f(src[srcConnector]),
		File: f(src[srcFile]), Pos: f(src[srcPos]), Row: f(src[srcRow]), LSN: f(src[srcLsn]), Sequence: f(src[srcSequence]),
	}
}
