package compact

import (
	"fmt"
	"time"

	"github.com/bqcdc/bqcdc/sql/render"
)

// Line renders the report on one line, as `bqcdc compact` and the local
// stack print it.
func (r Report) Line() string {
	s := fmt.Sprintf("%-22s %-11s read %d events (%d without sequence), %d keys, wrote %d rows, watermark %s -> %s, %d jobs, %d bytes billed, %s",
		r.Flow, r.Outcome, r.EventsRead, r.WithoutSequence, r.KeysTouched, r.RowsWritten,
		clock(r.WatermarkBefore), clock(r.WatermarkAfter), r.Jobs, r.BytesBilled, r.Duration.Round(time.Millisecond))
	if r.Golds > 0 {
		s += fmt.Sprintf(", %d materialized views refreshed", r.Golds)
	}
	if r.Error != "" {
		s += "\n    error: " + r.Error
	}
	if r.FeedHeld != "" {
		s += "\n    change feed held: " + r.FeedHeld
	}
	if r.KeysOutsideRange {
		s += "\n    keys outside the state's key range (bqcdc.state.key_range): they share one partition, pruned by clustering only; widen the range"
		if r.KeyRangeSuggested != "" {
			s += " (to '" + r.KeyRangeSuggested + "' or more)"
		}
		s += " and run bqcdc apply"
	}
	for _, e := range r.GoldErrors {
		s += "\n    materialized view not refreshed: " + e
	}
	return s
}

// clock is a watermark's time of day, or "never" before the first fold.
func clock(t time.Time) string {
	if t.Equal(render.Epoch) || t.IsZero() {
		return "never"
	}
	return t.UTC().Format("15:04:05.000")
}
