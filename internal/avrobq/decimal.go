package avrobq

import (
	"fmt"
	"math/big"
	"strings"

	"github.com/bqcdc/bqcdc/internal/failure"
	"github.com/bqcdc/bqcdc/internal/limits"
	"github.com/bqcdc/bqcdc/internal/schema"
)

// DecimalType picks the narrowest exact BigQuery type for a decimal:
// NUMERIC holds 29 integer and 9 fractional digits, BIGNUMERIC 38 and 38,
// STRING (the exact text) anything wider. Precision 0 means unknown, so only
// the scale decides.
func DecimalType(precision, scale int) string {
	intDigits := precision - scale
	switch {
	case scale <= 9 && intDigits <= 29 && precision > 0:
		return schema.Numeric
	case scale <= 38 && intDigits <= 38:
		return schema.BigNumeric
	}
	return schema.String
}

// decimalColumn is the column of a decimal of known scale. When the
// precision is known, the column gets type parameters (BigQuery refuses a
// scale without a precision) that BigQuery accepts and that hold every
// value of the source type; see columnParams. A precision or scale wider
// than any source writes (limits.MaxDecimalPrecision, MaxDecimalScale) is
// refused before anything computes 10^scale.
func decimalColumn(name, avroType string, precision, scale int) (Field, error) {
	if precision < 0 || precision > limits.MaxDecimalPrecision || scale < -limits.MaxDecimalScale || scale > limits.MaxDecimalScale {
		return Field{}, limits.Errorf("decimal precision %d and scale %d: precision must be 0 to %d and scale %d to %d (PostgreSQL's widest NUMERIC)",
			precision, scale, limits.MaxDecimalPrecision, -limits.MaxDecimalScale, limits.MaxDecimalScale)
	}
	typ := DecimalType(precision, scale)
	f := newField(name, typ, avroType, Conversion{Kind: ConvDecimal, DecimalType: typ, Precision: precision, Scale: scale})
	if precision > 0 && typ != schema.String {
		f.Precision, f.Scale = columnParams(precision, scale)
	}
	return f, nil
}

// columnParams are the BigQuery type parameters for a source decimal(P,S).
// BigQuery takes NUMERIC(P',S') with 0 ≤ S' ≤ 9 and max(1,S') ≤ P' ≤ S'+29
// (BIGNUMERIC: S' ≤ 38, P' ≤ S'+38), while sources declare what BigQuery
// refuses: Oracle's NUMBER(3,5) holds 0.00123 (precision below scale), and
// NUMBER(5,-2) holds 12300 (a negative scale). The parameters keep the
// source's integer digits P−S and fractional digits S, widened to what
// BigQuery accepts: S' = max(S,0), P' = max(S'+(P−S), S', 1). NUMERIC(3,5)
// becomes NUMERIC(5,5), NUMERIC(5,-2) NUMERIC(7,0); a decimal BigQuery
// accepts as declared keeps its parameters. Values are still checked against
// the source's own P and S (decimalLimits), so the wider column changes no
// value. decimalType has already bounded S' and P'−S' by the type.
func columnParams(precision, scale int) (p, s int) {
	s = max(scale, 0)
	p = max(s+precision-scale, s, 1)
	return p, s
}

// decimalLimits is what a column accepts: its type, and its declared
// precision and scale (precision 0: not declared).
type decimalLimits struct {
	typ              string
	precision, scale int
}

// The range of an unparameterised BIGNUMERIC, in units of 10^-38: a 256-bit
// two's complement integer.
var (
	bigNumericMin = new(big.Int).Neg(new(big.Int).Lsh(big.NewInt(1), 255))
	bigNumericMax = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 255), big.NewInt(1))
)

