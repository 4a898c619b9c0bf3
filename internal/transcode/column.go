package transcode

import (
	"fmt"

	"github.com/bqcdc/bqcdc/internal/avrobq"
	"github.com/bqcdc/bqcdc/internal/schema"
	"github.com/hamba/avro/v2"
)

// conv is a compiled avrobq converter: what the generic path does with a
// decoded value of a column. Each mirrors one converter of package avrobq,
// restricted to the decoded forms (see form) it accepts; a pairing the
// generic path would refuse on every value is not compiled (ErrUnsupported).
type conv uint8

const (
	cNone      conv = iota
	cNull           // Avro null: always NULL
	cBool           // boolConv
	cInt            // intConv
	cFloat          // floatConv
	cString         // stringConv (strings and enum symbols)
	cBytes          // bytesConv (bytes, fixed, duration)
	cJSONText       // jsonTextConv
	cUUID           // uuidConv
	cBit            // bitConv
	cBits           // bitsConv
	cDate           // daysConv
	cTime           // timeConv
	cDatetime       // datetimeConv
	cTimestamp      // timestampConv
	cZonedTS        // zonedTimestampConv
	cZonedTime      // zonedTimeConv
	cDecimal        // decimalConv
	cVSD            // variableScaleDecimalConv
	cRecord         // recordConv
	cArray          // arrayConv
	cUnion          // unionConv of a union with one non-null branch
	cFallback       // a top-level column converted by its avrobq field (see fallback)
)

// compiler builds the conversion nodes of a row image. Its decision tree
// is avrobq's columnFor, step for step; the column types it arrives at are
// compared with avrobq's own afterwards, so a drift between the two fails
// Compile instead of producing different rows.
type compiler struct{}

const maxDepth = 15 // avrobq's limit on nested RECORDs

func unsupported(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUnsupported, fmt.Sprintf(format, args...))
}

// column compiles the conversion of one value of s into a column. It
// returns the node and the column as avrobq would type it (name unset).
func (c *compiler) column(s avro.Schema, depth int) (*node, schema.Column, error) {
	if depth > maxDepth {
		return nil, schema.Column{}, unsupported("nested deeper than %d levels", maxDepth)
	}
	s = deref(s)
	if u, ok := s.(*avro.UnionSchema); ok {
		return c.union(u, depth)
	}
	if n, col, ok, err := c.connect(s); ok || err != nil {
		return n, col, err
	}
	if n, col, ok, err := c.logical(s); ok || err != nil {
		return n, col, err
	}
	n := skipNode(s, map[*avro.RecordSchema]*node{})
	switch s.Type() {
	case avro.Boolean:
		return leaf(n, cBool, schema.Bool)
	case avro.Int, avro.Long:
		return leaf(n, cInt, schema.Int64)
	case avro.Float, avro.Double:
		return leaf(n, cFloat, schema.Float64)
	case avro.String, avro.Enum:
		return leaf(n, cString, schema.String)
	case avro.Bytes, avro.Fixed:
		return leaf(n, cBytes, schema.Bytes)
	case avro.Null:
		return leaf(n, cNull, schema.String)
	case avro.Record:
		return c.record(s.(*avro.RecordSchema), depth+1)
	case avro.Array:
		items, col, err := c.column(s.(*avro.ArraySchema).Items(), depth)
		if err != nil {
			return nil, schema.Column{}, err
		}
		if col.Repeated {
			return nil, schema.Column{}, unsupported("an array of arrays or maps (stored as JSON)")
		}
		if items.zeroSize {
			return nil, schema.Column{}, unsupported("an array of values that take no bytes")
		}
		col.Repeated = true
		items.expansion = avrobq.Expansion(s.(*avro.ArraySchema).Items())
		return &node{dec: dArray, form: fArray, items: items, minSize: 1, conv: cArray}, col, nil
	case avro.Map:
		return nil, schema.Column{}, unsupported("Avro maps")
	}
	return nil, schema.Column{}, unsupported("Avro type %s", s.Type())
}

// leaf checks that the generic converter accepts the decoded form of n.
func leaf(n *node, cv conv, typ string) (*node, schema.Column, error) {
	if !accepts(cv, n) {
		return nil, schema.Column{}, unsupported("%s decoded as form %d cannot be converted to %s (the generic path refuses every value)", n.dec, n.form, typ)
	}
	n.conv = cv
	return n, schema.Column{Type: typ}, nil
}

