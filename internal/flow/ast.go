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
	Source  Ident // the Pub/Sub topic carrying the changes

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

	clauses map[string]Pos // clause name -> first position, for duplicate checks
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
