package testenv

import (
	"flag"
	"fmt"
	"maps"
	"math/rand"
	"slices"

	"github.com/bqcdc/bqcdc/internal/catalog"
)

// SeedFlags declares the flags of a property test's seeds, <name>.seeds
// (how many random histories: n unless set, usage says why) and
// <name>.seed (run only this one, to reproduce a failure), and returns the
// seeds they choose after flag.Parse: that one, or as many as
// <name>.seeds says from first on.
func SeedFlags(name string, n int, first int64, usage string) func() []int64 {
	count := flag.Int(name+".seeds", n, usage)
	only := flag.Int64(name+".seed", 0, "run only this seed (reproduce a failure)")
	return func() []int64 {
		if *only != 0 {
			return []int64{*only}
		}
		out := make([]int64, *count)
		for i := range out {
			out[i] = first + int64(i)
		}
		return out
	}
}

// Pick is one of xs, at random.
func Pick[T any](r *rand.Rand, xs ...T) T { return xs[r.Intn(len(xs))] }

// Maybe is v, or (three times in ten) nil.
func Maybe(r *rand.Rand, v any) any {
	if r.Intn(10) < 3 {
		return nil
	}
	return v
}

// MessageIDs returns a maker of message ids drawn from r, each one new: in
// a random history, only a redelivery repeats an id.
func MessageIDs(r *rand.Rand) func() string {
	used := map[string]bool{}
	return func() string {
		for {
			m := fmt.Sprintf("m%06d", r.Intn(1_000_000))
			if !used[m] {
				used[m] = true
				return m
			}
		}
	}
}

// Deliver returns events in an order Pub/Sub may deliver them: a fifth of
// them twice, as a redelivery with the same message id or, when newID is
// set, half of those as a re-send with a new one; then all shuffled.
func Deliver(r *rand.Rand, events []map[string]any, newID func() string) []map[string]any {
	out := slices.Clone(events)
	for _, e := range events {
		if r.Intn(5) != 0 {
			continue
		}
		dup := maps.Clone(e)
		if newID != nil && r.Intn(2) == 0 {
			dup[catalog.ColMessageID] = newID()
		}
		out = append(out, dup)
	}
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}
