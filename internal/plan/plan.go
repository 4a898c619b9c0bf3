// Package plan is the one answer to "what does this flow consist of and
// do": a Plan per bound flow, computed once (For), read by every consumer.
// apply makes the plan's objects exist (Objects, StateTable, ChangeTable,
// View, Functions), compaction executes its statements (Compaction,
// SnapshotCompaction, and the Machine that runs them), and bqcdc render
// prints its objects in the order apply makes them.
//
// The kind of a flow is decided here once: kinds (kinds.go) is the table
// keyed by flow.Kind, and each kind is one file (scd1.go, scd2.go,
// bitemporal.go, snapshot.go) that says what its state holds, which view
// and shape of SQL it renders, what its view shows and which compaction
// machine folds it. Outside that table and those files no code asks which
// kind a flow is: consumers read the plan.
package plan

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/schema"
	"github.com/bqcdc/bqcdc/internal/schema/bqschema"
	"github.com/bqcdc/bqcdc/sql/render"
)

// Plan is what one bound flow consists of and does.
type Plan struct {
	Flow *flow.Bound
	Loc  catalog.Location
	// Layout is the version of the state layout the plan writes and reads
	// (catalog.StateLayoutLabel's value on its state table).
	Layout string
	kind   kind
}

// kind is what one kind of flow decides. Each kind is one file.
type kind interface {
	// shape is the shape of the kind's target, which picks its SQL.
	shape() render.Shape
	// machine is the compaction machine that folds the kind's state.
	machine() Machine
	// holds says what the kind's state holds, for its description.
	holds() string
	// stateColumns is the kind's state layout.
	stateColumns(b *flow.Bound) schema.Columns
	// partition is how the kind's state table of flow b is partitioned
	// (both nil: not).
	partition(b *flow.Bound) (*bigquery.TimePartitioning, *bigquery.RangePartitioning)
	// bound is what bounds the kind's view (BoundWatermark, BoundVersion).
	bound() Bound
	// view renders the view bounded by hint (a committed watermark:
	// BoundWatermark) or key (an applied version key, "" for none:
	// BoundVersion).
	view(p *Plan, hint time.Time, key string) (string, error)
	// describe is the view's description.
	describe(p *Plan) string
	// sequence names what orders the flow's events, for descriptions.
	sequence(b *flow.Bound) string
	// maintainEvery is how often compaction folds the state's levels into
	// one, of every (compact.Options.MaintainEvery).
	maintainEvery(every time.Duration) time.Duration
}

// Machine names a compaction machine: the state machine that folds a
// kind's state (internal/compact keeps one per Machine).
type Machine uint8

// The machines.
const (
	_ Machine = iota
	// Stream folds change-stream flows: changelog events into levels.
	Stream
	// Snapshot applies snapshot versions of a BigQuery table.
	Snapshot
)

// Bound is what bounds the scan of a flow's view, as the view's label
// records it.
type Bound uint8

// The bounds.
const (
	_ Bound = iota
	// BoundWatermark: a watermark committed to the state (render.Epoch for
	// none), in catalog.ViewHintLabel as Unix microseconds.
	BoundWatermark
	// BoundVersion: a snapshot version applied, in
	// catalog.ViewVersionLabel as its version key.
	BoundVersion
)

// Label is the view label that records the bound.
func (b Bound) Label() string {
	if b == BoundVersion {
		return catalog.ViewVersionLabel
	}
	return catalog.ViewHintLabel
}

// For is flow b's plan in deployment loc.
func For(b *flow.Bound, loc catalog.Location) *Plan {
	k, ok := kinds[b.Kind()]
	if !ok {
		panic(fmt.Sprintf("plan: no plan for kind %s (flow %s)", b.Kind(), b.Name))
	}
	return &Plan{Flow: b, Loc: loc, Layout: catalog.StateLayout, kind: k}
}

// Shape is the shape of the flow's target (render.Current, render.History).
func (p *Plan) Shape() render.Shape { return p.kind.shape() }

// Machine is the compaction machine that folds the flow.
func (p *Plan) Machine() Machine { return p.kind.machine() }

// Bound is what bounds the flow's view.
func (p *Plan) Bound() Bound { return p.kind.bound() }

// MaintainEvery is how often compaction folds the flow's state levels
// into one, when it is asked to every every.
func (p *Plan) MaintainEvery(every time.Duration) time.Duration { return p.kind.maintainEvery(every) }

// StateColumns is the schema of the flow's state table.
func (p *Plan) StateColumns() schema.Columns { return p.kind.stateColumns(p.Flow) }

