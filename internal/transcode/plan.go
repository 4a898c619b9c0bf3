package transcode

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/avrobq"
	"github.com/bqcdc/bqcdc/internal/bqschema"
	"github.com/bqcdc/bqcdc/internal/bqwrite"
	"github.com/bqcdc/bqcdc/internal/cdc"
	"github.com/bqcdc/bqcdc/internal/changelog"
	"github.com/bqcdc/bqcdc/internal/evolve"
	"github.com/bqcdc/bqcdc/internal/failure"
	"github.com/bqcdc/bqcdc/internal/schema"
	"github.com/hamba/avro/v2"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// ErrUnsupported marks a writer schema or table the transcoder does not
// compile; the caller keeps the generic path for it.
var ErrUnsupported = errors.New("not supported by the transcoder (use the generic path)")

// Config is what a Plan is compiled from: the pieces ingest's codec holds
// for one (writer schema, table version).
type Config struct {
	// Writer is the writer schema of the payloads, a record: a Debezium
	// envelope or a plain row image (see cdc.ShapeOf).
	Writer avro.Schema
	// Table is the changelog table version rows are written to.
	Table bigquery.Schema
	// Encoder is the table's encoder (bqwrite.Table.Encoder); built from
	// Table when nil. Its descriptor decides field numbers and kinds.
	Encoder *bqwrite.Encoder
	// Defaults are the values of table columns the writer lacks, in
	// avrobq's canonical form, keyed by column: the reader schema's
	// defaults, as ingest's codec computes them.
	Defaults map[string]any
}

// Meta are the metadata of a row that come with the message, not the
// payload.
type Meta struct {
	MessageID   string
	PublishTime time.Time
	IngestedAt  time.Time
	SchemaID    int // 0: none
}

// Plan transcodes payloads of one writer schema into rows of one table
// version. It is immutable and safe for concurrent use.
type Plan struct {
	envelope bool
	image    *node // the row image record, converted
	env      []envField
	has      [2]bool // the schema has a before / after image
	top      []topField
	tx       [3]txField // _cdc_transaction's fields in number order
	md       protoreflect.MessageDescriptor
	pool     sync.Pool
}

type envRole uint8

const (
	roleSkip envRole = iota
	roleOp
	roleBefore
	roleAfter
	roleSource
	roleTx
	roleTsMs
)

// envField is one field of a Debezium envelope.
type envField struct {
	role      envRole
	n         *node
	recBranch int     // union index of the record (images, blocks); -1: not a union
	probes    []probe // source, transaction: by field
	probe     probe   // ts_ms
}

type topKind uint8

const (
	topWriter topKind = iota
	topDefault
	topMeta
)

// topField is one field of the row message, in field number order.
type topField struct {
	kind  topKind
	num   protowire.Number
	slot  int      // topWriter
	bytes []byte   // topDefault: the encoded field
	meta  metaKind // topMeta
	tag   []byte   // topMeta
}

type txField struct {
	slot int // scalar slot
	tag  []byte
	str  bool
}

