package render

import (
	"fmt"
	"slices"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/flow"
)

// The history of an SCD 1 flow. Its state keeps only the events that
// decide the target now, so <target>_at(ts) had to fold the changelog's
// whole history, whose partitions and clustering (by ingestion time) no
// filter on a key prunes: a lookup of one key's past cost a read of the
// changelog. So each run's fold also copies every event it folds into the
// history: generations before ArchiveEnd, one day of 1970-1972 per month
// of ingestion (historyGenOf: its own partitions of the state, clustered
// by the key as every level is; a month's partition stops changing when
// the month ends, so it ages into long-term storage pricing), and _at
// reads those partitions and the changelog only after its pruning bound (a
// committed watermark), as an SCD 2 flow's _at reads its state: billed for
// the keys asked for (a block of each month of history), plus about a day
// of the changelog.
//
// Exactness rests on these choices:
//   - The history holds every event ingested by the state's watermark: a
//     fold writes its level, its copies and its marker in one INSERT. A
//     state's first fold (from the epoch) copies the whole changelog and
//     writes the history marker ('H', no key); a state folded before the
//     history existed gets the changelog copied once by bqcdc apply
//     (HistoryBackfill, marker included, guarded so that a repeat adds
//     nothing), which labels it (catalog.LabelHistory).
//   - _at, rendered with a bound after the epoch, fails with a message
//     naming bqcdc apply while the marker is missing, rather than answer
//     from a history that lacks the events before it (compaction renders
//     the functions again daily, possibly before apply ran).
//   - Every other read (views, the change feed, maintenance and its
//     DELETE, the watermark marker's) takes the generations from
//     ArchiveEnd on: a constant filter on the partitioning column, so
//     BigQuery prunes the history's partitions and bills of them nothing
//     (but the column: 8 bytes a row of what they read); maintenance never
//     folds nor deletes it.
//   - A flow that stops keeping one has its markers deleted by its next
//     run (HistoryUnmark), since its runs no longer copy: turned on again,
//     apply fills it anew. (Its history is then folded away by its next
//     maintenance, which no longer leaves it out.)
//   - Copies of one message (a redelivery, a run repeated after a crash,
//     the backfill beside a run) are one event to _at (its message id); a
//     message without an id folds the same twice (one row per key).
//
// It is asked for (flow.HistoryProperty): it stores every event and adds
// the column to every read. A state of buckets keeps none (its partitions
// are buckets, not generations): its _at reads the changelog as before.

// HistoryGen is the generation of an SCD 1 state's history marker, the
// first of the history's days (an SCD 1 state has no archive slots).
var HistoryGen = Epoch

// historyEpoch is the month of ingestion historyGenOf maps to HistoryGen.
const historyEpoch = "DATE '2000-01-01'"

// historyGenOf is the history generation of an event ingested at the
// TIMESTAMP expression at: HistoryGen plus its month's number since
// January 2000 in days (within 1970-1972, before ArchiveEnd: the months
// until 2091).
func historyGenOf(at string) string {
	days := int(ArchiveEnd.Sub(HistoryGen).Hours() / 24)
	return fmt.Sprintf("TIMESTAMP_ADD(%s, INTERVAL LEAST(GREATEST(DATE_DIFF(DATE(%s), %s, MONTH), 0), %d) DAY)", Literal(HistoryGen), at, historyEpoch, days-1)
}

// HistoryKept reports whether b's state keeps a history for its
// <target>_at: an SCD 1 change-stream flow that asks for one
// (flow.HistoryProperty) and has that function, whose state is
// partitioned by generation (not by bucket).
func HistoryKept(b *flow.Bound) bool {
	return b.History && b.Kind() == flow.SCD1 && b.StateBuckets == 0 && slices.Contains(b.Routines(), catalog.AtSuffix)
}

// HistoryUnmark is the DELETE of an SCD 1 state's history markers, once
// its flow stopped keeping a history: runs no longer copy what they fold,
// so neither bqcdc apply (which fills it again when it is turned on) nor
// <target>_at may take it for whole. Billed for the markers' partition.
func HistoryUnmark(b *flow.Bound, loc catalog.Location) string {
	return fmt.Sprintf("DELETE FROM %s\nWHERE %s = %s AND %s = 'H'", loc.StateTable(b.Flow), q(catalog.ColStateGen), Literal(HistoryGen), q(catalog.ColStateOp))
}

// HistoryBackfill is the INSERT that copies a state's changelog into its
// history with the history marker, unless the marker is there already: an
// existing state's one read of the changelog, once (bqcdc apply).
func HistoryBackfill(b *flow.Bound, loc catalog.Location) (string, error) {
	if !HistoryKept(b) {
		return "", fmt.Errorf("flow %s keeps no history", b.Name)
	}
	d := newData(b, loc, Epoch, Current)
	d.MarkerValues = markerValues(d.MarkerValues, Literal(Epoch))
	return execute("history_backfill", d, b)
}
