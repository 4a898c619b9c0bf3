package avrobq

import (
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hamba/avro/v2"
)

// Avro types exactly as Confluent's AvroConverter writes Debezium's and Kafka
// Connect's semantic types.
const (
	dbzDate           = `{"type":"int","connect.version":1,"connect.name":"io.debezium.time.Date"}`
	dbzTime           = `{"type":"int","connect.version":1,"connect.name":"io.debezium.time.Time"}`
	dbzMicroTime      = `{"type":"long","connect.version":1,"connect.name":"io.debezium.time.MicroTime"}`
	dbzNanoTime       = `{"type":"long","connect.version":1,"connect.name":"io.debezium.time.NanoTime"}`
	dbzTimestamp      = `{"type":"long","connect.version":1,"connect.name":"io.debezium.time.Timestamp"}`
	dbzMicroTimestamp = `{"type":"long","connect.version":1,"connect.name":"io.debezium.time.MicroTimestamp"}`
	dbzNanoTimestamp  = `{"type":"long","connect.version":1,"connect.name":"io.debezium.time.NanoTimestamp"}`
	dbzZonedTimestamp = `{"type":"string","connect.version":1,"connect.name":"io.debezium.time.ZonedTimestamp"}`
	dbzZonedTime      = `{"type":"string","connect.version":1,"connect.name":"io.debezium.time.ZonedTime"}`
	dbzYear           = `{"type":"int","connect.version":1,"connect.name":"io.debezium.time.Year"}`
	connectDate       = `{"type":"int","connect.version":1,"connect.name":"org.apache.kafka.connect.data.Date","logicalType":"date"}`
	connectTime       = `{"type":"int","connect.version":1,"connect.name":"org.apache.kafka.connect.data.Time","logicalType":"time-millis"}`
	connectTimestamp  = `{"type":"long","connect.version":1,"connect.name":"org.apache.kafka.connect.data.Timestamp","logicalType":"timestamp-millis"}`
	vsd               = `{"type":"record","name":"VariableScaleDecimal","namespace":"io.debezium.data","fields":[{"name":"scale","type":"int"},{"name":"value","type":"bytes"}],"connect.doc":"Variable scaled decimal","connect.version":1,"connect.name":"io.debezium.data.VariableScaleDecimal"}`
	dbzGeometry       = `{"type":"record","name":"Geometry","namespace":"io.debezium.data.geometry","fields":[{"name":"wkb","type":"bytes"},{"name":"srid","type":["null","int"],"default":null}],"connect.doc":"Geometry","connect.version":1,"connect.name":"io.debezium.data.geometry.Geometry"}`
	dbzGeography      = `{"type":"record","name":"Geography","namespace":"io.debezium.data.geometry","fields":[{"name":"wkb","type":"bytes"},{"name":"srid","type":["null","int"],"default":null}],"connect.doc":"Geography","connect.version":1,"connect.name":"io.debezium.data.geometry.Geography"}`
	dbzPoint          = `{"type":"record","name":"Point","namespace":"io.debezium.data.geometry","fields":[{"name":"x","type":"double"},{"name":"y","type":"double"},{"name":"wkb","type":["null","bytes"],"default":null},{"name":"srid","type":["null","int"],"default":null}],"connect.doc":"Geometry (POINT)","connect.version":1,"connect.name":"io.debezium.data.geometry.Point"}`
)

func connectDecimal(precision, scale string, logical bool) string {
	s := `{"type":"bytes","connect.version":1,"connect.parameters":{"scale":"` + scale + `"`
	if precision != "" {
		s += `,"connect.decimal.precision":"` + precision + `"`
	}
	s += `},"connect.name":"org.apache.kafka.connect.data.Decimal"`
	if logical {
		s += `,"logicalType":"decimal","precision":` + precision + `,"scale":` + scale
	}
	return s + "}"
}

