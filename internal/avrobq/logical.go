package avrobq

import (
	"strconv"

	"github.com/bqcdc/bqcdc/internal/limits"
	"github.com/bqcdc/bqcdc/internal/schema"
	"github.com/hamba/avro/v2"
)

// propSchema is implemented by every hamba schema that carries extra JSON
// properties such as Kafka Connect's "connect.name".
type propSchema interface{ Prop(string) any }

// StringProp is the string property name of s ("" when it has none).
func StringProp(s avro.Schema, name string) string {
	if p, ok := s.(propSchema); ok {
		if v, ok := p.Prop(name).(string); ok {
			return v
		}
	}
	return ""
}

func connectName(s avro.Schema) string { return StringProp(s, "connect.name") }

// ConnectParam reads an integer from "connect.parameters"; ok is false when
// it is absent or not a number.
func ConnectParam(s avro.Schema, key string) (int, bool) {
	p, ok := s.(propSchema)
	if !ok {
		return 0, false
	}
	params, _ := p.Prop("connect.parameters").(map[string]any)
	v, ok := params[key].(string)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	return n, err == nil
}

// semantic is how one connect.name maps: the Avro types it may annotate
// (others are mapped by their plain type, so a mislabelled field cannot
// fail every message), and the column it becomes.
type semantic struct {
	on     []avro.Type
	column func(name, avroType string, s avro.Schema) (Field, error)
}

func fixed(typ string, kind ConvKind, u Unit) func(string, string, avro.Schema) (Field, error) {
	return func(name, at string, _ avro.Schema) (Field, error) {
		return newField(name, typ, at, Conversion{Kind: kind, Unit: u}), nil
	}
}

var (
	ints    = []avro.Type{avro.Int, avro.Long}
	strs    = []avro.Type{avro.String}
	records = []avro.Type{avro.Record}
)

