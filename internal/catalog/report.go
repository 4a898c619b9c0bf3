package catalog

import (
	"fmt"
	"time"

	"github.com/bqcdc/bqcdc/internal/schema"
)

// CompactionRunsTable records every compaction run of every flow, one row
// per flow and run, appended through the Storage Write API (no DML: many
// flows and concurrent runs never contend for it). Operators read it;
// correctness never depends on it.
const CompactionRunsTable = "_bqcdc_compaction_runs"

// CompactionStateView shows each flow's latest run (the newest row per flow
// of CompactionRunsTable).
const CompactionStateView = "_bqcdc_compaction_state"

// StatusView shows one row per flow: the newest change it has seen and
// its lag, the rows waiting in its tail, its last compaction and the
// dead letters of its source in the last day (sql/render renders it; bqcdc
// apply creates it; bqcdc status runs the same query).
const StatusView = "_bqcdc_status"

// CompactionRunsColumns is the compaction report table schema.
func CompactionRunsColumns() schema.Columns {
	return schema.Columns{
		{Name: "run_at", Type: schema.Timestamp, Required: true, Description: "When the run started. Partitioning column."},
		{Name: "run_id", Type: schema.String, Description: "The run (its start time and shard)."},
		{Name: "shard", Type: schema.Int64, Description: "The shard the run compacted (0 when not sharded)."},
		{Name: "flow", Type: schema.String, Required: true, Description: "Flow name."},
		{Name: "target", Type: schema.String, Description: "The flow's view."},
		{Name: "source", Type: schema.String, Description: "The flow's source topic."},
		{Name: "outcome", Type: schema.String, Description: "compacted, up to date (checked, nothing to fold), idle (changelog metadata unchanged: no query), deferred (the run's time budget was spent), settling (a snapshot flow whose table changed within the settle time: its newest version waits), or failed."},
		{Name: "events_read", Type: schema.Int64, Description: "Changelog rows after the previous watermark that the run read."},
		{Name: "events_without_sequence", Type: schema.Int64, Description: "Of those, rows excluded from the views because a SEQUENCE BY column is NULL."},
		{Name: "keys_touched", Type: schema.Int64, Description: "Distinct keys among the rows read."},
		{Name: "rows_written", Type: schema.Int64, Description: "State rows the fold wrote, from its job statistics."},
		{Name: "watermark_before", Type: schema.Timestamp, Description: "Changelog rows ingested at or before it were folded before the run."},
		{Name: "watermark", Type: schema.Timestamp, Description: "Changelog rows ingested at or before it are folded into the state table."},
		{Name: "generation", Type: schema.Timestamp, Description: "Generation the run wrote."},
		{Name: "jobs", Type: schema.Int64, Description: "Query jobs the run started for the flow (0 when idle)."},
		{Name: "bytes_billed", Type: schema.Int64, Description: "Bytes BigQuery billed for those jobs."},
		{Name: "duration_ms", Type: schema.Int64, Description: "Run time of the flow."},
		{Name: "error", Type: schema.String, Description: "Why the run failed, or what went wrong after it committed."},
		{Name: "applied_version", Type: schema.String, Description: "Snapshot flows: the version applied (at least), as a SQL literal of the VERSION BY column."},
		{Name: "snapshot_rows_skipped", Type: schema.Int64, Description: "Snapshot flows: rows of the snapshot table never applied, over its life: loaded with a version at or before the applied one after it was applied, or with a NULL version."},
		{Name: "newest_source_ts", Type: schema.Timestamp, Description: "Runs that read the changelog's new rows: the newest _cdc_source_ts among them (the status view's freshness when it reads no changelog)."},
		{Name: "last_ingested_at", Type: schema.Timestamp, Description: "Runs that read the changelog's new rows: the newest _cdc_ingested_at among them."},
		{Name: "tail_rows", Type: schema.Int64, Description: "Runs that read the changelog's new rows: those left after the run's watermark (a view's tail)."},
		{Name: "change_feed_held", Type: schema.String, Description: "Why the run did not materialize the flow's change feed, and what to do (a feed turned off and on again is held until its change table is dropped and bqcdc apply runs)."},
		{Name: "keys_outside_range", Type: schema.Bool, Description: "A flow whose state is partitioned by key range (bqcdc.state.key_range): the run touched keys outside the range, which share one partition pruned by clustering only; widen the range and run bqcdc apply."},
	}
}

// CompactionStateQuery is the query of CompactionStateView over
// project.dataset.
func CompactionStateQuery(project, dataset string) string {
	return fmt.Sprintf("SELECT * EXCEPT (rn) FROM (\n  SELECT *, ROW_NUMBER() OVER (PARTITION BY flow ORDER BY run_at DESC) AS rn\n  FROM `%s.%s.%s`\n) WHERE rn = 1",
		project, dataset, CompactionRunsTable)
}

// CompactionRun is one row of CompactionRunsTable.
type CompactionRun struct {
	RunID                                       string
	RunAt                                       time.Time
	Shard                                       int
	Flow, Target, Source, Outcome, Error        string
	EventsRead, WithoutSequence, KeysTouched    int64
	RowsWritten, BytesBilled                    int64
	Jobs                                        int
	WatermarkBefore, WatermarkAfter, Generation time.Time
	Duration                                    time.Duration
	AppliedVersion                              string
	RowsSkipped                                 int64
	FeedHeld                                    string
	KeysOutsideRange                            bool
	// Of runs that read the changelog's new rows (TailRows nil otherwise).
	NewestSourceTS, LastIngestedAt time.Time
	TailRows                       *int64
}

// Row renders the run in canonical form.
func (r CompactionRun) Row() map[string]any {
	row := map[string]any{
		"run_at": r.RunAt.UnixMicro(), "run_id": r.RunID, "shard": int64(r.Shard), "flow": r.Flow, "target": r.Target,
		"source": r.Source, "outcome": r.Outcome, "events_read": r.EventsRead, "events_without_sequence": r.WithoutSequence,
		"keys_touched": r.KeysTouched, "rows_written": r.RowsWritten, "jobs": int64(r.Jobs), "bytes_billed": r.BytesBilled,
		"duration_ms": r.Duration.Milliseconds(),
	}
	for col, t := range map[string]time.Time{"watermark_before": r.WatermarkBefore, "watermark": r.WatermarkAfter, "generation": r.Generation} {
		if !t.IsZero() {
			row[col] = t.UnixMicro()
		}
	}
	if r.Error != "" {
		row["error"] = r.Error
	}
	if r.FeedHeld != "" {
		row["change_feed_held"] = r.FeedHeld
	}
	if r.KeysOutsideRange {
		row["keys_outside_range"] = true
	}
	if r.AppliedVersion != "" {
		row["applied_version"] = r.AppliedVersion
		row["snapshot_rows_skipped"] = r.RowsSkipped
	}
	if r.TailRows != nil {
		row["tail_rows"] = *r.TailRows
		for col, t := range map[string]time.Time{"newest_source_ts": r.NewestSourceTS, "last_ingested_at": r.LastIngestedAt} {
			if !t.IsZero() {
				row[col] = t.UnixMicro()
			}
		}
	}
	return row
}

// FlowsTable lists the deployed flows (flow, target, source, kind) for the
// status view when they are too many to list in its query; bqcdc apply
// writes it (render.FlowsTable), labelled with a hash of the list.
const FlowsTable = "_bqcdc_flows"