func dbzString(name string, params string) string {
	s := `{"type":"string","connect.version":1,"connect.name":"io.debezium.data.` + name + `"`
	if params != "" {
		s += `,"connect.parameters":` + params
	}
	return s + "}"
}

func bits(length string) string {
	return `{"type":"bytes","connect.version":1,"connect.parameters":{"length":"` + length + `"},"connect.name":"io.debezium.data.Bits"}`
}

func rat(s string) *big.Rat {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		panic(s)
	}
	return r
}

func bigInt(s string) *big.Int {
	n, ok := new(big.Int).SetString(s, 10)
	if !ok {
		panic(s)
	}
	return n
}

// unscaledBytes is the big-endian two's complement form Kafka Connect and
// Debezium write decimals in.
func unscaledBytes(n *big.Int) []byte {
	if n.Sign() >= 0 {
		b := n.Bytes()
		if len(b) == 0 || b[0]&0x80 != 0 {
			b = append([]byte{0}, b...)
		}
		return b
	}
	size := len(new(big.Int).Not(n).Bytes()) + 1 // -(n+1) fits in size-1 bytes
	m := new(big.Int).Add(new(big.Int).Lsh(big.NewInt(1), uint(size*8)), n)
	return m.Bytes()
}

func micro(s string) int64 {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t.UnixMicro()
}

// errValue in a want means the conversion must fail with ErrValue.
type errValue struct{}

type logicalCase struct {
	name        string
	avroType    string
	in          any // what a producer hands hamba to encode
	sqlType     string
	prec, scale int // the column's type parameters
	want        any
}