// Compile builds the plan for cfg. Errors mean the generic path must
// handle the writer schema: ErrUnsupported for what the transcoder does
// not cover, and otherwise the error the generic path's codec would
// report for the schema (a conflict with the table, an unusable schema),
// which makes every message of the schema fail there too.
func Compile(cfg Config) (*Plan, error) {
	shape, err := cdc.ShapeOf(cfg.Writer)
	if err != nil {
		return nil, fmt.Errorf("writer schema: %w", err)
	}
	fields, err := avrobq.FromRecord(shape.Image)
	if err != nil {
		return nil, fmt.Errorf("writer schema: %w", err)
	}
	cols, err := changelog.Schema(fields.Columns())
	if err != nil {
		return nil, fmt.Errorf("writer schema: %w", err)
	}
	table := bqschema.FromBigQuery(cfg.Table)
	if _, err := evolve.NewFitter(table, cols); err != nil {
		return nil, fmt.Errorf("writer schema does not fit the table: %w", err)
	}
	enc := cfg.Encoder
	if enc == nil {
		if enc, err = bqwrite.NewEncoder(cfg.Table); err != nil {
			return nil, err
		}
	}
	md, err := messageDescriptor(enc.Descriptor())
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnsupported, err)
	}
	if err := checkRequired(md, true, map[protoreflect.FullName]bool{}); err != nil {
		return nil, err
	}
	var c compiler
	img, imgCol, err := c.record(shape.Image, 0)
	if err != nil {
		return nil, fmt.Errorf("writer schema %s: %w", shape.Image.FullName(), err)
	}
	if !sameColumns(imgCol.Fields, fields.Columns()) {
		return nil, unsupported("the transcoder types the columns of %s differently from avrobq", shape.Image.FullName())
	}
	p := &Plan{envelope: shape.Envelope, image: img, md: md}
	taken := map[protowire.Number]bool{}
	rp, nums, err := binder{}.bindRecord(img, imgCol.Fields, table, md, taken)
	if err != nil {
		return nil, err
	}
	img.rec = rp
	for i, num := range nums {
		p.top = append(p.top, topField{kind: topWriter, num: num, slot: i})
	}
	if err := p.bindMeta(md, taken); err != nil {
		return nil, err
	}
	if err := p.bindDefaults(enc, md, cfg.Defaults, taken); err != nil {
		return nil, err
	}
	sortTop(p.top)
	if shape.Envelope {
		if err := p.compileEnvelope(cfg.Writer.(*avro.RecordSchema), shape); err != nil {
			return nil, err
		}
	}
	p.pool.New = func() any { return newState() }
	return p, nil
}

func sameColumns(a, b []schema.Column) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Name != y.Name || x.Type != y.Type || x.Repeated != y.Repeated || x.Precision != y.Precision || x.Scale != y.Scale ||
			!sameColumns(x.Fields, y.Fields) {
			return false
		}
	}
	return true
}

func sortTop(top []topField) {
	for i := 1; i < len(top); i++ {
		for j := i; j > 0 && top[j].num < top[j-1].num; j-- {
			top[j], top[j-1] = top[j-1], top[j]
		}
	}
}

func (p *Plan) bindMeta(md protoreflect.MessageDescriptor, taken map[protowire.Number]bool) error {
	for k, mc := range metaColumns {
		fd := fieldByName(md, mc.name)
		if fd == nil {
			return unsupported("the table lacks metadata column %s (the generic path evolves it first)", mc.name)
		}
		if fd.Kind() != mc.kind || fd.IsList() || taken[fd.Number()] {
			return unsupported("metadata column %s is not a single %s", mc.name, mc.kind)
		}
		taken[fd.Number()] = true
		wt := protowire.VarintType
		if mc.kind == protoreflect.StringKind || mc.kind == protoreflect.MessageKind {
			wt = protowire.BytesType
		}
		p.top = append(p.top, topField{kind: topMeta, num: fd.Number(), meta: metaKind(k), tag: protowire.AppendTag(nil, fd.Number(), wt)})
		if metaKind(k) != mTransaction {
			continue
		}
		var nums []protowire.Number
		for i, tf := range txFields {
			sub := fieldByName(fd.Message(), tf.name)
			if sub == nil || sub.Kind() != tf.kind || sub.IsList() {
				return unsupported("%s.%s is not a single %s", mc.name, tf.name, tf.kind)
			}
			wt := protowire.VarintType
			if tf.kind == protoreflect.StringKind {
				wt = protowire.BytesType
			}
			p.tx[i] = txField{slot: txID + i, tag: protowire.AppendTag(nil, sub.Number(), wt), str: tf.kind == protoreflect.StringKind}
			nums = append(nums, sub.Number())
		}
		order := sortSlots(nums)
		var sorted [3]txField
		for i, o := range order {
			sorted[i] = p.tx[o]
		}
		p.tx = sorted
	}
	return nil
}

