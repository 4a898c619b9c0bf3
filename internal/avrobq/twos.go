package avrobq

import "math/big"

// Avro's decimal logical type stores the unscaled value as big-endian two's
// complement (Java's BigInteger.toByteArray). These two functions are the
// only home of that encoding: the decoders (here and in transcode) read it,
// the JSON → Avro conversions in formats write it.

// FromTwosComplement reads big-endian two's complement; empty bytes are 0.
func FromTwosComplement(b []byte) *big.Int {
	n := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		n.Sub(n, new(big.Int).Lsh(big.NewInt(1), uint(len(b)*8)))
	}
	return n
}

// ToTwosComplement writes n in the fewest bytes of big-endian two's
// complement, as Java's BigInteger.toByteArray does (0 is one zero byte).
func ToTwosComplement(n *big.Int) []byte {
	if n.Sign() >= 0 {
		return n.FillBytes(make([]byte, n.BitLen()/8+1))
	}
	size := new(big.Int).Sub(new(big.Int).Neg(n), big.NewInt(1)).BitLen()/8 + 1
	m := new(big.Int).Lsh(big.NewInt(1), uint(size*8))
	return m.Add(m, n).FillBytes(make([]byte, size))
}
