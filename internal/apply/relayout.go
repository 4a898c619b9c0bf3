package apply

import (
	"context"
	"fmt"
	"io"
	"maps"
	"strings"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/bqerror"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/evolve"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/plan"
	"github.com/bqcdc/bqcdc/internal/schema"
	"github.com/bqcdc/bqcdc/internal/schema/bqschema"
	"github.com/bqcdc/bqcdc/sql/render"
)

// copyLabel on a state copy (catalog.StateCopyName) says it holds every
// row of the state (copyComplete); until then it may hold none.
const (
	copyLabel    = "bqcdc-state-copy"
	copyComplete = "complete"
)

// The steps of a move (Options.AfterMoveStep is called after each).
const (
	MoveCopied  = "copied"  // the copy is complete and the view reads it
	MoveDeleted = "deleted" // the state in its old layout is deleted
	MoveCreated = "created" // the state is made in its new layout, empty
	MoveFilled  = "filled"  // the state is filled from the copy (the view still reads the copy)
)

// relayout moves a change-stream flow's state to the partitioning its plan
// wants when its table has another: a state of buckets
// (flow.StateBucketsProperty) turned on, off, or to another number of
// buckets, or a state partitioned by ranges of its key
// (flow.StateKeyRangeProperty) likewise. BigQuery cannot change a
// table's partitioning, so the rows go through a copy in the new layout:
//
//  1. the copy is made and filled in one INSERT (each row's bucket
//     computed), then labelled complete, and the flow's view is pointed at
//     it (its query, with the copy's name for the state's): the view
//     shows the same rows throughout the move;
//  2. the state is deleted and made again in the new layout, without its
//     layout label: a compaction run finds it unlabelled and calls apply
//     first, which resumes here, so no run folds into a state being
//     filled;
//  3. the state is emptied and filled from the copy in one INSERT, the
//     view is pointed back at it, and the copy is deleted.
//
// A crash at any point leaves what the next apply (or run) resumes from:
// a copy not labelled complete is made and filled again from the state, a
// complete copy is the state's rows until step 3 ends. The copy
// keeps every column of the state (a __bucket the new layout lacks
// included, then left NULL in new rows), so the view's query, of either
// layout, reads it. <target>_at reads the state by name: it fails while
// the state is deleted or empty (between statements of the move). The move
// reads the state twice (into the copy, and back); its size is reported
// before it starts. It runs only on a state whose partitioning by bucket
// differs from the plan's: a state made before partitioning (no
// partitioning at all) keeps working as it is.
//
// It returns the state's metadata when it read it (nil when it did not,
// or the state does not exist), so apply reads it once. A listing that
// shows the state as apply made it (its spec label) and no copy settles it
// without a request; a state in the wanted layout and labelled with it
// has no copy to look for (a move labels it last).
func relayout(ctx context.Context, bq *bigquery.Client, p *plan.Plan, listed listing, opts Options, rep *Report) (*bigquery.TableMetadata, error) {
	step := func(name string) error {
		if opts.AfterMoveStep == nil {
			return nil
		}
		return opts.AfterMoveStep(p.Flow.Name, name)
	}
	b, loc := p.Flow, p.Loc
	ds := bq.Dataset(loc.Dataset(b.Flow))
	st, cp := ds.Table(catalog.StateName(b.Flow)), ds.Table(catalog.StateCopyName(b.Flow))
	want := p.StateTable()
	lt, known, exists := listed.lookup(st.DatasetID, st.TableID)
	_, _, copying := listed.lookup(cp.DatasetID, cp.TableID)
	if known && !copying && (!exists || lt.Labels[catalog.SpecLabel] == tableSpec(want)) {
		return nil, nil
	}
	read := clientReader{bq} // nil metadata for a table that does not exist
	stMD, err := read.Metadata(ctx, st.DatasetID, st.TableID)
	if err != nil {
		return nil, fmt.Errorf("reading table %s: %w", st.TableID, err)
	}
	moving := stMD != nil && !p.Bucketed(stMD)
	settled := stMD != nil && !moving && stMD.Labels[catalog.StateLayoutLabel] == p.Layout
	if settled && !copying {
		return stMD, nil
	}
	var cpMD *bigquery.TableMetadata
	if !known || copying {
		if cpMD, err = read.Metadata(ctx, cp.DatasetID, cp.TableID); err != nil {
			return nil, fmt.Errorf("reading table %s: %w", cp.TableID, err)
		}
	}
	if !moving && cpMD == nil {
		return stMD, nil
	}
	complete := cpMD != nil && cpMD.Labels[copyLabel] == copyComplete
	if stMD == nil && !complete {
		return nil, fmt.Errorf("flow %s: its state table %s is missing and its copy %s is not complete: restore the state (BigQuery time travel) and apply again", b.Name, st.TableID, cp.TableID)
	}
	m := move{bq: bq, p: p, st: st, cp: cp, want: want, step: step}
	if moving && !complete {
		if err := fillCopy(ctx, bq, p, stMD, cp, cpMD, want, opts.Notices, rep); err != nil {
			return nil, err
		}
		if cpMD, err = cp.Metadata(ctx); err != nil {
			return nil, fmt.Errorf("reading the state copy %s: %w", cp.TableID, err)
		}
	}
	if err := m.refill(ctx, moving, stMD != nil, cpMD); err != nil {
		return nil, err
	}
	rep.add("table %s: moved to %s", st.TableID, describeLayout(b, want.RangePartitioning))
	md, err := st.Metadata(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading table %s: %w", st.TableID, err)
	}
	return md, nil
}

