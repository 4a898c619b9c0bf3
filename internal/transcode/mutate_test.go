package transcode

import (
	"math/rand/v2"
	"testing"
)

// TestMutatedPayloadsMatchGenericPath is a deterministic slice of what
// FuzzTranscode does: valid records with a few bytes overwritten.
func TestMutatedPayloadsMatchGenericPath(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i, p := range fuzzTargets(t) {
		g := newGen(uint64(200 + i))
		stages := map[string]int{}
		for k := 0; k < 400; k++ {
			b, err := g.payload(p.ref.writer.Schema)
			if err != nil {
				continue
			}
			for range 1 + r.IntN(4) {
				if len(b) > 0 {
					b[r.IntN(len(b))] = byte(r.IntN(256))
				}
			}
			stages[string(p.compare(t, b, testMeta))]++
		}
		t.Logf("%s: %v", p.name, stages)
	}
}
