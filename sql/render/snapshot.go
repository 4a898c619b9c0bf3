package render

import (
	"fmt"
	"strconv"
	"time"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/schema"
)

// Snapshot flows (AUTO CDC FROM SNAPSHOT) read a table of snapshots, each
// the rows of one VERSION BY value. Their SQL turns the snapshots into
// change events (every row of a snapshot an upsert at its version, every
// key missing from the next snapshot a delete at that snapshot's version)
// and folds them with the SCD 1 and SCD 2 folds of change streams
// (fold_scd1, fold_scd2), so the semantics are one.
//
// The state table holds what is applied up to an applied version: the
// current rows (SCD 1) or open versions (SCD 2) of the generation that
// applied it, the closed versions (SCD 2; final, since an older snapshot
// loaded later is skipped), and a marker with the applied version and the
// rows processed. A view folds the state's current rows with the snapshots
// newer than the applied version; a compaction run writes that fold as a
// new generation. Versions are carried as version keys (integers, or the
// text of STRING versions): the BigQuery emulator joins, partitions and
// orders TIMESTAMPs with fractional seconds wrongly, and integers are
// exact everywhere.

// versionKey returns how a version column becomes its version key and
// back, as formats of one operand.
func versionKey(c schema.Column) (key, out string) {
	switch c.Type {
	case schema.Timestamp:
		return "UNIX_MICROS(%s)", "TIMESTAMP_MICROS(%s)"
	case schema.Datetime:
		return "UNIX_MICROS(TIMESTAMP(%s))", "DATETIME(TIMESTAMP_MICROS(%s))"
	case schema.Date:
		return "UNIX_DATE(%s)", "DATE_FROM_UNIX_DATE(%s)"
	}
	return "%s", "%s"
}

// VersionBound renders a version key (as text, as the compaction queries
// return it) as a literal of the version column's type: a constant lower
// bound on the column, with which BigQuery prunes the partitions (or
// clustered blocks) of older snapshots.
func VersionBound(b *flow.Bound, key string) (string, error) {
	c := b.Sequence[0]
	if c.Type == schema.String {
		return flow.QuoteString(key), nil
	}
	n, err := versionKeyInt(b, key)
	if err != nil {
		return "", err
	}
	switch c.Type {
	case schema.Timestamp:
		return Literal(time.UnixMicro(n)), nil
	case schema.Datetime:
		return "DATETIME '" + time.UnixMicro(n).UTC().Format("2006-01-02 15:04:05.999999") + "'", nil
	case schema.Date:
		return "DATE '" + time.Unix(n*86400, 0).UTC().Format(time.DateOnly) + "'", nil
	}
	return strconv.FormatInt(n, 10), nil
}

func nullOf(c schema.Column) string {
	if c.Repeated {
		return "CAST([] AS " + c.SQLType() + ")"
	}
	return "CAST(NULL AS " + c.SQLType() + ")"
}

// snapshotData is the template data of a snapshot flow; bound is a constant
// lower bound of the version column ("" for none).
func snapshotData(b *flow.Bound, loc catalog.Location, s Shape, bound string) *data {
	v := b.Sequence[0]
	d := &data{
		Summary: b.String(), File: b.Pos.File,
		State: loc.StateTable(b.Flow), SnapTable: loc.SnapshotTable(b.Flow), View: loc.ViewTable(b.Flow),
		Where: b.Where, OpExpr: "'U'", Shape: s, EventsCTE: "events",
		VersionCol: q(v.Name), VersionKeyType: catalog.VersionKeyType(v), Bound: bound,
	}
	key, out := versionKey(v)
	d.VersionKey = fmt.Sprintf(key, q(v.Name))
	d.ClosedStart, d.ClosedEnd = fmt.Sprintf(out, catalog.ColStateVersion), fmt.Sprintf(out, catalog.ColStateVersionEnd)
	d.columns(b, b.Output)
	for _, c := range b.Output {
		d.NullOutput = append(d.NullOutput, nullOf(c))
		if isIn(b.Keys, c.Name) {
			d.GoneOutput = append(d.GoneOutput, q(c.Name))
		} else {
			d.GoneOutput = append(d.GoneOutput, nullOf(c)+" AS "+q(c.Name))
		}
	}
	for _, k := range b.Keys {
		d.KeysGone = append(d.KeysGone, "p."+q(k.Name))
	}
	// The version key is the fold's sequence; the tie-breaker its message id.
	d.Sequence = []seqCol{{Name: catalog.ColStateVersion, Field: catalog.ColStateVersion, Start: "__start0", Next: "__next0"}}
	d.PositionAsc = []string{catalog.ColStateVersion, msgPos}
	d.PositionDesc = []string{catalog.ColStateVersion + " DESC", msgPos + " DESC"}
	d.PositionDescQualified = []string{"e." + catalog.ColStateVersion + " DESC", "IFNULL(e.`" + catalog.ColMessageID + "`, '') DESC"}
	d.NonEmpty = "__next0 IS NULL OR NOT (__next0 = __start0)"
	d.StartAt, d.EndAt = fmt.Sprintf(out, "__start0"), fmt.Sprintf(out, "__next0")
	d.partition(false)
	return d
}

