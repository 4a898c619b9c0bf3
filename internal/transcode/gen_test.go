package transcode

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"reflect"
	"strings"
	"time"

	"github.com/bqcdc/bqcdc/internal/avrobq"
	"github.com/hamba/avro/v2"
)

// gen makes random records of a schema, in the form hamba's Marshal
// takes, with values chosen to reach the edges the converters check
// (dates past 9999, times past 24:00, decimals wider than their column,
// invalid UTF-8, offsets, NaN) as well as ordinary ones.
type gen struct {
	r   *rand.Rand
	api avro.API
}

func newGen(seed uint64) *gen {
	return &gen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), api: avro.Config{}.Freeze()}
}

func (g *gen) chance(n int) bool { return g.r.IntN(n) == 0 }

// payload marshals a random record of s; for a Debezium envelope the op
// and the source block are made plausible.
func (g *gen) payload(s avro.Schema) ([]byte, error) {
	v := g.value(s, "")
	if rec, ok := v.(map[string]any); ok {
		if _, isEnv := rec["op"]; isEnv {
			g.envelope(s.(*avro.RecordSchema), rec)
		}
	}
	return g.api.Marshal(s, v)
}

func (g *gen) envelope(s *avro.RecordSchema, rec map[string]any) {
	ops := []string{"c", "u", "d", "r", "t", "c", "u", "r"}
	op := ops[g.r.IntN(len(ops))]
	if g.chance(30) {
		op = "x"
	}
	rec["op"] = op
	if _, ok := rec["ts_ms"]; ok && !g.chance(10) {
		rec["ts_ms"] = map[string]any{"long": 1_600_000_000_000 + g.r.Int64N(200_000_000_000)}
	}
	for _, f := range s.Fields() {
		switch f.Name() {
		case "before", "after":
			if g.chance(8) {
				continue // keep whatever was drawn, null included
			}
			if (f.Name() == "after") == (op != "d") {
				if rec[f.Name()] == nil {
					rec[f.Name()] = g.value(f.Type(), "")
				}
			}
		case "source":
			src, ok := rec["source"].(map[string]any)
			if !ok {
				continue
			}
			g.source(src)
		}
	}
}

func (g *gen) source(src map[string]any) {
	set := func(k string, v any) {
		if _, ok := src[k]; !ok {
			return
		}
		if _, isUnionWrapped := src[k].(map[string]any); isUnionWrapped || src[k] == nil {
			switch x := v.(type) {
			case string:
				src[k] = map[string]any{"string": x}
			case int64:
				src[k] = map[string]any{"long": x}
			case int:
				src[k] = map[string]any{"int": x}
			}
			return
		}
		src[k] = v
	}
	connectors := []string{"mysql", "mariadb", "postgresql", "oracle", "MySQL"}
	set("connector", connectors[g.r.IntN(len(connectors))])
	files := []string{"mysql-bin.000042", "bin.7", "mysql-bin.", "noext", "x.00a", "mysql-bin.99999999999999999999999"}
	file := files[g.r.IntN(2)] // usable
	if g.chance(5) {
		file = files[g.r.IntN(len(files))] // any, unusable ones included
	}
	set("file", file)
	set("pos", g.r.Int64N(1<<40)-10)
	seqs := []string{`["123","456"]`, `[null,"456"]`, `["123",null]`, `[ "1", "2" ]`, `["18446744073709551616","1"]`, `["1"]`, `[1,2]`, ``, `["\u0031","2"]`, `["007","8"]`}
	if g.chance(2) {
		set("sequence", seqs[g.r.IntN(len(seqs))])
	}
	snaps := []string{"true", "false", "first", "LAST", "incremental", "last_in_data_collection"}
	set("snapshot", snaps[g.r.IntN(len(snaps))])
	if g.chance(3) {
		set("ts_us", g.r.Int64N(1<<52))
	}
	// Mostly plausible times and rows, so most records get past cdc's
	// range checks and reach the row image; now and then an edge.
	if !g.chance(10) {
		set("ts_ms", 1_600_000_000_000+g.r.Int64N(200_000_000_000))
	}
	if !g.chance(10) {
		set("row", g.r.IntN(4))
	}
}

