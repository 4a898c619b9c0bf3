// Package bqwrite appends rows to BigQuery tables through the Storage Write
// API (managedwriter, default stream): one long-lived managed stream per
// table, created on first use and shared by every concurrent caller.
package bqwrite

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"weak"

	"cloud.google.com/go/bigquery"
	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"cloud.google.com/go/bigquery/storage/managedwriter/adapt"
	"github.com/bqcdc/bqcdc/internal/schema/bqschema"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// ErrEncode marks a row that does not fit its table (an unknown column, a
// value of the wrong type). It is permanent.
var ErrEncode = errors.New("row does not fit the table")

// Encoder turns canonical rows (see package avrobq) into the protocol buffer
// bytes the Storage Write API takes, for one table schema.
type Encoder struct {
	md protoreflect.MessageDescriptor
	dp *descriptorpb.DescriptorProto
}

// NUMERIC, BIGNUMERIC, DATETIME and TIME are sent as strings: the API accepts
// them, and the BigQuery emulator stores adapt's packed default encodings as
// zeros or garbage without an error.
var asString = []storagepb.TableFieldSchema_Type{
	storagepb.TableFieldSchema_NUMERIC, storagepb.TableFieldSchema_BIGNUMERIC,
	storagepb.TableFieldSchema_DATETIME, storagepb.TableFieldSchema_TIME,
}

// NewEncoder compiles an encoder for a table schema.
func NewEncoder(s bigquery.Schema) (*Encoder, error) {
	ts, err := adapt.BQSchemaToStorageTableSchema(bqschema.LegacyNames(s))
	if err != nil {
		return nil, fmt.Errorf("converting table schema: %w", err)
	}
	opts := []adapt.ProtoConversionOption{}
	for _, t := range asString {
		opts = append(opts, adapt.WithProtoMapping(adapt.ProtoMapping{FieldType: t, Type: descriptorpb.FieldDescriptorProto_TYPE_STRING}))
	}
	d, err := adapt.StorageSchemaToProtoDescriptorWithOptions(ts, "root", opts...)
	if err != nil {
		return nil, fmt.Errorf("building row descriptor: %w", err)
	}
	md, ok := d.(protoreflect.MessageDescriptor)
	if !ok {
		return nil, fmt.Errorf("building row descriptor: got %T", d)
	}
	dp, err := adapt.NormalizeDescriptor(md)
	if err != nil {
		return nil, fmt.Errorf("normalizing row descriptor: %w", err)
	}
	return &Encoder{md: md, dp: dp}, nil
}

// encoders shares one Encoder among the tables of one schema while any
// holds it: the protobuf descriptors of a schema are most of what an open
// table costs (about 40 KB for 20 columns), and the tables of a large
// deployment often share schemas (a schema per tenant, tables by month).
// The cache holds them weakly, so a schema no open table uses is freed
// with its last table (bqwrite closes idle tables).
var encoders struct {
	mu      sync.Mutex
	m       map[string]weak.Pointer[Encoder]
	inserts int
}

// SharedEncoder is NewEncoder, shared with every table of the same schema
// (column names, types, modes, nesting: what the row encoding depends on)
// while any holds it. An Encoder is immutable, safe for concurrent use.
func SharedEncoder(s bigquery.Schema) (*Encoder, error) {
	key, err := encoderKey(s)
	if err != nil {
		return NewEncoder(s)
	}
	encoders.mu.Lock()
	if wp, ok := encoders.m[key]; ok {
		if e := wp.Value(); e != nil {
			encoders.mu.Unlock()
			return e, nil
		}
	}
	encoders.mu.Unlock()
	e, err := NewEncoder(s)
	if err != nil {
		return nil, err
	}
	encoders.mu.Lock()
	defer encoders.mu.Unlock()
	if encoders.m == nil {
		encoders.m = map[string]weak.Pointer[Encoder]{}
	}
	encoders.m[key] = weak.Make(e)
	if encoders.inserts++; encoders.inserts%1024 == 0 {
		for k, wp := range encoders.m {
			if wp.Value() == nil {
				delete(encoders.m, k) // freed: drop its key too
			}
		}
	}
	return e, nil
}

// encoderKey is what an Encoder depends on of a schema: the storage
// schema it converts (names, types, modes, nesting; not descriptions).
func encoderKey(s bigquery.Schema) (string, error) {
	ts, err := adapt.BQSchemaToStorageTableSchema(bqschema.LegacyNames(s))
	if err != nil {
		return "", err
	}
	var strip func([]*storagepb.TableFieldSchema)
	strip = func(fs []*storagepb.TableFieldSchema) {
		for _, f := range fs {
			f.Description = ""
			strip(f.Fields)
		}
	}
	strip(ts.Fields)
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(ts)
	return string(b), err
}

// Descriptor is the schema descriptor the stream must announce.
func (e *Encoder) Descriptor() *descriptorpb.DescriptorProto { return e.dp }

