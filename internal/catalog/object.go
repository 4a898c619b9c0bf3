package catalog

import "github.com/bqcdc/bqcdc/internal/schema"

// catalog sits below package flow (flow takes its column names and the
// metadata prefix from here), so it cannot name flow's types: what it needs
// of a flow or a materialized view to name and lay out their objects, it
// asks through these interfaces, which flow's types implement.

// Flow is a flow as catalog names its objects: *flow.Flow (and *flow.Bound).
type Flow interface {
	// TargetName is the target's dataset ("" for the default one) and table.
	TargetName() (dataset, table string)
	// SourceTopic is the topic a change-stream flow reads ("" for a
	// snapshot flow).
	SourceTopic() string
	// SnapshotName is the table a snapshot flow reads.
	SnapshotName() (dataset, table string)
}

// Gold is a materialized view as catalog names its objects: *flow.Gold.
type Gold interface {
	// GoldName is the view's dataset ("" for the default one) and table.
	GoldName() (dataset, table string)
}

// Shaped is a bound flow (*flow.Bound): its columns, as the layouts of its
// state and change tables need them.
type Shaped interface {
	Shape() Shape
}

// Shape is what a bound flow's columns are, for the layouts of its tables.
type Shape struct {
	Changelog      schema.Columns // every changelog column
	Keys           schema.Columns
	Sequence       schema.Columns
	SequenceStruct bool // SEQUENCE BY STRUCT(...): the interval is a STRUCT of Sequence
	SystemSequence *schema.Column
	Output         schema.Columns
}

func targetTable(f Flow) string {
	_, t := f.TargetName()
	return t
}

func goldTable(g Gold) string {
	_, t := g.GoldName()
	return t
}

// Names of the SCD type 2 interval columns, as in Databricks.
const (
	StartAt = "__START_AT"
	EndAt   = "__END_AT"

	// A bitemporal target's system-time interval.
	SystemStartAt = "__SYSTEM_START_AT"
	SystemEndAt   = "__SYSTEM_END_AT"
)
