package formats

import (
	"context"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/bqcdc/bqcdc/internal/avrobq"
	"github.com/bqcdc/bqcdc/internal/limits"
	"github.com/hamba/avro/v2"
)

// plan is what the validator knows of one writer schema, computed once per
// Writer: the fewest bytes an array item can take, and whether the schema
// itself is within bounds (a decimal's scale is taken from the schema and
// hamba computes 10^scale for every value).
type plan struct {
	itemMin map[*avro.ArraySchema]int // fewest bytes one item encodes in
	// itemCost is the decoded-size budget's charge per array item or map
	// entry (limits.Budget): ItemCost or EntryCost plus ExpansionCost per
	// byte of avrobq.Expansion of the items.
	itemCost map[avro.Schema]int64
	// vsdScale is 1 + the index of the scale field of each
	// VariableScaleDecimal record, whose text is charged per value.
	vsdScale map[*avro.RecordSchema]int
	err      error // the schema is beyond a bound
}

func newPlan(s avro.Schema) *plan {
	p := &plan{itemMin: map[*avro.ArraySchema]int{}, itemCost: map[avro.Schema]int64{}, vsdScale: map[*avro.RecordSchema]int{}}
	p.err = p.walk(s, map[avro.Schema]bool{}, 0)
	return p
}

// walk visits every schema node once (named records are visited once even
// where they recur) to record array item sizes and check schema bounds.
func (p *plan) walk(s avro.Schema, seen map[avro.Schema]bool, depth int) error {
	s = deref(s)
	if depth > limits.MaxSchemaNesting {
		return limits.Errorf("the schema nests deeper than %d levels", limits.MaxSchemaNesting)
	}
	if seen[s] {
		return nil
	}
	switch x := s.(type) {
	case *avro.RecordSchema:
		seen[s] = true
		if i, ok := avrobq.IsVariableScaleDecimal(x); ok {
			p.vsdScale[x] = i + 1
		}
		for _, f := range x.Fields() {
			if err := p.walk(f.Type(), seen, depth+1); err != nil {
				return err
			}
		}
	case *avro.ArraySchema:
		seen[s] = true
		p.itemMin[x] = minSize(x.Items(), map[avro.Schema]bool{})
		p.itemCost[x] = limits.ItemCost + limits.ExpansionCost*avrobq.Expansion(x.Items())
		return p.walk(x.Items(), seen, depth+1)
	case *avro.MapSchema:
		seen[s] = true
		p.itemCost[x] = limits.EntryCost + limits.ExpansionCost*avrobq.Expansion(x.Values())
		return p.walk(x.Values(), seen, depth+1)
	case *avro.UnionSchema:
		for _, t := range x.Types() {
			if err := p.walk(t, seen, depth+1); err != nil {
				return err
			}
		}
	case avro.LogicalTypeSchema:
		if d, ok := x.Logical().(*avro.DecimalLogicalSchema); ok && x.Logical() != nil {
			if d.Scale() > limits.MaxDecimalScale || d.Precision() > limits.MaxDecimalPrecision {
				return limits.Errorf("decimal(%d,%d) is wider than precision %d and scale %d (PostgreSQL's widest NUMERIC)",
					d.Precision(), d.Scale(), limits.MaxDecimalPrecision, limits.MaxDecimalScale)
			}
		}
	}
	return nil
}

// minSize is the fewest bytes a value of s encodes in. A record met again
// while its own size is being computed (a recursive type, which can only
// recur through a union or an array) counts as 0, which errs on the safe
// side: a smaller minimum only makes the validator stricter.
func minSize(s avro.Schema, open map[avro.Schema]bool) int {
	s = deref(s)
	switch x := s.(type) {
	case *avro.NullSchema:
		return 0
	case *avro.PrimitiveSchema:
		switch x.Type() {
		case avro.Null:
			return 0
		case avro.Float:
			return 4
		case avro.Double:
			return 8
		}
		return 1 // boolean, int, long, string and bytes (their length)
	case *avro.FixedSchema:
		return x.Size()
	case *avro.RecordSchema:
		if open[s] {
			return 0
		}
		open[s] = true
		n := 0
		for _, f := range x.Fields() {
			n += minSize(f.Type(), open)
			if n > limits.MaxMessageBytes {
				break
			}
		}
		delete(open, s)
		return n
	}
	return 1 // enum, array, map (a block count), union (a branch index)
}

