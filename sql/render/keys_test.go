package render

import (
	"fmt"
	"strings"
	"testing"
)

// TestKeyFilterStaysUnderBigQuerysQueryLength: KeyRanges ranges of long
// keys are merged pairwise until their literals fit MaxKeyFilterBytes, and
// every touched key is still inside the filter.
func TestKeyFilterStaysUnderBigQuerysQueryLength(t *testing.T) {
	for _, keyLen := range []int{8, 200, 1000} {
		var ranges [][2]string
		size := 0
		for i := range KeyRanges {
			k := fmt.Sprintf("'%0*d'", keyLen, i)
			ranges = append(ranges, [2]string{k, k})
			size += 2 * len(k)
		}
		got := coarsen(append([][2]string(nil), ranges...), size)
		total := 0
		for _, r := range got {
			total += len(r[0]) + len(r[1])
		}
		if total > MaxKeyFilterBytes {
			t.Errorf("keys of %d bytes: %d bytes of literals", keyLen, total)
		}
		if size <= MaxKeyFilterBytes && len(got) != len(ranges) {
			t.Errorf("keys of %d bytes: %d ranges merged into %d though they fit", keyLen, len(ranges), len(got))
		}
		// Every key is in some range (the literals compare as the keys do:
		// zero-padded, same length).
		j := 0
		for _, r := range ranges {
			for j < len(got) && strings.Compare(got[j][1], r[0]) < 0 {
				j++
			}
			if j == len(got) || strings.Compare(got[j][0], r[0]) > 0 {
				t.Fatalf("keys of %d bytes: key %s is in no range", keyLen, r[0])
			}
		}
	}
}