// semantics maps the semantic types Debezium and Kafka Connect announce in
// "connect.name". They take precedence over the plain Avro type, because the
// same long can be epoch milliseconds of a wall-clock DATETIME or a count,
// and over an Avro logical type the converter may also have written: the
// Debezium types say more (io.debezium.time.Timestamp tagged
// timestamp-millis is a wall clock, not an instant), and the converters
// accept both decoded forms, so a field maps the same with or without the
// logical type.
var semantics = map[string]semantic{
	// Debezium's temporal types (time.precision.mode adaptive or
	// adaptive_time_microseconds). Its Timestamp types carry the source's
	// wall clock as if it were UTC (MySQL DATETIME, PostgreSQL TIMESTAMP):
	// DATETIME, not TIMESTAMP. NanoTime and NanoTimestamp are truncated to
	// BigQuery's microseconds.
	"io.debezium.time.Date":           {ints, fixed(schema.Date, ConvDate, 0)},
	"io.debezium.time.Time":           {ints, fixed(schema.Time, ConvTime, Millis)},
	"io.debezium.time.MicroTime":      {ints, fixed(schema.Time, ConvTime, Micros)},
	"io.debezium.time.NanoTime":       {ints, fixed(schema.Time, ConvTime, Nanos)},
	"io.debezium.time.Timestamp":      {ints, fixed(schema.Datetime, ConvDatetime, Millis)},
	"io.debezium.time.MicroTimestamp": {ints, fixed(schema.Datetime, ConvDatetime, Micros)},
	"io.debezium.time.NanoTimestamp":  {ints, fixed(schema.Datetime, ConvDatetime, Nanos)},
	"io.debezium.time.ZonedTimestamp": {strs, fixed(schema.Timestamp, ConvZonedTimestamp, 0)},
	"io.debezium.time.ZonedTime":      {strs, fixed(schema.Time, ConvZonedTime, 0)},
	"io.debezium.time.Year":           {ints, fixed(schema.Int64, ConvInt, 0)},
	"io.debezium.time.MicroDuration":  {ints, fixed(schema.Int64, ConvInt, 0)},

	// Kafka Connect's logical types (time.precision.mode=connect), usually
	// also tagged date, time-millis, timestamp-millis or decimal.
	"org.apache.kafka.connect.data.Date":      {ints, fixed(schema.Date, ConvDate, 0)},
	"org.apache.kafka.connect.data.Time":      {ints, fixed(schema.Time, ConvTime, Millis)},
	"org.apache.kafka.connect.data.Timestamp": {ints, fixed(schema.Timestamp, ConvTimestamp, Millis)},
	"org.apache.kafka.connect.data.Decimal":   {[]avro.Type{avro.Bytes, avro.Fixed}, connectDecimalColumn},

	"io.debezium.data.VariableScaleDecimal": {records, fixed(schema.BigNumeric, ConvVariableScaleDecimal, 0)},
	"io.debezium.data.Json":                 {strs, fixed(schema.JSON, ConvJSONText, 0)},
	"io.debezium.data.Xml":                  {strs, fixed(schema.String, ConvString, 0)},
	"io.debezium.data.Uuid":                 {strs, fixed(schema.String, ConvString, 0)},
	"io.debezium.data.Enum":                 {[]avro.Type{avro.String, avro.Enum}, fixed(schema.String, ConvString, 0)},
	// EnumSet (MySQL SET) stays the comma-separated STRING Debezium writes
	// rather than becoming ARRAY<STRING>: a BigQuery array cannot be NULL,
	// so NULL and the empty set would both read as [], and an array column
	// cannot be a key, a GROUP BY or an = operand. MySQL writes members in
	// their declared order, so equal sets are equal strings, and
	// SPLIT(col, ',') gives the array (members cannot contain commas).
	"io.debezium.data.EnumSet": {strs, fixed(schema.String, ConvString, 0)},
	"io.debezium.data.Bits":    {[]avro.Type{avro.Bytes}, bitsColumn},

	// Spatial types become GEOGRAPHY, written as WKT (see geo.go).
	"io.debezium.data.geometry.Geometry":  {records, fixed(schema.Geography, ConvGeometry, 0)},
	"io.debezium.data.geometry.Geography": {records, fixed(schema.Geography, ConvGeometry, 0)},
	"io.debezium.data.geometry.Point":     {records, fixed(schema.Geography, ConvPoint, 0)},
}

func connectColumn(name string, s avro.Schema) (Field, bool, error) {
	cn := connectName(s)
	sem, ok := semantics[cn]
	if !ok {
		return Field{}, false, nil
	}
	for _, t := range sem.on {
		if s.Type() == t {
			f, err := sem.column(name, string(s.Type())+" ("+cn+")", s)
			return f, err == nil, err
		}
	}
	return Field{}, false, nil
}

// connectDecimalColumn maps Kafka Connect's Decimal: by the Avro decimal
// logical type when the converter wrote one, else by connect.parameters
// (scale, and connect.decimal.precision when present).
func connectDecimalColumn(name, at string, s avro.Schema) (Field, error) {
	if d, ok := decimalLogical(s); ok {
		return decimalColumn(name, at, d.Precision(), d.Scale())
	}
	scale, _ := ConnectParam(s, "scale")
	precision, _ := ConnectParam(s, "connect.decimal.precision")
	return decimalColumn(name, at, precision, scale)
}

func decimalLogical(s avro.Schema) (*avro.DecimalLogicalSchema, bool) {
	if lts, ok := s.(avro.LogicalTypeSchema); ok && lts.Logical() != nil {
		d, ok := lts.Logical().(*avro.DecimalLogicalSchema)
		return d, ok
	}
	return nil, false
}

