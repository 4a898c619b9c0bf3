package transcode

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/bqcdc/bqcdc/internal/avrobq"
	"github.com/bqcdc/bqcdc/internal/limits"
)

// The reader decodes Avro binary with exactly the acceptance rules of the
// generic path (hamba/avro v2 decoding into map[string]any through a
// formats.Writer): what hamba refuses, the reader refuses, and the other
// way round. The rules, read from hamba's Reader:
//
//   - int: at most 5 bytes of varint (hamba) holding a value that fits in
//     32 bits; long: at most 10 bytes, the 10th at most 1 (no bits past 64):
//     the generic path's validator refuses what hamba would silently
//     truncate;
//   - boolean: one byte, 0 or 1;
//   - bytes and string: a long length, negative refused, above
//     limits.MaxMessageBytes (the generic path's hamba MaxByteSliceSize)
//     refused, then the bytes;
//   - union branch and enum symbol: an int index, range-checked;
//   - array and map blocks: a long count, a negative one followed by a
//     long byte size that is read and ignored, a zero count ending them.
//
// Unlike hamba, the reader never allocates on behalf of the input: bytes
// are returned as sub-slices of the payload, and a block count is checked
// against the bytes left before anything is done with it.

// maxByteSlice is the generic path's hamba Config.MaxByteSliceSize: a value
// may be as large as a Pub/Sub message.
const maxByteSlice = limits.MaxMessageBytes

// maxZeroSizeItems bounds the count of an array block whose items take no
// bytes (an array of null), as the generic path's validator does.
const maxZeroSizeItems = limits.MaxZeroSizeItems

var (
	errTruncated = errors.New("payload truncated: unexpected EOF")
	errTrailing  = errors.New("trailing bytes after the record")
	errVarint    = errors.New("varint too long")
	errBool      = errors.New("invalid boolean byte")
	errLength    = errors.New("invalid (negative) bytes or string length")
	errTooLong   = errors.New("bytes or string longer than a Pub/Sub message (10 MiB)")
	errBranch    = errors.New("unknown union branch")
	errSymbol    = errors.New("unknown enum symbol")
	errNotUTF8   = errors.New("a string that is not valid UTF-8 (Avro strings and BigQuery STRING values are UTF-8; the message is refused, not altered)")
	// errHostileCount marks a block count larger than the bytes left could
	// hold. The generic path allocates arrays at their declared count, so
	// for such input it may exhaust memory rather than fail; the transcoder
	// refuses it as a decode error (tests use the mark to know the generic
	// path must not be run on that input).
	errHostileCount = errors.New("block count exceeds what the bytes left can hold")
)

type reader struct {
	b    []byte
	i    int
	zero int // zero-size items read so far
	// budget is the message's decoded-size budget (see limits.Budget),
	// charged as the generic path's validator charges it: per block,
	// ItemCost plus ExpansionCost per byte of avrobq.Expansion for each
	// item, and each VariableScaleDecimal's text. A reader that reads
	// again what another read and charged sets reread.
	budget limits.Budget
	reread bool
}

// charge takes cost from the budget, at the reader's position.
func (r *reader) charge(cost int64, what string) error {
	if r.reread {
		return nil
	}
	return r.budget.Charge(cost, what, r.i)
}

// chargeScale charges the text of a VariableScaleDecimal of scale.
func (r *reader) chargeScale(scale int64) error {
	return r.charge(limits.ExpansionCost*avrobq.VariableScaleText(scale), "a VariableScaleDecimal's text")
}

func (r *reader) left() int { return len(r.b) - r.i }

func (r *reader) long() (int64, error) { return r.varint(10) }

// int reads an int: at most 5 bytes (hamba), and a value that fits in 32
// bits (the generic path's validator).
func (r *reader) int() (int32, error) {
	at := r.i
	x, err := r.varint(5)
	if err != nil {
		return 0, err
	}
	if x < -1<<31 || x > 1<<31-1 {
		return 0, fmt.Errorf("%w: int %d at byte %d overflows 32 bits", errVarint, x, at)
	}
	return int32(x), nil
}

