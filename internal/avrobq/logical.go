package avrobq

import (
	"fmt"
	"strconv"

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
func connectColumn(name string, s avro.Schema) (Column, bool) {
	cn := connectName(s)
	at := string(s.Type()) + " (" + cn + ")"
	col := func(typ string, conv converter) (Column, bool) {
		return Column{Name: name, Type: typ, AvroType: at, conv: conv}, true
	}
	switch cn {
	case "":
		return Column{}, false
	case "io.debezium.time.Date":
		return col(Date, daysConv)
	case "io.debezium.time.Time":
		return col(Time, timeOfDayConv(1000))
	case "io.debezium.time.MicroTime":
		return col(Time, timeOfDayConv(1))
	case "io.debezium.time.NanoTime":
		return col(Time, timeOfDayConv(-1000))
	case "io.debezium.time.Timestamp":
		return col(Datetime, epochDatetimeConv(1000))
	case "io.debezium.time.MicroTimestamp":
		return col(Datetime, epochDatetimeConv(1))
	case "io.debezium.time.NanoTimestamp":
		return col(Datetime, epochDatetimeConv(-1000))
	case "io.debezium.time.ZonedTimestamp":
		return col(Timestamp, zonedTimestampConv)
	case "io.debezium.time.Year", "io.debezium.time.MicroDuration":
		return col(Int64, intConv)
	case "io.debezium.data.Json":
		return col(JSON, stringConv)
	case "io.debezium.data.VariableScaleDecimal":
		return col(BigNumeric, variableScaleDecimalConv)
	case "org.apache.kafka.connect.data.Decimal":
		if _, ok := logicalColumn(name, s); ok {
			break // the Avro decimal logical type carries precision: use it
		}
		scale := connectScale(s)
		c, _ := col(decimalType(0, scale), unscaledDecimalConv(scale))
		c.Scale = scale
		return c, true
	}
	return Column{}, false
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
		return Numeric
	case scale <= 38 && intDigits <= 38:
		return BigNumeric
	}
	return String
}

func logicalColumn(name string, s avro.Schema) (Column, bool) {
	lts, ok := s.(avro.LogicalTypeSchema)
	if !ok || lts.Logical() == nil {
		return Column{}, false
	}
	ls := lts.Logical()
	at := string(s.Type()) + " (" + string(ls.Type()) + ")"
	col := Column{Name: name, AvroType: at}
	switch ls.Type() {
	case avro.Date:
		col.Type, col.conv = Date, daysConv
	case avro.TimeMillis, avro.TimeMicros:
		col.Type, col.conv = Time, durationTimeConv
	case avro.TimestampMillis, avro.TimestampMicros:
		col.Type, col.conv = Timestamp, timestampConv
	case avro.LocalTimestampMillis, avro.LocalTimestampMicros:
		col.Type, col.conv = Datetime, localTimestampConv
	case avro.UUID:
		col.Type, col.conv = String, stringConv
	case avro.Decimal:
		d, ok := ls.(*avro.DecimalLogicalSchema)
		if !ok {
			return Column{}, false
		}
		col.Type = decimalType(d.Precision(), d.Scale())
		col.Precision, col.Scale = d.Precision(), d.Scale()
		col.conv = ratConv(d.Scale())
	case avro.Duration:
		col.Type, col.conv = Bytes, bytesConv
	default:
		return Column{}, false
	}
	return col, true
}

// describeDecimal is used in error messages.
func describeDecimal(p, s int) string { return fmt.Sprintf("decimal(%d,%d)", p, s) }
