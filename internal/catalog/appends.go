package catalog

import (
	"time"

	"github.com/bqcdc/bqcdc/internal/schema"
)

// AppendsTable is the append ledger: before an ingest instance appends a
// changelog row stamped t (its _cdc_ingested_at), it has a ledger row for
// the row's source whose until is at least t, acknowledged. Compaction
// reads the ledger once a run (one query over the rows of the last hours)
// instead of every changelog's metadata (one request per table): a source
// with no ledger row whose until is after a flow's reached mark (the
// ingestion time up to which the flow's last checking run found nothing
// left to fold) has no row to fold, whatever the number of tables.
//
// An instance writes a row when its cover of a source runs out, for the
// next LedgerWindow (a row per source, instance and window: a few per
// source an hour), so a source stays "appending" up to a window after its
// last append, and its flows are checked with a query meanwhile.
const AppendsTable = "_bqcdc_appends"

// Ledger columns.
const (
	ColAppendsSource   = "source"
	ColAppendsUntil    = "until"
	ColAppendsOpenedAt = "opened_at"
)

// AppendsColumns is the ledger's schema.
func AppendsColumns() schema.Columns {
	return schema.Columns{
		{Name: ColAppendsSource, Type: schema.String, Required: true, Description: "Pub/Sub topic of the changelog appended to."},
		{Name: ColAppendsUntil, Type: schema.Timestamp, Required: true, Description: "The instance stamps no row of the source later than this (_cdc_ingested_at) without writing another ledger row first. Partitioning and clustering column."},
		{Name: ColAppendsOpenedAt, Type: schema.Timestamp, Required: true, Description: "When the instance wrote this row."},
	}
}

// AppendsRetention keeps the ledger's day partitions this long: past the
// longest a flow goes without a checking query (compaction's
// FullCheckEvery, 6 h by default), after which nothing reads them.
const AppendsRetention = 3 * 24 * time.Hour

// LedgerWindow is how far ahead a ledger row covers its source.
const LedgerWindow = 5 * time.Minute

// AppendsRow is one ledger row.
func AppendsRow(source string, until, opened time.Time) map[string]any {
	return map[string]any{ColAppendsSource: source, ColAppendsUntil: until.UnixMicro(), ColAppendsOpenedAt: opened.UnixMicro()}
}