// StateTable is what apply makes of the flow's state table (what bqcdc
// render prints of it): its columns, its layout label, clustered by the
// first four keys and partitioned as its kind says.
func (p *Plan) StateTable() *bigquery.TableMetadata {
	b := p.Flow
	keys := b.Keys.Names()
	if len(keys) > 4 {
		keys = keys[:4]
	}
	tp, rp := p.kind.partition(b)
	labels := map[string]string{catalog.StateLayoutLabel: p.Layout}
	if render.HistoryKept(b) {
		// A state made new holds its history from its first fold on;
		// apply fills an older one's before labelling it.
		labels[catalog.LabelHistory] = "1"
	}
	if n := b.LatenessHorizonDays; n > 0 {
		// apply compares it with the state's (horizonNotice): a new or
		// shorter horizon makes maintenance drop more than before.
		labels[catalog.LabelLatenessHorizon] = strconv.Itoa(n)
	}
	return &bigquery.TableMetadata{
		Description:       fmt.Sprintf("bqcdc state of flow %s (%s): %s. Read through the view %s; written only by bqcdc compact.", b.Name, b.Pos.File, p.kind.holds(), b.Target),
		Schema:            bqschema.ToBigQuery(p.StateColumns()),
		Labels:            labels,
		Clustering:        &bigquery.Clustering{Fields: keys},
		TimePartitioning:  tp,
		RangePartitioning: rp,
	}
}

// Bucketed reports whether a state table (md, its metadata) is
// partitioned by bucket as the plan's state is: both not by bucket, or
// by the same buckets. A state that is not must be moved (apply's
// relayout) before a run folds into it: its rows' buckets would not be the
// ones the run's statistics compute.
func (p *Plan) Bucketed(md *bigquery.TableMetadata) bool {
	_, want := p.kind.partition(p.Flow)
	have := md.RangePartitioning
	if have == nil || want == nil {
		return have == nil && want == nil
	}
	return have.Field == want.Field && have.Range != nil && want.Range != nil && *have.Range == *want.Range
}

// byBucket partitions a change-stream state of n buckets
// (flow.StateBucketsProperty) by its key's bucket, one partition per
// bucket: a run's change feed reads the partitions of the keys it touches
// (constant filters on the partitioning column, an exact pruning BigQuery
// documents and shows in dry runs), whatever the size of the storage
// blocks. Markers and truncates, which carry no key, are in the NULL
// partition.
func byBucket(n int) *bigquery.RangePartitioning {
	return &bigquery.RangePartitioning{Field: catalog.ColStateBucket, Range: &bigquery.RangePartitioningRange{Start: 0, End: int64(n), Interval: 1}}
}

// byKeyRange partitions a change-stream state by ranges of its first key,
// key (flow.StateKeyRangeProperty): a filter on the key, a run's change
// feed's or a lookup's through the view, is a filter on the partitioning
// column, which BigQuery prunes by exactly.
func byKeyRange(key string, r *flow.KeyRange) *bigquery.RangePartitioning {
	return &bigquery.RangePartitioning{Field: key, Range: &bigquery.RangePartitioningRange{Start: r.Start, End: r.End, Interval: r.Interval()}}
}

// byGeneration partitions a change-stream state by day of its generation:
// maintenance deletes the levels it folded by whole days, which BigQuery
// does without billing (a DML DELETE otherwise bills every column of the
// table). A state table made before it has no partitioning (BigQuery
// cannot add it): it works the same, its maintenance DELETE billed.
func byGeneration() *bigquery.TimePartitioning {
	return &bigquery.TimePartitioning{Type: bigquery.DayPartitioningType, Field: catalog.ColStateGen}
}

// ChangeTable is what apply makes of the flow's change table, nil when the
// flow keeps no change feed: partitioned by day of the commit position and
// clustered by it, so a read of a range of positions is billed for those
// days.
func (p *Plan) ChangeTable() *bigquery.TableMetadata {
	b := p.Flow
	if !b.ChangeFeed() {
		return nil
	}
	return &bigquery.TableMetadata{
		Description: fmt.Sprintf("bqcdc change feed of flow %s (%s): the target's row-level changes, materialized by compaction. Read through the table function %s; written only by bqcdc compact.",
			b.Name, b.Pos.File, catalog.ChangesFunctionName(b.Flow)),
		Schema:           bqschema.ToBigQuery(p.ChangeColumns()),
		TimePartitioning: &bigquery.TimePartitioning{Type: bigquery.DayPartitioningType, Field: catalog.ColCommitPosition},
		Clustering:       &bigquery.Clustering{Fields: []string{catalog.ColCommitPosition}},
	}
}