// bindDefaults encodes each default once, with the table's own encoder,
// in canonical form.
func (p *Plan) bindDefaults(enc *bqwrite.Encoder, md protoreflect.MessageDescriptor, defaults map[string]any, taken map[protowire.Number]bool) error {
	for name, v := range defaults {
		if v == nil || isEmptyDefault(v) {
			continue
		}
		fd := fieldByName(md, name)
		if fd == nil {
			return unsupported("default for column %s, which the table lacks", name)
		}
		if taken[fd.Number()] {
			return unsupported("default for column %s, which the writer or the metadata also sets", name)
		}
		taken[fd.Number()] = true
		// The row needs its required column to marshal; only the default's
		// field is kept.
		b, err := enc.Encode(map[string]any{name: v, changelog.ColIngestedAt: int64(0)})
		if err == nil {
			b, err = Canonical(md, b)
		}
		if err == nil {
			b, err = fieldBytes(b, fd.Number())
		}
		if err != nil {
			return unsupported("encoding the default of column %s: %v", name, err)
		}
		p.top = append(p.top, topField{kind: topDefault, num: fd.Number(), bytes: b})
	}
	return nil
}

// fieldBytes returns the encodings of field num in a message.
func fieldBytes(msg []byte, num protowire.Number) ([]byte, error) {
	var out []byte
	for len(msg) > 0 {
		n, typ, tl := protowire.ConsumeTag(msg)
		if tl < 0 {
			return nil, protowire.ParseError(tl)
		}
		vl := protowire.ConsumeFieldValue(n, typ, msg[tl:])
		if vl < 0 {
			return nil, protowire.ParseError(vl)
		}
		if n == num {
			out = append(out, msg[:tl+vl]...)
		}
		msg = msg[tl+vl:]
	}
	return out, nil
}

// isEmptyDefault reports a value the encoder writes nothing for (an
// empty list).
func isEmptyDefault(v any) bool {
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Slice && rv.Type().Elem().Kind() == reflect.Interface && rv.Len() == 0
}

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

// Append transcodes one payload (Avro binary, without the Confluent
// framing) and appends the row's Storage Write bytes to dst. dropped counts
// the non-NULL values of writer columns the table lacks, as
// evolve.Fitter.Fit does. Errors are classified as the generic path
// classifies them (failure.StageDecode, StageEnvelope or StageConvert,
// all permanent).
func (p *Plan) Append(dst, payload []byte, m Meta) (out []byte, dropped int, err error) {
	st := p.pool.Get().(*state)
	defer p.pool.Put(st)
	st.src = [nSlots]scalar{}
	r := reader{b: payload}
	var rm rowMeta
	if !p.envelope {
		st.convErr, st.dropped = nil, 0
		if err := st.record(&r, p.image, 0); err != nil {
			return dst, 0, decodeErr(err)
		}
		if r.left() > 0 {
			return dst, 0, decodeErr(errTrailing)
		}
		if st.convErr != nil {
			return dst, 0, convertErr(st.convErr)
		}
		rm.seq = timestampSeq(m.PublishTime)
		return p.assemble(dst, st, &rm, &m), st.dropped, nil
	}
	ch, err := p.envelopeOf(st, &r)
	if err != nil {
		return dst, 0, err
	}
	rm = ch
	return p.assemble(dst, st, &rm, &m), st.dropped, nil
}

func decodeErr(err error) error {
	return failure.Permanent(failure.StageDecode, fmt.Errorf("decoding Avro payload: %w", err))
}

func convertErr(err error) error {
	return failure.Permanent(failure.StageConvert, fmt.Errorf("converting to BigQuery values: %w", err))
}

func envelopeErr(format string, args ...any) error {
	return failure.Permanent(failure.StageEnvelope, fmt.Errorf("%w: %s", cdc.ErrEnvelope, fmt.Sprintf(format, args...)))
}

// rowMeta are the metadata read from the payload.
type rowMeta struct {
	op       []byte
	sourceTS time.Time
	seq      seq
	tx       bool
}

// image is where one of before/after was found in the payload.
type image struct {
	present, converted bool
	start, end         int
	convErr            error
	dropped            int
}

// needs is the image an op stores (cdc's Flatten): 1 after, 0 before,
// -1 none (truncate), -2 an unknown op.
func needs(op []byte) int {
	if len(op) == 1 {
		switch op[0] {
		case 'c', 'u', 'r':
			return 1
		case 'd':
			return 0
		case 't':
			return -1
		}
	}
	return -2
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
			rm.op, err = r.bytes()
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
			st.convErr, st.dropped = nil, 0
			ir := reader{b: r.b[:img.end], i: img.start}
			if err := st.record(&ir, p.image, 0); err != nil {
				return rm, decodeErr(err)
			}
			img.convErr, img.dropped = st.convErr, st.dropped
		}
		if img.convErr != nil {
			return rm, convertErr(img.convErr)
		}
		st.dropped = img.dropped
	default: // truncate: no image, only metadata and defaults
		st.level(0, p.image.rec.slots)
		st.dropped = 0
	}
	p.flatten(st, &rm)
	return rm, nil
}