func (d decKind) String() string {
	return [...]string{"null", "boolean", "int", "long", "float", "double", "bytes", "fixed", "enum", "record", "array", "map", "union"}[d]
}

// accepts reports whether avrobq's converter takes values of n's form.
func accepts(cv conv, n *node) bool {
	f := n.form
	switch cv {
	case cNull:
		return true
	case cBool:
		return f == fBool
	case cInt:
		return f == fInt || f == fLong
	case cFloat:
		return f == fFloat32 || f == fFloat64
	case cString:
		return f == fString || f == fEnum
	case cBytes:
		return f == fBytes || f == fFixed || f == fDuration
	case cJSONText, cZonedTS, cZonedTime:
		return f == fString
	case cUUID:
		return f == fString || (f == fFixed && n.size == 16)
	case cBit, cBits:
		return f == fBytes
	case cDate:
		return f == fInt || f == fLong || f == fDate
	case cTime:
		return f == fInt || f == fLong || f == fTimeMillis || f == fTimeMicros
	case cDatetime, cTimestamp:
		switch f {
		case fInt, fLong, fTSMillis, fTSMicros, fLTSMillis, fLTSMicros:
			return true
		}
	case cDecimal:
		return f == fRat || f == fBytes || f == fFixed
	}
	return false
}

func (c *compiler) union(u *avro.UnionSchema, depth int) (*node, schema.Column, error) {
	var inner avro.Schema
	for _, t := range u.Types() {
		if t.Type() == avro.Null {
			continue
		}
		if inner != nil {
			return nil, schema.Column{}, unsupported("a union of several non-null types (stored as JSON)")
		}
		inner = t
	}
	if inner == nil {
		return nil, schema.Column{}, unsupported("a union without a non-null branch (stored as JSON)")
	}
	in, col, err := c.column(inner, depth)
	if err != nil {
		return nil, schema.Column{}, err
	}
	n := &node{dec: dUnion, form: fUnion, minSize: 1, conv: cUnion}
	for _, t := range u.Types() {
		if t.Type() == avro.Null {
			n.branches = append(n.branches, &node{dec: dNull, conv: cNull, zeroSize: true})
		} else {
			n.branches = append(n.branches, in)
		}
	}
	return n, col, nil
}

func (c *compiler) record(rec *avro.RecordSchema, depth int) (*node, schema.Column, error) {
	n := &node{dec: dRecord, form: fRecord, conv: cRecord}
	col := schema.Column{Type: schema.Record}
	for _, f := range rec.Fields() {
		fn, fc, err := c.column(f.Type(), depth)
		if err != nil {
			return nil, schema.Column{}, fmt.Errorf("field %q of %s: %w", f.Name(), rec.FullName(), err)
		}
		fc.Name = avrobq.ColumnName(f.Name())
		n.fields = append(n.fields, field{name: f.Name(), n: fn})
		n.minSize += fn.minSize
		col.Fields = append(col.Fields, fc)
	}
	n.zeroSize = n.minSize == 0
	return n, col, nil
}

// Kafka Connect / Debezium semantic types (avrobq's semantics table).
type semantic struct {
	on   []avro.Type
	conv conv
	typ  string
	unit avrobq.Unit
}

var (
	ints = []avro.Type{avro.Int, avro.Long}
	strs = []avro.Type{avro.String}
)