// SnapshotView renders the view of a snapshot flow; bound is a constant
// lower bound of its version column (VersionBound of a version applied, ""
// for none).
func SnapshotView(b *flow.Bound, loc catalog.Location, s Shape, bound string) (string, error) {
	if b.Version == nil {
		return "", fmt.Errorf("flow %s reads no snapshots", b.Name)
	}
	buf := newSQLBuilder()
	if err := templates.ExecuteTemplate(buf, s.SnapshotView, snapshotData(b, loc, s, bound)); err != nil {
		return "", fmt.Errorf("rendering view of flow %s: %w", b.Name, err)
	}
	return buf.String(), nil
}

// SnapshotCompaction renders the statements of a snapshot flow's
// compaction runs.
type SnapshotCompaction struct {
	b     *flow.Bound
	loc   catalog.Location
	shape Shape
}

// NewSnapshotCompaction prepares the compaction statements of a snapshot
// flow whose target has shape s.
func NewSnapshotCompaction(b *flow.Bound, loc catalog.Location, s Shape) *SnapshotCompaction {
	return &SnapshotCompaction{b: b, loc: loc, shape: s}
}

func (c *SnapshotCompaction) render(name, bound string, gen time.Time, compaction bool, with ...func(*data)) (string, error) {
	d := snapshotData(c.b, c.loc, c.shape, bound)
	for _, f := range with {
		f(d)
	}
	d.Compaction = compaction
	d.P.Generation = Literal(gen)
	if compaction {
		// The state keeps version keys.
		d.StartAt, d.EndAt, d.FoldCTE = "__start0", "__next0", "folded"
	}
	buf := newSQLBuilder()
	if err := templates.ExecuteTemplate(buf, name, d); err != nil {
		return "", fmt.Errorf("rendering %s of flow %s: %w", name, c.b.Name, err)
	}
	return buf.String(), nil
}

// Marker reads the applied version (as text), its generation, the rows
// processed, and the newest generation of the state.
func (c *SnapshotCompaction) Marker() (string, error) {
	return c.render("snapshot_marker_now", "", Epoch, false)
}

// Stats counts what a run would apply (bound: VersionBound of the applied
// version, "" before the first).
func (c *SnapshotCompaction) Stats(bound string) (string, error) {
	return c.render("snapshot_stats", bound, Epoch, false)
}

// Fold is the INSERT of generation gen and its marker: the run's commit
// point. It applies the versions after bound up to the version key upTo
// (as the statistics return it), never a version loaded after they ran.
func (c *SnapshotCompaction) Fold(bound, upTo string, gen time.Time) (string, error) {
	lit, err := versionKeyLiteral(c.b, upTo)
	if err != nil {
		return "", err
	}
	return c.render("compact_snapshot", bound, gen, true, func(d *data) { d.UpTo = lit })
}

// versionKeyLiteral renders a version key (as text, as the compaction
// queries return it) as a literal of the version key's type.
func versionKeyLiteral(b *flow.Bound, key string) (string, error) {
	if b.Sequence[0].Type == schema.String {
		return flow.QuoteString(key), nil
	}
	n, err := versionKeyInt(b, key)
	if err != nil {
		return "", err
	}
	return strconv.FormatInt(n, 10), nil
}

// versionKeyInt reads the version key of a flow whose versions are not
// STRING: an integer, refused otherwise rather than spliced into SQL.
func versionKeyInt(b *flow.Bound, key string) (int64, error) {
	n, err := strconv.ParseInt(key, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("version key %q of flow %s is not an integer: %w", key, b.Name, err)
	}
	return n, nil
}

// GC deletes the current rows, open versions and markers of generations
// before gen.
func (c *SnapshotCompaction) GC(gen time.Time) (string, error) {
	return c.render("snapshot_gc", "", gen, false)
}
