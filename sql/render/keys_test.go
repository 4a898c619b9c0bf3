package render

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bqcdc/bqcdc/internal/dev/rendercases"
	"github.com/bqcdc/bqcdc/internal/schema"
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

// TestKeyFilterInLists: KeyRanges single keys are written as IN lists of at
// most maxInList values (the emulator's SQLite takes at most 999), every
// key in one of them.
func TestKeyFilterInLists(t *testing.T) {
	b := rendercases.Flows(t, "testdata")[0]
	if b.Keys[0].Type != schema.Int64 {
		t.Skipf("the first test flow's key is %s, not INT64", b.Keys[0].Type)
	}
	var f KeyFilter
	for i := range KeyRanges {
		f.Lo, f.Hi = append(f.Lo, int64(i)), append(f.Hi, int64(i))
	}
	sql, err := f.sql(b)
	if err != nil {
		t.Fatal(err)
	}
	lists := strings.Count(sql, " IN (")
	if lists != (KeyRanges+maxInList-1)/maxInList {
		t.Errorf("%d IN lists for %d keys, want %d of at most %d", lists, KeyRanges, (KeyRanges+maxInList-1)/maxInList, maxInList)
	}
	for _, l := range strings.Split(sql, " IN (")[1:] {
		if n := strings.Count(l[:strings.Index(l, ")")], ",") + 1; n > maxInList {
			t.Errorf("an IN list of %d values", n)
		}
	}
	for _, k := range []int{0, KeyRanges / 2, KeyRanges - 1} {
		if !strings.Contains(sql, fmt.Sprintf(" %d,", k)) && !strings.Contains(sql, fmt.Sprintf("(%d,", k)) && !strings.Contains(sql, fmt.Sprintf(" %d)", k)) {
			t.Errorf("key %d is in no list", k)
		}
	}
}
