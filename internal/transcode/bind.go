package transcode

import (
	"errors"
	"fmt"
	"sort"

	"github.com/bqcdc/bqcdc/internal/bqwrite"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/schema"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// prom is one of evolve's lossless promotions of a writer value into a
// table column of another type.
type prom uint8

const (
	pNone prom = iota
	pIntToFloat
	pIntToDecimal
	pStringToBytes
	pBytesToString
)

// promotion mirrors evolve's promote; ok is false for pairs it refuses
// (evolve.NewFitter has refused them before this is asked).
func promotion(table, writer string) (prom, bool) {
	switch {
	case table == writer:
		return pNone, true
	case writer == schema.Int64 && table == schema.Float64:
		return pIntToFloat, true
	case writer == schema.Int64 && (table == schema.Numeric || table == schema.BigNumeric):
		return pIntToDecimal, true
	case writer == schema.Numeric && table == schema.BigNumeric:
		return pNone, true
	case writer == schema.String && table == schema.Bytes:
		return pStringToBytes, true
	case writer == schema.Bytes && table == schema.String:
		return pBytesToString, true
	}
	return pNone, false
}

// outField is where a converted column goes: a field of the table's row
// message.
type outField struct {
	slot   int // in the enclosing record's spans
	num    protowire.Number
	kind   protoreflect.Kind
	tag    []byte // tag of one element (packed fields: the kind's wire type, unused)
	packed bool
	prom   prom
}

// recordPlan is the table message a record is stored as: its slot count
// and the slots in field number order (the order proto.Marshal writes
// with Deterministic set, which is the canonical form compared against).
type recordPlan struct {
	slots int
	order []int
}

// kindFor is the proto kind bqwrite's encoder needs for a canonical value
// of a BigQuery type (see bqwrite.Encoder: int64, int32, float64, bool,
// string, []byte, map).
func kindFor(typ string) protoreflect.Kind {
	switch typ {
	case schema.Int64, schema.Timestamp:
		return protoreflect.Int64Kind
	case schema.Date:
		return protoreflect.Int32Kind
	case schema.Float64:
		return protoreflect.DoubleKind
	case schema.Bool:
		return protoreflect.BoolKind
	case schema.Bytes:
		return protoreflect.BytesKind
	case schema.Record:
		return protoreflect.MessageKind
	}
	return protoreflect.StringKind
}

// binder ties a compiled row image to a table version's columns and
// message: evolve.Fitter's decisions, taken once.
type binder struct {
	// fallback, set for the image's own fields, makes field i a fallback
	// column; nested records have none (their top-level column falls back
	// as a whole).
	fallback func(i int) *node
}

// bindRecord binds the fields of record node n (writer columns wcols)
// to table columns tcols stored as message md. It returns the plan with
// one slot per bound field, in the order the fields were bound; the
// caller adds its own slots (top level: metadata and defaults) and sorts.
// A top-level column the binder cannot bind natively becomes a fallback
// column, which does at run time what the reference does with it.
func (b binder) bindRecord(n *node, wcols []schema.Column, tcols schema.Columns, md protoreflect.MessageDescriptor, taken map[protowire.Number]bool) (*recordPlan, []protowire.Number, error) {
	rp := &recordPlan{}
	var nums []protowire.Number
	for i := range n.fields {
		f := &n.fields[i]
		var o *outField
		var err error
		if f.n.conv != cFallback {
			o, err = b.bindField(f, wcols[i], tcols, md, taken)
		}
		if b.fallback != nil && (f.n.conv == cFallback || errors.Is(err, ErrUnsupported)) {
			f.n, f.countDrop = b.fallback(i), false
			o, err = bindFallback(wcols[i], tcols, md, taken), nil
		}
		if err != nil {
			return nil, nil, err
		}
		if o == nil {
			continue
		}
		o.slot = rp.slots
		rp.slots++
		nums = append(nums, o.num)
		f.out = o
	}
	return rp, nums, nil
}

// bindField binds one natively compiled field; nil (and f.countDrop) when
// the table lacks its column.
func (b binder) bindField(f *field, w schema.Column, tcols schema.Columns, md protoreflect.MessageDescriptor, taken map[protowire.Number]bool) (*outField, error) {
	ti := tcols.Index(w.Name)
	if ti < 0 {
		f.countDrop = true
		return nil, nil
	}
	t := tcols[ti]
	fd := bqwrite.FieldByName(md, t.Name)
	if fd == nil {
		return nil, unsupported("the row message has no field for column %s", t.Name)
	}
	if taken[fd.Number()] {
		return nil, unsupported("two columns map to field %s", fd.Name())
	}
	if fd.IsList() != w.Repeated || fd.IsMap() {
		return nil, unsupported("column %s: repeated in the row message and not in the writer, or the other way round", t.Name)
	}
	o := &outField{num: fd.Number(), kind: fd.Kind(), packed: fd.IsPacked()}
	wt := protowire.BytesType
	if t.Type == schema.Record {
		if w.Type != schema.Record || fd.Kind() != protoreflect.MessageKind {
			return nil, unsupported("column %s: RECORD against %s", t.Name, w.Type)
		}
		rn := recordOf(f.n)
		sub := map[protowire.Number]bool{}
		srp, snums, err := binder{}.bindRecord(rn, w.Fields, t.Fields, fd.Message(), sub)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", t.Name, err)
		}
		srp.order = sortSlots(snums)
		rn.rec = srp
	} else {
		p, ok := promotion(t.Type, w.Type)
		if !ok {
			return nil, unsupported("column %s: %s cannot hold %s", t.Name, t.Type, w.Type)
		}
		o.prom = p
		if want := kindFor(t.Type); fd.Kind() != want {
			return nil, unsupported("column %s: the row message holds %s as %s, the encoder needs %s", t.Name, t.Type, fd.Kind(), want)
		}
		switch fd.Kind() {
		case protoreflect.DoubleKind:
			wt = protowire.Fixed64Type
		case protoreflect.StringKind, protoreflect.BytesKind:
		default:
			wt = protowire.VarintType
		}
	}
	taken[fd.Number()] = true
	o.tag = protowire.AppendTag(nil, fd.Number(), wt)
	return o, nil
}

