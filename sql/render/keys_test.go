package render

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bqcdc/bqcdc/internal/dev/rendercases"
	"github.com/bqcdc/bqcdc/internal/flow"
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

// A state partitioned by key range: past KeyRanges touched keys, whose
// ranges span many keys, the feed's filter also names the touched ranges
// (runs of neighbours as one BETWEEN; from the first range without a low
// end, to the last without a high end: the keys outside the state's range
// are theirs); a statement in chunks filters events, state and DELETE by
// the key itself, the keys of a NULL first key in the first chunk, the
// markers in every chunk's state and the last chunk's DELETE.
func TestKeyRangeFilters(t *testing.T) {
	var b *flow.Bound
	for _, bd := range rendercases.Flows(t, "testdata") {
		if bd.Name == "users_scd1" {
			f := *bd.Flow
			f.StateKeyRange = &flow.KeyRange{Start: 100, End: 200} // ranges of 1 key: 100 of them
			c := *bd
			c.Flow = &f
			b = &c
		}
	}
	if b.StateKeyRange.Interval() != 1 || b.StateKeyRange.Partitions() != 100 {
		t.Fatalf("ranges of %d, %d of them", b.StateKeyRange.Interval(), b.StateKeyRange.Partitions())
	}
	exact := &KeyFilter{Lo: []any{int64(120), int64(150)}, Hi: []any{int64(120), int64(150)}, Buckets: []int64{20, 50}}
	if got := exact.rangeSQL(b); got != "" {
		t.Errorf("ranges of one key each: range filter %q, want none", got)
	}
	coarse := &KeyFilter{Lo: []any{int64(5), int64(130)}, Hi: []any{int64(102), int64(400)}, Buckets: []int64{0, 1, 2, 30, 31, 99}}
	want := "(`userId` <= 102 OR `userId` BETWEEN 130 AND 131 OR `userId` >= 199)"
	if got := coarse.rangeSQL(b); got != want {
		t.Errorf("range filter %s, want %s", got, want)
	}
	if got := RangeOf(b, "e"); got != "DIV(LEAST(GREATEST(e.`userId`, 100), 199) - 100, 1)" {
		t.Errorf("RangeOf = %s", got)
	}
	for _, tt := range []struct {
		ch                *BucketChunk
		events, state, gc string
	}{
		{&BucketChunk{Lo: 0, Hi: 9},
			"(`userId` <= 109 OR `userId` IS NULL OR op = 'T')", "(`userId` <= 109 OR `userId` IS NULL)", "(`userId` <= 109 OR `userId` IS NULL AND `__key` IS NOT NULL)"},
		{&BucketChunk{Lo: 10, Hi: 49},
			"(`userId` BETWEEN 110 AND 149 OR op = 'T')", "(`userId` BETWEEN 110 AND 149 OR `userId` IS NULL AND `__key` IS NULL)", "`userId` BETWEEN 110 AND 149"},
		{&BucketChunk{Lo: 50, Hi: 99, Last: true},
			"(`userId` >= 150 OR op = 'T')", "(`userId` >= 150 OR `userId` IS NULL AND `__key` IS NULL)", "(`userId` >= 150 OR `userId` IS NULL AND `__key` IS NULL)"},
	} {
		events, state, gc := rangeChunk(b, tt.ch, "op")
		if events != tt.events || state != tt.state || gc != tt.gc {
			t.Errorf("chunk %+v:\n events %s\n  want  %s\n state  %s\n  want  %s\n gc     %s\n  want  %s", *tt.ch, events, tt.events, state, tt.state, gc, tt.gc)
		}
	}
	if n := len(MaintainChunks(b, 4)); n != 34 {
		t.Errorf("maintenance of 100 ranges, 4 partitions a job: %d statements, want 34 (3 ranges each)", n)
	}
}