// move is a state's move to another partitioning once its copy (cp) is
// complete: st the state, want its table in the new layout, step the
// AfterMoveStep hook.
type move struct {
	bq     *bigquery.Client
	p      *plan.Plan
	st, cp *bigquery.Table
	want   *bigquery.TableMetadata
	step   func(string) error
}

// refill points the view at the copy, deletes the state in its old layout
// (moving), makes it in the new one (unless it exists: a move resumed
// after it was made), fills it from the copy (cpMD its metadata), points
// the view back and deletes the copy.
func (m move) refill(ctx context.Context, moving, exists bool, cpMD *bigquery.TableMetadata) error {
	b, loc := m.p.Flow, m.p.Loc
	state, copy := loc.StateTable(b.Flow), loc.StateCopyTable(b.Flow)
	if err := pointView(ctx, m.bq, m.p, state, copy); err != nil {
		return err
	}
	if err := m.step(MoveCopied); err != nil {
		return err
	}
	if moving {
		if err := m.st.Delete(ctx); err != nil && !bqerror.NotFound(err) {
			return fmt.Errorf("flow %s: deleting the state table %s in its old layout (its rows are in %s): %w", b.Name, m.st.TableID, m.cp.TableID, err)
		}
		exists = false
		if err := m.step(MoveDeleted); err != nil {
			return err
		}
	}
	if !exists {
		md := *m.want
		md.Schema = cpMD.Schema
		md.Labels = maps.Clone(m.want.Labels)
		delete(md.Labels, catalog.StateLayoutLabel) // labelled once filled (apply's update)
		delete(md.Labels, catalog.LabelHistory)     // filled by apply's update (state), from the changelog
		if err := m.st.Create(ctx, &md); err != nil && !bqerror.AlreadyExists(err) {
			return fmt.Errorf("flow %s: making the state table %s in its new layout (its rows are in %s): %w", b.Name, m.st.TableID, m.cp.TableID, err)
		}
		if err := m.step(MoveCreated); err != nil {
			return err
		}
	}
	cols := bqschema.FromBigQuery(cpMD.Schema).Names()
	stmts := []string{render.EmptyTable(state)} // a move resumed after a fill
	for _, ch := range render.BucketChunks(render.ChunkedPartitions(b), render.PerJob(b, flow.BucketsPerJob)) {
		stmts = append(stmts, render.CopyState(b, copy, state, cols, false, ch))
	}
	for _, sql := range stmts {
		if err := runDDL(ctx, m.bq, sql); err != nil {
			return fmt.Errorf("flow %s: filling the state table %s from its copy %s: %w", b.Name, m.st.TableID, m.cp.TableID, err)
		}
	}
	if err := m.step(MoveFilled); err != nil {
		return err
	}
	if err := pointView(ctx, m.bq, m.p, copy, state); err != nil {
		return err
	}
	if err := m.cp.Delete(ctx); err != nil && !bqerror.NotFound(err) {
		return fmt.Errorf("flow %s: deleting the state copy %s (the state is filled): %w", b.Name, m.cp.TableID, err)
	}
	return nil
}

