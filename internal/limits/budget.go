package limits

import (
	"context"
	"fmt"
)

// The decoded-size budget. A message's bytes do not bound what decoding it
// costs: a 1-byte Avro array item becomes an interface value, its box and
// its share of a slice (and, for maps, a record of key and value), so a
// 10 MB message of such items took 2.8-4.1 GB on the generic path; padding
// (io.debezium.data.Bits) and decimal text (a 1-byte value of scale 1,000
// is 1,002 characters) multiply it again. So each message gets a budget in
// bytes, a function of its size, and decoding charges it as it goes, before
// it decodes what it charges for:
//
//   - PayloadCost per payload byte, once: the copies of strings and bytes
//     the decoded record, the converted values and the encoded row hold;
//   - ItemCost per array item and EntryCost per map entry, charged for a
//     whole block when its count is read, plus ExpansionCost per byte that
//     converting one item adds beyond its own bytes (Bits padding and decimal
//     text, known from the schema: see avrobq.Expansion);
//   - ExpansionCost per character of a VariableScaleDecimal's text, whose
//     scale is in the value;
//   - JSONValueCost per JSON value, before a JSON payload is parsed.
//
// The costs are what the generic path (hamba's generic decoding, avrobq's
// conversion, the dynamicpb row and its marshalling) was measured to
// allocate per item, rounded up (TestDecodedSizeIsBounded checks the total
// allocated against the budget for each kind of item); the compiled path
// costs less but charges the same, so a message ends the same way on
// either path. A message over its budget is refused as a decode error that
// names the budget; it can never fit, so it is dead-lettered. The ingest
// function weighs its in-flight semaphore by the same budget (plus the
// push body), so what it admits at once is what decoding may take.
const (
	DecodeBudgetBase    = 256 << 10 // what any message may spend
	DecodeBudgetPerByte = 64        // more per byte of the message
	MaxDecodeBudget     = 64 << 20  // and at most this

	PayloadCost   = 4
	ItemCost      = 256
	EntryCost     = 1536
	ExpansionCost = 8
	JSONValueCost = 128
)

// DecodeBudget is the decoded-size budget of a message of n bytes.
func DecodeBudget(n int) int64 {
	return min(MaxDecodeBudget, DecodeBudgetBase+DecodeBudgetPerByte*int64(max(n, 0)))
}

// Budget is what is left of one message's decoded-size budget while it is
// decoded, and the request's context, checked as items are decoded so a
// request that ended stops its work. The zero Budget refuses everything;
// use NewBudget.
type Budget struct {
	ctx         context.Context
	total, left int64
	ticks       uint32
}

// NewBudget returns the budget of a payload of n bytes, PayloadCost per
// byte already charged. A nil ctx is never done.
func NewBudget(ctx context.Context, n int) Budget {
	b := Budget{ctx: ctx, total: DecodeBudget(n)}
	b.left = b.total - PayloadCost*int64(max(n, 0))
	return b
}

// Charge takes cost (a count times a unit cost, computed by the caller
// without overflow: counts are bounded by the payload) from the budget;
// what names the thing charged for and at where in the payload. It refuses
// what the budget cannot pay, with an error wrapping ErrLimit, and a
// request whose context is done, with an error wrapping its cause.
func (b *Budget) Charge(cost int64, what string, at int) error {
	if cost > b.left || cost < 0 {
		return Errorf("%s at byte %d would take decoding past the message's %d-byte decoded-size budget (%d + %d per message byte, at most %d)",
			what, at, b.total, DecodeBudgetBase, DecodeBudgetPerByte, MaxDecodeBudget)
	}
	b.left -= cost
	return b.Tick()
}

// Tick counts one decoded item and checks the request's context every
// 1,024 of them (an item costs well under a microsecond; the largest,
// a VariableScaleDecimal at MaxVariableScale, about 0.1 ms).
func (b *Budget) Tick() error {
	if b.ticks++; b.ticks&1023 != 0 || b.ctx == nil {
		return nil
	}
	if err := b.ctx.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrInterrupted, context.Cause(b.ctx))
	}
	return nil
}

// Spent is how much of the budget has been charged.
func (b *Budget) Spent() int64 { return b.total - b.left }

// ErrInterrupted marks decoding stopped because the request's context
// ended (its deadline passed or its client went away). It is not the
// message's fault: the message is to be redelivered.
var ErrInterrupted = errorString("decoding stopped: the request ended")

type errorString string

func (e errorString) Error() string { return string(e) }
