package transcode

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/avrobq"
	"github.com/bqcdc/bqcdc/internal/bqwrite"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/cdc"
	"github.com/bqcdc/bqcdc/internal/evolve"
	"github.com/bqcdc/bqcdc/internal/failure"
	"github.com/bqcdc/bqcdc/internal/limits"
	"github.com/bqcdc/bqcdc/internal/schema"
	"github.com/bqcdc/bqcdc/internal/schema/bqschema"
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
	shape    cdc.Shape  // for the source block checks cdc makes
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
	cols, err := catalog.Schema(fields.Columns())
	if err != nil {
		return nil, fmt.Errorf("writer schema: %w", err)
	}
	table := bqschema.FromBigQuery(cfg.Table)
	fitter, err := evolve.NewFitter(table, cols)
	if err != nil {
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
	api := fallbackConfig.Freeze()
	fallback := func(i int) *node {
		return fallbackNode(shape.Image.Fields()[i].Type(), fields[i], fitter, enc, api)
	}
	img, imgCols, err := compileImage(shape.Image, fields, fallback)
	if err != nil {
		return nil, fmt.Errorf("writer schema %s: %w", shape.Image.FullName(), err)
	}
	p := &Plan{envelope: shape.Envelope, image: img, md: md, shape: shape}
	taken := map[protowire.Number]bool{}
	rp, nums, err := binder{fallback: fallback}.bindRecord(img, imgCols, table, md, taken)
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

// compileImage compiles the row image record: each column natively, from
// avrobq's decision for it, when the compiler covers that decision, else
// as a fallback column (converted by avrobq's generic converter).
func compileImage(rec *avro.RecordSchema, fields avrobq.Fields, fallback func(i int) *node) (*node, []schema.Column, error) {
	cols := fields.Columns()
	if len(cols) != len(rec.Fields()) {
		return nil, nil, fmt.Errorf("avrobq compiled %d columns from %d fields", len(cols), len(rec.Fields()))
	}
	var c compiler
	n := &node{dec: dRecord, form: fRecord, conv: cRecord}
	for i, f := range rec.Fields() {
		fn, err := c.column(f.Type(), &fields[i], 0)
		if err != nil {
			fn = fallback(i)
		}
		n.fields = append(n.fields, field{name: f.Name(), n: fn})
		n.minSize += fn.minSize
	}
	n.zeroSize = n.minSize == 0
	return n, cols, nil
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
		fd := bqwrite.FieldByName(md, mc.name)
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
			sub := bqwrite.FieldByName(fd.Message(), tf.name)
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
		fd := bqwrite.FieldByName(md, name)
		if fd == nil {
			return unsupported("default for column %s, which the table lacks", name)
		}
		if taken[fd.Number()] {
			return unsupported("default for column %s, which the writer or the metadata also sets", name)
		}
		taken[fd.Number()] = true
		// The row needs its required column to marshal; only the default's
		// field is kept.
		b, err := enc.Encode(map[string]any{name: v, catalog.ColIngestedAt: int64(0)})
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

// Append transcodes one payload (Avro binary, without the Confluent
// framing) and appends the row's Storage Write bytes to dst. dropped counts
// the non-NULL values of writer columns the table lacks, as
// evolve.Fitter.Fit does. Errors are classified as the generic path
// classifies them (failure.StageDecode, StageEnvelope or StageConvert,
// all permanent).
func (p *Plan) Append(dst, payload []byte, m Meta) (out []byte, dropped int, err error) {
	return p.AppendContext(context.Background(), dst, payload, m)
}

// AppendContext is Append for a request: decoding charges the message's
// decoded-size budget (limits.Budget) as the generic path does, and stops
// with an error wrapping limits.ErrInterrupted (stage decode, retryable:
// the message is not at fault) once ctx is done.
func (p *Plan) AppendContext(ctx context.Context, dst, payload []byte, m Meta) (out []byte, dropped int, err error) {
	if len(payload) > limits.MaxMessageBytes {
		// The generic path's validator bound: nothing larger is a Pub/Sub
		// message, and the budget below assumes none is.
		return dst, 0, decodeErr(limits.Errorf("the payload is %d bytes, more than Pub/Sub's %d-byte message limit", len(payload), limits.MaxMessageBytes))
	}
	st := p.pool.Get().(*state)
	defer p.pool.Put(st)
	st.src = [nSlots]scalar{}
	r := reader{b: payload, budget: limits.NewBudget(ctx, len(payload))}
	var rm rowMeta
	if !p.envelope {
		st.reset()
		if err := st.record(&r, p.image, 0); err != nil {
			return dst, 0, decodeErr(err)
		}
		if r.left() > 0 {
			return dst, 0, decodeErr(errTrailing)
		}
		if err := st.imageErr(); err != nil {
			return dst, 0, err
		}
		rm.seq = cdc.TimestampSeq(m.PublishTime)
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
	err = fmt.Errorf("decoding Avro payload: %w", err)
	if errors.Is(err, limits.ErrInterrupted) {
		return failure.Retryable(failure.StageDecode, err)
	}
	return failure.Permanent(failure.StageDecode, err)
}

func convertErr(err error) error {
	return failure.Permanent(failure.StageConvert, fmt.Errorf("converting to BigQuery values: %w", err))
}

// reset readies the state for converting an image.
func (st *state) reset() { st.convErr, st.encErr, st.dropped = nil, nil, 0 }

// imageErr is the error of the image just converted, classified: a
// conversion error before an encoding error, as the reference converts
// every column before it encodes the row.
func (st *state) imageErr() error {
	switch {
	case st.convErr != nil:
		return convertErr(st.convErr)
	case st.encErr != nil:
		return failure.Permanent(failure.StageEncode, fmt.Errorf("encoding the row: %w", st.encErr))
	}
	return nil
}

// envelopeWrap is cdc's error for a source block it refuses, as the reference's Flatten does
// wraps it.
func envelopeWrap(err error) error {
	return failure.Permanent(failure.StageEnvelope, fmt.Errorf("%w: %w", cdc.ErrEnvelope, err))
}

func envelopeErr(format string, args ...any) error {
	return failure.Permanent(failure.StageEnvelope, fmt.Errorf("%w: %s", cdc.ErrEnvelope, fmt.Sprintf(format, args...)))
}
