package avrobq

import "github.com/hamba/avro/v2"

// ConvKind names the converter avrobq chose for a value (Conversion).
type ConvKind uint8

// The converters.
const (
	ConvNone                 ConvKind = iota
	ConvNull                          // Avro null: always NULL
	ConvBool                          // BOOL
	ConvInt                           // INT64 (int, long, io.debezium.time.Year, MicroDuration)
	ConvFloat                         // FLOAT64
	ConvString                        // STRING (strings and enum symbols)
	ConvBytes                         // BYTES (bytes, fixed, the duration logical type)
	ConvJSON                          // JSON of any decoded value (arrays of arrays or maps)
	ConvJSONText                      // JSON from JSON text (io.debezium.data.Json)
	ConvUUID                          // a UUID's canonical text
	ConvBit                           // io.debezium.data.Bits of length 1: BOOL
	ConvBits                          // io.debezium.data.Bits: BYTES padded to Length
	ConvDate                          // DATE from days
	ConvTime                          // TIME from an integer of Unit, or a duration
	ConvDatetime                      // DATETIME (a wall clock) from an integer of Unit, or a time
	ConvTimestamp                     // TIMESTAMP from an integer of Unit, or a time
	ConvZonedTimestamp                // TIMESTAMP from io.debezium.time.ZonedTimestamp text
	ConvZonedTime                     // TIME from io.debezium.time.ZonedTime text
	ConvDecimal                       // a decimal of DecimalType, checked against Precision and Scale
	ConvVariableScaleDecimal          // io.debezium.data.VariableScaleDecimal
	ConvGeometry                      // GEOGRAPHY from WKB (io.debezium.data.geometry.Geometry, Geography)
	ConvPoint                         // GEOGRAPHY from io.debezium.data.geometry.Point
	ConvRecord                        // RECORD of Fields
	ConvArray                         // ARRAY of Elem
	ConvMap                           // ARRAY of key and Elem
	ConvUnion                         // a nullable union of Elem
	ConvUnionJSON                     // a union of several types: JSON
)

// Conversion is what avrobq decided for a value: the converter and its
// parameters. The generic converters are built from it (converter), and
// the transcoder (package transcode) compiles the same decision, so the
// two cannot decide apart: a Field's Conv is the one decision.
type Conversion struct {
	Kind ConvKind
	Unit Unit // ConvTime, ConvDatetime, ConvTimestamp: of an integer value
	// ConvDecimal: the column's type (NUMERIC, BIGNUMERIC or STRING) and
	// the source's declared precision (0: none) and scale.
	DecimalType      string
	Precision, Scale int
	Length           int               // ConvBits: the declared length in bits (-1: unknown)
	Union            *avro.UnionSchema // ConvUnion, ConvUnionJSON
	Fields           Fields            // ConvRecord
	Elem             *Field            // ConvArray's items, ConvMap's values, ConvUnion's branch
}

// converter is the generic path's converter of c.
func (c Conversion) converter() converter {
	switch c.Kind {
	case ConvNull:
		return nullConv
	case ConvBool:
		return boolConv
	case ConvInt:
		return intConv
	case ConvFloat:
		return floatConv
	case ConvString:
		return stringConv
	case ConvBytes:
		return bytesConv
	case ConvJSON:
		return jsonConv
	case ConvJSONText:
		return jsonTextConv
	case ConvUUID:
		return uuidConv
	case ConvBit:
		return bitConv
	case ConvBits:
		return bitsConv(c.Length)
	case ConvDate:
		return daysConv
	case ConvTime:
		return timeConv(c.Unit)
	case ConvDatetime:
		return datetimeConv(c.Unit)
	case ConvTimestamp:
		return timestampConv(c.Unit)
	case ConvZonedTimestamp:
		return zonedTimestampConv
	case ConvZonedTime:
		return zonedTimeConv
	case ConvDecimal:
		return decimalConv(decimalLimits{typ: c.DecimalType, precision: c.Precision, scale: c.Scale})
	case ConvVariableScaleDecimal:
		return variableScaleDecimalConv
	case ConvGeometry:
		return geometryConv
	case ConvPoint:
		return pointConv
	case ConvRecord:
		return recordConv(c.Fields)
	case ConvArray:
		return arrayConv(c.Elem.conv)
	case ConvMap:
		return mapConv(c.Elem.conv)
	case ConvUnion:
		return unionConv(c.Union, c.Elem.conv)
	case ConvUnionJSON:
		return unionJSONConv(c.Union)
	}
	return nil
}