func logicalCases() []logicalCase {
	thirtyEightNines := strings.Repeat("9", 38)
	return []logicalCase{
		// io.debezium.time.*
		{name: "Date", avroType: dbzDate, in: 19849, sqlType: "DATE", want: int32(19849)},
		{name: "Date before 1970", avroType: dbzDate, in: -25567, sqlType: "DATE", want: int32(-25567)},
		{name: "Date 0001-01-01", avroType: dbzDate, in: -719162, sqlType: "DATE", want: int32(-719162)},
		{name: "Date before year 1", avroType: dbzDate, in: -719163, sqlType: "DATE", want: errValue{}},
		{name: "Date after 9999", avroType: dbzDate, in: 2932897, sqlType: "DATE", want: errValue{}},
		{name: "Time", avroType: dbzTime, in: 3723004, sqlType: "TIME", want: "01:02:03.004000"},
		{name: "Time last ms", avroType: dbzTime, in: 86399999, sqlType: "TIME", want: "23:59:59.999000"},
		{name: "Time 24:00", avroType: dbzTime, in: 86400000, sqlType: "TIME", want: errValue{}},
		{name: "MicroTime", avroType: dbzMicroTime, in: int64(3723000005), sqlType: "TIME", want: "01:02:03.000005"},
		{name: "MicroTime negative (MySQL TIME)", avroType: dbzMicroTime, in: int64(-1), sqlType: "TIME", want: errValue{}},
		{name: "MicroTime 838 hours (MySQL TIME)", avroType: dbzMicroTime, in: int64(838 * 3600e6), sqlType: "TIME", want: errValue{}},
		{name: "NanoTime truncated", avroType: dbzNanoTime, in: int64(3723000005999), sqlType: "TIME", want: "01:02:03.000005"},
		{name: "NanoTime last µs", avroType: dbzNanoTime, in: int64(86399999999999), sqlType: "TIME", want: "23:59:59.999999"},
		{name: "Timestamp", avroType: dbzTimestamp, in: int64(1714979289123), sqlType: "DATETIME", want: "2024-05-06 07:08:09.123000"},
		{name: "Timestamp before 1970", avroType: dbzTimestamp, in: int64(-1), sqlType: "DATETIME", want: "1969-12-31 23:59:59.999000"},
		{name: "Timestamp year 1", avroType: dbzTimestamp, in: int64(-62135596800000), sqlType: "DATETIME", want: "0001-01-01 00:00:00.000000"},
		{name: "Timestamp year 10000", avroType: dbzTimestamp, in: int64(253402300800000), sqlType: "DATETIME", want: errValue{}},
		{name: "Timestamp overflowing µs", avroType: dbzTimestamp, in: int64(1 << 62), sqlType: "DATETIME", want: errValue{}},
		{name: "MicroTimestamp", avroType: dbzMicroTimestamp, in: int64(1714979289123456), sqlType: "DATETIME", want: "2024-05-06 07:08:09.123456"},
		{name: "MicroTimestamp before 1970", avroType: dbzMicroTimestamp, in: int64(-1), sqlType: "DATETIME", want: "1969-12-31 23:59:59.999999"},
		{name: "NanoTimestamp truncated", avroType: dbzNanoTimestamp, in: int64(1714979289123456789), sqlType: "DATETIME", want: "2024-05-06 07:08:09.123456"},
		{name: "NanoTimestamp before 1970 truncated", avroType: dbzNanoTimestamp, in: int64(-1500), sqlType: "DATETIME", want: "1969-12-31 23:59:59.999998"},
		{name: "ZonedTimestamp +05:30", avroType: dbzZonedTimestamp, in: "2024-05-06T12:38:09.123456+05:30", sqlType: "TIMESTAMP", want: micro("2024-05-06T07:08:09.123456Z")},
		{name: "ZonedTimestamp -08:00 next day", avroType: dbzZonedTimestamp, in: "2024-05-06T20:00:00-08:00", sqlType: "TIMESTAMP", want: micro("2024-05-07T04:00:00Z")},
		{name: "ZonedTimestamp Z before 1970", avroType: dbzZonedTimestamp, in: "1969-12-31T23:59:59.999999Z", sqlType: "TIMESTAMP", want: int64(-1)},
		{name: "ZonedTimestamp nanoseconds truncated", avroType: dbzZonedTimestamp, in: "2024-05-06T07:08:09.123456789Z", sqlType: "TIMESTAMP", want: micro("2024-05-06T07:08:09.123456Z")},
		{name: "ZonedTimestamp offset with seconds", avroType: dbzZonedTimestamp, in: "1900-01-01T00:19:32+00:19:32", sqlType: "TIMESTAMP", want: micro("1900-01-01T00:00:00Z")},
		{name: "ZonedTimestamp year 10000", avroType: dbzZonedTimestamp, in: "+10000-01-01T00:00:00Z", sqlType: "TIMESTAMP", want: errValue{}},
		{name: "ZonedTimestamp garbage", avroType: dbzZonedTimestamp, in: "yesterday", sqlType: "TIMESTAMP", want: errValue{}},
		{name: "ZonedTime UTC", avroType: dbzZonedTime, in: "10:15:30.123456Z", sqlType: "TIME", want: "10:15:30.123456"},
		{name: "ZonedTime offset wraps to previous day", avroType: dbzZonedTime, in: "01:00:00+02:00", sqlType: "TIME", want: "23:00:00.000000"},
		{name: "ZonedTime offset wraps to next day", avroType: dbzZonedTime, in: "23:30:00.5-01:00", sqlType: "TIME", want: "00:30:00.500000"},
		{name: "ZonedTime nanoseconds truncated", avroType: dbzZonedTime, in: "10:15:30.123456789Z", sqlType: "TIME", want: "10:15:30.123456"},
		{name: "ZonedTime garbage", avroType: dbzZonedTime, in: "noon", sqlType: "TIME", want: errValue{}},
		{name: "Year", avroType: dbzYear, in: 2024, sqlType: "INT64", want: int64(2024)},

		// org.apache.kafka.connect.data.*: connect.name decides, with or without the Avro logical type.
		{name: "connect Date", avroType: connectDate, in: time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC), sqlType: "DATE", want: int32(-1)},
		{name: "connect Date untagged", avroType: `{"type":"int","connect.name":"org.apache.kafka.connect.data.Date"}`, in: -1, sqlType: "DATE", want: int32(-1)},
		{name: "connect Time", avroType: connectTime, in: 3723004 * time.Millisecond, sqlType: "TIME", want: "01:02:03.004000"},
		{name: "connect Time untagged", avroType: `{"type":"int","connect.name":"org.apache.kafka.connect.data.Time"}`, in: 3723004, sqlType: "TIME", want: "01:02:03.004000"},
		{name: "connect Timestamp", avroType: connectTimestamp, in: time.UnixMilli(-1).UTC(), sqlType: "TIMESTAMP", want: int64(-1000)},
		{name: "connect Timestamp untagged", avroType: `{"type":"long","connect.name":"org.apache.kafka.connect.data.Timestamp"}`, in: int64(1714979289123), sqlType: "TIMESTAMP", want: micro("2024-05-06T07:08:09.123Z")},
		{name: "Debezium Timestamp tagged timestamp-millis stays a wall clock",
			avroType: `{"type":"long","connect.name":"io.debezium.time.Timestamp","logicalType":"timestamp-millis"}`,
			in:       time.UnixMilli(-1).UTC(), sqlType: "DATETIME", want: "1969-12-31 23:59:59.999000"},
		{name: "connect Decimal", avroType: connectDecimal("10", "2", true), in: rat("-1234.56"), sqlType: "NUMERIC", prec: 10, scale: 2, want: "-1234.56"},
		{name: "connect Decimal scale 0", avroType: connectDecimal("5", "0", true), in: rat("-12345"), sqlType: "NUMERIC", prec: 5, scale: 0, want: "-12345"},
		{name: "connect Decimal keeps trailing zeros of the scale", avroType: connectDecimal("10", "3", true), in: rat("1.5"), sqlType: "NUMERIC", prec: 10, scale: 3, want: "1.500"},
		{name: "connect Decimal untagged with precision", avroType: connectDecimal("10", "2", false), in: []byte{0xff}, sqlType: "NUMERIC", prec: 10, scale: 2, want: "-0.01"},
		{name: "connect Decimal untagged without precision", avroType: connectDecimal("", "3", false), in: []byte{0xff, 0x85}, sqlType: "BIGNUMERIC", want: "-0.123"},
		{name: "connect Decimal wider than its precision", avroType: connectDecimal("5", "2", false), in: unscaledBytes(big.NewInt(100000)), sqlType: "NUMERIC", prec: 5, scale: 2, want: errValue{}},

		// Avro decimal
		{name: "decimal NUMERIC max", avroType: `{"type":"bytes","logicalType":"decimal","precision":38,"scale":9}`,
			in: rat("99999999999999999999999999999.999999999"), sqlType: "NUMERIC", prec: 38, scale: 9, want: "99999999999999999999999999999.999999999"},
		{name: "decimal 38 digits BIGNUMERIC", avroType: `{"type":"bytes","logicalType":"decimal","precision":38,"scale":0}`,
			in: rat(thirtyEightNines), sqlType: "BIGNUMERIC", prec: 38, scale: 0, want: thirtyEightNines},
		{name: "decimal 38 digits BIGNUMERIC negative", avroType: `{"type":"bytes","logicalType":"decimal","precision":38,"scale":0}`,
			in: rat("-" + thirtyEightNines), sqlType: "BIGNUMERIC", prec: 38, scale: 0, want: "-" + thirtyEightNines},
		{name: "decimal 38 fractional digits", avroType: `{"type":"bytes","logicalType":"decimal","precision":38,"scale":38}`,
			in: rat("-0.12345678901234567890123456789012345678"), sqlType: "BIGNUMERIC", prec: 38, scale: 38, want: "-0.12345678901234567890123456789012345678"},
		{name: "decimal 50,20 BIGNUMERIC", avroType: `{"type":"bytes","logicalType":"decimal","precision":50,"scale":20}`,
			in: rat("-12345678901234567890123456789.12345678901234567890"), sqlType: "BIGNUMERIC", prec: 50, scale: 20, want: "-12345678901234567890123456789.12345678901234567890"},
		{name: "decimal 39 integer digits is STRING", avroType: `{"type":"bytes","logicalType":"decimal","precision":40,"scale":1}`,
			in: rat("-123456789012345678901234567890123456789.5"), sqlType: "STRING", want: "-123456789012345678901234567890123456789.5"},
		{name: "decimal in fixed", avroType: `{"type":"fixed","name":"Amount","size":9,"logicalType":"decimal","precision":20,"scale":4}`,
			in: rat("-0.0001"), sqlType: "NUMERIC", prec: 20, scale: 4, want: "-0.0001"},
		{name: "VariableScaleDecimal", avroType: vsd, in: map[string]any{"scale": 1, "value": unscaledBytes(big.NewInt(1234))}, sqlType: "BIGNUMERIC", want: "123.4"},
		{name: "VariableScaleDecimal negative", avroType: vsd, in: map[string]any{"scale": 2, "value": unscaledBytes(big.NewInt(-5))}, sqlType: "BIGNUMERIC", want: "-0.05"},
		{name: "VariableScaleDecimal scale 0", avroType: vsd, in: map[string]any{"scale": 0, "value": unscaledBytes(big.NewInt(-42))}, sqlType: "BIGNUMERIC", want: "-42"},
		{name: "VariableScaleDecimal negative scale", avroType: vsd, in: map[string]any{"scale": -3, "value": unscaledBytes(big.NewInt(12))}, sqlType: "BIGNUMERIC", want: "12000"},
		{name: "VariableScaleDecimal 40 fractional digits, trailing zeros", avroType: vsd, in: map[string]any{"scale": 40, "value": unscaledBytes(big.NewInt(-100))},
			sqlType: "BIGNUMERIC", want: "-0." + strings.Repeat("0", 37) + "1"},
		{name: "VariableScaleDecimal 40 significant fractional digits", avroType: vsd, in: map[string]any{"scale": 40, "value": unscaledBytes(big.NewInt(1))}, sqlType: "BIGNUMERIC", want: errValue{}},
		{name: "VariableScaleDecimal BIGNUMERIC max", avroType: vsd, in: map[string]any{"scale": 38, "value": unscaledBytes(bigNumericMax)},
			sqlType: "BIGNUMERIC", want: "578960446186580977117854925043439539266.34992332820282019728792003956564819967"},
		{name: "VariableScaleDecimal BIGNUMERIC min", avroType: vsd, in: map[string]any{"scale": 38, "value": unscaledBytes(bigNumericMin)},
			sqlType: "BIGNUMERIC", want: "-578960446186580977117854925043439539266.34992332820282019728792003956564819968"},
		{name: "VariableScaleDecimal beyond BIGNUMERIC", avroType: vsd, in: map[string]any{"scale": 0, "value": unscaledBytes(bigInt("1" + strings.Repeat("0", 39)))}, sqlType: "BIGNUMERIC", want: errValue{}},

		// io.debezium.data.*
		{name: "Json", avroType: dbzString("Json", ""), in: `{"a":[1,2.50],"b":null}`, sqlType: "JSON", want: `{"a":[1,2.50],"b":null}`},
		{name: "Json invalid", avroType: dbzString("Json", ""), in: `{"a":`, sqlType: "JSON", want: errValue{}},
		{name: "Enum", avroType: dbzString("Enum", `{"allowed":"RED,BLUE"}`), in: "BLUE", sqlType: "STRING", want: "BLUE"},
		{name: "Enum as Avro enum", avroType: `{"type":"enum","name":"Color","symbols":["RED","BLUE"],"connect.name":"io.debezium.data.Enum"}`, in: "RED", sqlType: "STRING", want: "RED"},
		{name: "EnumSet", avroType: dbzString("EnumSet", `{"allowed":"a,b,c"}`), in: "a,c", sqlType: "STRING", want: "a,c"},
		{name: "EnumSet empty", avroType: dbzString("EnumSet", `{"allowed":"a,b,c"}`), in: "", sqlType: "STRING", want: ""},
		{name: "Uuid", avroType: dbzString("Uuid", ""), in: "5f0c4a4e-8f0e-4d7b-9c35-6c4a2b7f0e11", sqlType: "STRING", want: "5f0c4a4e-8f0e-4d7b-9c35-6c4a2b7f0e11"},
		{name: "Xml", avroType: dbzString("Xml", ""), in: `<a x="1">é</a>`, sqlType: "STRING", want: `<a x="1">é</a>`},
		{name: "Bits", avroType: bits("3"), in: []byte{0x05}, sqlType: "BYTES", want: []byte{0x05}},
		{name: "Bits padded to the length", avroType: bits("16"), in: []byte{0x01}, sqlType: "BYTES", want: []byte{0x01, 0x00}},
		{name: "Bits of length 1 set", avroType: bits("1"), in: []byte{0x01}, sqlType: "BOOL", want: true},
		{name: "Bits of length 1 clear", avroType: bits("1"), in: []byte{}, sqlType: "BOOL", want: false},

		// io.debezium.data.geometry.*
		{name: "Geometry", avroType: dbzGeometry, in: map[string]any{"wkb": wkbPointLE(30, 10), "srid": 4326}, sqlType: "GEOGRAPHY", want: "POINT(30 10)"},
		{name: "Geometry without SRID", avroType: dbzGeometry, in: map[string]any{"wkb": wkbPointLE(-71.06, 42.36), "srid": nil}, sqlType: "GEOGRAPHY", want: "POINT(-71.06 42.36)"},
		{name: "Geometry SRID 0", avroType: dbzGeometry, in: map[string]any{"wkb": wkbPointLE(1, 2), "srid": 0}, sqlType: "GEOGRAPHY", want: "POINT(1 2)"},
		{name: "Geometry SRID 3857", avroType: dbzGeometry, in: map[string]any{"wkb": wkbPointLE(1, 2), "srid": 3857}, sqlType: "GEOGRAPHY", want: errValue{}},
		{name: "Geometry EWKB SRID 4326", avroType: dbzGeometry, in: map[string]any{"wkb": ewkbPointLE(4326, 1.5, -2.25), "srid": 4326}, sqlType: "GEOGRAPHY", want: "POINT(1.5 -2.25)"},
		{name: "Geometry EWKB SRID 2154", avroType: dbzGeometry, in: map[string]any{"wkb": ewkbPointLE(2154, 1, 2), "srid": nil}, sqlType: "GEOGRAPHY", want: errValue{}},
		{name: "Geography", avroType: dbzGeography, in: map[string]any{"wkb": wkbPointLE(2.35, 48.85), "srid": 4326}, sqlType: "GEOGRAPHY", want: "POINT(2.35 48.85)"},
		{name: "Point", avroType: dbzPoint, in: map[string]any{"x": 30.5, "y": -10.25, "wkb": nil, "srid": nil}, sqlType: "GEOGRAPHY", want: "POINT(30.5 -10.25)"},
		{name: "Point with WKB and SRID", avroType: dbzPoint, in: map[string]any{"x": 0.1, "y": 0.2, "wkb": wkbPointLE(0.1, 0.2), "srid": 4326}, sqlType: "GEOGRAPHY", want: "POINT(0.1 0.2)"},
		{name: "Point SRID 3857", avroType: dbzPoint, in: map[string]any{"x": 1.0, "y": 2.0, "wkb": nil, "srid": 3857}, sqlType: "GEOGRAPHY", want: errValue{}},
		{name: "Point off the globe", avroType: dbzPoint, in: map[string]any{"x": 500000.0, "y": 2.0, "wkb": nil, "srid": nil}, sqlType: "GEOGRAPHY", want: errValue{}},

		// Avro logical types
		{name: "date", avroType: `{"type":"int","logicalType":"date"}`, in: time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC), sqlType: "DATE", want: int32(-25567)},
		{name: "time-millis", avroType: `{"type":"int","logicalType":"time-millis"}`, in: 86399999 * time.Millisecond, sqlType: "TIME", want: "23:59:59.999000"},
		{name: "time-micros", avroType: `{"type":"long","logicalType":"time-micros"}`, in: time.Microsecond, sqlType: "TIME", want: "00:00:00.000001"},
		{name: "timestamp-millis", avroType: `{"type":"long","logicalType":"timestamp-millis"}`, in: time.UnixMilli(-1).UTC(), sqlType: "TIMESTAMP", want: int64(-1000)},
		{name: "timestamp-micros", avroType: `{"type":"long","logicalType":"timestamp-micros"}`, in: time.UnixMicro(-62135596800000000).UTC(), sqlType: "TIMESTAMP", want: int64(-62135596800000000)},
		{name: "local-timestamp-millis", avroType: `{"type":"long","logicalType":"local-timestamp-millis"}`,
			in: time.Date(1969, 12, 31, 23, 59, 59, 999000000, time.UTC), sqlType: "DATETIME", want: "1969-12-31 23:59:59.999000"},
		{name: "local-timestamp-micros", avroType: `{"type":"long","logicalType":"local-timestamp-micros"}`,
			in: time.Date(2024, 5, 6, 7, 8, 9, 123456000, time.UTC), sqlType: "DATETIME", want: "2024-05-06 07:08:09.123456"},
		{name: "timestamp-nanos (Avro 1.12)", avroType: `{"type":"long","logicalType":"timestamp-nanos"}`, in: int64(-1), sqlType: "TIMESTAMP", want: int64(-1)},
		{name: "local-timestamp-nanos (Avro 1.12)", avroType: `{"type":"long","logicalType":"local-timestamp-nanos"}`, in: int64(1714979289123456789), sqlType: "DATETIME", want: "2024-05-06 07:08:09.123456"},
		{name: "uuid", avroType: `{"type":"string","logicalType":"uuid"}`, in: "5f0c4a4e-8f0e-4d7b-9c35-6c4a2b7f0e11", sqlType: "STRING", want: "5f0c4a4e-8f0e-4d7b-9c35-6c4a2b7f0e11"},
		{name: "uuid in fixed (Avro 1.12)", avroType: `{"type":"fixed","name":"U","size":16,"logicalType":"uuid"}`,
			in: [16]byte{0x5f, 0x0c, 0x4a, 0x4e, 0x8f, 0x0e, 0x4d, 0x7b, 0x9c, 0x35, 0x6c, 0x4a, 0x2b, 0x7f, 0x0e, 0x11}, sqlType: "STRING", want: "5f0c4a4e-8f0e-4d7b-9c35-6c4a2b7f0e11"},

		// A connect.name on a type it cannot annotate is ignored.
		{name: "mislabelled Date", avroType: `{"type":"string","connect.name":"io.debezium.time.Date"}`, in: "2024-05-06", sqlType: "STRING", want: "2024-05-06"},
	}
}

