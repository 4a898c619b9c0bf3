package apply

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/bqerror"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/schema/bqschema"
	"github.com/bqcdc/bqcdc/sql/render"
	"google.golang.org/api/iterator"
)

// State creates or evolves a flow's state table.
func State(ctx context.Context, bq *bigquery.Client, loc catalog.Location, b *flow.Bound, rep *Report) error {
	_, err := state(ctx, bq, loc, b, rep)
	return err
}

// state is State, also reporting whether it created the state table. A
// flow with a change feed gets its change table first, and the state table
// is labelled with the layout (catalog.StateLayoutLabel) only once both
// exist, so compaction, which reads that label with the state's metadata,
// knows the change table is there without reading it.
func state(ctx context.Context, bq *bigquery.Client, loc catalog.Location, b *flow.Bound, rep *Report) (created bool, err error) {
	if render.HasChangeFeed(b) {
		if err := changeTable(ctx, bq, loc, b, rep); err != nil {
			return false, err
		}
	}
	want := &bigquery.TableMetadata{
		Description: fmt.Sprintf("bqcdc state of flow %s (%s): changelog events folded by compaction, in levels. Read through the view %s; written only by bqcdc compact.", b.Name, b.Pos.File, b.Target),
		Schema:      bqschema.ToBigQuery(catalog.StateColumns(b)),
		Labels:      map[string]string{catalog.StateLayoutLabel: catalog.StateLayout},
	}
	var keys []string
	for _, k := range b.Keys {
		keys = append(keys, k.Name)
	}
	if len(keys) > 4 {
		keys = keys[:4]
	}
	want.Clustering = &bigquery.Clustering{Fields: keys}
	if !b.IsSnapshot() {
		// By day of the generation: maintenance deletes the levels it
		// folded by whole days, which BigQuery does without billing (a DML
		// DELETE otherwise bills every column of the table). A state table
		// made before it has no partitioning (BigQuery cannot add it): it
		// works the same, its maintenance DELETE billed.
		want.TimePartitioning = &bigquery.TimePartitioning{Type: bigquery.DayPartitioningType, Field: catalog.ColStateGen}
	}
	return ensureTableCreated(ctx, bq.Dataset(loc.Dataset(b.Flow)).Table(catalog.StateName(b.Flow)), want, rep)
}

// changeTable creates or evolves a flow's change table: the materialized
// change feed, partitioned by day of the commit position and clustered by
// it, so <target>_changes(from, to) is billed for the days of its range.
func changeTable(ctx context.Context, bq *bigquery.Client, loc catalog.Location, b *flow.Bound, rep *Report) error {
	want := &bigquery.TableMetadata{
		Description: fmt.Sprintf("bqcdc change feed of flow %s (%s): the target's row-level changes, materialized by compaction. Read through the table function %s; written only by bqcdc compact.",
			b.Name, b.Pos.File, catalog.ChangesFunctionName(b.Flow)),
		Schema:           bqschema.ToBigQuery(catalog.ChangesColumns(b)),
		TimePartitioning: &bigquery.TimePartitioning{Type: bigquery.DayPartitioningType, Field: catalog.ColCommitPosition},
		Clustering:       &bigquery.Clustering{Fields: []string{catalog.ColCommitPosition}},
	}
	_, err := ensureTableCreated(ctx, bq.Dataset(loc.Dataset(b.Flow)).Table(catalog.ChangesName(b.Flow)), want, rep)
	return err
}

// Watermark reads a flow's current watermark (render.Epoch if never compacted).
func Watermark(ctx context.Context, bq *bigquery.Client, loc catalog.Location, f *flow.Flow) (time.Time, error) {
	sql := fmt.Sprintf("SELECT MAX(%s) AS w FROM %s WHERE %s = 'W'", catalog.ColStateWatermark, loc.StateTable(f), catalog.ColStateOp)
	it, err := bq.Query(sql).Read(ctx)
	if err != nil {
		return time.Time{}, fmt.Errorf("reading the watermark of flow %s: %w", f.Name, err)
	}
	var row []bigquery.Value
	if err := it.Next(&row); err != nil && err != iterator.Done {
		return time.Time{}, fmt.Errorf("reading the watermark of flow %s: %w", f.Name, err)
	}
	if len(row) == 1 && row[0] != nil {
		return row[0].(time.Time).UTC(), nil
	}
	return render.Epoch, nil
}

