package plan

import (
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/schema"
)

// The layouts of a flow's tables, by kind: the plan's kind file says which
// its state has (stream.go, snapshot.go). catalog names their columns.

// streamStateColumns is the schema of a change-stream flow's state table:
// the event columns of the flow (keys, sequence, output, message id,
// ingestion time) plus the op and the generation.
func streamStateColumns(b *flow.Bound) schema.Columns {
	cols := append(schema.Columns{}, catalog.EventColumns(b)...)
	for i := range cols {
		cols[i].Required = false
	}
	cols = append(cols,
		schema.Column{Name: catalog.ColStateKey, Type: schema.String, Description: "The key as JSON text (NULL on truncate and watermark rows)."},
		schema.Column{Name: catalog.ColStateOp, Type: schema.String, Required: true, Description: "U upsert, D delete (tombstone), T truncate, W watermark marker."},
		schema.Column{Name: catalog.ColStateGen, Type: schema.Timestamp, Required: true, Description: "Generation: start of the compaction run that wrote the row; per key only the newest generation counts."},
		schema.Column{Name: catalog.ColStateWatermark, Type: schema.Timestamp, Description: "On W rows: every changelog row ingested at or before it is folded; _cdc_ingested_at holds the newest ingestion time read."},
	)
	if b.StateBuckets > 0 {
		cols = append(cols, schema.Column{Name: catalog.ColStateBucket, Type: schema.Int64, Description: "The key's hash bucket (ABS(MOD(FARM_FINGERPRINT(__key), buckets))), the partitioning column; NULL on truncate and watermark rows."})
	}
	return cols
}

// historyStateColumns is the schema of a state of versions (SCD 2,
// bitemporal): a change stream's, plus the base of a sparse row. Such a
// state keeps every event; maintenance stores an event that opens no
// version (render: sparse rows) as its differences from the full row
// that opened its version, so a history of many small changes is billed
// for them, not for whole rows.
func historyStateColumns(b *flow.Bound) schema.Columns {
	return append(streamStateColumns(b), schema.Column{Name: catalog.ColStateBase, Type: schema.Int64, Description: "On a sparse row (an event that opens no version, written by maintenance): the identity of the full row of its key whose values its NULL columns repeat; NULL on full rows."})
}

// snapshotStateColumns is the schema of a snapshot flow's state table: the
// target's columns, the version interval as version keys, and the key,
// op, generation and (on markers) the rows processed.
func snapshotStateColumns(b *flow.Bound) schema.Columns {
	cols := append(schema.Columns{}, b.Output...)
	for i := range cols {
		cols[i].Required = false
	}
	vt := catalog.VersionKeyType(b.Sequence[0])
	return append(cols,
		schema.Column{Name: catalog.ColStateVersion, Type: vt, Description: "U: the version (as a version key) an open version starts at (SCD 2) or the current row was applied at (SCD 1); C: the closed version's start; W: the applied version."},
		schema.Column{Name: catalog.ColStateVersionEnd, Type: vt, Description: "C: the version (as a version key) the closed version ends at (exclusive)."},
		schema.Column{Name: catalog.ColStateKey, Type: schema.String, Description: "The key as JSON text (NULL on marker rows)."},
		schema.Column{Name: catalog.ColStateOp, Type: schema.String, Required: true, Description: "U current row (SCD 1) or open version (SCD 2), C closed version (SCD 2), W marker."},
		schema.Column{Name: catalog.ColStateGen, Type: schema.Timestamp, Required: true, Description: "Generation: start of the compaction run that wrote the row; U rows count only in the newest marker's generation."},
		schema.Column{Name: catalog.ColStateRows, Type: schema.Int64, Description: "On W rows: rows of the snapshot table processed up to the applied version; rows beyond them at or before it are skipped snapshots."},
	)
}

// changesColumns is the schema of a flow's change table: the target's
// columns (with versions, a target of versions' interval), the change type and
// commit position, the row's identity, the generation of the run that
// wrote it, and (on markers) the position up to which the feed is final.
// It is partitioned by day of catalog.ColCommitPosition and clustered by it, so a
// read of a range of positions is billed for those days.
func changesColumns(b *flow.Bound, versions bool) schema.Columns {
	cols := append(schema.Columns{}, b.Output...)
	for i := range cols {
		cols[i].Required = false
	}
	if versions {
		for _, name := range []string{catalog.StartAt, catalog.EndAt} {
			c := schema.Column{Name: name, Description: "The version's interval, as the target shows it."}
			if b.SequenceStruct {
				c.Type, c.Fields = schema.Record, append(schema.Columns{}, b.Sequence...)
				for i := range c.Fields {
					c.Fields[i].Required = false
				}
			} else {
				c.Type = b.Sequence[0].Type
				c.Precision, c.Scale = b.Sequence[0].Precision, b.Sequence[0].Scale
			}
			cols = append(cols, c)
		}
	}
	return append(cols,
		schema.Column{Name: catalog.ColChangeType, Type: schema.String, Description: "insert, update_preimage, update_postimage or delete; NULL on markers."},
		schema.Column{Name: catalog.ColCommitPosition, Type: schema.Timestamp, Description: "The _cdc_ingested_at at which the change was committed; NULL on markers. Partitioning and clustering column."},
		schema.Column{Name: catalog.ColChangeKey, Type: schema.String, Description: "The key as JSON text."},
		schema.Column{Name: catalog.ColChangeID, Type: schema.String, Description: "SCD 2: __START_AT as JSON text; SCD 1: empty."},
		schema.Column{Name: catalog.ColStateGen, Type: schema.Timestamp, Required: true, Description: "Start of the compaction run that wrote the row; per key and position the newest run's rows count."},
		schema.Column{Name: catalog.ColStateWatermark, Type: schema.Timestamp, Description: "On markers: the feed is final (materialized) up to this position."},
	)
}