// varint reads a zig-zag varint of at most max bytes (10 for a long, 5 for
// an int).
func (r *reader) varint(max int) (int64, error) {
	var v uint64
	var s uint
	at := r.i
	for n := 0; n < max; n++ {
		if r.i >= len(r.b) {
			return 0, errTruncated
		}
		c := r.b[r.i]
		r.i++
		if s == 63 && c > 1 {
			// Beyond 64 bits: the generic path's validator refuses it.
			return 0, fmt.Errorf("%w: a varint at byte %d overflows 64 bits", errVarint, at)
		}
		v |= uint64(c&0x7f) << s
		if c&0x80 == 0 {
			return int64((v >> 1) ^ -(v & 1)), nil
		}
		s += 7
	}
	return 0, fmt.Errorf("%w: a varint at byte %d is longer than %d bytes", errVarint, at, max)
}

func (r *reader) bool() (bool, error) {
	if r.i >= len(r.b) {
		return false, errTruncated
	}
	c := r.b[r.i]
	r.i++
	if c > 1 {
		return false, errBool
	}
	return c == 1, nil
}

// bytes reads bytes or a string (what: "bytes", "string", "map key") as a
// sub-slice of the payload.
func (r *reader) bytes(what string) ([]byte, error) {
	at := r.i
	n, err := r.long()
	if err != nil {
		return nil, err
	}
	switch {
	case n < 0:
		return nil, fmt.Errorf("%w: %s length %d at byte %d", errLength, what, n, at)
	case n > maxByteSlice:
		return nil, fmt.Errorf("%w: %s length %d at byte %d", errTooLong, what, n, at)
	case n > int64(r.left()):
		return nil, fmt.Errorf("%w: %s length %d at byte %d exceeds the %d bytes left", errTruncated, what, n, at, r.left())
	}
	b := r.b[r.i : r.i+int(n) : r.i+int(n)]
	r.i += int(n)
	return b, nil
}

// bytesOf reads bytes or a string of node n; a string must be UTF-8, as
// the generic path's validator requires (formats.ErrNotUTF8).
func (r *reader) bytesOf(n *node) ([]byte, error) {
	what := "bytes"
	if n.form == fString {
		what = "string"
	}
	b, err := r.bytes(what)
	if err == nil && n.form == fString && !utf8.Valid(b) {
		return nil, errNotUTF8
	}
	return b, err
}

// key reads a map key, a string.
func (r *reader) key() error {
	b, err := r.bytes("map key")
	if err == nil && !utf8.Valid(b) {
		return errNotUTF8
	}
	return err
}

func (r *reader) fixed(n int) ([]byte, error) {
	if n > r.left() {
		return nil, errTruncated
	}
	b := r.b[r.i : r.i+n : r.i+n]
	r.i += n
	return b, nil
}

// fixedOrBytes reads the bytes of a node that is Avro fixed or bytes (a
// decimal, a binary column: the same logical type comes as either).
func (r *reader) fixedOrBytes(n *node) ([]byte, error) {
	if n.dec == dFixed {
		return r.fixed(n.size)
	}
	return r.bytes("bytes")
}

func (r *reader) float() (float32, error) {
	b, err := r.fixed(4)
	if err != nil {
		return 0, err
	}
	return math.Float32frombits(binary.LittleEndian.Uint32(b)), nil
}

func (r *reader) double() (float64, error) {
	b, err := r.fixed(8)
	if err != nil {
		return 0, err
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(b)), nil
}

// index reads a union branch or enum symbol index below n.
func (r *reader) index(n int, bad error) (int, error) {
	i, err := r.int()
	if err != nil {
		return 0, err
	}
	if i < 0 || int(i) >= n {
		return 0, bad
	}
	return int(i), nil
}

