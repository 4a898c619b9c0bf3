// Package compact folds changelog rows into each flow's state table, so the
// flow's view reads the state plus a short tail instead of the whole
// changelog. It is what the scheduled Compact function and `bqcdc compact`
// run.
//
// # Why it is correct without transactions
//
// A state table holds generations of rows. Each run writes a new generation
// in ONE INSERT statement: the rows of every key the new changelog rows touch
// (their folded events) plus a watermark marker W. Views take, per key, only
// the rows of its newest generation, and read the changelog tail ingested
// after the newest marker's W. A single INSERT is atomic, so a view sees
// either the old generation with the old tail, or the new generation with the
// new tail, and both fold to the same result. Everything after the INSERT
// only deletes rows no view can see (older generations of rewritten keys,
// older markers, expired tombstones) and may crash at any point: the next run
// reads the same state and finishes the cleanup. Re-running a crashed fold
// re-reads the rows after the old watermark and folds them again, which is
// idempotent: events are deduplicated by message id and the fold keeps only
// events that decide the view.
//
// # Why no late row is lost
//
// _cdc_ingested_at is stamped by the ingest function before its append, and
// an append completes within the function's timeout, so a row becomes
// visible at most VisibilityLag after its _cdc_ingested_at. A run starting
// at time C reads everything after the old watermark that is visible, and
// sets the new watermark to C - VisibilityLag: every row at or before it was
// visible when the run read, so it is folded; a row appended later has a
// later _cdc_ingested_at and stays in the view's tail until the next run
// folds it. Concurrent runs are safe too: a generation is the run's start
// time, views pick each key's newest generation, and any row a newer
// generation missed is newer than that generation's watermark, hence in the
// tail.
package compact

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/apply"
	"github.com/bqcdc/bqcdc/internal/bqerror"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/clients"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/sql/render"
)

// Steps of a flow's run that Options.AfterStep is called after, in order.
// (The report row and changelog retention follow them; neither affects
// what a view shows.)
const (
	StepFold = "fold" // the INSERT of the new generation: the commit point
	StepGC   = "gc"   // deleting superseded rows
	StepView = "view" // moving the view's partition-pruning bound
)

// Options configure a Compactor.
type Options struct {
	// VisibilityLag bounds how long after its _cdc_ingested_at a changelog
	// row can become visible: the ingest function's timeout plus clock skew.
	VisibilityLag time.Duration
	// TombstoneRetention keeps SCD 1 delete tombstones this long (by
	// ingestion time); 0 keeps them forever.
	TombstoneRetention time.Duration
	// ChangelogRetention deletes changelog days older than this once every
	// flow reading the source has folded them; 0 keeps the changelog forever.
	ChangelogRetention time.Duration
	// Now is the clock (tests replace it).
	Now func() time.Time
	// AfterStep runs after each step of a flow's run; an error stops the run
	// there, as a crash would (tests inject failures with it).
	AfterStep func(flow, step string) error
	// Attempts and Backoff govern retries of transient BigQuery errors
	// (concurrent DML on the same table, rate limits, 5xx).
	Attempts int
	Backoff  time.Duration
	// Log receives one line per flow and run (its outcome); nil discards.
	Log *slog.Logger
}

// Compactor runs compactions against one BigQuery project.
type Compactor struct {
	bq   *bigquery.Client
	loc  catalog.Location
	opts Options

	// stateSchemas remembers, per flow, the state columns this compactor
	// last made sure of, so a run reads the state table's metadata only
	// when the flow's columns changed (a changelog gained columns).
	stateSchemas sync.Map // flow name -> string
	// views remembers, per flow, the columns and pruning bound this
	// compactor last rendered the view with, so a run with nothing to fold
	// reads the view's metadata only when the flow's columns changed.
	views sync.Map // flow name -> string
}