// fillCopy makes the state copy in the wanted layout (again, if a crash
// left one not complete), with the state's columns and the wanted ones,
// fills it from the state and labels it complete.
func fillCopy(ctx context.Context, bq *bigquery.Client, p *plan.Plan, stMD *bigquery.TableMetadata, cp *bigquery.Table, cpMD, want *bigquery.TableMetadata, notices io.Writer, rep *Report) error {
	b, loc := p.Flow, p.Loc
	merged, _, err := evolve.Merge(bqschema.FromBigQuery(stMD.Schema), bqschema.FromBigQuery(want.Schema))
	if err != nil {
		return fmt.Errorf("flow %s: the state's columns: %w", b.Name, err)
	}
	// Every column of the state and of the new layout; a bucket the copy
	// computes is its last (the state's own, if any, is not copied).
	var cols schema.Columns
	for _, c := range merged {
		if c.Name != catalog.ColStateBucket || b.StateBuckets == 0 {
			cols = append(cols, c)
		}
	}
	copyCols := cols
	if b.StateBuckets > 0 {
		bucket, _ := bqschema.FromBigQuery(want.Schema).Lookup(catalog.ColStateBucket)
		copyCols = append(append(schema.Columns{}, cols...), bucket)
	}
	notice := fmt.Sprintf("table %s: moving to %s: %d rows, %d bytes, copied twice (into %s and back; billed about %d bytes)",
		catalog.StateName(b.Flow), describeLayout(b, want.RangePartitioning), stMD.NumRows, stMD.NumBytes, cp.TableID, 2*stMD.NumBytes)
	rep.add("%s", notice)
	if notices != nil {
		fmt.Fprintln(notices, notice)
	}
	// A copy not complete is made again: a crash may have left it with
	// rows, or as an earlier bqcdc made it.
	if cpMD != nil {
		if err := cp.Delete(ctx); err != nil && !bqerror.NotFound(err) {
			return fmt.Errorf("flow %s: deleting the incomplete state copy %s: %w", b.Name, cp.TableID, err)
		}
	}
	{
		md := &bigquery.TableMetadata{
			Description:       fmt.Sprintf("bqcdc: the state of flow %s while its partitioning changes (bqcdc apply deletes it when done).", b.Name),
			Schema:            bqschema.ToBigQuery(copyCols),
			Clustering:        want.Clustering,
			TimePartitioning:  want.TimePartitioning,
			RangePartitioning: want.RangePartitioning,
			Labels:            map[string]string{copyLabel: "filling"},
		}
		if err := cp.Create(ctx, md); err != nil {
			return fmt.Errorf("flow %s: making the state copy %s: %w", b.Name, cp.TableID, err)
		}
	}
	var stmts []string
	for _, ch := range render.BucketChunks(render.ChunkedPartitions(b), render.PerJob(b, flow.BucketsPerJob)) {
		stmts = append(stmts, render.CopyState(b, loc.StateTable(b.Flow), loc.StateCopyTable(b.Flow), cols.Names(), true, ch))
	}
	for _, sql := range stmts {
		if err := runDDL(ctx, bq, sql); err != nil {
			return fmt.Errorf("flow %s: copying the state to %s: %w", b.Name, cp.TableID, err)
		}
	}
	var upd bigquery.TableMetadataToUpdate
	upd.SetLabel(copyLabel, copyComplete)
	if _, err := cp.Update(ctx, upd, ""); err != nil {
		return fmt.Errorf("flow %s: labelling the state copy %s complete: %w", b.Name, cp.TableID, err)
	}
	return nil
}

// pointView points the flow's view from one table to another (the state
// and its copy) where its query reads it: the move's view shows the same
// rows while the state is re-made. A view that does not exist, or does not
// read from, is left as it is; apply's view step then brings it up to
// date as ever.
func pointView(ctx context.Context, bq *bigquery.Client, p *plan.Plan, from, to string) error {
	b := p.Flow
	t, have, err := viewMetadata(ctx, bq, p.Loc, b)
	if err != nil || have == nil || !strings.Contains(have.ViewQuery, from) {
		return err
	}
	var upd bigquery.TableMetadataToUpdate
	upd.ViewQuery = strings.ReplaceAll(have.ViewQuery, from, to)
	for k, v := range have.Labels { // BigQuery merges labels, the emulator replaces them (keepLabels)
		if k != catalog.SpecLabel {
			upd.SetLabel(k, v)
		}
	}
	if _, ok := have.Labels[catalog.SpecLabel]; ok {
		upd.DeleteLabel(catalog.SpecLabel) // not as apply makes it while it reads the copy
	}
	if _, err := t.Update(ctx, upd, have.ETag); err != nil {
		return fmt.Errorf("flow %s: pointing view %s at %s: %w", b.Name, b.Target, to, err)
	}
	return nil
}

// describeLayout says how a state is partitioned in r (nil: by
// generation), for the move's notice and report.
func describeLayout(b *flow.Bound, r *bigquery.RangePartitioning) string {
	if r == nil || r.Range == nil {
		return "partitioning by generation"
	}
	if b.StateBuckets == 0 {
		return fmt.Sprintf("ranges of %s from %d to %d (%d partitions of %d keys)", r.Field, r.Range.Start, r.Range.End, b.StateKeyRange.Partitions(), r.Range.Interval)
	}
	if n := int64(b.StateBuckets); r.Range.End > n {
		// An archived state of buckets (render/archive.go).
		return fmt.Sprintf("%d buckets and their archive (%d partitions by %s)", n, r.Range.End, r.Field)
	}
	return fmt.Sprintf("%d buckets (partitioned by %s)", r.Range.End, r.Field)
}
