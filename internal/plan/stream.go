package plan

import (
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/schema"
	"github.com/bqcdc/bqcdc/sql/render"
)

// stream is what the change-stream kinds (scd1.go, scd2.go, bitemporal.go)
// share: a state of levels folded from the changelog by the Stream
// machine, partitioned by generation, its view bounded by a watermark.
type stream struct{}

func (stream) machine() Machine { return Stream }
func (stream) bound() Bound     { return BoundWatermark }

// partition: by generation, or by bucket for a state of buckets, or by
// ranges of the first key (a state of either pays for its maintenance's
// DELETE of the levels it folded: they are no longer whole partitions).
func (stream) partition(b *flow.Bound) (*bigquery.TimePartitioning, *bigquery.RangePartitioning) {
	if b.StateBuckets > 0 {
		return nil, byBucket(render.StatePartitions(b))
	}
	if r := b.StateKeyRange; r != nil {
		return nil, byKeyRange(b.Keys[0].Name, r)
	}
	return byGeneration(), nil
}

func (stream) stateColumns(b *flow.Bound) schema.Columns { return streamStateColumns(b) }
func (stream) sequence(b *flow.Bound) string             { return streamSequence(b) }

// maintainEvery: an SCD 1 state shrinks when maintained (superseded rows
// and old tombstones go), so it is maintained as often as asked.
func (stream) maintainEvery(every time.Duration) time.Duration { return every }

// historyMaintainEvery is how often a state of versions (SCD 2,
// bitemporal) is maintained: every event of a history decides it, so
// maintenance only folds levels and drops redelivered events; weekly, of
// a daily every, keeps its one whole-state read rare.
func historyMaintainEvery(every time.Duration) time.Duration { return 7 * every }

func (stream) holds() string { return "changelog events folded by compaction, in levels" }
