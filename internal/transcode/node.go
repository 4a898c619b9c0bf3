package transcode

import (
	"github.com/bqcdc/bqcdc/internal/avrobq"
	"github.com/hamba/avro/v2"
)

// decKind is how a value is laid out in Avro binary.
type decKind uint8

const (
	dNull decKind = iota
	dBool
	dInt
	dLong
	dFloat
	dDouble
	dBytes // bytes and string
	dFixed
	dEnum
	dRecord
	dArray
	dMap
	dUnion
)

// form is the Go value hamba decodes a value into (see hamba's
// genericReceiver): the generic path's converters accept some forms and
// refuse others, so the transcoder decides per form at compile time.
type form uint8

const (
	fNull form = iota
	fBool
	fInt      // int
	fLong     // int64
	fDate     // time.Time from an int date
	fTSMillis // time.Time (UTC) from timestamp-millis
	fTSMicros
	fLTSMillis // time.Time (time.Local, shifted) from local-timestamp-millis
	fLTSMicros
	fTimeMillis // time.Duration from time-millis
	fTimeMicros // time.Duration from time-micros
	fFloat32
	fFloat64
	fString
	fEnum     // string symbol
	fBytes    // []byte
	fRat      // *big.Rat from a decimal (bytes or fixed)
	fFixed    // [N]byte
	fDuration // avro.LogicalDuration from fixed(12) duration
	fRecord   // map[string]any
	fArray    // []any
	fMap      // map[string]any
	fUnion
)

// node is one compiled Avro type: how to read it and, for the parts of the
// row image that are converted, how to turn it into a BigQuery value.
type node struct {
	dec      decKind
	form     form
	size     int     // fixed size, enum symbol count
	fields   []field // record fields in writer order
	items    *node   // array items, map values
	branches []*node // union branches
	symbols  []string
	minSize  int  // fewest bytes a value takes
	zeroSize bool // a value always takes no bytes
	// expansion is avrobq.Expansion of the schema of array items or map
	// values (set on the items node): what converting one adds to the
	// budget's charge per item.
	expansion int64
	// vsdScale is 1 + the index of the scale field of a
	// VariableScaleDecimal record read by skip (0: not one), whose text
	// skip charges as conversion would.
	vsdScale int

	// Conversion (row image only).
	conv   conv
	unit   avrobq.Unit // of an integer time value
	bits   int         // io.debezium.data.Bits length (-1: unknown)
	dec10  decLim      // decimal column limits
	vsdIdx [2]int      // VariableScaleDecimal: field index of scale and value
	rec    *recordPlan
	gen    *fallback // cFallback: how the column is converted
}

// field is one field of a record node.
type field struct {
	name string
	n    *node
	out  *outField // where the converted value goes; nil: nowhere
	// countDrop: the value is dropped because the table lacks its column,
	// and counted as dropped when not NULL (evolve.Fitter.Fit's count).
	countDrop bool
}

// skipNode compiles s for reading only (no conversion). It accepts every
// Avro type.
func skipNode(s avro.Schema, seen map[*avro.RecordSchema]*node) *node {
	s = deref(s)
	n := &node{form: formOf(s)}
	switch s.Type() {
	case avro.Null:
		n.dec = dNull
	case avro.Boolean:
		n.dec, n.minSize = dBool, 1
	case avro.Int:
		n.dec, n.minSize = dInt, 1
	case avro.Long:
		n.dec, n.minSize = dLong, 1
	case avro.Float:
		n.dec, n.minSize = dFloat, 4
	case avro.Double:
		n.dec, n.minSize = dDouble, 8
	case avro.String, avro.Bytes:
		n.dec, n.minSize = dBytes, 1
	case avro.Fixed:
		n.dec, n.size = dFixed, s.(*avro.FixedSchema).Size()
		n.minSize = n.size
	case avro.Enum:
		n.dec, n.minSize = dEnum, 1
		n.symbols = s.(*avro.EnumSchema).Symbols()
		n.size = len(n.symbols)
	case avro.Record:
		rec := s.(*avro.RecordSchema)
		if done, ok := seen[rec]; ok {
			return done // a recursive record: share the node
		}
		n.dec = dRecord
		seen[rec] = n
		if i, ok := avrobq.IsVariableScaleDecimal(rec); ok {
			n.vsdScale = i + 1
		}
		n.fields = make([]field, len(rec.Fields()))
		for i, f := range rec.Fields() {
			n.fields[i] = field{name: f.Name(), n: skipNode(f.Type(), seen)}
			n.minSize += n.fields[i].n.minSize
		}
	case avro.Array:
		n.dec, n.minSize = dArray, 1
		n.items = skipNode(s.(*avro.ArraySchema).Items(), seen)
		n.items.expansion = avrobq.Expansion(s.(*avro.ArraySchema).Items())
	case avro.Map:
		n.dec, n.minSize = dMap, 1
		n.items = skipNode(s.(*avro.MapSchema).Values(), seen)
		n.items.expansion = avrobq.Expansion(s.(*avro.MapSchema).Values())
	case avro.Union:
		n.dec, n.minSize = dUnion, 1
		for _, b := range s.(*avro.UnionSchema).Types() {
			n.branches = append(n.branches, skipNode(b, seen))
		}
	}
	n.zeroSize = n.minSize == 0
	return n
}

func deref(s avro.Schema) avro.Schema {
	if r, ok := s.(*avro.RefSchema); ok {
		return r.Schema()
	}
	return s
}

func logicalOf(s avro.Schema) avro.LogicalType {
	if lts, ok := s.(avro.LogicalTypeSchema); ok && lts.Logical() != nil {
		return lts.Logical().Type()
	}
	return ""
}

// formOf mirrors hamba's genericReceiver: the Go type a value of s
// decodes to when the target is an empty interface.
func formOf(s avro.Schema) form {
	s = deref(s)
	lt := logicalOf(s)
	switch s.Type() {
	case avro.Null:
		return fNull
	case avro.Boolean:
		return fBool
	case avro.Int:
		switch lt {
		case avro.Date:
			return fDate
		case avro.TimeMillis:
			return fTimeMillis
		}
		return fInt
	case avro.Long:
		switch lt {
		case avro.TimeMicros:
			return fTimeMicros
		case avro.TimestampMillis:
			return fTSMillis
		case avro.TimestampMicros:
			return fTSMicros
		case avro.LocalTimestampMillis:
			return fLTSMillis
		case avro.LocalTimestampMicros:
			return fLTSMicros
		}
		return fLong
	case avro.Float:
		return fFloat32
	case avro.Double:
		return fFloat64
	case avro.String:
		return fString
	case avro.Bytes:
		if lt == avro.Decimal {
			return fRat
		}
		return fBytes
	case avro.Enum:
		return fEnum
	case avro.Fixed:
		switch lt {
		case avro.Duration:
			return fDuration
		case avro.Decimal:
			return fRat
		}
		return fFixed
	case avro.Record:
		return fRecord
	case avro.Array:
		return fArray
	case avro.Map:
		return fMap
	case avro.Union:
		return fUnion
	}
	return fNull
}