// bindFallback places a fallback column: nil when the table lacks it (the
// fitter drops and counts its values). A column the row message lacks
// keeps a slot at number 0, where encoding its first non-NULL value fails
// as the reference's Encode does.
func bindFallback(w schema.Column, tcols schema.Columns, md protoreflect.MessageDescriptor, taken map[protowire.Number]bool) *outField {
	ti := tcols.Index(w.Name)
	if ti < 0 {
		return nil
	}
	o := &outField{}
	if fd := bqwrite.FieldByName(md, tcols[ti].Name); fd != nil {
		o.num, o.kind = fd.Number(), fd.Kind()
		taken[fd.Number()] = true
	}
	return o
}

// recordOf finds the record node under a column's unions and arrays.
func recordOf(n *node) *node {
	for {
		switch n.dec {
		case dUnion:
			for _, b := range n.branches {
				if b.dec != dNull {
					n = b
					break
				}
			}
		case dArray:
			n = n.items
		default:
			return n
		}
	}
}

// sortSlots returns slot indexes ordered by their field numbers.
func sortSlots(nums []protowire.Number) []int {
	order := make([]int, len(nums))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return nums[order[a]] < nums[order[b]] })
	return order
}

// messageDescriptor rebuilds the row message from the normalized
// descriptor the stream announces (bqwrite.Encoder.Descriptor), as proto2
// like the one bqwrite encodes with.
func messageDescriptor(dp *descriptorpb.DescriptorProto) (protoreflect.MessageDescriptor, error) {
	fdp := &descriptorpb.FileDescriptorProto{
		Name:        proto.String("bqcdc_transcode_row.proto"),
		Syntax:      proto.String("proto2"),
		MessageType: []*descriptorpb.DescriptorProto{dp},
	}
	fd, err := protodesc.NewFile(fdp, nil)
	if err != nil {
		return nil, fmt.Errorf("building the row message: %w", err)
	}
	return fd.Messages().Get(0), nil
}

// Canonical returns a row message in field number order, the form Append
// writes: bqwrite.Encoder.Encode marshals a dynamicpb message, whose
// field order follows Go map iteration and changes from call to call;
// unmarshalling and marshalling deterministically fixes it. Both forms
// are the same message to BigQuery.
func Canonical(md protoreflect.MessageDescriptor, row []byte) ([]byte, error) {
	m := dynamicpb.NewMessage(md)
	if err := proto.Unmarshal(row, m); err != nil {
		return nil, err
	}
	return proto.MarshalOptions{Deterministic: true}.Marshal(m)
}

// metaKind is one of changelog's metadata columns.
type metaKind uint8

const (
	mOp metaKind = iota
	mSourceTS
	mSequence
	mIngestedAt
	mPublishTime
	mMessageID
	mSchemaID
	mTransaction
	nMeta
)

var metaColumns = [nMeta]struct {
	name string
	kind protoreflect.Kind
}{
	{catalog.ColOp, protoreflect.StringKind},
	{catalog.ColSourceTS, protoreflect.Int64Kind},
	{catalog.ColSequence, protoreflect.StringKind},
	{catalog.ColIngestedAt, protoreflect.Int64Kind},
	{catalog.ColPublishTime, protoreflect.Int64Kind},
	{catalog.ColMessageID, protoreflect.StringKind},
	{catalog.ColSchemaID, protoreflect.Int64Kind},
	{catalog.ColTransaction, protoreflect.MessageKind},
}

// txFields are the fields of _cdc_transaction, as catalog.Row writes
// them.
var txFields = [3]struct {
	name string
	kind protoreflect.Kind
}{{"id", protoreflect.StringKind}, {"total_order", protoreflect.Int64Kind}, {"data_collection_order", protoreflect.Int64Kind}}

// checkRequired refuses a row message with required fields other than
// _cdc_ingested_at (always written): the generic encoder fails a row that
// lacks one, which the transcoder does not reproduce.
func checkRequired(md protoreflect.MessageDescriptor, top bool, seen map[protoreflect.FullName]bool) error {
	if seen[md.FullName()] {
		return nil
	}
	seen[md.FullName()] = true
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if fd.Cardinality() == protoreflect.Required && !(top && string(fd.Name()) == catalog.ColIngestedAt) {
			return unsupported("required column %s", fd.Name())
		}
		if fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind {
			if err := checkRequired(fd.Message(), false, seen); err != nil {
				return err
			}
		}
	}
	return nil
}
