package transcode

import (
	"fmt"
	"time"

	"github.com/bqcdc/bqcdc/internal/cdc"
	"github.com/hamba/avro/v2"
)

func (p *Plan) compileEnvelope(env *avro.RecordSchema, shape cdc.Shape) error {
	for _, f := range env.Fields() {
		ef := envField{role: roleSkip, recBranch: -1, n: skipNode(f.Type(), map[*avro.RecordSchema]*node{})}
		var err error
		switch f.Name() {
		case "op":
			ef.role = roleOp
		case "before", "after":
			err = p.imageField(&ef, f, shape)
		case "source":
			err = blockField(&ef, f.Type(), roleSource, sourceSlots)
		case "transaction":
			err = blockField(&ef, f.Type(), roleTx, txSlots)
		case "ts_ms":
			ef.role = roleTsMs
			ef.probe, err = newProbe(f.Type(), envTsMs)
		}
		if err != nil {
			return fmt.Errorf("envelope field %s: %w", f.Name(), err)
		}
		p.env = append(p.env, ef)
	}
	return nil
}

// imageField compiles before or after: a union of null and the image
// record, as Debezium writes them. cdc takes the first record of any
// union; other unions are left to the generic path.
func (p *Plan) imageField(ef *envField, f *avro.Field, shape cdc.Shape) error {
	u, ok := f.Type().(*avro.UnionSchema)
	if !ok {
		return nil // cdc ignores it: the image is missing
	}
	rec := -1
	for i, t := range u.Types() {
		if _, isRec := deref(t).(*avro.RecordSchema); isRec && rec < 0 {
			rec = i
		}
	}
	if rec < 0 {
		return nil
	}
	if len(u.Types()) != 2 || u.Types()[1-rec].Type() != avro.Null || deref(u.Types()[rec]) != avro.Schema(shape.Image) {
		return unsupported("the image union is not [null, %s]", shape.Image.FullName())
	}
	ef.role, ef.recBranch = roleBefore, rec
	k := 0
	if f.Name() == "after" {
		ef.role, k = roleAfter, 1
	}
	p.has[k] = true
	return nil
}

// blockField compiles source or transaction: a record, or a union of null
// and a record, of which a few fields are read.
func blockField(ef *envField, s avro.Schema, role envRole, slots map[string]int) error {
	rec, branch, err := blockRecord(s)
	if err != nil || rec == nil {
		return err
	}
	ef.role, ef.recBranch = role, branch
	for _, bf := range rec.Fields() {
		slot, ok := slots[bf.Name()]
		if !ok {
			ef.probes = append(ef.probes, probe{slot: -1, n: skipNode(bf.Type(), map[*avro.RecordSchema]*node{})})
			continue
		}
		pr, err := newProbe(bf.Type(), slot)
		if err != nil {
			return fmt.Errorf("field %s: %w", bf.Name(), err)
		}
		ef.probes = append(ef.probes, pr)
	}
	return nil
}

// blockRecord mirrors cdc's recordOrNullable.
func blockRecord(s avro.Schema) (*avro.RecordSchema, int, error) {
	if u, ok := s.(*avro.UnionSchema); ok {
		rec := -1
		for i, t := range u.Types() {
			if _, isRec := deref(t).(*avro.RecordSchema); isRec && rec < 0 {
				rec = i
			}
		}
		if rec < 0 {
			return nil, -1, nil
		}
		if len(u.Types()) != 2 || u.Types()[1-rec].Type() != avro.Null {
			return nil, -1, unsupported("a union of a record with other types than null")
		}
		return deref(u.Types()[rec]).(*avro.RecordSchema), rec, nil
	}
	if rec, ok := s.(*avro.RecordSchema); ok {
		return rec, -1, nil
	}
	return nil, -1, nil
}

// rowMeta are the metadata read from the payload.
type rowMeta struct {
	op       []byte
	sourceTS time.Time
	seq      cdc.Seq
	tx       bool
}

// image is where one of before/after was found in the payload.
type image struct {
	present, converted bool
	start, end         int
	convErr            error // classified (state.imageErr)
	dropped            int
}

// needs is the image an op stores (the reference's oracle.Flatten): 1 after, 0 before,
// -1 none (truncate), -2 an unknown op.
func needs(code []byte) int {
	op := cdc.ParseOp(code)
	switch {
	case op == cdc.OpNone:
		return -2
	case op.ImageField() == "after":
		return 1
	case op.ImageField() == "before":
		return 0
	}
	return -1
}

