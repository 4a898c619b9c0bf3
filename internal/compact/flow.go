package compact

import (
	"context"
	"fmt"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/apply"
	"github.com/bqcdc/bqcdc/internal/bqerror"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/schema/bqschema"
	"github.com/bqcdc/bqcdc/sql/render"
)

// task is one flow of a run, with what the run read of it up front.
type task struct {
	b         *flow.Bound
	changelog *bigquery.TableMetadata // nil: not readable (the flow fails)
	state     *bigquery.TableMetadata // nil: the state table does not exist yet
	labels    labels
	err       error // reading the metadata failed
}

type marker struct {
	gen, watermark, foldedMax, newestGen time.Time
	found                                bool
}

type stats struct {
	events, withoutSequence, unfolded, keys int64
	newest                                  time.Time
}

// flow compacts one flow; acct counts its query jobs.
func (c *Compactor) flow(ctx context.Context, t *task, now time.Time, rep *Report, acct *account) error {
	if t.err != nil {
		return t.err
	}
	if t.b.IsSnapshot() {
		return c.snapshotFlow(ctx, t, now, rep, acct)
	}
	b := t.b
	var applied apply.Report
	cols, err := c.ensureState(ctx, t, &applied)
	if err != nil {
		return err
	}
	l := t.labels
	rep.WatermarkBefore, rep.WatermarkAfter = l.watermark, l.watermark
	sig := signature(t.changelog)
	if c.idle(l, sig, now) {
		rep.Outcome = Idle
		// The view still follows the changelog's columns (metadata only).
		return c.view(ctx, b, cols, l.watermark, &applied)
	}
	next := labels{known: true, sig: sig, sigSeen: now, checked: now}
	if sig == l.sig && !l.sigSeen.IsZero() {
		next.sigSeen = l.sigSeen
	}
	plan := render.NewCompaction(b, c.loc)
	if !l.known && stateEmpty(t.state) {
		// A state table that holds no row has no marker: the run reads the
		// changelog from the start, and may do so in the one query.
		l.known, l.watermark, l.foldedMax = true, render.Epoch, render.Epoch
	}
	m, st, read, err := c.markerStats(ctx, plan, l, acct)
	if err != nil {
		return err
	}
	rep.WatermarkBefore, rep.WatermarkAfter = m.watermark, m.watermark
	rep.EventsRead, rep.WithoutSequence, rep.KeysTouched = st.events, st.withoutSequence, st.keys
	reached := now.Add(-c.opts.VisibilityLag).Truncate(time.Microsecond)
	if st.unfolded == 0 {
		// Nothing ingested since the last fold: no generation, same
		// watermark. Every row ingested by reached was visible to the
		// query and is folded, so the signature is clean if it was seen by
		// then. The view is still brought up to date (metadata only), so
		// columns ingest added appear in it without waiting for changes.
		rep.Outcome = UpToDate
		next.watermark, next.foldedMax, next.clean = m.watermark, m.foldedMax, !reached.Before(next.sigSeen)
		if err := c.view(ctx, b, cols, m.watermark, &applied); err != nil {
			return err
		}
		return c.setLabels(ctx, b, next)
	}
	gen := now
	if !gen.After(m.newestGen) {
		gen = m.newestGen.Add(time.Microsecond) // generations only grow, whatever the clock does
	}
	watermark := reached
	if watermark.Before(m.watermark) {
		watermark = m.watermark
	}
	foldedMax := m.foldedMax
	if st.newest.After(foldedMax) {
		foldedMax = st.newest
	}
	run := render.Run{Watermark: read, FoldedMax: foldedMax, Generation: gen, NewWatermark: watermark,
		TombstoneCutoff: c.tombstoneCutoff(now)}
	fold, err := plan.Fold(run)
	if err != nil {
		return err
	}
	stat, err := c.exec(ctx, fold, acct)
	if err != nil {
		return fmt.Errorf("folding: %w", err)
	}
	rep.Outcome, rep.Generation, rep.WatermarkAfter = Compacted, gen, watermark
	if stat != nil {
		rep.RowsWritten = stat.NumDMLAffectedRows
	}
	if err := c.step(b, StepFold); err != nil {
		return err
	}
	if err := c.gc(ctx, plan, run, m, acct); err != nil {
		return err
	}
	if err := c.step(b, StepGC); err != nil {
		return err
	}
	if err := c.view(ctx, b, cols, watermark, &applied); err != nil {
		return err
	}
	if err := c.step(b, StepView); err != nil {
		return err
	}
	next.watermark, next.foldedMax, next.clean = watermark, foldedMax, !watermark.Before(next.sigSeen)
	return c.setLabels(ctx, b, next)
}

