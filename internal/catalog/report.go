package catalog

import "github.com/bqcdc/bqcdc/internal/schema"

// CompactionTable reports the last compaction run of every flow, one row
// per flow (operators read it; correctness never depends on it).
const CompactionTable = "_bqcdc_compaction_state"

// CompactionColumns is the compaction report table schema.
func CompactionColumns() schema.Columns {
	return schema.Columns{
		{Name: "flow", Type: schema.String, Required: true, Description: "Flow name."},
		{Name: "target", Type: schema.String, Description: "The flow's view."},
		{Name: "watermark", Type: schema.Timestamp, Description: "Changelog rows ingested at or before it are folded into the state table."},
		{Name: "generation", Type: schema.Timestamp, Description: "Generation the run wrote."},
		{Name: "last_run", Type: schema.Timestamp, Description: "When the run started."},
		{Name: "events_read", Type: schema.Int64, Description: "Changelog rows after the previous watermark that the run read."},
		{Name: "events_without_sequence", Type: schema.Int64, Description: "Of those, rows excluded from the views because a SEQUENCE BY column is NULL."},
		{Name: "keys_touched", Type: schema.Int64, Description: "Distinct keys among the rows read."},
		{Name: "rows_written", Type: schema.Int64, Description: "State rows the run wrote (its generation)."},
		{Name: "duration_ms", Type: schema.Int64, Description: "Run time."},
		{Name: "outcome", Type: schema.String, Description: "compacted, up to date, or failed."},
		{Name: "error", Type: schema.String, Description: "Why the run failed, if it did."},
	}
}
