package compact

import (
	"testing"

	"github.com/bqcdc/bqcdc/internal/flow"
)

// A run over a state of buckets that touches more buckets than one
// statement may write folds in contiguous ranges of [0, buckets), each
// holding at most BucketsPerJob touched buckets, the last one marked; a
// run touching fewer, or a state without buckets, in one statement.
func TestFoldChunksCoverEveryBucket(t *testing.T) {
	run := func(buckets int, touched []int64) *streamRun {
		b := &flow.Bound{Flow: &flow.Flow{StateBuckets: buckets}}
		s := &streamRun{run: &run{c: &Compactor{opts: Options{BucketsPerJob: 3}}, t: &task{b: b}}}
		s.st.buckets = touched
		return s
	}
	if got := run(10, []int64{4, 1, 7}).foldChunks(); len(got) != 1 || got[0] != nil {
		t.Errorf("3 touched buckets of 3 a statement: %v, want one statement", got)
	}
	if got := run(0, []int64{1, 2, 3, 4}).foldChunks(); len(got) != 1 || got[0] != nil {
		t.Errorf("no buckets: %v", got)
	}
	got := run(10, []int64{9, 2, 3, 5, 6, 8, 1}).foldChunks()
	want := [][3]int64{{0, 4, 0}, {5, 8, 0}, {9, 9, 1}} // touched 1,2,3 | 5,6,8 | 9
	if len(got) != len(want) {
		t.Fatalf("chunks %+v, want %v", got, want)
	}
	for i, c := range got {
		last := int64(0)
		if c.Last {
			last = 1
		}
		if [3]int64{c.Lo, c.Hi, last} != want[i] {
			t.Errorf("chunk %d: %+v, want %v", i, *c, want[i])
		}
	}
	m := run(10, nil).maintainChunks()
	if len(m) != 4 || m[0].Lo != 0 || m[0].Hi != 2 || m[3].Lo != 9 || m[3].Hi != 9 || !m[3].Last || m[2].Last {
		t.Errorf("maintenance of 10 buckets, 3 a statement: %v", m)
	}
}
