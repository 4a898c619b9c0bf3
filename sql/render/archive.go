package render

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/flow"
)

// The archive of an SCD 2 state's closed versions. The state keeps every
// event (exact re-cutting around late events), so a change feed that read
// a touched key's rows would read its whole history, ten times the bytes
// for ten times the history. Yet a change at a position after the key's
// last version-opening event changes nothing before it: the versions that
// event closed stay as they are, on both sides of the comparison. So
// maintenance (which reads every level anyway) writes each key's events
// before its last version-opening event into an archive generation, a day
// of 1970-1972 (ArchiveSlot), and the rest, from that event on, into its
// level as before, with an archive marker ('A': its generation, the
// watermark it folded to, and the archive's day as its ingestion time). A
// change feed reads the generations from ArchiveEnd on only (a constant
// filter on the partitioning column: BigQuery prunes the archive's
// partition exactly), after one narrow query (Late) has found the
// touched keys whose rows in the levels do not all come after their
// boundary: a late event, folded since, positioned before it. Those keys' archive is read too, by their first key values as
// constants. Views, time travel and maintenance read every generation.
//
// Exactness rests on these choices:
//   - The boundary is the event that opens the key's last version as the
//     fold decides it (the fold's own __opens: an upsert at the start,
//     after a delete, or changing a tracked column), so the fold of the
//     rows from it on is the fold of the whole history from that version
//     on: an upsert carries the whole row, and the versions before end
//     where it starts. (Not for IGNORE NULL UPDATES, whose values fill
//     across versions back to a key's last delete: Archives.)
//   - A key is in order when the first of its rows in the levels and the
//     run's range, by the fold's positions, is of the archive's level and
//     was read by its maintenance (ingested by the marker's watermark):
//     that row is the boundary. A key without such a row has no archive.
//     Ties put the level's row last, so a copy or an event at the very
//     position of the boundary counts as late.
//   - The range must start at or after the marker's watermark, so that
//     every archived event is before every position the feed compares (a
//     feed rebuilt from its start after maintenance archived: compact
//     reads the archive of every touched key then).
//   - A base and its sparse rows (sparse.go) are one group of events
//     between two version-opening events, so they are on one side.
//   - Truncates (no key) are never archived. A maintenance that crashed
//     before its DELETE leaves two archives and two levels: the newest
//     marker's level decides, and a key whose first row is of the older
//     level counts as late.
//   - The split is the flow's as maintenance rendered it: its keys,
//     positions and tracked columns, whose fingerprint the marker keeps
//     (in __key, NULL on every other marker). A flow edited since (TRACK
//     HISTORY, SEQUENCE BY) may open versions elsewhere: its feed reads
//     every touched key's archive until the next maintenance.
//   - Only the feed filters by generation: rows the archive holds count in
//     every other read, and the next maintenance reads them back.
//
// A state of buckets is partitioned by bucket, not generation: its
// archive is a second range of partitions, the key's bucket plus the
// number of buckets (StatePartitions: so N ≤ MaxStateBuckets/2 buckets
// for an archived flow), written by maintenance at its own generation
// (the next maintenance's DELETE removes it, as any level it folded). The
// feed's filter on the touched buckets reads the levels only; a late
// key's archive is its bucket's archive partition; a feed of every
// generation reads both (withArchive). A state of more buckets is not
// archived.

// ArchiveEnd is the first generation that is not an archive: every level
// is written at its run's time, every archive on a day before it.
var ArchiveEnd = time.Date(1973, 1, 1, 0, 0, 0, 0, time.UTC)

// archiveStart is the first archive day; archiveDays the days it cycles
// through. Each maintenance writes a day other than the previous one's, so
// its DELETE of what it folded (the generations before its cutoff, but its
// own archive day) removes the previous archive whole, and a crashed
// maintenance's archive is removed by the next one.
var archiveStart = time.Date(1970, 1, 2, 0, 0, 0, 0, time.UTC)

const archiveDays = 1000

// ArchiveSlot is the archive day of a maintenance of generation gen: its
// day's in the cycle, or the first day after it that no archive marker
// names (used: the days ArchiveSlots returned), so two maintenances of one
// day, or one after a maintenance that crashed before its DELETE, never
// write one day, which the DELETE would keep whole.
func ArchiveSlot(gen time.Time, used []time.Time) time.Time {
	day := int(gen.UTC().Unix() / 86400 % archiveDays)
	for range archiveDays {
		slot := archiveStart.AddDate(0, 0, day)
		if !slices.ContainsFunc(used, slot.Equal) {
			return slot
		}
		day = (day + 1) % archiveDays
	}
	return archiveStart.AddDate(0, 0, day)
}

// ArchiveSlots reads the archive days the state's archive markers name
// (OutSlots, as Unix microseconds): the state's markers only (the blocks of
// NULL keys), before a maintenance picks its own (ArchiveSlot).
func (c *Compaction) ArchiveSlots() (string, error) { return c.render("archive_slots", Run{}) }

// Archives reports whether b's state is written with an archive of closed
// versions: an SCD 2 target with a change feed, a state of at most
// MaxStateBuckets/2 buckets (or none), no IGNORE NULL UPDATES column, and
// a first key column the state's filters can name by literals. A state
// partitioned by key range has none: its archive days would be no
// partitions, so a feed would read a touched key's partition whole anyway.
func Archives(b *flow.Bound) bool {
	return b.Kind() == flow.SCD2 && b.ChangeFeed() && b.StateBuckets <= flow.MaxStateBuckets/2 && b.StateKeyRange == nil && len(b.IgnoreNull) == 0 && keyFilterable(b)
}

