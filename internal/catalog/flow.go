package catalog

import (
	"github.com/bqcdc/bqcdc/internal/schema"
)

// A flow keeps its objects in the target's dataset (the default dataset
// when the target names none): its view (named by the flow's target), its
// state table (<target>__state), and the time-travel table functions
// <target>_at(ts) (the target as of a time) and <target>_changes(from, to)
// (its change feed).

// StateSuffix ends the name of a flow's state table.
const StateSuffix = "__state"

// Location says where bqcdc's objects live: a project and the default
// dataset (changelogs, dead letters, reports, unqualified targets).
type Location struct {
	Project        string
	DefaultDataset string
}

// Dataset is the dataset of the flow's view and state table.
func (l Location) Dataset(f Flow) string {
	if ds, _ := f.TargetName(); ds != "" {
		return ds
	}
	return l.DefaultDataset
}

// ViewName is the view's table id (the flow's target).
func ViewName(f Flow) string { return targetTable(f) }

// Suffixes of a flow's table functions.
const (
	AtSuffix      = "_at"
	ChangesSuffix = "_changes"
)

// AtFunctionName is the id of the point-in-time table function.
func AtFunctionName(f Flow) string { return RoutineName(f, AtSuffix) }

// AsOfSuffix ends the name of a bitemporal flow's as-of table function.
const AsOfSuffix = "_as_of"

// AsOfFunctionName is the id of a bitemporal flow's
// <target>_as_of(business_time, system_time).
func AsOfFunctionName(f Flow) string { return RoutineName(f, AsOfSuffix) }

// ViewTable is the quoted view of the flow, for SQL.
func (l Location) ViewTable(f Flow) string { return l.table(l.Dataset(f), ViewName(f)) }

// ChangesFunctionName is the id of the change-feed table function.
func ChangesFunctionName(f Flow) string { return RoutineName(f, ChangesSuffix) }

// RoutineName is the id of the flow's table function with the suffix
// (AtSuffix, ChangesSuffix, AsOfSuffix: the kind says which it has).
func RoutineName(f Flow, suffix string) string { return targetTable(f) + suffix }

// Routine is a quoted table function of the flow, for SQL.
func (l Location) Routine(f Flow, name string) string { return l.table(l.Dataset(f), name) }

// Columns the change feed adds to the target's columns.
const (
	ColChangeType     = "_change_type"     // insert, update_preimage, update_postimage, delete (Delta's change data feed calls it the same)
	ColCommitPosition = "_commit_position" // the _cdc_ingested_at at which the change was committed
)

// StateName is the state table's id.
func StateName(f Flow) string { return targetTable(f) + StateSuffix }

// StateCopySuffix ends the name of the table a flow's state is copied to
// while its partitioning changes (a state of buckets turned on or off).
const StateCopySuffix = "__state_copy"

// StateCopyName is the table of a flow's state while its layout changes.
func StateCopyName(f Flow) string { return targetTable(f) + StateCopySuffix }

func (l Location) table(dataset, table string) string {
	return QuoteIdent(l.Project) + "." + QuoteIdent(dataset) + "." + QuoteIdent(table)
}

// ChangelogTable is the quoted changelog of the flow's source, for SQL.
func (l Location) ChangelogTable(f Flow) string {
	return l.table(l.DefaultDataset, TableName(f.SourceTopic()))
}

// StateTable is the quoted state table of the flow, for SQL.
func (l Location) StateTable(f Flow) string { return l.table(l.Dataset(f), StateName(f)) }

// StateCopyTable is the quoted StateCopyName, for SQL.
func (l Location) StateCopyTable(f Flow) string { return l.table(l.Dataset(f), StateCopyName(f)) }