// View creates or updates a flow's view in place (tables.update is atomic:
// a query never sees the view missing). hint must be a committed watermark.
func View(ctx context.Context, bq *bigquery.Client, loc catalog.Location, b *flow.Bound, hint time.Time, rep *Report) error {
	t, have, err := viewMetadata(ctx, bq, loc, b)
	if err != nil {
		return err
	}
	_, err = view(ctx, t, have, loc, b, hint, rep)
	return err
}

// viewMetadata returns a flow's view and its metadata (nil if it does not
// exist).
func viewMetadata(ctx context.Context, bq *bigquery.Client, loc catalog.Location, b *flow.Bound) (*bigquery.Table, *bigquery.TableMetadata, error) {
	t := bq.Dataset(loc.Dataset(b.Flow)).Table(catalog.ViewName(b.Flow))
	have, err := t.Metadata(ctx)
	if bqerror.NotFound(err) {
		return t, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading view %s: %w", b.Target, err)
	}
	return t, have, nil
}

// view brings view t (have: its metadata, nil if it does not exist) to the
// flow's SQL rendered with hint, and returns its metadata as it now is (so
// Functions can label it without reading it again).
func view(ctx context.Context, t *bigquery.Table, have *bigquery.TableMetadata, loc catalog.Location, b *flow.Bound, hint time.Time, rep *Report) (*bigquery.TableMetadata, error) {
	if b.IsSnapshot() {
		// Its bound is a version (SnapshotView): keep the one it has.
		var key string
		if have != nil {
			key = have.Labels[catalog.ViewVersionLabel]
		}
		return snapshotView(ctx, t, have, loc, b, key, rep)
	}
	sql, err := render.View(b, loc, hint)
	if err != nil {
		return nil, err
	}
	return putView(ctx, t, have, b, sql, viewDescription(b, loc), catalog.ViewHintLabel, strconv.FormatInt(hint.UnixMicro(), 10), rep)
}

// SnapshotView creates or updates a snapshot flow's view with the constant
// lower bound key, a version key already applied (versions applied only
// grow, so it stays a valid bound); "" keeps the view's bound. A key that
// is not a valid label value (a STRING version with upper case or spaces,
// say) gives no bound: the view then reads the table with the applied
// version as its only filter.
func SnapshotView(ctx context.Context, bq *bigquery.Client, loc catalog.Location, b *flow.Bound, key string, rep *Report) error {
	t, have, err := viewMetadata(ctx, bq, loc, b)
	if err != nil {
		return err
	}
	if key == "" && have != nil {
		key = have.Labels[catalog.ViewVersionLabel]
	}
	_, err = snapshotView(ctx, t, have, loc, b, key, rep)
	return err
}

func snapshotView(ctx context.Context, t *bigquery.Table, have *bigquery.TableMetadata, loc catalog.Location, b *flow.Bound, key string, rep *Report) (*bigquery.TableMetadata, error) {
	if key != "" && catalog.LabelValue(key) != key {
		key = ""
	}
	bound := ""
	if key != "" {
		var err error
		if bound, err = render.VersionBound(b, key); err != nil {
			return nil, err
		}
	}
	sql, err := render.SnapshotView(b, loc, bound)
	if err != nil {
		return nil, err
	}
	return putView(ctx, t, have, b, sql, viewDescription(b, loc), catalog.ViewVersionLabel, key, rep)
}

// putView brings view t (have: its metadata, nil if it does not exist) to
// sql and desc, with label = value (the bound it was rendered with).
func putView(ctx context.Context, t *bigquery.Table, have *bigquery.TableMetadata, b *flow.Bound, sql, desc, label, value string, rep *Report) (*bigquery.TableMetadata, error) {
	var err error
	switch {
	case have == nil:
		labels := map[string]string{}
		if value != "" {
			labels[label] = value
		}
		if err := t.Create(ctx, &bigquery.TableMetadata{ViewQuery: sql, Description: desc, Labels: labels}); err != nil {
			return nil, fmt.Errorf("creating view %s of flow %s: %w", b.Target, b.Name, err)
		}
		rep.add("view %s: created", b.Target)
		// Create does not return the schema BigQuery derived for the view.
		if have, err = t.Metadata(ctx); err != nil {
			return nil, fmt.Errorf("reading view %s: %w", b.Target, err)
		}
	case have.Type != bigquery.ViewTable:
		return nil, fmt.Errorf("%s exists and is not a view (it is a %s): flow %s (%s) needs that name for its view; rename the target or drop the table", b.Target, have.Type, b.Name, b.Pos)
	case have.ViewQuery != sql || have.Description != desc || have.Labels[label] != value:
		upd := bigquery.TableMetadataToUpdate{ViewQuery: sql, Description: desc}
		for k, v := range have.Labels {
			if k != label {
				upd.SetLabel(k, v) // BigQuery merges, the emulator replaces: see keepLabels
			}
		}
		if value != "" {
			upd.SetLabel(label, value)
		} else if _, had := have.Labels[label]; had {
			upd.DeleteLabel(label)
		}
		if have, err = t.Update(ctx, upd, have.ETag); err != nil {
			return nil, fmt.Errorf("updating view %s of flow %s: %w", b.Target, b.Name, err)
		}
		rep.add("view %s: updated", b.Target)
	default:
		rep.add("view %s: unchanged", b.Target)
	}
	return describeColumns(ctx, t, b, have)
}