// ChangeColumns is the schema of the flow's change table (with a target
// of versions, its interval).
func (p *Plan) ChangeColumns() schema.Columns { return changesColumns(p.Flow, p.Shape().Versions) }

// View is the flow's view as apply wants it.
type View struct {
	SQL, Description string
	// Label and Value record the bound the SQL was rendered with.
	Label, Value string
	// Columns are the descriptions of the view's columns, by lower-case
	// name.
	Columns map[string]string
}

// View renders the flow's view bounded by hint (a watermark committed to
// the state; BoundWatermark) or by the version key in labels (the view's
// labels; BoundVersion): versions applied only grow, so the view's own
// label stays a valid bound. A key that is not a valid label value gives
// no bound: the view then reads the snapshot table with the applied
// version as its only filter.
func (p *Plan) View(hint time.Time, labels map[string]string) (View, error) {
	bound := p.Bound()
	key, value := "", catalog.MicrosLabel(hint)
	if bound == BoundVersion {
		if key = labels[bound.Label()]; catalog.LabelValue(key) != key {
			key = ""
		}
		value = key
	}
	sql, err := p.kind.view(p, hint, key)
	if err != nil {
		return View{}, err
	}
	return View{SQL: sql, Description: p.kind.describe(p), Label: bound.Label(), Value: value, Columns: p.columnDescriptions()}, nil
}

// streamDescription is the view description of a change-stream flow.
func streamDescription(p *Plan, shows string) string {
	b := p.Flow
	return fmt.Sprintf("bqcdc %s. Flow %s (%s), keys (%s), sequence %s, from Pub/Sub topic %s via changelog %s.%s. Generated by bqcdc apply; edit the flow, not the view.",
		shows, b.Name, b.Pos, strings.Join(b.Keys.Names(), ", "), streamSequence(b), b.Source.Name, p.Loc.DefaultDataset, catalog.TableName(b.Source.Name))
}

// streamSequence names a change-stream flow's SEQUENCE BY.
func streamSequence(b *flow.Bound) string {
	names := b.Sequence.Names()
	if b.SequenceStruct {
		return "STRUCT(" + strings.Join(names, ", ") + ")"
	}
	return names[0]
}

// columnDescriptions are the descriptions the columns of the flow's view
// get: the changelog's, so a user in the BigQuery console sees what each
// column is, and what the view adds, by lower-case name.
func (p *Plan) columnDescriptions() map[string]string {
	b := p.Flow
	want := map[string]string{}
	for _, c := range b.Output {
		want[strings.ToLower(c.Name)] = c.Description
		if b.IsIgnoreNull(c.Name) {
			want[strings.ToLower(c.Name)] = strings.TrimSpace(c.Description + " (IGNORE NULL UPDATES: a NULL in an update keeps the previous value)")
		}
	}
	for _, k := range b.Keys {
		want[strings.ToLower(k.Name)] = strings.TrimSpace("Key. " + k.Description)
	}
	seq := p.kind.sequence(b)
	want[strings.ToLower(catalog.StartAt)] = "Sequence (" + seq + ") at which this version became current (inclusive)."
	want[strings.ToLower(catalog.EndAt)] = "Sequence (" + seq + ") at which this version stopped being current (exclusive); NULL for the current version."
	if b.SystemSequence != nil {
		sys := b.SystemSequence.Name
		want[strings.ToLower(catalog.SystemStartAt)] = "System sequence (" + sys + ") from which this row was believed (inclusive)."
		want[strings.ToLower(catalog.SystemEndAt)] = "System sequence (" + sys + ") at which this row stopped being believed (exclusive); NULL while it still is."
	}
	return want
}

// Compaction renders the statements of a change-stream flow's runs.
func (p *Plan) Compaction() *render.Compaction {
	return render.NewCompaction(p.Flow, p.Loc, p.Shape())
}

// SnapshotCompaction renders the statements of a snapshot flow's runs.
func (p *Plan) SnapshotCompaction() *render.SnapshotCompaction {
	return render.NewSnapshotCompaction(p.Flow, p.Loc, p.Shape())
}

// AtQuery is the body of <target>_at(ts) as a query, with pruning bound
// hint (see render.AtQuery).
func (p *Plan) AtQuery(ts, hint time.Time) (string, error) {
	return render.AtQuery(p.Flow, p.Loc, p.Shape(), ts, hint)
}

// ChangesQuery is the body of <target>_changes(from, to) as a query (see
// render.ChangesQuery).
func (p *Plan) ChangesQuery(from, to time.Time) (string, error) {
	return render.ChangesQuery(p.Flow, p.Loc, p.Shape(), from, to)
}