// EventColumns are the changelog columns a flow's events carry, in changelog
// order: keys, sequence (and system sequence), output columns, and the
// message id and ingestion time used to count a redelivered message once.
func EventColumns(f Shaped) schema.Columns {
	b := f.Shape()
	need := map[string]bool{ColMessageID: true, ColIngestedAt: true}
	for _, c := range b.Keys {
		need[c.Name] = true
	}
	for _, c := range b.Sequence {
		need[c.Name] = true
	}
	if b.SystemSequence != nil {
		need[b.SystemSequence.Name] = true
	}
	for _, c := range b.Output {
		need[c.Name] = true
	}
	out := make(schema.Columns, 0, len(need))
	for _, c := range b.Changelog {
		if need[c.Name] {
			out = append(out, c)
		}
	}
	return out
}

// State table columns beyond the flow's event columns. Compaction writes
// them and the views read them (sql/render/templates spell them out).
const (
	ColStateKey       = "__key"       // the key as one string, for set operations that must match NULL keys
	ColStateOp        = "__op"        // U upsert, D delete, T truncate, W watermark marker, A archive marker (render/archive.go)
	ColStateGen       = "__gen"       // generation: when the compaction run that wrote the row started (archived rows: a day of 1970-1972)
	ColStateWatermark = "__watermark" // on W markers: changelog rows ingested up to it are folded; on A markers: the archive's maintenance read those
	ColStateBucket    = "__bucket"    // a state of buckets (flow.StateBucketsProperty): the key's hash bucket, its partitioning column
	ColStateBase      = "__base"      // a state of versions: on a sparse row, the identity of the full row of its key it stores only its differences from
)

// SnapshotTable is the quoted table a snapshot flow reads, for SQL: its
// dataset.table in the deployment's project.
func (l Location) SnapshotTable(f Flow) string {
	ds, t := f.SnapshotName()
	return l.table(ds, t)
}

// Columns of a snapshot flow's state table beyond the target's columns and
// __key, __op, __gen (ColState*). A version is kept as its version key
// (VersionKeyType): the version as an INT64 (TIMESTAMP and DATETIME as
// microseconds, DATE as days since 1970-01-01) or a STRING, so state rows
// join and order on exact integers.
const (
	ColStateVersion    = "__ver"     // U: the version the row starts at (SCD 2) or was applied at (SCD 1); C: the closed version's start; W: the applied version
	ColStateVersionEnd = "__ver_end" // C: the version the closed version ends at (exclusive)
	ColStateRows       = "__rows"    // W: rows of the snapshot table processed so far (applied or filtered out; every row with a version at or before the applied one when it was read)
)

// Ops of a snapshot flow's state rows.
const (
	SnapshotOpCurrent = "U" // SCD 1: a row of the applied snapshot; SCD 2: an open version
	SnapshotOpClosed  = "C" // SCD 2: a closed version (final: older snapshots are skipped, so it never changes)
	SnapshotOpMarker  = "W" // the applied version and the rows processed, one per generation
)

// VersionKeyType is the BigQuery type a snapshot flow keeps its versions
// as: STRING for STRING versions, else INT64.
func VersionKeyType(version schema.Column) string {
	if version.Type == schema.String {
		return schema.String
	}
	return schema.Int64
}

// ChangesSuffix ends the name of a flow's change table: the materialized
// rows of its change feed <target>_changes (change-stream flows of SCD type
// 1 and 2).
const ChangeTableSuffix = "__changes"

// ChangesName is the change table's id.
func ChangesName(f Flow) string { return targetTable(f) + ChangeTableSuffix }

// ChangesTable is the quoted change table of the flow, for SQL.
func (l Location) ChangesTable(f Flow) string { return l.table(l.Dataset(f), ChangesName(f)) }

// Columns of a change table beyond the target's columns (and an SCD 2
// target's interval) and the feed's ColChangeType and ColCommitPosition.
// Marker rows (ColCommitPosition NULL) record how far the feed is
// materialized.
const (
	ColChangeKey = "__key" // the key as JSON text
	ColChangeID  = "__id"  // SCD 2: __START_AT as JSON text (the row's identity with the key); SCD 1: ''
)