// markerStats reads the state's newest marker and what a run would fold. With
// labels from an earlier run it is one query, reading the changelog from the
// labelled watermark (a constant, so BigQuery prunes the partitions before
// it); read is the watermark the fold must read from. Without labels (the
// first run, or a state table made by an older bqcdc) the marker is read
// first, so the statistics start from the state's true watermark.
func (c *Compactor) markerStats(ctx context.Context, plan *render.Compaction, l labels, acct *account) (marker, stats, time.Time, error) {
	if !l.known {
		m, err := c.marker(ctx, plan, acct)
		if err != nil {
			return m, stats{}, time.Time{}, err
		}
		st, err := c.stats(ctx, plan, render.Run{Watermark: m.watermark, FoldedMax: m.foldedMax}, acct)
		return m, st, m.watermark, err
	}
	sql, err := plan.MarkerStats(render.Run{Watermark: l.watermark, FoldedMax: l.foldedMax})
	if err != nil {
		return marker{}, stats{}, time.Time{}, err
	}
	rows, err := c.query(ctx, sql, acct)
	if err != nil {
		return marker{}, stats{}, time.Time{}, fmt.Errorf("reading the watermark and what to fold: %w", err)
	}
	if len(rows) != 1 {
		return marker{}, stats{}, time.Time{}, fmt.Errorf("reading what to fold: the query returned %d rows, want 1", len(rows))
	}
	m := markerOf(rows[0])
	if m.watermark.Before(l.watermark) {
		// The labels lead the state table: it was recreated, or its rows
		// deleted. Start from what the state table says.
		st, err := c.stats(ctx, plan, render.Run{Watermark: m.watermark, FoldedMax: m.foldedMax}, acct)
		return m, st, m.watermark, err
	}
	return m, statsOf(rows[0]), l.watermark, nil
}

// stateEmpty reports whether a state table's metadata says it holds no row
// (a table that does not exist yet holds none).
func stateEmpty(md *bigquery.TableMetadata) bool {
	if md == nil {
		return true
	}
	if sb := md.StreamingBuffer; sb != nil && sb.EstimatedRows > 0 {
		return false
	}
	return md.NumRows == 0
}

// ensureState makes sure the flow's state table exists with the flow's
// columns: the state follows the changelog, so columns ingest added since
// the last run are added before anything is folded into them. It returns
// the columns' signature (for the view).
func (c *Compactor) ensureState(ctx context.Context, t *task, applied *apply.Report) (string, error) {
	want := catalog.StateColumns(t.b)
	cols := fmt.Sprint(want)
	if t.state != nil {
		have := bqschema.FromBigQuery(t.state.Schema)
		missing := false
		for _, w := range want {
			if _, ok := have.Lookup(w.Name); !ok {
				missing = true
				break
			}
		}
		if !missing {
			return cols, nil
		}
	}
	if err := apply.State(ctx, c.bq, c.loc, t.b, applied); err != nil {
		return "", fmt.Errorf("bringing the state table up to date: %w", err)
	}
	return cols, nil
}

// setLabels records the run on the state table (a metadata update).
func (c *Compactor) setLabels(ctx context.Context, b *flow.Bound, l labels) error {
	var upd bigquery.TableMetadataToUpdate
	l.update(&upd)
	t := c.bq.Dataset(c.loc.Dataset(b.Flow)).Table(catalog.StateName(b.Flow))
	if _, err := t.Update(ctx, upd, ""); err != nil {
		return fmt.Errorf("labelling the state table (the next run checks the flow with a query): %w", err)
	}
	return nil
}

// view renders b's view with the pruning bound hint, unless this compactor
// already did for the same columns (cols) and hint.
func (c *Compactor) view(ctx context.Context, b *flow.Bound, cols string, hint time.Time, rep *apply.Report) error {
	key := cols + "@" + hint.Format(time.RFC3339Nano)
	if seen, ok := c.views.Load(b.Name); ok && seen == key {
		return nil
	}
	if err := apply.View(ctx, c.bq, c.loc, b, hint, rep); err != nil {
		return fmt.Errorf("updating the view (pruning bound %s): %w", hint.Format(time.RFC3339), err)
	}
	c.views.Store(b.Name, key)
	return nil
}