// decimalConv converts a decimal of the column's scale: the *big.Rat hamba
// makes of an Avro decimal, or the unscaled big-endian two's complement
// bytes Kafka Connect's Decimal carries when the schema lacks the Avro
// logical type.
func decimalConv(lim decimalLimits) converter {
	scale := big.NewInt(int64(lim.scale))
	return func(v any) (any, error) {
		var unscaled *big.Int
		switch x := v.(type) {
		case *big.Rat:
			n := new(big.Int).Mul(x.Num(), new(big.Int).Exp(big.NewInt(10), scale, nil))
			var rem big.Int
			unscaled, _ = n.QuoRem(n, x.Denom(), &rem)
			if rem.Sign() != 0 {
				return nil, failure.Errorf("%w: %s has more than the %d fractional digits of the schema", ErrValue, failure.Value(x.RatString()), lim.scale)
			}
		case []byte:
			unscaled = FromTwosComplement(x)
		default:
			b, ok := fixedBytes(v)
			if !ok {
				return nil, badType("decimal", v)
			}
			unscaled = FromTwosComplement(b)
		}
		return decimalText(unscaled, lim.scale, lim)
	}
}

// variableScaleDecimalConv decodes io.debezium.data.VariableScaleDecimal, a
// record {scale int, value bytes} used for PostgreSQL NUMERIC without a
// declared scale and Oracle NUMBER without precision.
func variableScaleDecimalConv(v any) (any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, badType("VariableScaleDecimal record", v)
	}
	scale, ok := Integer(plain(m["scale"]))
	if !ok {
		return nil, badType("VariableScaleDecimal scale int", m["scale"])
	}
	b, ok := plain(m["value"]).([]byte)
	if !ok {
		return nil, badType("VariableScaleDecimal value bytes", m["value"])
	}
	if scale > limits.MaxVariableScale || scale < -limits.MaxVariableScale {
		return nil, fmt.Errorf("%w: VariableScaleDecimal scale %d is beyond the %d a source writes (PostgreSQL's largest NUMERIC display scale)",
			ErrValue, scale, limits.MaxVariableScale)
	}
	return decimalText(FromTwosComplement(b), int(scale), decimalLimits{typ: schema.BigNumeric})
}

// DecimalText is decimalText for package transcode, which formats the
// values that do not fit in 64 bits with it: column type typ (NUMERIC,
// BIGNUMERIC or STRING), declared precision (0: none) and scale.
func DecimalText(unscaled *big.Int, scale int, typ string, precision, declaredScale int) (string, error) {
	return decimalText(unscaled, scale, decimalLimits{typ: typ, precision: precision, scale: declaredScale})
}

// decimalText writes unscaled×10^-scale as exact decimal text with scale
// fractional digits, after checking that the column can hold it. Digits
// are never rounded away: trailing zeros beyond the type's scale are
// dropped, any other excess is ErrValue.
//
// Its cost is bounded by the value and its scale, never 10^scale computed
// for nothing: zero is written without arithmetic, digits beyond the
// type's scale that are not all zeros are refused from the value's binary
// trailing zeros before 10^k is computed (a multiple of 10^k is a
// multiple of 2^k), and outOfReach refuses the scales no digit count
// reaches. With |scale| ≤ limits.MaxVariableScale a value costs at most
// about 0.1 ms.
func decimalText(unscaled *big.Int, scale int, lim decimalLimits) (string, error) {
	maxScale := 38
	if lim.typ == schema.Numeric {
		maxScale = 9
	}
	if unscaled.Sign() == 0 {
		s := max(scale, 0)
		if lim.typ != schema.String {
			s = min(s, maxScale)
		}
		return formatDecimal(unscaled, s), nil
	}
	if err := outOfReach(unscaled, scale, maxScale, lim); err != nil {
		return "", err
	}
	if scale < 0 { // 12E+3 (Java BigDecimal allows negative scales)
		unscaled = new(big.Int).Mul(unscaled, pow10(-scale))
		scale = 0
	}
	if lim.typ != schema.String && scale > maxScale {
		var q, r big.Int
		if k := scale - maxScale; unscaled.TrailingZeroBits() < uint(k) {
			r.SetInt64(1) // not a multiple of 2^k, so not of 10^k
		} else {
			q.QuoRem(unscaled, pow10(k), &r)
		}
		if r.Sign() != 0 {
			return "", failure.Errorf("%w: %s has %d fractional digits; %s holds %d",
				ErrValue, failure.Value(formatDecimal(unscaled, scale)), scale, lim.typ, maxScale)
		}
		unscaled, scale = &q, maxScale
	}
	if err := checkDecimalRange(unscaled, scale, lim); err != nil {
		return "", err
	}
	return formatDecimal(unscaled, scale), nil
}

