package avrobq

import (
	"errors"
	"fmt"
	"math/big"
	"strings"
	"testing"

	"github.com/bqcdc/bqcdc/internal/limits"
	"github.com/bqcdc/bqcdc/internal/schema"
	"github.com/hamba/avro/v2"
)

func connectDecimalParams(precision, scale string) string {
	params := `"scale":"` + scale + `"`
	if precision != "" {
		params += `,"connect.decimal.precision":"` + precision + `"`
	}
	return `{"type":"bytes","connect.name":"org.apache.kafka.connect.data.Decimal","connect.parameters":{` + params + `}}`
}

// Decimal columns get parameters BigQuery accepts, wide enough for every
// value of the source type; values are checked against the source's own
// precision and scale.
func TestDecimalColumnParams(t *testing.T) {
	for _, tc := range []struct {
		name, avroType string
		typ            string
		p, s           int
		in             []byte // unscaled, two's complement
		want           string
		wantErr        bool
	}{
		{name: "NUMERIC(10,2) as declared", avroType: connectDecimalParams("10", "2"), typ: schema.Numeric, p: 10, s: 2, in: []byte{0x04, 0xd2}, want: "12.34"},
		{name: "NUMERIC(5,5) as declared", avroType: connectDecimalParams("5", "5"), typ: schema.Numeric, p: 5, s: 5, in: []byte{0x7b}, want: "0.00123"},
		{name: "precision below scale", avroType: connectDecimalParams("3", "5"), typ: schema.Numeric, p: 5, s: 5, in: []byte{0x7b}, want: "0.00123"},
		{name: "precision below scale, value beyond the source's", avroType: connectDecimalParams("3", "5"), typ: schema.Numeric, p: 5, s: 5, in: []byte{0x03, 0xe8}, wantErr: true},
		{name: "negative scale", avroType: connectDecimalParams("5", "-2"), typ: schema.Numeric, p: 7, s: 0, in: []byte{0x7b}, want: "12300"},
		{name: "BIGNUMERIC(40,35)", avroType: connectDecimalParams("40", "35"), typ: schema.BigNumeric, p: 40, s: 35, in: []byte{0x01}, want: "0.00000000000000000000000000000000001"},
		{name: "BIGNUMERIC precision below scale", avroType: connectDecimalParams("20", "30"), typ: schema.BigNumeric, p: 30, s: 30, in: []byte{0x01}, want: "0.000000000000000000000000000001"},
		{name: "Avro decimal(2,1)", avroType: `{"type":"bytes","logicalType":"decimal","precision":2,"scale":1}`, typ: schema.Numeric, p: 2, s: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs, err := compile(t, `{"type":"record","name":"D","fields":[{"name":"d","type":`+tc.avroType+`}]}`)
			if err != nil {
				t.Fatal(err)
			}
			c := fs[0].Column
			if c.Type != tc.typ || c.Precision != tc.p || c.Scale != tc.s {
				t.Fatalf("column %s(%d,%d), want %s(%d,%d)", c.Type, c.Precision, c.Scale, tc.typ, tc.p, tc.s)
			}
			if !validDecimalParams(c) {
				t.Errorf("BigQuery refuses %s(%d,%d)", c.Type, c.Precision, c.Scale)
			}
			if tc.in == nil {
				return
			}
			got, err := fs.Convert(map[string]any{"d": tc.in})
			switch {
			case tc.wantErr:
				if !errors.Is(err, ErrValue) {
					t.Errorf("got %v, %v; want ErrValue", got, err)
				}
			case err != nil:
				t.Fatal(err)
			case got["d"] != tc.want:
				t.Errorf("got %v, want %s", got["d"], tc.want)
			}
		})
	}
}

// validDecimalParams is BigQuery's rule for parameterised decimals:
// NUMERIC 0 ≤ S ≤ 9, max(1,S) ≤ P ≤ S+29; BIGNUMERIC 0 ≤ S ≤ 38,
// max(1,S) ≤ P ≤ S+38.
func validDecimalParams(c schema.Column) bool {
	maxS, maxInt := 9, 29
	if c.Type == schema.BigNumeric {
		maxS, maxInt = 38, 38
	}
	return c.Scale >= 0 && c.Scale <= maxS && c.Precision >= max(1, c.Scale) && c.Precision <= c.Scale+maxInt
}

// Every decimal a source may declare maps to parameters BigQuery accepts
// (or to STRING).
func TestDecimalColumnParamsExhaustive(t *testing.T) {
	for p := 1; p <= 80; p++ {
		for s := -45; s <= 80; s++ {
			f, err := decimalColumn("d", "bytes", p, s)
			if err != nil {
				t.Fatal(err)
			}
			if f.Type == schema.String {
				continue
			}
			if !validDecimalParams(f.Column) {
				t.Errorf("decimal(%d,%d) -> %s(%d,%d), which BigQuery refuses", p, s, f.Type, f.Precision, f.Scale)
			}
		}
	}
}