// block reads the item count of the next array or map block (0: the end).
// minItem is the fewest bytes one item takes; zero-size items are bounded
// separately (see maxZeroSizeItems). cost is the budget's charge per item
// (node.itemCost), taken for the block before any item is read, after the
// count is checked against the bytes left, as the validator does.
func (r *reader) block(minItem int, cost int64, what string) (int, error) {
	at := r.i
	n, err := r.long()
	if err != nil {
		return 0, err
	}
	if n < 0 {
		// The block's size in bytes follows; the generic path's validator
		// refuses one that is negative or beyond the payload.
		n = -n
		if n < 0 { // -MinInt64
			return 0, fmt.Errorf("%w: %s count at byte %d overflows", errHostileCount, what, at)
		}
		size, err := r.long()
		if err != nil {
			return 0, err
		}
		if size < 0 || size > int64(r.left()) {
			return 0, fmt.Errorf("%w: %s size %d at byte %d, with %d bytes left", errHostileCount, what, size, at, r.left())
		}
	}
	if minItem == 0 {
		// Items of no bytes draw on one budget per message, as in the
		// validator.
		if n > int64(maxZeroSizeItems-r.zero) {
			return 0, fmt.Errorf("%w: %s count %d at byte %d: items that encode in zero bytes are limited to %d per message", errHostileCount, what, n, at, maxZeroSizeItems)
		}
		r.zero += int(n)
	} else if n > int64(r.left()/minItem) {
		return 0, fmt.Errorf("%w: %s count %d at byte %d, with %d bytes left", errHostileCount, what, n, at, r.left())
	}
	if err := r.charge(n*cost, what); err != nil {
		return 0, err
	}
	return int(n), nil
}

// skip reads one value of n without converting it, refusing exactly what
// the generic decoder refuses.
func (r *reader) skip(n *node) error {
	switch n.dec {
	case dNull:
		return nil
	case dBool:
		_, err := r.bool()
		return err
	case dInt:
		_, err := r.int()
		return err
	case dLong:
		_, err := r.long()
		return err
	case dFloat:
		_, err := r.fixed(4)
		return err
	case dDouble:
		_, err := r.fixed(8)
		return err
	case dBytes:
		_, err := r.bytesOf(n)
		return err
	case dFixed:
		_, err := r.fixed(n.size)
		return err
	case dEnum:
		_, err := r.index(n.size, errSymbol)
		return err
	case dRecord:
		if n.vsdScale > 0 {
			return r.skipVSD(n)
		}
		for _, f := range n.fields {
			if err := r.skip(f.n); err != nil {
				return err
			}
		}
		return nil
	case dArray:
		return r.skipBlocks(n.items, nil)
	case dMap:
		return r.skipBlocks(n.items, n)
	case dUnion:
		i, err := r.index(len(n.branches), errBranch)
		if err != nil {
			return err
		}
		return r.skip(n.branches[i])
	}
	return errors.New("transcode: unknown node kind")
}

// skipBlocks skips array items, or map entries (a string key, then the
// value) when isMap is set.
func (r *reader) skipBlocks(items *node, isMap *node) error {
	min, what := items.minSize, "array block"
	cost := limits.ItemCost + limits.ExpansionCost*items.expansion
	if isMap != nil {
		min++ // the key's length
		what, cost = "map block", limits.EntryCost+limits.ExpansionCost*items.expansion
	}
	for {
		count, err := r.block(min, cost, what)
		if err != nil || count == 0 {
			return err
		}
		if min == 0 && items.zeroSize {
			continue // nothing to read, and nothing can fail
		}
		for range count {
			if err := r.budget.Tick(); err != nil {
				return err
			}
			if isMap != nil {
				if err := r.key(); err != nil {
					return err
				}
			}
			if err := r.skip(items); err != nil {
				return err
			}
		}
	}
}

// skipVSD skips a VariableScaleDecimal record, charging its text as the
// converted one does.
func (r *reader) skipVSD(n *node) error {
	var scale int64
	for i, f := range n.fields {
		if i == n.vsdScale-1 {
			v, err := r.long() // an int's varint reads the same, range aside
			if err != nil {
				return err
			}
			if f.n.dec == dInt && (v < -1<<31 || v > 1<<31-1) {
				return errVarint
			}
			scale = v
			continue
		}
		if err := r.skip(f.n); err != nil {
			return err
		}
	}
	return r.chargeScale(scale)
}