// IntervalType is the BigQuery type of an SCD 2 target's __START_AT and
// __END_AT: the sequence column's, or a STRUCT of SEQUENCE BY STRUCT(...)'s.
func IntervalType(f Shaped) string {
	b := f.Shape()
	if !b.SequenceStruct {
		return b.Sequence[0].SQLType()
	}
	return schema.Column{Type: schema.Record, Fields: b.Sequence}.SQLType()
}

// StateLayoutLabel on a state table names its layout; StateLayout is the
// current one: levels (every row of every generation counts; compaction
// appends a level per run and folds the levels daily) with the change feed
// materialized in the change table. A state table without the label is of
// an older bqcdc (generations per key, no change table): compaction brings
// it to the layout (creating the change table; its first run materializes
// the feed's history), losing nothing, as its rows are valid levels.
// levels-2: a truncate row carries no key (NULL keys, with the markers);
// levels-1 kept the key of the truncate's row, which bqcdc apply (or the
// next run) clears before it labels the state levels-2.
const (
	StateLayoutLabel = "bqcdc-layout"
	StateLayout      = "levels-2"
)

// GoldDataset is the dataset of a materialized view (gold flow): the one
// its name gives, else the default dataset.
func (l Location) GoldDataset(g Gold) string {
	if ds, _ := g.GoldName(); ds != "" {
		return ds
	}
	return l.DefaultDataset
}

// GoldView is the quoted view of a materialized view, for SQL.
func (l Location) GoldView(g Gold) string { return l.table(l.GoldDataset(g), goldTable(g)) }

// A materialized view that compaction can refresh keeps its aggregate as of
// the source's watermark in <name>__state, shown by the view
// <name>_refreshed.
const GoldRefreshedSuffix = "_refreshed"

// The columns of a materialized view's state that name its groups and
// versions (the partial sums are the renderer's own: sql/render's
// goldstate.go). A refresh appends a version of each group it touches;
// per group only the newest version counts.
const (
	ColGoldGroup   = "__group"   // the group (its keys and window) as JSON text, computed by the statements (not stored)
	ColGoldHash    = "__gkey"    // FARM_FINGERPRINT of __group, the clustering column of a view without a window: NULL on markers
	ColGoldVersion = "__version" // the position the version is exact at (20 digits of microseconds), "-", the refresh's run
	// ColGoldEventMax, on the markers of a view with a WATERMARK: the newest
	// time of its window's column seen up to the marker's position.
	ColGoldEventMax = "__event_max"
)

// GoldFinalName and GoldFinalViewName are the ids of a materialized view's
// final windows (WATERMARK: append mode): the table compaction appends
// them to, and the view that reads it.
func GoldFinalName(g Gold) string { return goldTable(g) + GoldFinalSuffix }

func GoldFinalViewName(g Gold) string { return goldTable(g) + "_final" }

// GoldFinal and GoldFinalView are them quoted, for SQL.
func (l Location) GoldFinal(g Gold) string { return l.table(l.GoldDataset(g), GoldFinalName(g)) }

func (l Location) GoldFinalView(g Gold) string {
	return l.table(l.GoldDataset(g), GoldFinalViewName(g))
}

// GoldStateName and GoldRefreshedName are the ids of a materialized view's
// state table and refreshed view.
func GoldStateName(g Gold) string { return goldTable(g) + StateSuffix }

func GoldRefreshedName(g Gold) string { return goldTable(g) + GoldRefreshedSuffix }

// GoldState and GoldRefreshed are the quoted state table and refreshed
// view, for SQL.
func (l Location) GoldState(g Gold) string { return l.table(l.GoldDataset(g), GoldStateName(g)) }

func (l Location) GoldRefreshed(g Gold) string {
	return l.table(l.GoldDataset(g), GoldRefreshedName(g))
}

// GoldChangesName is the id of a materialized view's change feed, a table
// function: <name>_changes.
func GoldChangesName(g Gold) string { return goldTable(g) + ChangesSuffix }

// GoldChanges is the quoted change feed of a materialized view, for SQL.
func (l Location) GoldChanges(g Gold) string {
	return l.table(l.GoldDataset(g), GoldChangesName(g))
}