// roundTrip encodes in as the only field of a record whose field has type
// avroType (wrapped in ["null", avroType] when nullable), decodes it the way
// the ingest function does, and converts it.
func roundTrip(t *testing.T, avroType string, in any, nullable bool) (Field, any, error) {
	t.Helper()
	plainSchema := avro.MustParse(`{"type":"record","name":"R","fields":[{"name":"v","type":` + avroType + `}]}`)
	api := avro.Config{}.Freeze()
	payload, err := api.Marshal(plainSchema, map[string]any{"v": in})
	if err != nil {
		t.Fatalf("encoding %v as %s: %v", in, avroType, err)
	}
	s := plainSchema
	if nullable {
		// A union's binary form is the branch index (zigzag: 1 → 0x02) and the value.
		s = avro.MustParse(`{"type":"record","name":"R","fields":[{"name":"v","type":["null",` + avroType + `]}]}`)
		payload = append([]byte{0x02}, payload...)
	}
	fields, err := FromRecord(s.(*avro.RecordSchema))
	if err != nil {
		t.Fatal(err)
	}
	r := avro.NewReader(nil, 0, avro.WithReaderConfig(avro.Config{}.Freeze())).Reset(payload)
	var rec map[string]any
	r.ReadVal(s, &rec)
	if r.Error != nil {
		t.Fatalf("decoding: %v", r.Error)
	}
	row, err := fields.Convert(rec)
	return fields[0], row["v"], err
}