// outOfReach refuses, before computing a power of ten from it, a scale that
// puts a non-zero value beyond a NUMERIC or BIGNUMERIC column: a negative
// scale making it at least 10^40 (BIGNUMERIC ends below 5.8×10^38), or more
// fractional digits than the type holds that cannot all be trailing zeros
// (an integer of d digits is a multiple of 10^k only if k < d). A STRING
// column takes any value, and its scale is bounded by the schema.
func outOfReach(unscaled *big.Int, scale, maxScale int, lim decimalLimits) error {
	if lim.typ == schema.String || unscaled.Sign() == 0 {
		return nil
	}
	digits := unscaled.BitLen()*30103/100000 + 1 // ≥ the decimal digits of |unscaled|
	switch {
	case scale < -(limits.BigNumericMaxIntDigits + 1):
		return fmt.Errorf("%w: a value of scale %d is at least 10^%d, outside %s", ErrValue, scale, -scale, lim.typ)
	case scale-maxScale > digits:
		return fmt.Errorf("%w: a value of %d digits at scale %d has more than the %d fractional digits %s holds", ErrValue, digits, scale, maxScale, lim.typ)
	}
	return nil
}

func checkDecimalRange(unscaled *big.Int, scale int, lim decimalLimits) error {
	intDigits := 0
	switch {
	case lim.precision > 0:
		// STRING too: a decimal wider than BigQuery's types keeps its
		// declared precision (the README: a value over it is an error).
		intDigits = lim.precision - lim.scale
	case lim.typ == schema.String:
		return nil
	case lim.typ == schema.Numeric:
		intDigits = 29
	default: // unparameterised BIGNUMERIC: 76.76 digits, bounded in binary
		at38 := new(big.Int).Mul(unscaled, pow10(38-scale))
		if at38.Cmp(bigNumericMax) > 0 || at38.Cmp(bigNumericMin) < 0 {
			return failure.Errorf("%w: %s is outside BIGNUMERIC's ±5.78×10^38", ErrValue, failure.Value(formatDecimal(unscaled, scale)))
		}
		return nil
	}
	// |value| < 10^intDigits  ⟺  |unscaled| < 10^(intDigits+scale)
	if new(big.Int).Abs(unscaled).Cmp(pow10(intDigits+scale)) >= 0 {
		return failure.Errorf("%w: %s has more than the %d integer digits of %s", ErrValue,
			failure.Value(formatDecimal(unscaled, scale)), intDigits, describeDecimalColumn(lim))
	}
	return nil
}

func describeDecimalColumn(lim decimalLimits) string {
	if lim.precision > 0 {
		return fmt.Sprintf("%s(%d,%d)", lim.typ, lim.precision, lim.scale)
	}
	return lim.typ
}

// formatDecimal writes unscaled×10^-scale (scale >= 0) with exactly scale
// fractional digits.
func formatDecimal(unscaled *big.Int, scale int) string {
	digits := new(big.Int).Abs(unscaled).String()
	if len(digits) <= scale {
		digits = strings.Repeat("0", scale-len(digits)+1) + digits
	}
	var b strings.Builder
	if unscaled.Sign() < 0 {
		b.WriteByte('-')
	}
	b.WriteString(digits[:len(digits)-scale])
	if scale > 0 {
		b.WriteByte('.')
		b.WriteString(digits[len(digits)-scale:])
	}
	return b.String()
}

func pow10(n int) *big.Int { return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil) }