// validator walks Avro binary along its writer schema without building a
// value, checking every length and count against the bytes that are left
// before hamba allocates for it. It reads each byte of the payload once, so
// it costs a fraction of the decoding it guards.
type validator struct {
	plan   *plan
	b      []byte
	pos    int
	zero   int // zero-size array items still allowed
	depth  int
	budget limits.Budget
}

// validate checks that data could be decoded with s within bqcdc's limits.
// It does not check what decoding checks anyway (trailing bytes); it
// guarantees that nothing decoding allocates or loops over exceeds what
// the payload can hold, charges the message's decoded-size budget for
// every array and map block and VariableScaleDecimal (limits.Budget: what
// decoding and converting the message will allocate), stops once ctx is
// done, and refuses strings that are not UTF-8.
func validate(ctx context.Context, p *plan, s avro.Schema, data []byte) error {
	if p.err != nil {
		return p.err
	}
	if len(data) > limits.MaxMessageBytes {
		return limits.Errorf("the payload is %d bytes, more than Pub/Sub's %d-byte message limit", len(data), limits.MaxMessageBytes)
	}
	v := validator{plan: p, b: data, zero: limits.MaxZeroSizeItems, budget: limits.NewBudget(ctx, len(data))}
	return v.value(s)
}

func (v *validator) left() int { return len(v.b) - v.pos }

// long reads a zig-zag varint, refusing one longer than 10 bytes or beyond
// 64 bits.
func (v *validator) long() (int64, error) {
	var u uint64
	for shift := uint(0); ; shift += 7 {
		if v.pos >= len(v.b) {
			return 0, errTruncated
		}
		c := v.b[v.pos]
		v.pos++
		if shift == 63 && c > 1 {
			return 0, limits.Errorf("a varint at byte %d overflows 64 bits", v.pos-1)
		}
		u |= uint64(c&0x7f) << shift
		if c < 0x80 {
			break
		}
	}
	return int64(u>>1) ^ -int64(u&1), nil
}

var errTruncated = fmt.Errorf("payload truncated")

// beyondPayload reports a length, count or size larger than the bytes left:
// the payload is truncated, or it lies to make the decoder allocate. Either
// way the bound it exceeds is the payload's own size; the error wraps both
// io.ErrUnexpectedEOF and limits.ErrLimit.
func (v *validator) beyondPayload(format string, args ...any) error {
	return fmt.Errorf("payload truncated or corrupt: %w (%w)",
		fmt.Errorf(format+" exceeds the %d bytes left in the payload", append(args, v.left())...), io.ErrUnexpectedEOF)
}

// length reads the length of a string or bytes and checks it fits.
func (v *validator) length(what string) (int, error) {
	n, err := v.long()
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, fmt.Errorf("%s length %d at byte %d is negative", what, n, v.pos)
	}
	if n > int64(v.left()) {
		return 0, v.beyondPayload("%s length %d at byte %d", what, n, v.pos)
	}
	return int(n), nil
}

func (v *validator) skip(n int) error {
	if n > v.left() {
		return errTruncated
	}
	v.pos += n
	return nil
}

func (v *validator) enter() error {
	v.depth++
	if v.depth > limits.MaxValueNesting {
		return limits.Errorf("values nest deeper than %d levels", limits.MaxValueNesting)
	}
	return nil
}

func (v *validator) value(s avro.Schema) error {
	switch x := s.(type) {
	case *avro.RefSchema:
		return v.value(x.Schema())
	case *avro.NullSchema:
		return nil
	case *avro.PrimitiveSchema:
		return v.primitive(x.Type())
	case *avro.RecordSchema:
		if err := v.enter(); err != nil {
			return err
		}
		vsd := v.plan.vsdScale[x]
		var scale int64
		for i, f := range x.Fields() {
			if i == vsd-1 {
				var err error
				if scale, err = v.long(); err != nil {
					return err
				}
				if f.Type().Type() == avro.Int && (scale < -1<<31 || scale > 1<<31-1) {
					return fmt.Errorf("int %d at byte %d overflows 32 bits", scale, v.pos)
				}
				continue
			}
			if err := v.value(f.Type()); err != nil {
				return err
			}
		}
		v.depth--
		if vsd > 0 {
			// Its text costs its scale, which only the value says.
			return v.budget.Charge(limits.ExpansionCost*avrobq.VariableScaleText(scale), "a VariableScaleDecimal's text", v.pos)
		}
		return nil
	case *avro.UnionSchema:
		i, err := v.long()
		if err != nil {
			return err
		}
		types := x.Types()
		if i < 0 || i >= int64(len(types)) {
			return fmt.Errorf("union branch %d at byte %d is not one of the %d branches", i, v.pos, len(types))
		}
		if err := v.enter(); err != nil {
			return err
		}
		if err := v.value(types[i]); err != nil {
			return err
		}
		v.depth--
		return nil
	case *avro.ArraySchema:
		return v.blocks(x.Items(), v.plan.itemMin[x], v.plan.itemCost[x], false)
	case *avro.MapSchema:
		// An entry is at least its key's length byte.
		return v.blocks(x.Values(), 1, v.plan.itemCost[x], true)
	case *avro.FixedSchema:
		if x.Size() > v.left() {
			return v.beyondPayload("fixed %s of %d bytes", x.FullName(), x.Size())
		}
		return v.skip(x.Size())
	case *avro.EnumSchema:
		i, err := v.long()
		if err != nil {
			return err
		}
		if i < 0 || i >= int64(len(x.Symbols())) {
			return fmt.Errorf("enum %s index %d at byte %d is not one of its %d symbols", x.FullName(), i, v.pos, len(x.Symbols()))
		}
		return nil
	}
	return fmt.Errorf("unsupported Avro type %s", s.Type())
}

