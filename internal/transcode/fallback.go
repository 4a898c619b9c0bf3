package transcode

import (
	"errors"
	"fmt"
	"io"

	"github.com/bqcdc/bqcdc/internal/avrobq"
	"github.com/bqcdc/bqcdc/internal/bqwrite"
	"github.com/bqcdc/bqcdc/internal/evolve"
	"github.com/bqcdc/bqcdc/internal/limits"
	"github.com/hamba/avro/v2"
)

// fallback converts one top-level column of the row image the way the
// rest of bqcdc defines it, value by value, for the columns the compiler
// does not cover natively: Avro maps, unions of several non-null types and
// arrays of arrays (stored as JSON), Debezium's spatial types (WKB to WKT),
// arrays of values that take no bytes, a semantic type on a decoded form
// its converter refuses, and any column the binder cannot tie to the table
// message natively. The rest of the row stays compiled: only the column's
// own bytes take the slow steps.
//
// Per value it locates the column's bytes with the plan's reader (which
// validates them, and charges the budget, exactly as for any column), has
// hamba decode that span into its generic form, converts it with the
// column's avrobq field, fits it into the table with evolve's fitter and
// encodes it with the table's encoder: the same four steps, with the same
// errors, as the reference pipeline the tests compare against.
type fallback struct {
	schema avro.Schema    // the field's writer type
	field  avrobq.Fields  // the column alone
	fitter *evolve.Fitter // writer column -> table column
	enc    *bqwrite.Encoder
	api    avro.API // private to the plan: see formats.Writer's api
}

// fallbackConfig bounds what hamba allocates for one value as the generic
// decoder's config does (formats' decodeConfig); the reader has checked
// every length and count against the bytes actually there before hamba
// runs, so the bounds are a backstop.
var fallbackConfig = avro.Config{
	MaxByteSliceSize:  limits.MaxMessageBytes,
	MaxSliceAllocSize: limits.MaxMessageBytes,
}

// fallbackNode compiles field f of the image as a fallback column: a node
// that reads (and skips) its type natively and converts through g.
func fallbackNode(s avro.Schema, f avrobq.Field, fitter *evolve.Fitter, enc *bqwrite.Encoder, api avro.API) *node {
	n := skipNode(s, map[*avro.RecordSchema]*node{})
	n.conv = cFallback
	n.gen = &fallback{schema: s, field: avrobq.Fields{f}, fitter: fitter, enc: enc, api: api}
	return n
}

// decode reads one value of the column from exactly its bytes into hamba's
// generic form, as decoding the whole record would.
func (g *fallback) decode(b []byte) (any, error) {
	r := avro.NewReader(nil, 0, avro.WithReaderConfig(g.api)).Reset(b)
	var v any
	r.ReadVal(g.schema, &v)
	if r.Error != nil && !errors.Is(r.Error, io.EOF) {
		return nil, r.Error
	}
	return v, nil
}

// generic converts one fallback column value. Decode errors are returned;
// conversion and fitting errors are recorded as any column's (the first in
// field order wins), encoding errors after them, as the reference's
// Encode runs once every column is converted.
func (st *state) generic(r *reader, f *field, lv *level) error {
	g := f.n.gen
	start := r.i
	if err := r.skip(f.n); err != nil {
		return err
	}
	v, err := g.decode(r.b[start:r.i])
	if err != nil {
		// The reader accepted the bytes, so hamba refusing them is a
		// disagreement between the two; the message cannot be stored.
		return fmt.Errorf("column %q: %w", f.name, err)
	}
	values, err := g.field.Convert(map[string]any{g.field[0].Source: v})
	if err != nil {
		st.failed(err)
		return nil
	}
	values, dropped, err := g.fitter.Fit(values)
	if err != nil {
		st.failed(err)
		return nil
	}
	st.dropped += dropped
	o := f.out
	if lv == nil || o == nil {
		return nil
	}
	for name, cv := range values { // at most one
		at := len(lv.buf)
		b, err := g.enc.AppendColumn(lv.buf, name, cv)
		if err != nil {
			if st.encErr == nil {
				st.encErr = err
			}
			return nil
		}
		lv.buf = b
		lv.spans[o.slot] = span{int32(at), int32(len(lv.buf))}
	}
	return nil
}