// Encode serializes one row. Columns absent from the row are NULL.
func (e *Encoder) Encode(row map[string]any) ([]byte, error) {
	msg := dynamicpb.NewMessage(e.md)
	if err := fill(msg, row); err != nil {
		return nil, err
	}
	b, err := proto.Marshal(msg)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrEncode, err)
	}
	return b, nil
}

// AppendColumn appends the encoding of one column's value (its field's
// tag and value, in field number order within nested records; nothing for
// NULL) to dst: the bytes Encode writes for that column, in the canonical
// order. The transcoder splices such a column into a row it writes itself.
func (e *Encoder) AppendColumn(dst []byte, name string, v any) ([]byte, error) {
	msg := dynamicpb.NewMessage(e.md)
	if err := fill(msg, map[string]any{name: v}); err != nil {
		return dst, err
	}
	// The row's other fields (its required one among them) are the
	// caller's.
	b, err := proto.MarshalOptions{Deterministic: true, AllowPartial: true}.MarshalAppend(dst, msg)
	if err != nil {
		return dst, fmt.Errorf("%w: %v", ErrEncode, err)
	}
	return b, nil
}

// FieldByName finds a column's field in a row message: by its exact name,
// else ignoring case (column names are case-insensitive in BigQuery).
func FieldByName(md protoreflect.MessageDescriptor, name string) protoreflect.FieldDescriptor {
	if fd := md.Fields().ByName(protoreflect.Name(name)); fd != nil {
		return fd
	}
	// Column names are case-insensitive in BigQuery.
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		if strings.EqualFold(string(fields.Get(i).Name()), name) {
			return fields.Get(i)
		}
	}
	return nil
}

func fill(msg *dynamicpb.Message, row map[string]any) error {
	md := msg.Descriptor()
	for name, v := range row {
		if v == nil {
			continue
		}
		fd := FieldByName(md, name)
		if fd == nil {
			return fmt.Errorf("%w: the table has no column %q", ErrEncode, name)
		}
		if fd.IsList() {
			items, ok := v.([]any)
			if !ok {
				return fmt.Errorf("%w: column %q is repeated, got %T", ErrEncode, name, v)
			}
			list := msg.Mutable(fd).List()
			for i, item := range items {
				pv, err := value(msg, fd, item)
				if err != nil {
					return fmt.Errorf("column %q element %d: %w", name, i, err)
				}
				list.Append(pv)
			}
			continue
		}
		pv, err := value(msg, fd, v)
		if err != nil {
			return fmt.Errorf("column %q: %w", name, err)
		}
		msg.Set(fd, pv)
	}
	return nil
}

func value(parent *dynamicpb.Message, fd protoreflect.FieldDescriptor, v any) (protoreflect.Value, error) {
	bad := func() (protoreflect.Value, error) {
		return protoreflect.Value{}, fmt.Errorf("%w: %s field cannot hold %T", ErrEncode, fd.Kind(), v)
	}
	switch fd.Kind() {
	case protoreflect.Int64Kind:
		if x, ok := v.(int64); ok {
			return protoreflect.ValueOfInt64(x), nil
		}
	case protoreflect.Int32Kind:
		if x, ok := v.(int32); ok {
			return protoreflect.ValueOfInt32(x), nil
		}
	case protoreflect.DoubleKind:
		if x, ok := v.(float64); ok {
			return protoreflect.ValueOfFloat64(x), nil
		}
	case protoreflect.BoolKind:
		if x, ok := v.(bool); ok {
			return protoreflect.ValueOfBool(x), nil
		}
	case protoreflect.StringKind:
		if x, ok := v.(string); ok {
			return protoreflect.ValueOfString(x), nil
		}
	case protoreflect.BytesKind:
		if x, ok := v.([]byte); ok {
			return protoreflect.ValueOfBytes(x), nil
		}
	case protoreflect.MessageKind:
		m, ok := v.(map[string]any)
		if !ok {
			return bad()
		}
		child := dynamicpb.NewMessage(fd.Message())
		if err := fill(child, m); err != nil {
			return protoreflect.Value{}, err
		}
		return protoreflect.ValueOfMessage(child), nil
	}
	return bad()
}

// Decode is Encode's inverse: the canonical row a serialized row holds
// (NULL columns absent). Tests and fakes read encoded rows with it.
func (e *Encoder) Decode(b []byte) (map[string]any, error) {
	msg := dynamicpb.NewMessage(e.md)
	if err := proto.Unmarshal(b, msg); err != nil {
		return nil, fmt.Errorf("decoding a row of the table: %w", err)
	}
	return rowOf(msg), nil
}

func rowOf(msg protoreflect.Message) map[string]any {
	row := map[string]any{}
	msg.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.IsList() {
			list := v.List()
			items := make([]any, list.Len())
			for i := range items {
				items[i] = canonical(fd, list.Get(i))
			}
			row[string(fd.Name())] = items
			return true
		}
		row[string(fd.Name())] = canonical(fd, v)
		return true
	})
	return row
}

func canonical(fd protoreflect.FieldDescriptor, v protoreflect.Value) any {
	if fd.Kind() == protoreflect.MessageKind {
		return rowOf(v.Message())
	}
	return v.Interface()
}
