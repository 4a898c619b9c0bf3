// Package flow parses and validates bqcdc flow declarations: the Databricks
// AUTO CDC / APPLY CHANGES INTO syntax that data engineers already know,
// written in sql/flows/*.sql.
//
//	CREATE FLOW customers_current AS AUTO CDC INTO customers
//	FROM STREAM(`dbserver1.inventory.customers`)
//	KEYS (id)
//	APPLY AS DELETE WHEN _cdc_op = 'd'
//	SEQUENCE BY _cdc_sequence
//	COLUMNS * EXCEPT (_cdc_message_id)
//	STORED AS SCD TYPE 1;
//
// Parsing (Parse, ParseDir, Load) checks the structure; Bind checks a flow
// against the columns of its source's changelog and resolves what the SQL
// renderer needs. Every error carries file:line:column and, once known, the
// flow's name. Errors are per flow: loading and binding return the valid
// flows together with one error per refused flow, so one bad declaration
// never stops the others. rules.go lists the clause rules and their sources.
package flow

// Flow is one parsed declaration.
type Flow struct {
	Pos      Pos    // where the statement starts
	Spelling string // "AUTO CDC" or "APPLY CHANGES"

	Name    string // flow name; for APPLY CHANGES INTO without a name, the target table
	Comment string // CREATE FLOW name COMMENT '...'; "" when absent
	Target  Target
	Source  Ident // the Pub/Sub topic carrying the changes; empty for a snapshot flow

	// Snapshot is the source of an AUTO CDC FROM SNAPSHOT flow: a BigQuery
	// table holding full extracts of a source table (nil for change-stream
	// flows, which read a topic).
	Snapshot *SnapshotSource
	// Version is the VERSION BY column of a snapshot flow: the rows of one
	// version form one snapshot, applied in ascending version order.
	Version *Ident

	Keys     []Ident
	Sequence []Ident // one column, or the fields of SEQUENCE BY STRUCT(...)
	// SequenceStruct records that SEQUENCE BY used STRUCT(...), so __START_AT
	// and __END_AT are STRUCTs even with one field.
	SequenceStruct bool

	Columns      *ColumnSpec // nil: COLUMNS *
	Where        *Expr
	DeleteWhen   *Expr
	TruncateWhen *Expr
	SCDType      int // 1 or 2 (2 for BITEMPORAL too: business-time history)
	// Bitemporal is STORED AS BITEMPORAL: SCD type 2 history in business
	// time (SEQUENCE BY), versioned in system time (SystemSequence).
	Bitemporal     bool
	SystemSequence *Ident      // SYSTEM SEQUENCE BY column; nil when absent
	TrackHistory   *ColumnSpec // SCD 2 only
	IgnoreNull     *ColumnSpec // IGNORE NULL UPDATES [ON ...]; All with no Except for the plain form
	// NoChangeFeed: the target's declaration turns its change feed off
	// (TBLPROPERTIES ('delta.enableChangeDataFeed' = 'false')); see
	// Flow.ChangeFeed.
	NoChangeFeed bool
	// StateBuckets partitions the state by a hash bucket of the key, 0 to
	// 2..MaxStateBuckets (TBLPROPERTIES ('bqcdc.state.buckets' = 'N'));
	// 0: by generation (the default).
	StateBuckets int
	// StateKeyRange partitions the state by ranges of its first key
	// (TBLPROPERTIES ('bqcdc.state.key_range' = 'START:END')); nil: not.
	StateKeyRange *KeyRange
	// History keeps an SCD 1 flow's every event in a history for its
	// <target>_at (TBLPROPERTIES ('bqcdc.history' = 'true');
	// sql/render/history.go).
	History bool
	// LatenessHorizonDays lets maintenance drop an SCD 2 or bitemporal
	// flow's events that no view needs once they are older than that many
	// days
	// (TBLPROPERTIES ('bqcdc.lateness_horizon_days' = 'N'),
	// LatenessHorizonProperty); 0: every event is kept.
	LatenessHorizonDays int

	clauses map[string]Pos // clause name -> first position, for duplicate checks
	// fromSnapshot: the statement was spelled ... FROM SNAPSHOT INTO, so its
	// FROM names a table.
	fromSnapshot bool
}

// Target is the table (view) a flow maintains.
type Target struct {
	Dataset string // "" for the default dataset
	Table   string
	Pos     Pos
}

// String renders dataset.table or table.
func (t Target) String() string {
	if t.Dataset == "" {
		return t.Table
	}
	return t.Dataset + "." + t.Table
}

// SnapshotSource is the BigQuery table a snapshot flow reads, in the
// deployment's project.
type SnapshotSource struct {
	Dataset string
	Table   string
	Pos     Pos
}

// String renders dataset.table.
func (s SnapshotSource) String() string { return s.Dataset + "." + s.Table }

// IsSnapshot reports whether f is an AUTO CDC FROM SNAPSHOT flow.
func (f *Flow) IsSnapshot() bool { return f.Snapshot != nil }

// SourceKey identifies what a flow reads: its topic, or for a snapshot flow
// "table:dataset.table" (a topic id never holds a ':'). BindAll takes the
// columns of each source by this key.
func (f *Flow) SourceKey() string {
	if f.Snapshot != nil {
		return SnapshotKeyPrefix + f.Snapshot.String()
	}
	return f.Source.Name
}

// SnapshotKeyPrefix starts the SourceKey of a snapshot flow.
const SnapshotKeyPrefix = "table:"

// Ident is a name with the position it was written at.
type Ident struct {
	Name string
	Pos  Pos
}

// ColumnSpec is COLUMNS / TRACK HISTORY ON / IGNORE NULL UPDATES ON: either
// all columns except some, or an explicit list.
type ColumnSpec struct {
	Pos    Pos
	All    bool
	Except []Ident // with All
	List   []Ident // without All
}

// Expr is a condition, kept as tokens so Bind can resolve its column
// references against the changelog and re-render it safely.
type Expr struct {
	Pos  Pos
	toks []token
}