// New returns a compactor.
func New(bq *bigquery.Client, loc catalog.Location, opts Options) *Compactor {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Attempts == 0 {
		opts.Attempts = 6
	}
	if opts.Backoff == 0 {
		opts.Backoff = time.Second
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &Compactor{bq: bq, loc: loc, opts: opts}
}

// Report is the outcome of one flow's run.
type Report struct {
	Flow            string        `json:"flow"`
	Target          string        `json:"target"`
	Outcome         string        `json:"outcome"` // compacted, up to date, failed
	EventsRead      int64         `json:"events_read"`
	WithoutSequence int64         `json:"events_without_sequence"`
	KeysTouched     int64         `json:"keys_touched"`
	RowsWritten     int64         `json:"rows_written"`
	WatermarkBefore time.Time     `json:"watermark_before"`
	WatermarkAfter  time.Time     `json:"watermark_after"`
	Generation      time.Time     `json:"generation,omitempty"`
	Duration        time.Duration `json:"duration_ns"`
	Error           string        `json:"error,omitempty"`
}

// Outcomes.
const (
	Compacted = "compacted"
	UpToDate  = "up to date"
	Failed    = "failed"
)

// Run compacts every flow, one after the other; a failing flow does not stop
// the others. Then it expires changelog days every flow has folded.
func (c *Compactor) Run(ctx context.Context, flows []*flow.Bound) []Report {
	reports, _ := c.RunSelected(ctx, flows, nil, nil)
	return reports
}

// RunSelected compacts the flows of all named in names (every flow when
// names is empty). Changelog days expire only for sources whose every flow
// in all was compacted by this run, and that no unbound flow reads (a flow
// deployed but refused at binding, e.g. after a source dropped a column it
// names): a flow left out may not have folded them yet.
func (c *Compactor) RunSelected(ctx context.Context, all []*flow.Bound, names []string, unbound []*flow.Flow) ([]Report, error) {
	flows, err := Select(all, names)
	if err != nil {
		return nil, err
	}
	var reports []Report
	for _, b := range flows {
		reports = append(reports, c.Flow(ctx, b))
	}
	if c.opts.ChangelogRetention > 0 {
		c.expire(ctx, all, flows, unbound, reports)
	}
	return reports, nil
}

type marker struct {
	gen, watermark, foldedMax, newestGen time.Time
	found                                bool
}

// Flow compacts one flow.
func (c *Compactor) Flow(ctx context.Context, b *flow.Bound) Report {
	start := c.opts.Now().UTC()
	rep := Report{Flow: b.Name, Target: b.Target.String()}
	err := c.flow(ctx, b, start, &rep)
	rep.Duration = c.opts.Now().Sub(start)
	if err != nil {
		rep.Outcome, rep.Error = Failed, err.Error()
	}
	// The report row is best effort: correctness never depends on it.
	if rerr := c.report(ctx, b, rep, start); rerr != nil && rep.Error == "" {
		rep.Error = "writing the report: " + rerr.Error()
	}
	c.logOutcome(rep)
	return rep
}

// logOutcome writes the run of one flow as one structured line (an error
// for a failed run, so alerts on error logs see it).
func (c *Compactor) logOutcome(rep Report) {
	attrs := []any{"event", "compaction", "flow", rep.Flow, "outcome", rep.Outcome, "events_read", rep.EventsRead,
		"keys_touched", rep.KeysTouched, "rows_written", rep.RowsWritten, "watermark", rep.WatermarkAfter, "duration_ms", rep.Duration.Milliseconds()}
	if rep.Outcome == Failed {
		c.opts.Log.Error("compaction failed", append(attrs, "error", rep.Error)...)
		return
	}
	if rep.Error != "" {
		attrs = append(attrs, "error", rep.Error)
	}
	c.opts.Log.Info("compaction", attrs...)
}

func (c *Compactor) flow(ctx context.Context, b *flow.Bound, now time.Time, rep *Report) error {
	var applied apply.Report
	cols, err := c.ensureState(ctx, b, &applied)
	if err != nil {
		return err
	}
	plan := render.NewCompaction(b, c.loc)
	m, err := c.marker(ctx, plan)
	if err != nil {
		return err
	}
	rep.WatermarkBefore, rep.WatermarkAfter = m.watermark, m.watermark
	st, err := c.stats(ctx, plan, render.Run{Watermark: m.watermark, FoldedMax: m.foldedMax})
	if err != nil {
		return err
	}
	rep.EventsRead, rep.WithoutSequence, rep.KeysTouched = st.events, st.withoutSequence, st.keys
	if st.unfolded == 0 {
		// Nothing ingested since the last run: no generation, same watermark.
		// The view is still brought up to date (a read when it is), so
		// columns ingest added to the changelog appear in it without
		// waiting for new changes.
		rep.Outcome = UpToDate
		return c.view(ctx, b, cols, m.watermark, &applied)
	}
	gen := now
	if !gen.After(m.newestGen) {
		gen = m.newestGen.Add(time.Microsecond) // generations only grow, whatever the clock does
	}
	watermark := now.Add(-c.opts.VisibilityLag).Truncate(time.Microsecond)
	if watermark.Before(m.watermark) {
		watermark = m.watermark
	}
	foldedMax := m.foldedMax
	if st.newest.After(foldedMax) {
		foldedMax = st.newest
	}
	run := render.Run{Watermark: m.watermark, FoldedMax: foldedMax, Generation: gen, NewWatermark: watermark,
		TombstoneCutoff: c.tombstoneCutoff(now)}
	fold, err := plan.Fold(run)
	if err != nil {
		return err
	}
	if err := c.exec(ctx, fold); err != nil {
		return fmt.Errorf("folding: %w", err)
	}
	rep.Outcome, rep.Generation, rep.WatermarkAfter = Compacted, gen, watermark
	if err := c.step(b, StepFold); err != nil {
		return err
	}
	return c.afterFold(ctx, b, plan, run, m, cols, rep, &applied)
}

// ensureState makes sure the flow's state table has the flow's columns: the
// state follows the changelog, so columns ingest added since the last run
// are added before anything is folded into them. It returns the columns'
// signature; the table is read only when it changed since this compactor
// last made sure of it.
func (c *Compactor) ensureState(ctx context.Context, b *flow.Bound, applied *apply.Report) (string, error) {
	cols := fmt.Sprint(catalog.StateColumns(b))
	if seen, ok := c.stateSchemas.Load(b.Name); !ok || seen != cols {
		if err := apply.State(ctx, c.bq, c.loc, b, applied); err != nil {
			return "", fmt.Errorf("bringing the state table up to date: %w", err)
		}
		c.stateSchemas.Store(b.Name, cols)
	}
	return cols, nil
}

// afterFold runs what follows the commit point: counting the generation,
// deleting what no view reads, moving the view's pruning bound.
func (c *Compactor) afterFold(ctx context.Context, b *flow.Bound, plan *render.Compaction, run render.Run, m marker, cols string, rep *Report, applied *apply.Report) error {
	count, err := plan.RowsWritten(run)
	if err != nil {
		return err
	}
	if rep.RowsWritten, err = c.count(ctx, count); err != nil {
		return err
	}
	if err := c.gc(ctx, plan, run, m); err != nil {
		return err
	}
	if err := c.step(b, StepGC); err != nil {
		return err
	}
	if err := c.view(ctx, b, cols, run.NewWatermark, applied); err != nil {
		return err
	}
	return c.step(b, StepView)
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

// gc deletes rows no view reads any more. Each statement is idempotent.
func (c *Compactor) gc(ctx context.Context, plan *render.Compaction, run render.Run, m marker) error {
	stmts, err := plan.GC(run)
	if err != nil {
		return err
	}
	if m.found && m.gen.Before(run.Generation) {
		// Finish the previous run's cleanup too, in case it stopped early
		// (the markers and tombstones this run deletes cover its own).
		prev := run
		prev.Generation = m.gen
		sql, err := plan.GCSuperseded(prev)
		if err != nil {
			return err
		}
		stmts = append(stmts[:1:1], append([]string{sql}, stmts[1:]...)...)
	}
	for _, sql := range stmts {
		if err := c.exec(ctx, sql); err != nil {
			return fmt.Errorf("deleting rows no view reads: %w", err)
		}
	}
	return nil
}

func (c *Compactor) marker(ctx context.Context, plan *render.Compaction) (marker, error) {
	sql, err := plan.Marker()
	if err != nil {
		return marker{}, err
	}
	rows, err := c.query(ctx, sql)
	if err != nil {
		return marker{}, fmt.Errorf("reading the watermark: %w", err)
	}
	m := marker{gen: render.Epoch, watermark: render.Epoch, foldedMax: render.Epoch, newestGen: render.Epoch}
	if len(rows) == 1 {
		m.found = true
		m.gen = ts(rows[0][catalog.ColStateGen], render.Epoch)
		m.watermark = ts(rows[0][catalog.ColStateWatermark], render.Epoch)
		m.foldedMax = ts(rows[0]["folded_max"], render.Epoch)
		m.newestGen = ts(rows[0]["newest_gen"], m.gen)
	}
	return m, nil
}

func ts(v bigquery.Value, def time.Time) time.Time {
	if t, ok := v.(time.Time); ok {
		return t.UTC()
	}
	return def
}

type stats struct {
	events, withoutSequence, unfolded, keys int64
	newest                                  time.Time
}

func (c *Compactor) stats(ctx context.Context, plan *render.Compaction, r render.Run) (stats, error) {
	sql, err := plan.Stats(r)
	if err != nil {
		return stats{}, err
	}
	rows, err := c.query(ctx, sql)
	if err != nil {
		return stats{}, fmt.Errorf("reading what to fold: %w", err)
	}
	if len(rows) != 1 {
		return stats{}, fmt.Errorf("reading what to fold: the statistics query returned %d rows, want 1", len(rows))
	}
	row := rows[0]
	n := func(k string) int64 { v, _ := row[k].(int64); return v }
	return stats{events: n("events"), withoutSequence: n("without_sequence"), unfolded: n("unfolded"), keys: n("keys"),
		newest: ts(row["newest"], render.Epoch)}, nil
}

func (c *Compactor) count(ctx context.Context, sql string, params ...bigquery.QueryParameter) (int64, error) {
	it, err := c.read(ctx, sql, params)
	if err != nil {
		return 0, err
	}
	var row []bigquery.Value
	if err := it.Next(&row); err != nil {
		return 0, err
	}
	n, _ := row[0].(int64)
	return n, nil
}

func (c *Compactor) query(ctx context.Context, sql string, params ...bigquery.QueryParameter) ([]map[string]bigquery.Value, error) {
	it, err := c.read(ctx, sql, params)
	if err != nil {
		return nil, err
	}
	return clients.Collect(it)
}

// exec runs a DML statement, retrying transient failures.
func (c *Compactor) exec(ctx context.Context, sql string, params ...bigquery.QueryParameter) error {
	_, err := c.read(ctx, sql, params)
	return err
}

func (c *Compactor) read(ctx context.Context, sql string, params []bigquery.QueryParameter) (*bigquery.RowIterator, error) {
	var err error
	for attempt := 0; attempt < c.opts.Attempts; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(c.opts.Backoff << (attempt - 1)):
			}
		}
		q := c.bq.Query(sql)
		q.Parameters = params
		var it *bigquery.RowIterator
		if it, err = q.Read(ctx); err == nil {
			return it, nil
		}
		if !bqerror.IsTransient(err) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("giving up after %d attempts: %w", c.opts.Attempts, err)
}

