package render

// Shape is what tells one kind's statements from another's: the templates
// its folds run and whether its target's rows are versions. There are two,
// Current and History; each kind's plan (internal/plan) says which its
// target has, and render never asks which kind a flow is.
type Shape struct {
	Fold         string // the fold a table function or the change feed runs per key (fold_current, fold_versions)
	Compact      string // compaction's fold and maintenance of a change-stream flow
	SnapshotView string // a snapshot flow's view
	SnapshotRows string // the rows a snapshot flow's compaction writes of its fold
	// Versions: the target's rows are versions, with __START_AT and
	// __END_AT (catalog.StartAt, catalog.EndAt), and a row is identified by
	// its key and __START_AT.
	Versions bool
}

// The shapes.
var (
	// Current is a target of one row per key (SCD type 1).
	Current = Shape{Fold: "fold_current", Compact: "compact_scd1", SnapshotView: "snapshot_scd1", SnapshotRows: "snapshot_rows_scd1"}
	// History is a target of versions (SCD type 2, bitemporal).
	History = Shape{Fold: "fold_versions", Compact: "compact_scd2", SnapshotView: "snapshot_scd2", SnapshotRows: "snapshot_rows_scd2", Versions: true}
)
