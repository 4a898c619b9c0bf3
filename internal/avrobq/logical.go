package avrobq

import (
	"fmt"
	"strconv"

	"github.com/bqcdc/bqcdc/internal/schema"
	"github.com/hamba/avro/v2"
)

// propSchema is implemented by every hamba schema that carries extra JSON
// properties such as Kafka Connect's "connect.name".
type propSchema interface{ Prop(string) any }

func connectName(s avro.Schema) string {
	if p, ok := s.(propSchema); ok {
		if n, ok := p.Prop("connect.name").(string); ok {
			return n
		}
	}
	return ""
}

// connectColumn maps the semantic types Debezium and Kafka Connect announce in
// "connect.name". They take precedence over the plain Avro type because the
// same long can be epoch milliseconds of a wall-clock DATETIME or a count.
func connectColumn(name string, s avro.Schema) (Field, bool) {
	cn := connectName(s)
	at := string(s.Type()) + " (" + cn + ")"
	col := func(typ string, conv converter) (Field, bool) {
		return newField(name, typ, at, conv), true
	}
	switch cn {
	case "":
		return Field{}, false
	case "io.debezium.time.Date":
		return col(schema.Date, daysConv)
	case "io.debezium.time.Time":
		return col(schema.Time, timeOfDayConv(1000))
	case "io.debezium.time.MicroTime":
		return col(schema.Time, timeOfDayConv(1))
	case "io.debezium.time.NanoTime":
		return col(schema.Time, timeOfDayConv(-1000))
	case "io.debezium.time.Timestamp":
		return col(schema.Datetime, epochDatetimeConv(1000))
	case "io.debezium.time.MicroTimestamp":
		return col(schema.Datetime, epochDatetimeConv(1))
	case "io.debezium.time.NanoTimestamp":
		return col(schema.Datetime, epochDatetimeConv(-1000))
	case "io.debezium.time.ZonedTimestamp":
		return col(schema.Timestamp, zonedTimestampConv)
	case "io.debezium.time.Year", "io.debezium.time.MicroDuration":
		return col(schema.Int64, intConv)
	case "io.debezium.data.Json":
		return col(schema.JSON, stringConv)
	case "io.debezium.data.VariableScaleDecimal":
		return col(schema.BigNumeric, variableScaleDecimalConv)
	case "org.apache.kafka.connect.data.Decimal":
		if _, ok := logicalColumn(name, s); ok {
			break // the Avro decimal logical type carries precision: use it
		}
		scale := connectScale(s)
		c, _ := col(decimalType(0, scale), unscaledDecimalConv(scale))
		c.Scale = scale
		return c, true
	}
	return Field{}, false
}

func connectScale(s avro.Schema) int {
	p, ok := s.(propSchema)
	if !ok {
		return 0
	}
	params, _ := p.Prop("connect.parameters").(map[string]any)
	if v, ok := params["scale"].(string); ok {
		n, _ := strconv.Atoi(v)
		return n
	}
	return 0
}

// decimalType picks the narrowest exact BigQuery type for a decimal:
// NUMERIC holds 29 integer and 9 fractional digits, BIGNUMERIC 38 and 38.
// Precision 0 means unknown, so only the scale decides.
func decimalType(precision, scale int) string {
	intDigits := precision - scale
	switch {
	case scale <= 9 && intDigits <= 29 && precision > 0:
		return schema.Numeric
	case scale <= 38 && intDigits <= 38:
		return schema.BigNumeric
	}
	return schema.String
}

func logicalColumn(name string, s avro.Schema) (Field, bool) {
	lts, ok := s.(avro.LogicalTypeSchema)
	if !ok || lts.Logical() == nil {
		return Field{}, false
	}
	ls := lts.Logical()
	col := newField(name, "", string(s.Type())+" ("+string(ls.Type())+")", nil)
	switch ls.Type() {
	case avro.Date:
		col.Type, col.conv = schema.Date, daysConv
	case avro.TimeMillis, avro.TimeMicros:
		col.Type, col.conv = schema.Time, durationTimeConv
	case avro.TimestampMillis, avro.TimestampMicros:
		col.Type, col.conv = schema.Timestamp, timestampConv
	case avro.LocalTimestampMillis, avro.LocalTimestampMicros:
		col.Type, col.conv = schema.Datetime, localTimestampConv
	case avro.UUID:
		col.Type, col.conv = schema.String, stringConv
	case avro.Decimal:
		d, ok := ls.(*avro.DecimalLogicalSchema)
		if !ok {
			return Field{}, false
		}
		col.Type = decimalType(d.Precision(), d.Scale())
		col.Precision, col.Scale = d.Precision(), d.Scale()
		col.conv = ratConv(d.Scale())
	case avro.Duration:
		col.Type, col.conv = schema.Bytes, bytesConv
	default:
		return Field{}, false
	}
	return col, true
}

// describeDecimal is used in error messages.
func describeDecimal(p, s int) string { return fmt.Sprintf("decimal(%d,%d)", p, s) }