// FollowChangelog brings a flow's state table and view up to a changelog
// that gained columns, without running a query: the view is rendered again
// with the pruning bound it carries in catalog.ViewHintLabel. A view without the label
// (or without a view) is left for the next compaction run or apply, which
// read the watermark. It needs only table metadata permissions, which the
// ingest function has.
func FollowChangelog(ctx context.Context, bq *bigquery.Client, loc catalog.Location, b *flow.Bound, rep *Report) error {
	if err := State(ctx, bq, loc, b, rep); err != nil {
		return err
	}
	t := bq.Dataset(loc.Dataset(b.Flow)).Table(catalog.ViewName(b.Flow))
	have, err := t.Metadata(ctx)
	if bqerror.NotFound(err) {
		rep.add("view %s: missing, left to apply", b.Target)
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading view %s: %w", b.Target, err)
	}
	us, err := strconv.ParseInt(have.Labels[catalog.ViewHintLabel], 10, 64)
	if err != nil {
		rep.add("view %s: no %s label, left to the next compaction", b.Target, catalog.ViewHintLabel)
		return nil
	}
	_, err = view(ctx, t, have, loc, b, time.UnixMicro(us).UTC(), rep)
	return err
}

// keepLabels repeats a table's labels in an update: BigQuery merges the
// labels of a patch, the emulator replaces them all, and the view carries
// two (catalog.ViewHintLabel, catalog.ViewFunctionsLabel) set by different steps.
func keepLabels(upd *bigquery.TableMetadataToUpdate, labels map[string]string) {
	for k, v := range labels {
		upd.SetLabel(k, v)
	}
}

func viewDescription(b *flow.Bound, loc catalog.Location) string {
	kind := "current state (SCD type 1): one row per key present now"
	if b.SCDType == 2 {
		kind = "history (SCD type 2): one row per version; __START_AT inclusive, __END_AT exclusive, NULL for the current version"
	}
	if b.Bitemporal {
		kind = "bitemporal history: one row per version (__START_AT inclusive, __END_AT exclusive, by SEQUENCE BY) and per stretch of system time it was believed (__SYSTEM_START_AT inclusive, __SYSTEM_END_AT exclusive, by SYSTEM SEQUENCE BY); NULL ends are open"
	}
	if b.IsSnapshot() {
		kind = "current state (SCD type 1): the rows of the newest snapshot applied or loaded since, one per key"
		if b.SCDType == 2 {
			kind = "history (SCD type 2): one row per version; __START_AT inclusive, __END_AT exclusive (snapshot versions), NULL for the current version"
		}
		return fmt.Sprintf("bqcdc %s. Flow %s (%s), keys (%s), snapshots of BigQuery table %s versioned by %s; a snapshot loaded after a newer one was applied is skipped. Generated by bqcdc apply; edit the flow, not the view.",
			kind, b.Name, b.Pos, strings.Join(b.Keys.Names(), ", "), b.Snapshot, b.Version.Name)
	}
	return fmt.Sprintf("bqcdc %s. Flow %s (%s), keys (%s), sequence %s, from Pub/Sub topic %s via changelog %s.%s. Generated by bqcdc apply; edit the flow, not the view.",
		kind, b.Name, b.Pos, strings.Join(b.Keys.Names(), ", "), sequenceText(b.Flow), b.Source.Name, loc.DefaultDataset, catalog.TableName(b.Source.Name))
}