var semantics = map[string]semantic{
	"io.debezium.time.Date":                   {ints, cDate, schema.Date, 0},
	"io.debezium.time.Time":                   {ints, cTime, schema.Time, avrobq.Millis},
	"io.debezium.time.MicroTime":              {ints, cTime, schema.Time, avrobq.Micros},
	"io.debezium.time.NanoTime":               {ints, cTime, schema.Time, avrobq.Nanos},
	"io.debezium.time.Timestamp":              {ints, cDatetime, schema.Datetime, avrobq.Millis},
	"io.debezium.time.MicroTimestamp":         {ints, cDatetime, schema.Datetime, avrobq.Micros},
	"io.debezium.time.NanoTimestamp":          {ints, cDatetime, schema.Datetime, avrobq.Nanos},
	"io.debezium.time.ZonedTimestamp":         {strs, cZonedTS, schema.Timestamp, 0},
	"io.debezium.time.ZonedTime":              {strs, cZonedTime, schema.Time, 0},
	"io.debezium.time.Year":                   {ints, cInt, schema.Int64, 0},
	"io.debezium.time.MicroDuration":          {ints, cInt, schema.Int64, 0},
	"org.apache.kafka.connect.data.Date":      {ints, cDate, schema.Date, 0},
	"org.apache.kafka.connect.data.Time":      {ints, cTime, schema.Time, avrobq.Millis},
	"org.apache.kafka.connect.data.Timestamp": {ints, cTimestamp, schema.Timestamp, avrobq.Millis},
	"org.apache.kafka.connect.data.Decimal":   {[]avro.Type{avro.Bytes, avro.Fixed}, cDecimal, "", 0},
	"io.debezium.data.VariableScaleDecimal":   {[]avro.Type{avro.Record}, cVSD, schema.BigNumeric, 0},
	"io.debezium.data.Json":                   {strs, cJSONText, schema.JSON, 0},
	"io.debezium.data.Xml":                    {strs, cString, schema.String, 0},
	"io.debezium.data.Uuid":                   {strs, cString, schema.String, 0},
	"io.debezium.data.Enum":                   {[]avro.Type{avro.String, avro.Enum}, cString, schema.String, 0},
	"io.debezium.data.EnumSet":                {strs, cString, schema.String, 0},
	"io.debezium.data.Bits":                   {[]avro.Type{avro.Bytes}, cBits, "", 0},
	// Spatial types are converted from WKB to WKT, which the transcoder
	// does not do: they are listed so that Compile says so instead of
	// mapping them as plain records.
	"io.debezium.data.geometry.Geometry":  {[]avro.Type{avro.Record}, cNone, schema.Geography, 0},
	"io.debezium.data.geometry.Geography": {[]avro.Type{avro.Record}, cNone, schema.Geography, 0},
	"io.debezium.data.geometry.Point":     {[]avro.Type{avro.Record}, cNone, schema.Geography, 0},
}

func (c *compiler) connect(s avro.Schema) (*node, schema.Column, bool, error) {
	cn := avrobq.StringProp(s, "connect.name")
	sem, ok := semantics[cn]
	if !ok {
		return nil, schema.Column{}, false, nil
	}
	matches := false
	for _, t := range sem.on {
		matches = matches || s.Type() == t
	}
	if !matches {
		return nil, schema.Column{}, false, nil
	}
	n := skipNode(s, map[*avro.RecordSchema]*node{})
	n.unit = sem.unit
	var col schema.Column
	var err error
	switch sem.conv {
	case cNone:
		return nil, schema.Column{}, true, unsupported("%s (converted from WKB to WKT by the generic path)", cn)
	case cDecimal:
		n, col, err = decimalNode(n, s)
	case cBits:
		length, ok := avrobq.ConnectParam(s, "length")
		if !ok {
			length = -1
		}
		n.bits = length
		if length == 1 {
			n, col, err = leaf(n, cBit, schema.Bool)
		} else {
			n, col, err = leaf(n, cBits, schema.Bytes)
		}
	case cVSD:
		n, col, err = vsdNode(n, s.(*avro.RecordSchema))
	default:
		n, col, err = leaf(n, sem.conv, sem.typ)
	}
	return n, col, true, err
}

// vsdNode compiles io.debezium.data.VariableScaleDecimal, a record
// {scale int, value bytes}. Other shapes of the record are left to the
// generic path, whose converter reads the two fields by name.
func vsdNode(n *node, rec *avro.RecordSchema) (*node, schema.Column, error) {
	n.vsdIdx = [2]int{-1, -1}
	for i, f := range n.fields {
		switch f.name {
		case "scale":
			if f.n.form == fInt || f.n.form == fLong {
				n.vsdIdx[0] = i
			}
		case "value":
			if f.n.form == fBytes {
				n.vsdIdx[1] = i
			}
		}
	}
	if n.vsdIdx[0] < 0 || n.vsdIdx[1] < 0 {
		return nil, schema.Column{}, unsupported("VariableScaleDecimal record %s without an int scale and a bytes value", rec.FullName())
	}
	n.conv = cVSD
	n.dec10 = decLim{typ: schema.BigNumeric}
	return n, schema.Column{Type: schema.BigNumeric}, nil
}