func (g *gen) value(s avro.Schema, cn string) any {
	if r, ok := s.(*avro.RefSchema); ok {
		s = r.Schema()
	}
	if c := avrobq.StringProp(s, "connect.name"); c != "" {
		cn = c
	}
	lt := logicalOf(s)
	switch s.Type() {
	case avro.Null:
		return nil
	case avro.Boolean:
		return g.chance(2)
	case avro.Int:
		switch lt {
		case avro.Date:
			return time.Unix(g.days()*86400, 0).UTC()
		case avro.TimeMillis:
			return time.Duration(g.timeOfDay(1e6)) * time.Millisecond
		}
		switch cn {
		case "io.debezium.time.Date":
			return int(g.days())
		case "io.debezium.time.Time":
			return int(g.timeOfDay(1e6))
		}
		return int(g.int32())
	case avro.Long:
		switch lt {
		case avro.TimestampMillis, avro.LocalTimestampMillis:
			return time.UnixMilli(g.instant(1e6)).UTC()
		case avro.TimestampMicros, avro.LocalTimestampMicros:
			return time.UnixMicro(g.instant(1e3)).UTC()
		case avro.TimeMicros:
			return time.Duration(g.timeOfDay(1e3)) * time.Microsecond
		}
		switch cn {
		case "io.debezium.time.MicroTime":
			return g.timeOfDay(1e3)
		case "io.debezium.time.NanoTime":
			return g.timeOfDay(1)
		case "io.debezium.time.Timestamp":
			return g.instant(1e6)
		case "io.debezium.time.MicroTimestamp":
			return g.instant(1e3)
		case "io.debezium.time.NanoTimestamp":
			return g.instant(1)
		}
		return g.int64()
	case avro.Float:
		return float32(g.float())
	case avro.Double:
		return g.float()
	case avro.String:
		return g.str(cn, lt)
	case avro.Bytes:
		if d, ok := decimalLogical(s); ok {
			return g.rat(d.Precision(), d.Scale())
		}
		if cn == "io.debezium.data.Bits" {
			return g.bytes(4)
		}
		return g.bytes(20)
	case avro.Fixed:
		fs := s.(*avro.FixedSchema)
		if d, ok := decimalLogical(s); ok {
			p := d.Precision()
			if p > 18 {
				p = 18
			}
			return g.rat(p, d.Scale())
		}
		if lt == avro.Duration {
			return avro.LogicalDuration{Months: g.r.Uint32(), Days: g.r.Uint32(), Milliseconds: g.r.Uint32()}
		}
		arr := reflect.New(reflect.ArrayOf(fs.Size(), reflect.TypeFor[byte]())).Elem()
		for i := range fs.Size() {
			arr.Index(i).SetUint(uint64(g.r.IntN(256)))
		}
		return arr.Interface()
	case avro.Enum:
		syms := s.(*avro.EnumSchema).Symbols()
		return syms[g.r.IntN(len(syms))]
	case avro.Record:
		rec := s.(*avro.RecordSchema)
		m := make(map[string]any, len(rec.Fields()))
		for _, f := range rec.Fields() {
			m[f.Name()] = g.value(f.Type(), "")
		}
		if cn == "io.debezium.data.VariableScaleDecimal" {
			m["scale"] = g.r.IntN(50) - 5
			if g.chance(20) {
				m["scale"] = int(g.int32())
			}
		}
		return m
	case avro.Array:
		n := g.r.IntN(4)
		a := make([]any, n)
		for i := range a {
			a[i] = g.value(s.(*avro.ArraySchema).Items(), "")
		}
		return a
	case avro.Map:
		n := g.r.IntN(3)
		m := map[string]any{}
		for range n {
			m[g.str("", "")] = g.value(s.(*avro.MapSchema).Values(), "")
		}
		return m
	case avro.Union:
		types := s.(*avro.UnionSchema).Types()
		var b avro.Schema
		if g.chance(4) {
			b = types[g.r.IntN(len(types))]
		} else {
			for _, t := range types {
				if t.Type() != avro.Null {
					b = t
				}
			}
			if b == nil {
				b = types[0]
			}
		}
		if b.Type() == avro.Null {
			return nil
		}
		return map[string]any{unionName(b): g.value(b, cn)}
	}
	panic(fmt.Sprintf("gen: type %s", s.Type()))
}

// unionName is hamba's name of a union branch (schemaTypeName).
func unionName(s avro.Schema) string {
	s = deref(s)
	if n, ok := s.(avro.NamedSchema); ok {
		return n.FullName()
	}
	if lt := logicalOf(s); lt != "" {
		return string(s.Type()) + "." + string(lt)
	}
	return string(s.Type())
}

func (g *gen) int32() int32 {
	switch g.r.IntN(6) {
	case 0:
		return math.MaxInt32
	case 1:
		return math.MinInt32
	case 2:
		return 0
	}
	return int32(g.r.IntN(2_000_000)) - 1_000_000
}