func TestSchemaBounds(t *testing.T) {
	fields := func(n int, typ string) string {
		fs := make([]string, n)
		for i := range fs {
			fs[i] = fmt.Sprintf(`{"name":"f%d","type":%s}`, i, typ)
		}
		return strings.Join(fs, ",")
	}
	nested := func(levels int) string {
		s := `"long"`
		for i := range levels {
			s = fmt.Sprintf(`{"type":"record","name":"R%d","fields":[{"name":"x","type":%s}]}`, i, s)
		}
		return `{"type":"record","name":"Top","fields":[{"name":"x","type":` + s + `}]}`
	}
	bits := func(length string) string {
		return `{"type":"bytes","connect.name":"io.debezium.data.Bits","connect.parameters":{"length":"` + length + `"}}`
	}
	for _, tc := range []struct {
		name, schema string
		wantErr      string // "" compiles
	}{
		{name: "10,000 columns", schema: `{"type":"record","name":"W","fields":[` + fields(limits.MaxColumns, `"long"`) + `]}`},
		{name: "100,000 columns", schema: `{"type":"record","name":"W","fields":[` + fields(100_000, `"long"`) + `]}`, wantErr: "more than BigQuery's 10000 columns"},
		{name: "nested fields count", schema: `{"type":"record","name":"W","fields":[` + fields(limits.MaxColumns-1, `"long"`) +
			`,{"name":"r","type":{"type":"record","name":"Sub","fields":[{"name":"a","type":"long"}]}}]}`, wantErr: "10000 columns"},
		{name: "15 levels of RECORD", schema: nested(15)},
		{name: "16 levels of RECORD", schema: nested(16), wantErr: "15 levels"},
		{name: "decimal scale 10^8", schema: `{"type":"record","name":"D","fields":[{"name":"d","type":` + connectDecimalParams("", "100000000") + `}]}`, wantErr: "scale 100000000"},
		{name: "decimal precision 10^8", schema: `{"type":"record","name":"D","fields":[{"name":"d","type":` + connectDecimalParams("100000000", "2") + `}]}`, wantErr: "precision 100000000"},
		{name: "Bits of PostgreSQL's widest BIT", schema: `{"type":"record","name":"B","fields":[{"name":"b","type":` + bits("83886080") + `}]}`},
		{name: "Bits length 2^31-1", schema: `{"type":"record","name":"B","fields":[{"name":"b","type":` + bits("2147483647") + `}]}`, wantErr: "Bits length 2147483647"},
		{name: "Bits columns beyond a row", schema: `{"type":"record","name":"B","fields":[` + fields(2, bits("83886080")) + `]}`, wantErr: "pad to 20971520 bytes"},
		{name: "Bits in an array", schema: `{"type":"record","name":"B","fields":[{"name":"a","type":{"type":"array","items":` + bits("512") + `}}]}`},
		{name: "long Bits in an array", schema: `{"type":"record","name":"B","fields":[{"name":"a","type":{"type":"array","items":` + bits("100000") + `}}]}`, wantErr: "inside an array or map"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := avro.MustParse(tc.schema).(*avro.RecordSchema)
			_, err := FromRecord(rec)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatal(err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, limits.ErrLimit)):
				t.Fatalf("error %v, want one wrapping ErrLimit containing %q", err, tc.wantErr)
			}
		})
	}
}

// A VariableScaleDecimal carries its scale in the value; extreme scales
// are refused without computing 10^scale.
func TestVariableScaleDecimalExtremes(t *testing.T) {
	for _, tc := range []struct {
		scale   int64
		value   []byte
		want    string
		wantErr bool
	}{
		{scale: 2, value: []byte{0x30, 0x39}, want: "123.45"},
		{scale: 1 << 20, value: []byte{0x01}, wantErr: true},
		{scale: -(1 << 20), value: []byte{0x01}, wantErr: true},
		{scale: 1 << 20, value: []byte{0x00}, wantErr: true}, // beyond what a source writes, zero or not
		{scale: limits.MaxVariableScale + 1, value: []byte{0x00}, wantErr: true},
		{scale: -limits.MaxVariableScale - 1, value: []byte{0x01}, wantErr: true},
		{scale: limits.MaxVariableScale, value: []byte{0x00}, want: "0.00000000000000000000000000000000000000"},
		{scale: -limits.MaxVariableScale, value: []byte{0x00}, want: "0"},
		{scale: limits.MaxVariableScale, value: []byte{0x01}, wantErr: true},
		// 10^16345 × 7 at scale 16383 is 7×10^-38: all the excess digits are
		// trailing zeros, dropped.
		{scale: limits.MaxVariableScale, value: append([]byte{0}, new(big.Int).Mul(big.NewInt(7), new(big.Int).Exp(big.NewInt(10), big.NewInt(limits.MaxVariableScale-38), nil)).Bytes()...),
			want: "0.00000000000000000000000000000000000007"},
		{scale: -40, value: []byte{0x01}, wantErr: true},
		{scale: 40, value: []byte{0x64}, want: "0.00000000000000000000000000000000000001"},
	} {
		got, err := variableScaleDecimalConv(map[string]any{"scale": tc.scale, "value": tc.value})
		switch {
		case tc.wantErr:
			if !errors.Is(err, ErrValue) {
				t.Errorf("scale %d: got %v, %v; want ErrValue", tc.scale, got, err)
			}
		case err != nil:
			t.Errorf("scale %d: %v", tc.scale, err)
		case got != tc.want:
			t.Errorf("scale %d: got %v, want %s", tc.scale, got, tc.want)
		}
	}
}