func (v *validator) primitive(t avro.Type) error {
	switch t {
	case avro.Null:
		return nil
	case avro.Boolean:
		return v.skip(1)
	case avro.Int:
		n, err := v.long()
		if err == nil && (n < -1<<31 || n > 1<<31-1) {
			err = fmt.Errorf("int %d at byte %d overflows 32 bits", n, v.pos)
		}
		return err
	case avro.Long:
		_, err := v.long()
		return err
	case avro.Float:
		return v.skip(4)
	case avro.Double:
		return v.skip(8)
	case avro.String, avro.Bytes:
		n, err := v.length(string(t))
		if err != nil {
			return err
		}
		if t == avro.String {
			return v.text(n, "string")
		}
		return v.skip(n)
	}
	return fmt.Errorf("unsupported Avro type %s", t)
}

// text skips a string of n bytes, refusing one that is not UTF-8: Avro
// strings are UTF-8 (the specification), so are BigQuery's STRING values,
// and Debezium JSON refuses the same (see ErrNotUTF8). Keeping the bytes
// would store what BigQuery reads as another text, or refuses.
func (v *validator) text(n int, what string) error {
	if n > v.left() {
		return errTruncated
	}
	if !utf8.Valid(v.b[v.pos : v.pos+n]) {
		return notUTF8(what, v.pos)
	}
	v.pos += n
	return nil
}

// blocks walks an array or map: blocks of items, each a count (negative:
// followed by the block's size in bytes), ending with a count of 0. Each
// count is checked before any item is read: count × the item's minimum size
// must fit in what is left, items of size 0 draw on the message's
// zero-size budget, and count × cost on its decoded-size budget.
func (v *validator) blocks(items avro.Schema, min int, cost int64, isMap bool) error {
	what := "array"
	if isMap {
		what = "map"
	}
	if err := v.enter(); err != nil {
		return err
	}
	for {
		start := v.pos
		n, err := v.long()
		if err != nil {
			return err
		}
		if n == 0 {
			break
		}
		if n < 0 {
			if n == -1<<63 {
				return limits.Errorf("%s block count at byte %d overflows", what, start)
			}
			n = -n
			size, err := v.long()
			if err != nil {
				return err
			}
			if size < 0 || size > int64(v.left()) {
				return v.beyondPayload("%s block size %d at byte %d", what, size, start)
			}
		}
		switch {
		case min > 0 && n > int64(v.left()/min):
			return v.beyondPayload("%s block count %d at byte %d (items of at least %d bytes)", what, n, start, min)
		case min == 0:
			if n > int64(v.zero) {
				return limits.Errorf("%s block count %d at byte %d: items that encode in zero bytes are limited to %d per message", what, n, start, limits.MaxZeroSizeItems)
			}
			v.zero -= int(n)
		}
		block := "an array block"
		if isMap {
			block = "a map block"
		}
		if err := v.budget.Charge(n*cost, block, start); err != nil {
			return err
		}
		for range n {
			if err := v.budget.Tick(); err != nil {
				return err
			}
			if isMap {
				k, err := v.length("map key")
				if err != nil {
					return err
				}
				if err := v.text(k, "map key"); err != nil {
					return err
				}
			}
			if err := v.value(items); err != nil {
				return err
			}
		}
	}
	v.depth--
	return nil
}