// StatePartitions is the number of integer-range partitions of b's state
// of buckets: its buckets, and as many for their archive when it is
// archived (0: not a state of buckets).
func StatePartitions(b *flow.Bound) int {
	if b.StateBuckets > 0 && Archives(b) {
		return 2 * b.StateBuckets
	}
	return b.StateBuckets
}

// MaintainChunks are the ranges of buckets maintenance of b's state of
// buckets writes in, each statement at most per partitions (BigQuery's
// 4,000 a job): BucketChunks of its buckets, half as many a range when
// each writes its archive partitions too. One nil range: one statement.
func MaintainChunks(b *flow.Bound, per int) []*BucketChunk {
	if StatePartitions(b) > b.StateBuckets {
		per = max(1, per/2)
	}
	return BucketChunks(ChunkedPartitions(b), PerJob(b, per))
}

// withArchive is f's filter of a state of buckets widened to the buckets'
// archive partitions too: a change feed that reads every generation
// (Run.Archived nil) of an archived state of buckets.
func withArchive(b *flow.Bound, f *KeyFilter) *KeyFilter {
	a := archivedBuckets(b, f)
	if a == f || StatePartitions(b) == b.StateBuckets {
		return f
	}
	out := *f
	out.Buckets = append(append([]int64(nil), f.Buckets...), a.Buckets...)
	return &out
}

// archivedBuckets is the archive partitions' filter of f's buckets: each
// bucket plus the state's buckets.
func archivedBuckets(b *flow.Bound, f *KeyFilter) *KeyFilter {
	if f == nil || b.StateBuckets == 0 || f.Buckets == nil {
		return f
	}
	out := *f
	out.Buckets = make([]int64, len(f.Buckets))
	for i, bk := range f.Buckets {
		out.Buckets[i] = bk + int64(b.StateBuckets)
	}
	return &out
}

// ArchiveRead is how a change feed reads a state with an archive: the
// levels (generations from ArchiveEnd on) of the touched keys, and the
// archive of the Late ones (nil: none).
type ArchiveRead struct {
	Late *KeyFilter
}

// archiveParams fills what the maintenance of an archive and the change
// feed's read of one need.
func (c *Compaction) archiveParams(d *data, r Run) error {
	d.ArchiveEnd = Literal(ArchiveEnd)
	d.ArchiveSpec = archiveSpec(d)
	if !r.Archive.IsZero() {
		if !Archives(c.b) {
			return fmt.Errorf("flow %s: its state is not archived", c.b.Name)
		}
		d.P.Archive, d.P.ArchiveNext = Literal(r.Archive), Literal(r.Archive.AddDate(0, 0, 1))
		if c.b.StateBuckets > 0 {
			// The archive is the bucket's second partition, at the
			// maintenance's generation.
			d.P.ArchiveGen = d.P.Generation
			d.P.ArchiveBucket = fmt.Sprintf("IF(__archived, %s + %d, %s)", d.Bucket, c.b.StateBuckets, d.Bucket)
		} else {
			d.P.ArchiveGen = fmt.Sprintf("IF(__archived, %s, %s)", d.P.Archive, d.P.Generation)
		}
		// The archive marker names its day in its ingestion time.
		d.ArchiveMarkerValues = markerValues(c.d.MarkerValues, d.P.Archive)
	}
	if a := r.Archived; a != nil {
		d.Archived = true
		f, err := archivedBuckets(c.b, a.Late).sql(c.b)
		if err != nil {
			return err
		}
		if a.Late != nil && f == "" {
			f = "TRUE"
		}
		d.LateFilter = f
	}
	return nil
}

// archiveSpec fingerprints what decides where maintenance splits a key's
// events (the keys, the fold's positions, the tracked columns), as a SQL
// string literal.
func archiveSpec(d *data) string {
	h := fnv.New64a()
	for _, part := range [][]string{d.Keys, d.PositionAsc, d.Tracked} {
		fmt.Fprintf(h, "%s\x00", strings.Join(part, "\x01"))
	}
	return fmt.Sprintf("'%016x'", h.Sum64())
}

// positionColumns are the state columns the fold's positions (PositionAsc)
// read: the sequences, the system sequence, the op and the message id.
func positionColumns(b *flow.Bound) []string {
	var out []string
	for _, s := range b.Sequence {
		out = append(out, q(s.Name))
	}
	if b.SystemSequence != nil {
		out = append(out, q(b.SystemSequence.Name))
	}
	return append(out, q(catalog.ColStateOp), q(catalog.ColMessageID))
}

// Late reads, before a change feed's statement over r's range reads the
// levels of a state with an archive (r.Keys: the touched keys), which
// touched keys need their archive read too (OutLateKeys, as ranges of
// their first key: OutLateLo, OutLateHi, OutLateNulls), and the newest
// archive's watermark (OutArchiveWatermark; NULL: no archive) and whether
// it was split as the flow is now (OutArchiveCurrent). It reads
// the keys, positions, generation and ingestion time of those keys' rows
// in the levels, and the state's archive markers.
func (c *Compaction) Late(r Run) (string, error) {
	if !Archives(c.b) {
		return "", fmt.Errorf("flow %s: its state is not archived", c.b.Name)
	}
	d := c.d
	d.PositionCols = strings.Join(positionColumns(c.b), ", ")
	return c.renderWith("late_keys", r, d)
}