func (c *Compactor) report(ctx context.Context, b *flow.Bound, r Report, start time.Time) error {
	table := fmt.Sprintf("%s.%s.%s", flow.QuoteIdent(c.loc.Project), flow.QuoteIdent(c.loc.DefaultDataset), flow.QuoteIdent(catalog.CompactionTable))
	p := func(name string, v any) bigquery.QueryParameter { return bigquery.QueryParameter{Name: name, Value: v} }
	if err := c.exec(ctx, "DELETE FROM "+table+" WHERE flow = @flow", p("flow", b.Name)); err != nil {
		return err
	}
	var gen any = bigquery.NullTimestamp{}
	if !r.Generation.IsZero() {
		gen = r.Generation
	}
	return c.exec(ctx, "INSERT INTO "+table+` (flow, target, watermark, generation, last_run, events_read, events_without_sequence,
  keys_touched, rows_written, duration_ms, outcome, error)
VALUES (@flow, @target, @watermark, @generation, @last_run, @events_read, @without_sequence, @keys, @rows, @duration_ms, @outcome, @error)`,
		p("flow", b.Name), p("target", r.Target), p("watermark", r.WatermarkAfter), p("generation", gen), p("last_run", start),
		p("events_read", r.EventsRead), p("without_sequence", r.WithoutSequence), p("keys", r.KeysTouched), p("rows", r.RowsWritten),
		p("duration_ms", r.Duration.Milliseconds()), p("outcome", r.Outcome), p("error", r.Error))
}
