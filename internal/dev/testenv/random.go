package testenv

import "math/rand"

// Seeds are the seeds of a property test: only, when it is set (to
// reproduce a failure), else n seeds from first on.
func Seeds(only int64, n int, first int64) []int64 {
	if only != 0 {
		return []int64{only}
	}
	out := make([]int64, n)
	for i := range out {
		out[i] = first + int64(i)
	}
	return out
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
