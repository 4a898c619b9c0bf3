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

// compiler builds the conversion nodes of a row image from avrobq's
// decision for each field (avrobq.Field.Conv): it decides nothing of its
// own but how to read each decoded form, and refuses (ErrUnsupported, the
// column then falls back to the generic path) what it does not compile.
type compiler struct{}

const maxDepth = 15 // avrobq's limit on nested RECORDs

func unsupported(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUnsupported, fmt.Sprintf(format, args...))
}

// column compiles the conversion of one value of s into a column. It
// returns the node and the column as avrobq would type it (name unset).

// column compiles the conversion of one value of s, as avrobq decided it
// in f.
func (c *compiler) column(s avro.Schema, f *avrobq.Field, depth int) (*node, error) {
	if depth > maxDepth {
		return nil, unsupported("nested deeper than %d levels", maxDepth)
	}
	s = deref(s)
	cv := f.Conv
	switch cv.Kind {
	case avrobq.ConvUnion:
		return c.union(s.(*avro.UnionSchema), cv.Elem, depth)
	case avrobq.ConvRecord:
		return c.record(s.(*avro.RecordSchema), cv.Fields, depth+1)
	case avrobq.ConvArray:
		return c.array(s.(*avro.ArraySchema), cv.Elem, depth)
	case avrobq.ConvUnionJSON:
		return nil, unsupported("a union of several non-null types, or of none (stored as JSON)")
	case avrobq.ConvJSON:
		return nil, unsupported("an array of arrays or maps (stored as JSON)")
	case avrobq.ConvMap:
		return nil, unsupported("Avro maps")
	case avrobq.ConvGeometry, avrobq.ConvPoint:
		return nil, unsupported("%s (converted from WKB to WKT by the generic path)", f.AvroType)
	}
	n := skipNode(s, map[*avro.RecordSchema]*node{})
	n.unit = cv.Unit
	switch cv.Kind {
	case avrobq.ConvVariableScaleDecimal:
		return vsdNode(n, s.(*avro.RecordSchema))
	case avrobq.ConvDecimal:
		n.dec10 = decLim{typ: cv.DecimalType, precision: cv.Precision, scale: cv.Scale}
	case avrobq.ConvBits:
		n.bits = cv.Length
	}
	k, ok := convOf[cv.Kind]
	if !ok {
		return nil, unsupported("avrobq's conversion %d of %s", cv.Kind, f.AvroType)
	}
	return leaf(n, k)
}

// convOf is the compiled converter of each of avrobq's leaf conversions.
var convOf = map[avrobq.ConvKind]conv{
	avrobq.ConvNull: cNull, avrobq.ConvBool: cBool, avrobq.ConvInt: cInt, avrobq.ConvFloat: cFloat,
	avrobq.ConvString: cString, avrobq.ConvBytes: cBytes, avrobq.ConvJSONText: cJSONText, avrobq.ConvUUID: cUUID,
	avrobq.ConvBit: cBit, avrobq.ConvBits: cBits, avrobq.ConvDate: cDate, avrobq.ConvTime: cTime,
	avrobq.ConvDatetime: cDatetime, avrobq.ConvTimestamp: cTimestamp, avrobq.ConvZonedTimestamp: cZonedTS,
	avrobq.ConvZonedTime: cZonedTime, avrobq.ConvDecimal: cDecimal,
}

// leaf checks that the generic converter accepts the decoded form of n.
func leaf(n *node, cv conv) (*node, error) {
	if !accepts(cv, n) {
		return nil, unsupported("%s decoded as form %d cannot be converted by converter %d (the generic path refuses every value)", n.dec, n.form, cv)
	}
	n.conv = cv
	return n, nil
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

// union compiles a nullable union whose non-null branch avrobq decided as
// elem.
func (c *compiler) union(u *avro.UnionSchema, elem *avrobq.Field, depth int) (*node, error) {
	var inner avro.Schema
	for _, t := range u.Types() {
		if t.Type() != avro.Null {
			inner = t
		}
	}
	in, err := c.column(inner, elem, depth)
	if err != nil {
		return nil, err
	}
	n := &node{dec: dUnion, form: fUnion, minSize: 1, conv: cUnion}
	for _, t := range u.Types() {
		if t.Type() == avro.Null {
			n.branches = append(n.branches, &node{dec: dNull, conv: cNull, zeroSize: true})
		} else {
			n.branches = append(n.branches, in)
		}
	}
	return n, nil
}

// record compiles a record whose fields avrobq decided as fields.
func (c *compiler) record(rec *avro.RecordSchema, fields avrobq.Fields, depth int) (*node, error) {
	if len(fields) != len(rec.Fields()) {
		return nil, fmt.Errorf("avrobq decided %d fields of record %s's %d", len(fields), rec.FullName(), len(rec.Fields()))
	}
	n := &node{dec: dRecord, form: fRecord, conv: cRecord}
	for i, f := range rec.Fields() {
		fn, err := c.column(f.Type(), &fields[i], depth)
		if err != nil {
			return nil, fmt.Errorf("field %q of %s: %w", f.Name(), rec.FullName(), err)
		}
		n.fields = append(n.fields, field{name: f.Name(), n: fn})
		n.minSize += fn.minSize
	}
	n.zeroSize = n.minSize == 0
	return n, nil
}

// array compiles an array whose items avrobq decided as elem.
func (c *compiler) array(a *avro.ArraySchema, elem *avrobq.Field, depth int) (*node, error) {
	items, err := c.column(a.Items(), elem, depth)
	if err != nil {
		return nil, err
	}
	if items.zeroSize {
		return nil, unsupported("an array of values that take no bytes")
	}
	items.expansion = avrobq.Expansion(a.Items())
	return &node{dec: dArray, form: fArray, items: items, minSize: 1, conv: cArray}, nil
}

// vsdNode compiles io.debezium.data.VariableScaleDecimal, a record
// {scale int, value bytes}. Other shapes of the record are left to the
// generic path, whose converter reads the two fields by name.
func vsdNode(n *node, rec *avro.RecordSchema) (*node, error) {
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
		return nil, unsupported("VariableScaleDecimal record %s without an int scale and a bytes value", rec.FullName())
	}
	n.conv = cVSD
	n.dec10 = decLim{typ: schema.BigNumeric}
	return n, nil
}