// bitsColumn maps io.debezium.data.Bits (PostgreSQL BIT(n), BIT VARYING;
// MySQL BIT(n), n > 1): BOOL when connect.parameters says length 1, else
// BYTES of ceil(length/8) bytes, little endian (bit 0 is the lowest bit of
// the first byte), as Debezium writes them. The length is bounded by
// limits.MaxBitsLength (a BigQuery row's size), since values are padded to
// it.
func bitsColumn(name, at string, s avro.Schema) (Field, error) {
	length, ok := ConnectParam(s, "length")
	if !ok {
		length = -1
	}
	if length > limits.MaxBitsLength {
		return Field{}, limits.Errorf("io.debezium.data.Bits length %d: values would be padded beyond a BigQuery row's %d bytes (at most %d bits)",
			length, limits.MaxMessageBytes, limits.MaxBitsLength)
	}
	if length == 1 {
		return newField(name, schema.Bool, at, Conversion{Kind: ConvBit}), nil
	}
	f := newField(name, schema.Bytes, at, Conversion{Kind: ConvBits, Length: length})
	f.padBytes = max(0, (length+7)/8)
	return f, nil
}

// logicalColumns maps the logical types whose column is a BigQuery type and
// a converter alone; decimal, which also takes its precision and scale, is
// the only other one.
var logicalColumns = map[avro.LogicalType]struct {
	typ  string
	conv Conversion
}{
	avro.Date:                 {schema.Date, Conversion{Kind: ConvDate}},
	avro.TimeMillis:           {schema.Time, Conversion{Kind: ConvTime, Unit: Millis}},
	avro.TimeMicros:           {schema.Time, Conversion{Kind: ConvTime, Unit: Micros}},
	avro.TimestampMillis:      {schema.Timestamp, Conversion{Kind: ConvTimestamp, Unit: Millis}},
	avro.TimestampMicros:      {schema.Timestamp, Conversion{Kind: ConvTimestamp, Unit: Micros}},
	avro.LocalTimestampMillis: {schema.Datetime, Conversion{Kind: ConvDatetime, Unit: Millis}},
	avro.LocalTimestampMicros: {schema.Datetime, Conversion{Kind: ConvDatetime, Unit: Micros}},
	avro.UUID:                 {schema.String, Conversion{Kind: ConvUUID}},
	avro.Duration:             {schema.Bytes, Conversion{Kind: ConvBytes}},
}

func logicalColumn(name string, s avro.Schema) (Field, bool, error) {
	lts, ok := s.(avro.LogicalTypeSchema)
	if !ok || lts.Logical() == nil {
		f, ok := otherLogicalColumn(name, s)
		return f, ok, nil
	}
	ls := lts.Logical()
	at := string(s.Type()) + " (" + string(ls.Type()) + ")"
	if c, ok := logicalColumns[ls.Type()]; ok {
		return newField(name, c.typ, at, c.conv), true, nil
	}
	d, ok := ls.(*avro.DecimalLogicalSchema)
	if !ok {
		return Field{}, false, nil
	}
	f, err := decimalColumn(name, at, d.Precision(), d.Scale())
	return f, err == nil, err
}

// otherLogicalColumn maps the Avro 1.12 logical types hamba does not know,
// which it leaves as the "logicalType" property of a plain long or fixed.
func otherLogicalColumn(name string, s avro.Schema) (Field, bool) {
	lt := StringProp(s, "logicalType")
	at := string(s.Type()) + " (" + lt + ")"
	switch {
	case s.Type() == avro.Long && lt == "timestamp-nanos":
		return newField(name, schema.Timestamp, at, Conversion{Kind: ConvTimestamp, Unit: Nanos}), true
	case s.Type() == avro.Long && lt == "local-timestamp-nanos":
		return newField(name, schema.Datetime, at, Conversion{Kind: ConvDatetime, Unit: Nanos}), true
	case s.Type() == avro.Fixed && lt == "uuid" && s.(*avro.FixedSchema).Size() == 16:
		return newField(name, schema.String, at, Conversion{Kind: ConvUUID}), true
	}
	return Field{}, false
}