func (p *Plan) readImage(st *state, r *reader, ef *envField, img *image, k int, convert bool) error {
	i, err := r.index(len(ef.n.branches), errBranch)
	if err != nil || i != ef.recBranch {
		return err
	}
	img.present, img.start = true, r.i
	if convert {
		st.convErr, st.dropped = nil, 0
		if err := st.record(r, p.image, 0); err != nil {
			return err
		}
		img.converted, img.convErr, img.dropped = true, st.convErr, st.dropped
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

// flatten is the rest of cdc's Flatten: source time and sequence, with
// the envelope's ts_ms as the fallback time.
func (p *Plan) flatten(st *state, rm *rowMeta) {
	// A NULL source block leaves its slots empty, for which sourcePosition
	// finds nothing, as cdc finds nothing without the block.
	rm.sourceTS, rm.seq = sourcePosition(&st.src, len(rm.op) == 1 && rm.op[0] == 'r')
	if rm.sourceTS.IsZero() {
		if v := st.src[envTsMs]; v.kind == skInt {
			rm.sourceTS = time.UnixMilli(v.i).UTC()
		}
	}
	if rm.seq.n == 0 && !rm.sourceTS.IsZero() {
		rm.seq = timestampSeq(rm.sourceTS)
	}
}

// assemble writes the row: the image's fields, the defaults and the
// metadata, in field number order.
func (p *Plan) assemble(dst []byte, st *state, rm *rowMeta, m *Meta) []byte {
	lv := &st.levels[0]
	for i := range p.top {
		tf := &p.top[i]
		switch tf.kind {
		case topWriter:
			sp := lv.spans[tf.slot]
			dst = append(dst, lv.buf[sp.start:sp.end]...)
		case topDefault:
			dst = append(dst, tf.bytes...)
		case topMeta:
			dst = p.appendMeta(dst, st, tf, rm, m)
		}
	}
	return dst
}

func (p *Plan) appendMeta(dst []byte, st *state, tf *topField, rm *rowMeta, m *Meta) []byte {
	switch tf.meta {
	case mOp:
		if len(rm.op) > 0 {
			dst = protowire.AppendBytes(append(dst, tf.tag...), rm.op)
		}
	case mSourceTS:
		if !rm.sourceTS.IsZero() {
			dst = protowire.AppendVarint(append(dst, tf.tag...), uint64(rm.sourceTS.UnixMicro()))
		}
	case mSequence:
		if rm.seq.n > 0 {
			dst = append(dst, tf.tag...)
			dst = protowire.AppendVarint(dst, uint64(17*rm.seq.n-1))
			dst = appendSeq(dst, rm.seq)
		}
	case mIngestedAt:
		dst = protowire.AppendVarint(append(dst, tf.tag...), uint64(m.IngestedAt.UnixMicro()))
	case mPublishTime:
		if !m.PublishTime.IsZero() {
			dst = protowire.AppendVarint(append(dst, tf.tag...), uint64(m.PublishTime.UnixMicro()))
		}
	case mMessageID:
		if m.MessageID != "" {
			dst = protowire.AppendString(append(dst, tf.tag...), m.MessageID)
		}
	case mSchemaID:
		if m.SchemaID != 0 {
			dst = protowire.AppendVarint(append(dst, tf.tag...), uint64(int64(m.SchemaID)))
		}
	case mTransaction:
		if rm.tx {
			dst = append(dst, tf.tag...)
			var mark int
			dst, mark = beginLen(dst)
			for _, f := range p.tx {
				v := st.src[f.slot]
				dst = append(dst, f.tag...)
				if f.str {
					if v.kind != skString {
						v.s = nil
					}
					dst = protowire.AppendBytes(dst, v.s)
				} else {
					if v.kind != skInt {
						v.i = 0
					}
					dst = protowire.AppendVarint(dst, uint64(v.i))
				}
			}
			dst = endLen(dst, mark)
		}
	}
	return dst
}