// envelopeOf reads a Debezium envelope in one pass. The op comes after
// the images in Debezium's field order, so "after" is converted as it is
// read (c, u and r store it) and "before" only validated and located; a
// delete then converts "before" from where it lies.
func (p *Plan) envelopeOf(st *state, r *reader) (rowMeta, error) {
	var rm rowMeta
	var imgs [2]image
	opKnown := false
	for i := range p.env {
		ef := &p.env[i]
		var err error
		switch ef.role {
		case roleOp:
			rm.op, err = r.bytesOf(ef.n)
			opKnown = true
		case roleBefore, roleAfter:
			k := 0
			if ef.role == roleAfter {
				k = 1
			}
			err = p.readImage(st, r, ef, &imgs[k], k, opKnown && needs(rm.op) == k || !opKnown && k == 1)
		case roleSource, roleTx:
			var present bool
			present, err = readBlock(st, r, ef)
			if ef.role == roleTx {
				rm.tx = present
			}
		case roleTsMs:
			err = r.probe(&ef.probe, &st.src[envTsMs])
		default:
			err = r.skip(ef.n)
		}
		if err != nil {
			return rm, decodeErr(err)
		}
	}
	if r.left() > 0 {
		return rm, decodeErr(errTrailing)
	}
	k := needs(rm.op)
	var convErr error
	switch {
	case k == -2:
		return rm, envelopeErr("unknown op %q (want c, u, d, r or t)", rm.op)
	case k >= 0:
		field := [2]string{"before", "after"}[k]
		if !p.has[k] {
			return rm, envelopeErr("op %q needs the %s image, which the schema lacks", rm.op, field)
		}
		img := &imgs[k]
		if !img.present {
			return rm, envelopeErr("op %q without its %s image", rm.op, field)
		}
		if !img.converted {
			st.reset()
			ir := reader{b: r.b[:img.end], i: img.start, reread: true} // charged as it was skipped
			if err := st.record(&ir, p.image, 0); err != nil {
				return rm, decodeErr(err)
			}
			img.convErr, img.dropped = st.imageErr(), st.dropped
		}
		convErr = img.convErr
		st.dropped = img.dropped
	default: // truncate: no image, only metadata and defaults
		st.level(0, p.image.rec.slots)
		st.dropped = 0
	}
	// The reference's Flatten (the source block) runs before avrobq's Convert on the
	// generic path, so its errors win.
	if err := p.flatten(st, &rm); err != nil {
		return rm, err
	}
	if convErr != nil {
		return rm, convErr
	}
	return rm, nil
}

func (p *Plan) readImage(st *state, r *reader, ef *envField, img *image, k int, convert bool) error {
	i, err := r.index(len(ef.n.branches), errBranch)
	if err != nil || i != ef.recBranch {
		return err
	}
	img.present, img.start = true, r.i
	if convert {
		st.reset()
		if err := st.record(r, p.image, 0); err != nil {
			return err
		}
		img.converted, img.convErr, img.dropped = true, st.imageErr(), st.dropped
	} else if err := r.skip(p.image); err != nil {
		return err
	}
	img.end = r.i
	return nil
}

// readBlock reads source or transaction into the scalar slots.
func readBlock(st *state, r *reader, ef *envField) (bool, error) {
	if ef.recBranch >= 0 {
		i, err := r.index(len(ef.n.branches), errBranch)
		if err != nil || i != ef.recBranch {
			return false, err
		}
	}
	for j := range ef.probes {
		pr := &ef.probes[j]
		var err error
		if pr.slot < 0 {
			err = r.skip(pr.n)
		} else {
			err = r.probe(pr, &st.src[pr.slot])
		}
		if err != nil {
			return false, err
		}
	}
	return true, nil
}

// flatten is the rest of the reference's Flatten: source time and sequence, with
// the envelope's ts_ms as the fallback time, by cdc's own rules.
func (p *Plan) flatten(st *state, rm *rowMeta) error {
	// A NULL source block leaves its slots empty (absent), for which
	// cdc.Position finds nothing, as cdc finds nothing without the block.
	b := block(&st.src)
	if err := p.shape.CheckPosition(&b); err != nil {
		return envelopeWrap(err)
	}
	ts, q, err := cdc.Position(&b, cdc.ParseOp(rm.op))
	if err != nil {
		return envelopeWrap(err)
	}
	rm.sourceTS, rm.seq = ts, q
	if rm.sourceTS.IsZero() {
		if rm.sourceTS, err = cdc.EnvelopeTime(block1(st.src[envTsMs])); err != nil {
			return envelopeWrap(err)
		}
	}
	if rm.seq.IsZero() && !rm.sourceTS.IsZero() {
		rm.seq = cdc.TimestampSeq(rm.sourceTS)
	}
	return nil
}

// block1 is one scalar as cdc reads it.
func block1(v scalar) cdc.Field {
	var src [nSlots]scalar
	src[srcTsMs] = v
	return block(&src).TsMs
}