func sequenceText(f *flow.Flow) string {
	if f.IsSnapshot() {
		return "snapshot version " + f.Version.Name
	}
	names := make([]string, len(f.Sequence))
	for i, s := range f.Sequence {
		names[i] = s.Name
	}
	if f.SequenceStruct {
		return "STRUCT(" + strings.Join(names, ", ") + ")"
	}
	return names[0]
}

// describeColumns copies the changelog's column descriptions onto the view
// (md: its current metadata), so a user in the BigQuery console sees what
// each column is. It writes only when a description differs, and returns
// the view's metadata as it now is.
func describeColumns(ctx context.Context, t *bigquery.Table, b *flow.Bound, md *bigquery.TableMetadata) (*bigquery.TableMetadata, error) {
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
	seq := sequenceText(b.Flow)
	want[strings.ToLower(flow.StartAt)] = "Sequence (" + seq + ") at which this version became current (inclusive)."
	want[strings.ToLower(flow.EndAt)] = "Sequence (" + seq + ") at which this version stopped being current (exclusive); NULL for the current version."
	if b.Bitemporal {
		sys := b.SystemSequence.Name
		want[strings.ToLower(flow.SystemStartAt)] = "System sequence (" + sys + ") from which this row was believed (inclusive)."
		want[strings.ToLower(flow.SystemEndAt)] = "System sequence (" + sys + ") at which this row stopped being believed (exclusive); NULL while it still is."
	}
	changed := false
	schema := md.Schema
	for _, f := range schema {
		if d, ok := want[strings.ToLower(f.Name)]; ok && f.Description != d {
			f.Description = d
			changed = true
		}
	}
	if !changed {
		return md, nil
	}
	md, err := t.Update(ctx, bigquery.TableMetadataToUpdate{Schema: schema}, md.ETag)
	if err != nil {
		return nil, fmt.Errorf("describing the columns of view %s: %w", b.Target, err)
	}
	return md, nil
}

// FlowObjects applies a flow's state table, view and table functions (and
// the flow's dataset, when it is not the default one). Of opts it heeds
// ReadWatermarks and SkipTableFunctions.
func FlowObjects(ctx context.Context, bq *bigquery.Client, loc catalog.Location, b *flow.Bound, opts Options, rep *Report) error {
	if ds := loc.Dataset(b.Flow); ds != loc.DefaultDataset {
		if err := Dataset(ctx, bq, ds, rep); err != nil {
			return err
		}
	}
	return flowObjects(ctx, bq, loc, b, opts, rep)
}

// flowObjects applies a flow's state table and view with one metadata read
// each when nothing changed, and no query unless it must.
//
// The view is rendered with a pruning bound that must be a committed
// watermark (see View). A state table created here has none yet, so the
// bound is the epoch. Otherwise the view's catalog.ViewHintLabel is reused: apply and
// compaction write it only with a watermark committed at the time, and a
// state table's watermark never goes back while the table lives, so the
// label is still a valid bound; compaction advances it. Reading the
// watermark (a query job per flow, the old way) is left for a view without
// the label, or opts.ReadWatermarks (for a state table whose rows were
// deleted by hand, whose watermark did go back).
func flowObjects(ctx context.Context, bq *bigquery.Client, loc catalog.Location, b *flow.Bound, opts Options, rep *Report) error {
	created, err := state(ctx, bq, loc, b, rep)
	if err != nil {
		return err
	}
	t, have, err := viewMetadata(ctx, bq, loc, b)
	if err != nil {
		return err
	}
	hint := render.Epoch
	if !created && !b.IsSnapshot() { // a snapshot flow's view carries no watermark bound
		labelled, ok := hintOf(have)
		if ok && !opts.ReadWatermarks {
			hint = labelled
		} else if hint, err = Watermark(ctx, bq, loc, b.Flow); err != nil {
			return err
		}
	}
	md, err := view(ctx, t, have, loc, b, hint, rep)
	if err != nil || opts.SkipTableFunctions {
		return err
	}
	if b.IsSnapshot() {
		// Its history is by version, not by ingestion time: no _at, no
		// _changes (docs/snapshot-flows.md).
		return nil
	}
	return functions(ctx, bq, t, md, loc, b, rep)
}

// hintOf reads the pruning bound a view was rendered with from its label.
func hintOf(md *bigquery.TableMetadata) (time.Time, bool) {
	if md == nil || md.Type != bigquery.ViewTable {
		return time.Time{}, false
	}
	us, err := strconv.ParseInt(md.Labels[catalog.ViewHintLabel], 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.UnixMicro(us).UTC(), true
}
