package avrobq

import (
	"bytes"
	"math"
	"math/big"
	"testing"
)

// TestTwosComplement pins Java's BigInteger.toByteArray encodings and checks
// that every value round-trips in the fewest bytes.
func TestTwosComplement(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want []byte
	}{
		{0, []byte{0}}, {1, []byte{1}}, {127, []byte{0x7f}}, {128, []byte{0, 0x80}},
		{-1, []byte{0xff}}, {-128, []byte{0x80}}, {-129, []byte{0xff, 0x7f}}, {255, []byte{0, 0xff}},
		{-32768, []byte{0x80, 0}}, {32768, []byte{0, 0x80, 0}},
	} {
		got := ToTwosComplement(big.NewInt(tc.n))
		if !bytes.Equal(got, tc.want) {
			t.Errorf("ToTwosComplement(%d) = %x, want %x", tc.n, got, tc.want)
		}
		if back := FromTwosComplement(got); back.Int64() != tc.n {
			t.Errorf("FromTwosComplement(%x) = %s, want %d", got, back, tc.n)
		}
	}
	for _, n := range []int64{256, -32769, math.MaxInt64, math.MinInt64} {
		b := ToTwosComplement(big.NewInt(n))
		if FromTwosComplement(b).Int64() != n {
			t.Errorf("%d encodes as %x, which reads back differently", n, b)
		}
		if len(b) > 1 && (b[0] == 0 && b[1]&0x80 == 0 || b[0] == 0xff && b[1]&0x80 != 0) {
			t.Errorf("%d encodes as %x, not minimal", n, b)
		}
	}
	if FromTwosComplement(nil).Sign() != 0 {
		t.Error("empty bytes must read as 0")
	}
	huge, _ := new(big.Int).SetString("-123456789012345678901234567890123456789012345678901234567890", 10)
	if back := FromTwosComplement(ToTwosComplement(huge)); back.Cmp(huge) != 0 {
		t.Errorf("round trip of %s gave %s", huge, back)
	}
}