func (c *Compactor) step(b *flow.Bound, step string) error {
	if c.opts.AfterStep == nil {
		return nil
	}
	if err := c.opts.AfterStep(b.Name, step); err != nil {
		return fmt.Errorf("stopped after step %s: %w", step, err)
	}
	return nil
}

func (c *Compactor) tombstoneCutoff(now time.Time) time.Time {
	if c.opts.TombstoneRetention <= 0 {
		return render.Epoch
	}
	return now.Add(-c.opts.TombstoneRetention)
}

// gc deletes rows no view reads any more, in one script. Each statement is
// idempotent.
func (c *Compactor) gc(ctx context.Context, plan *render.Compaction, run render.Run, m marker, acct *account) error {
	var extra []string
	if m.found && m.gen.Before(run.Generation) {
		// Finish the previous run's cleanup too, in case it stopped early
		// (the markers and tombstones this run deletes cover its own).
		prev := run
		prev.Generation = m.gen
		sql, err := plan.GCSuperseded(prev)
		if err != nil {
			return err
		}
		extra = append(extra, sql)
	}
	script, err := plan.GCScript(run, extra...)
	if err != nil {
		return err
	}
	if _, err := c.exec(ctx, script, acct); err != nil {
		return fmt.Errorf("deleting rows no view reads: %w", err)
	}
	return nil
}

func (c *Compactor) marker(ctx context.Context, plan *render.Compaction, acct *account) (marker, error) {
	sql, err := plan.Marker()
	if err != nil {
		return marker{}, err
	}
	rows, err := c.query(ctx, sql, acct)
	if err != nil {
		return marker{}, fmt.Errorf("reading the watermark: %w", err)
	}
	if len(rows) == 1 {
		return markerOf(rows[0]), nil
	}
	return markerOf(nil), nil
}

func markerOf(row map[string]bigquery.Value) marker {
	m := marker{gen: render.Epoch, watermark: render.Epoch, foldedMax: render.Epoch, newestGen: render.Epoch}
	if row == nil {
		return m
	}
	if _, ok := row[catalog.ColStateGen].(time.Time); !ok {
		return m // no marker yet (the statistics half of MarkerStats has a row anyway)
	}
	m.found = true
	m.gen = ts(row[catalog.ColStateGen], render.Epoch)
	m.watermark = ts(row[catalog.ColStateWatermark], render.Epoch)
	m.foldedMax = ts(row["folded_max"], render.Epoch)
	m.newestGen = ts(row["newest_gen"], m.gen)
	return m
}

func ts(v bigquery.Value, def time.Time) time.Time {
	if t, ok := v.(time.Time); ok {
		return t.UTC()
	}
	return def
}

func (c *Compactor) stats(ctx context.Context, plan *render.Compaction, r render.Run, acct *account) (stats, error) {
	sql, err := plan.Stats(r)
	if err != nil {
		return stats{}, err
	}
	rows, err := c.query(ctx, sql, acct)
	if err != nil {
		return stats{}, fmt.Errorf("reading what to fold: %w", err)
	}
	if len(rows) != 1 {
		return stats{}, fmt.Errorf("reading what to fold: the statistics query returned %d rows, want 1", len(rows))
	}
	return statsOf(rows[0]), nil
}

func statsOf(row map[string]bigquery.Value) stats {
	n := func(k string) int64 { v, _ := row[k].(int64); return v }
	return stats{events: n("events"), withoutSequence: n("without_sequence"), unfolded: n("unfolded"), keys: n("keys"),
		newest: ts(row["newest"], render.Epoch)}
}

// readState reads a state table's metadata; nil when it does not exist.
func (c *Compactor) readState(ctx context.Context, b *flow.Bound) (*bigquery.TableMetadata, error) {
	md, err := c.bq.Dataset(c.loc.Dataset(b.Flow)).Table(catalog.StateName(b.Flow)).Metadata(ctx)
	if bqerror.NotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the state table of flow %s: %w", b.Name, err)
	}
	return md, nil
}