func (g *gen) int64() int64 {
	switch g.r.IntN(6) {
	case 0:
		return math.MaxInt64
	case 1:
		return math.MinInt64
	case 2:
		return g.r.Int64N(100)
	}
	return int64(g.r.Uint64())
}

// days around BigQuery's DATE range (-719162 to 2932896).
func (g *gen) days() int64 {
	switch g.r.IntN(8) {
	case 0:
		return -719162 - g.r.Int64N(2)
	case 1:
		return 2932896 + g.r.Int64N(2)
	}
	return g.r.Int64N(40000) - 5000
}

// timeOfDay in counts of u nanoseconds, around 00:00 and 24:00.
func (g *gen) timeOfDay(u int64) int64 {
	day := int64(24*time.Hour) / u
	switch g.r.IntN(8) {
	case 0:
		return -1
	case 1:
		return day
	case 2:
		return day - 1
	}
	return g.r.Int64N(day)
}

// instant in counts of u nanoseconds, around BigQuery's range.
func (g *gen) instant(u int64) int64 {
	switch g.r.IntN(10) {
	case 0:
		return math.MaxInt64 / (1 + g.r.Int64N(3))
	case 1:
		return -62135596800 * (1e9 / u) // 0001-01-01
	case 2:
		return 253402300800*(1e9/u) - 1
	case 3:
		return -g.r.Int64N(1e12)
	}
	return 1_700_000_000*(1e9/u) + g.r.Int64N(1e9)
}

func (g *gen) float() float64 {
	switch g.r.IntN(8) {
	case 0:
		return math.NaN()
	case 1:
		return math.Inf(-1)
	case 2:
		return math.Copysign(0, -1)
	}
	return g.r.NormFloat64() * 1e6
}

func (g *gen) bytes(max int) []byte {
	b := make([]byte, g.r.IntN(max+1))
	for i := range b {
		b[i] = byte(g.r.IntN(256))
	}
	return b
}

func (g *gen) rat(precision, scale int) *big.Rat {
	digits := 1 + g.r.IntN(precision)
	var sb strings.Builder
	if g.chance(3) {
		sb.WriteByte('-')
	}
	for range digits {
		sb.WriteByte(byte('0' + g.r.IntN(10)))
	}
	n, _ := new(big.Int).SetString(sb.String(), 10)
	return new(big.Rat).SetFrac(n, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil))
}

func (g *gen) str(cn string, lt avro.LogicalType) string {
	pick := func(xs ...string) string { return xs[g.r.IntN(len(xs))] }
	switch cn {
	case "io.debezium.time.ZonedTimestamp":
		return pick("2024-05-06T07:08:09Z", "2024-05-06T07:08:09.123456789+05:30", "2024-05-06T07:08:09.1-03:00",
			"0001-01-01T00:30:00+01:00", "9999-12-31T23:59:59.999999-01:00", "1812-02-29T00:00:00Z", "2024-05-06 07:08:09Z",
			"2024-05-06T7:8:9Z", "2024-05-06T07:08:09+01:02:03", "junk", "")
	case "io.debezium.time.ZonedTime":
		return pick("10:15:30.123456Z", "01:00:00+02:00", "23:59:59.999999999-05:00", "24:00:00Z", "1:2:3Z", "x")
	case "io.debezium.data.Json":
		return pick(`{"a":[1,2,{"b":null}]}`, `[]`, `"s"`, `{"a":`, ``, `nul`, ` 1 `)
	}
	if lt == avro.UUID || cn == "io.debezium.data.Uuid" {
		return pick("f81d4fae-7dec-11d0-a765-00a0c91e6bf6", "not-a-uuid")
	}
	n := g.r.IntN(12)
	var sb strings.Builder
	for range n {
		switch c := g.r.IntN(2000); {
		case c == 0:
			// Invalid UTF-8, which both paths refuse (stage decode): rare,
			// so that most records get through to be compared.
			sb.WriteByte(byte(0x80 + g.r.IntN(0x80)))
		case c < 40:
			sb.WriteString("é")
		default:
			sb.WriteByte(byte('a' + g.r.IntN(26)))
		}
	}
	return sb.String()
}

// decimalLogical is s's decimal logical type, if it has one.
func decimalLogical(s avro.Schema) (*avro.DecimalLogicalSchema, bool) {
	if lts, ok := s.(avro.LogicalTypeSchema); ok && lts.Logical() != nil {
		d, ok := lts.Logical().(*avro.DecimalLogicalSchema)
		return d, ok
	}
	return nil, false
}