func TestLogicalTypes(t *testing.T) {
	for _, tc := range logicalCases() {
		for _, nullable := range []bool{false, true} {
			name := tc.name
			if nullable {
				name += " (nullable)"
			}
			t.Run(name, func(t *testing.T) {
				f, got, err := roundTrip(t, tc.avroType, tc.in, nullable)
				if f.SQLType() != tc.sqlType || f.Precision != tc.prec || f.Scale != tc.scale {
					t.Errorf("column %s(%d,%d), want %s(%d,%d)", f.SQLType(), f.Precision, f.Scale, tc.sqlType, tc.prec, tc.scale)
				}
				if _, ok := tc.want.(errValue); ok {
					if !errors.Is(err, ErrValue) {
						t.Errorf("got %#v, %v; want ErrValue", got, err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(tc.want, got); d != "" {
					t.Errorf("value (-want +got):\n%s", d)
				}
			})
		}
	}
}

// hamba decodes the local-timestamp types into time.Local, shifted by the
// process's UTC offset; the wall clock must not depend on the process's
// time zone, also next to a daylight saving change.
func TestLocalTimestampIndependentOfProcessZone(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	saved := time.Local
	t.Cleanup(func() { time.Local = saved })
	api := avro.Config{}.Freeze()
	plain := avro.MustParse(`{"type":"record","name":"R","fields":[{"name":"v","type":"long"}]}`)
	local := avro.MustParse(`{"type":"record","name":"R","fields":[{"name":"v","type":{"type":"long","logicalType":"local-timestamp-micros"}}]}`)
	fields, err := FromRecord(local.(*avro.RecordSchema))
	if err != nil {
		t.Fatal(err)
	}
	decoder := avro.Config{}.Freeze()
	for _, loc := range []*time.Location{time.FixedZone("IST", 5*3600+1800), ny} {
		time.Local = loc
		for _, wall := range []string{"2024-05-06 07:08:09.123456", "2024-03-10 02:30:00.000000", "2024-03-10 03:30:00.000000",
			"2024-11-03 01:30:00.000000", "2024-11-03 02:30:00.000000", "1969-12-31 23:59:59.999999"} {
			w, _ := time.Parse(datetimeLayout, wall)
			// A producer writes a wall clock's digits as if they were UTC.
			payload, err := api.Marshal(plain, map[string]any{"v": w.UnixMicro()})
			if err != nil {
				t.Fatal(err)
			}
			var rec map[string]any
			if err := decoder.Unmarshal(local, payload, &rec); err != nil {
				t.Fatal(err)
			}
			got, err := fields.Convert(rec)
			if err != nil {
				t.Fatal(err)
			}
			if got["v"] != wall {
				t.Errorf("process zone %s: wall clock %s read back as %v (hamba decoded %v)", loc, wall, got["v"], rec["v"])
			}
		}
	}
}
