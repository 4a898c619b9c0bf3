package formats

import (
	"bytes"
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/bqcdc/bqcdc/internal/failure"
	"github.com/bqcdc/bqcdc/internal/limits"
	"github.com/hamba/avro/v2"
)

// latin1 maps code points 0-255 to the bytes 0-255, as the Avro
// specification encodes bytes and fixed in JSON.
func latin1(s string) ([]byte, error) {
	b := make([]byte, 0, len(s))
	for _, r := range s {
		if r > 0xFF {
			return nil, fmt.Errorf("bytes hold the code point %U, above U+00FF", r)
		}
		b = append(b, byte(r))
	}
	return b, nil
}

// maxExponent bounds the exponent of a JSON number read exactly. Exact
// reading builds the whole integer (1e1000000 has a million digits), and
// nothing bqcdc stores goes beyond BIGNUMERIC's 10^38 or FLOAT64's 10^308.
const maxExponent = 400

// exactRat reads a JSON number exactly, refusing absurd exponents.
func exactRat(num string) (*big.Rat, bool) {
	if i := strings.IndexAny(num, "eE"); i >= 0 {
		exp, err := strconv.Atoi(strings.TrimPrefix(num[i+1:], "+"))
		if err != nil || exp > maxExponent || exp < -maxExponent {
			return nil, false
		}
	}
	return new(big.Rat).SetString(num)
}

// unscaled turns a decimal number into its unscaled integer at scale,
// refusing digits the scale cannot hold.
func unscaled(num string, scale int) (*big.Int, error) {
	if scale < -limits.MaxDecimalScale || scale > limits.MaxDecimalScale {
		return nil, limits.Errorf("decimal scale %d is outside %d to %d", scale, -limits.MaxDecimalScale, limits.MaxDecimalScale)
	}
	r, ok := exactRat(num)
	if !ok {
		return nil, failure.Errorf("%s is not a number bqcdc reads exactly", failure.Value(clip(num)))
	}
	// A negative scale (Java's BigDecimal allows one: 12E+3 has scale -3)
	// divides instead.
	p := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(max(scale, -scale))), nil))
	if scale >= 0 {
		r.Mul(r, p)
	} else {
		r.Quo(r, p)
	}
	if !r.IsInt() {
		return nil, failure.Errorf("%s has more than %d decimal places", failure.Value(clip(num)), scale)
	}
	return r.Num(), nil
}

func signExtend(b []byte, size int) []byte {
	pad := byte(0)
	if len(b) > 0 && b[0]&0x80 != 0 {
		pad = 0xFF
	}
	return append(bytes.Repeat([]byte{pad}, size-len(b)), b...)
}

// decimalScale reports whether s holds a decimal, and its scale: from the
// Avro decimal logical type, else from Connect's Decimal parameters.
func decimalScale(s avro.Schema) (int, bool) {
	if lts, ok := s.(avro.LogicalTypeSchema); ok && lts.Logical() != nil {
		if d, ok := lts.Logical().(*avro.DecimalLogicalSchema); ok {
			return d.Scale(), true
		}
	}
	if prop(s, "connect.name") != connectDecimal {
		return 0, false
	}
	p, _ := s.(interface{ Prop(string) any })
	params, _ := p.Prop("connect.parameters").(map[string]any)
	scale, _ := params["scale"].(string)
	n, err := strconv.Atoi(scale)
	// A scale beyond the bound is refused where it is used (unscaled).
	return n, err == nil
}