// decimalNode mirrors connectDecimalColumn: by the Avro decimal logical
// type when present, else by connect.parameters.
func decimalNode(n *node, s avro.Schema) (*node, schema.Column, error) {
	if d, ok := decimalLogical(s); ok {
		return decimalColumn(n, d.Precision(), d.Scale())
	}
	scale, _ := avrobq.ConnectParam(s, "scale")
	precision, _ := avrobq.ConnectParam(s, "connect.decimal.precision")
	return decimalColumn(n, precision, scale)
}

func decimalLogical(s avro.Schema) (*avro.DecimalLogicalSchema, bool) {
	if lts, ok := s.(avro.LogicalTypeSchema); ok && lts.Logical() != nil {
		d, ok := lts.Logical().(*avro.DecimalLogicalSchema)
		return d, ok
	}
	return nil, false
}

func decimalColumn(n *node, precision, scale int) (*node, schema.Column, error) {
	typ := avrobq.DecimalType(precision, scale)
	n.dec10 = decLim{typ: typ, precision: precision, scale: scale}
	n, col, err := leaf(n, cDecimal, typ)
	if err != nil {
		return nil, col, err
	}
	if precision > 0 && typ != schema.String {
		col.Precision, col.Scale = precision, scale
	}
	return n, col, nil
}

// logicalLeaves mirrors avrobq's logicalColumns: the logical types whose
// node is a conversion, a BigQuery type and a time unit alone.
var logicalLeaves = map[avro.LogicalType]struct {
	conv conv
	typ  string
	unit avrobq.Unit
}{
	avro.Date:                 {cDate, schema.Date, 0},
	avro.TimeMillis:           {cTime, schema.Time, avrobq.Millis},
	avro.TimeMicros:           {cTime, schema.Time, avrobq.Micros},
	avro.TimestampMillis:      {cTimestamp, schema.Timestamp, avrobq.Millis},
	avro.TimestampMicros:      {cTimestamp, schema.Timestamp, avrobq.Micros},
	avro.LocalTimestampMillis: {cDatetime, schema.Datetime, avrobq.Millis},
	avro.LocalTimestampMicros: {cDatetime, schema.Datetime, avrobq.Micros},
	avro.UUID:                 {cUUID, schema.String, 0},
	avro.Duration:             {cBytes, schema.Bytes, 0},
}

// logical mirrors avrobq's logicalColumn and otherLogicalColumn.
func (c *compiler) logical(s avro.Schema) (*node, schema.Column, bool, error) {
	lts, ok := s.(avro.LogicalTypeSchema)
	if !ok || lts.Logical() == nil {
		return c.otherLogical(s)
	}
	n := skipNode(s, map[*avro.RecordSchema]*node{})
	if l, ok := logicalLeaves[lts.Logical().Type()]; ok {
		n.unit = l.unit
		n, col, err := leaf(n, l.conv, l.typ)
		return n, col, true, err
	}
	d, ok := lts.Logical().(*avro.DecimalLogicalSchema)
	if !ok {
		return nil, schema.Column{}, false, nil
	}
	n, cl, err := decimalColumn(n, d.Precision(), d.Scale())
	return n, cl, true, err
}

func (c *compiler) otherLogical(s avro.Schema) (*node, schema.Column, bool, error) {
	lt := avrobq.StringProp(s, "logicalType")
	var cv conv
	var typ string
	var u avrobq.Unit
	switch {
	case s.Type() == avro.Long && lt == "timestamp-nanos":
		cv, typ, u = cTimestamp, schema.Timestamp, avrobq.Nanos
	case s.Type() == avro.Long && lt == "local-timestamp-nanos":
		cv, typ, u = cDatetime, schema.Datetime, avrobq.Nanos
	case s.Type() == avro.Fixed && lt == "uuid" && s.(*avro.FixedSchema).Size() == 16:
		cv, typ = cUUID, schema.String
	default:
		return nil, schema.Column{}, false, nil
	}
	n := skipNode(s, map[*avro.RecordSchema]*node{})
	n.unit = u
	n, col, err := leaf(n, cv, typ)
	return n, col, true, err
}
