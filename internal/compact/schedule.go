package compact

import (
	"context"
	"fmt"
	"github.com/bqcdc/bqcdc/internal/bqerror"
	"hash/fnv"
	"slices"
	"sync"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/metrics"
	"github.com/bqcdc/bqcdc/internal/plan"
	"github.com/bqcdc/bqcdc/sql/render"
)

// Compact runs one compaction over sel: it reads the metadata of every
// changelog and state table involved (no query jobs), then compacts the
// flows that need it, longest waiting first, Concurrency at a time, within
// the Budget; then expires changelog days and appends the reports.
func (c *Compactor) Compact(ctx context.Context, sel Selection) ([]Report, error) {
	start := c.opts.Now().UTC()
	tasks, changelogs, err := c.metadata(ctx, sel)
	if err != nil {
		return nil, err
	}
	idle := sel.Idle
	if len(sel.Names) > 0 {
		idle = nil // a named run runs what it names
	}
	// The longest waiting first: never checked, then by the last check.
	order := make([]int, len(tasks))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return tasks[a].labels.checked.Compare(tasks[b].labels.checked) })
	reports := make([]Report, len(tasks))
	var wg sync.WaitGroup
	slots := make(chan struct{}, c.opts.Concurrency)
	for _, i := range order {
		t := tasks[i]
		slots <- struct{}{}
		if c.opts.Budget > 0 && c.opts.Now().Sub(start) >= c.opts.Budget || ctx.Err() != nil {
			<-slots
			reports[i] = Report{Flow: t.b.Name, Target: t.b.Target.String(), Source: sourceName(t.b), Outcome: Deferred,
				WatermarkBefore: t.labels.watermark, WatermarkAfter: t.labels.watermark}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			reports[i] = c.runFlow(ctx, t)
		}()
	}
	wg.Wait()
	if c.opts.ChangelogRetention > 0 {
		c.expire(ctx, sel, tasks, reports, changelogs)
	}
	for i, r := range reports {
		c.logOutcome(r)
		c.measure(ctx, r, tasks[i].p.Machine() == plan.Snapshot)
	}
	for _, f := range idle {
		r := Report{Flow: f.Flow.Name, Target: f.Flow.Target.String(), Source: f.Flow.Source.Name, Outcome: Idle,
			WatermarkBefore: f.Watermark, WatermarkAfter: f.Watermark, LedgerIdle: true}
		c.logOutcome(r)
		c.measure(ctx, r, false)
		reports = append(reports, r)
	}
	c.writeReports(ctx, start, sel, reports)
	return reports, nil
}

// metadata is a run's metadata phase after Prepare: the selected flows'
// changelog metadata (what Prepare did not read) and state tables'.
func (c *Compactor) metadata(ctx context.Context, sel Selection) ([]*task, map[string]changelogMeta, error) {
	flows, err := Select(sel.Flows, sel.Names)
	if err != nil {
		return nil, nil, err
	}
	if sel.Shards > 1 && !sel.Sharded {
		flows = InShard(flows, sel.Shard, sel.Shards)
	}
	changelogs := c.readChangelogs(ctx, flows, sel.Changelogs)
	return c.prepare(ctx, flows, changelogs), changelogs, nil
}

// runFlow compacts one flow and reports it.
func (c *Compactor) runFlow(ctx context.Context, t *task) Report {
	start := c.opts.Now().UTC()
	rep := Report{Flow: t.b.Name, Target: t.b.Target.String(), Source: sourceName(t.b)}
	var acct account
	err := c.flow(ctx, t, start, &rep, &acct)
	rep.Duration = c.opts.Now().Sub(start)
	rep.Jobs, rep.BytesBilled, rep.Plan = acct.jobs, acct.bytes, acct.plan
	if err != nil {
		rep.Outcome, rep.Error, rep.Unreachable = Failed, err.Error(), bqerror.IsUnreachable(err)
	}
	return rep
}

// readChangelogs returns the changelog metadata of every source of flows
// (a snapshot flow's table, by its flow.SourceKey): known ones as given,
// the others read, Concurrency at a time.
func (c *Compactor) readChangelogs(ctx context.Context, flows []*flow.Bound, known map[string]*bigquery.TableMetadata) map[string]changelogMeta {
	out := map[string]changelogMeta{}
	var need []*flow.Bound // the first flow of each source to read
	for _, b := range flows {
		src := b.SourceKey()
		if _, seen := out[src]; seen {
			continue
		}
		if md := known[src]; md != nil {
			out[src] = changelogMeta{md: md}
			continue
		}
		out[src] = changelogMeta{}
		need = append(need, b)
	}
	results := make([]changelogMeta, len(need))
	c.parallel(len(need), func(i int) {
		b := need[i]
		var dataset, table, what string
		if src, ok := b.ChangelogSource(); ok {
			dataset, table, what = c.loc.DefaultDataset, catalog.TableName(src), "the changelog of"
		} else {
			dataset, table = b.SnapshotName()
			what = "the snapshot table"
		}
		md, err := c.wh.Metadata(ctx, dataset, table)
		if err == nil && md == nil {
			err = fmt.Errorf("%s %s does not exist", what, sourceName(b))
		}
		if err != nil {
			err = fmt.Errorf("reading %s %s: %w", what, sourceName(b), err)
		}
		results[i] = changelogMeta{md: md, err: err}
	})
	for i, b := range need {
		out[b.SourceKey()] = results[i]
	}
	return out
}

type changelogMeta struct {
	md  *bigquery.TableMetadata
	err error
}

// prepare reads every flow's state table metadata (its labels decide the
// order and idleness), Concurrency at a time.
func (c *Compactor) prepare(ctx context.Context, flows []*flow.Bound, changelogs map[string]changelogMeta) []*task {
	tasks := make([]*task, len(flows))
	c.parallel(len(flows), func(i int) {
		b := flows[i]
		t := &task{b: b, p: plan.For(b, c.loc)}
		cl := changelogs[b.SourceKey()]
		t.changelog, t.err = cl.md, cl.err
		if t.err == nil {
			if t.state, t.err = c.readState(ctx, b); t.state != nil {
				t.labels = readLabels(t.state.Labels)
			}
		}
		tasks[i] = t
	})
	return tasks
}

// parallel runs fn(0..n-1), Concurrency at a time.
func (c *Compactor) parallel(n int, fn func(i int)) {
	var wg sync.WaitGroup
	slots := make(chan struct{}, c.opts.Concurrency)
	for i := range n {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			fn(i)
		}()
	}
	wg.Wait()
}

// InShard keeps the flows whose source falls in shard of shards: all the
// flows of a source are in one shard, so changelog retention, which needs
// every flow of a source, stays within one run.
func InShard(flows []*flow.Bound, shard, shards int) []*flow.Bound {
	var out []*flow.Bound
	for _, b := range flows {
		if ShardOf(b.SourceKey(), shards) == shard {
			out = append(out, b)
		}
	}
	return out
}

// ShardOf is the shard of a source among shards.
func ShardOf(source string, shards int) int {
	if shards <= 1 {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(source))
	return int(h.Sum32() % uint32(shards))
}

// logOutcome writes the run of one flow as one structured line (an error
// for a failed run, so alerts on error logs see it).
func (c *Compactor) logOutcome(rep Report) {
	attrs := []any{"event", "compaction", "flow", rep.Flow, "outcome", rep.Outcome, "events_read", rep.EventsRead,
		"keys_touched", rep.KeysTouched, "rows_written", rep.RowsWritten, "watermark", rep.WatermarkAfter,
		"jobs", rep.Jobs, "bytes_billed", rep.BytesBilled, "duration_ms", rep.Duration.Milliseconds()}
	if rep.Outcome == Failed {
		c.opts.Log.Error("compaction failed", append(attrs, "error", rep.Error)...)
		return
	}
	if rep.Error != "" {
		attrs = append(attrs, "error", rep.Error)
	}
	if rep.AppliedVersion != "" {
		attrs = append(attrs, "applied_version", rep.AppliedVersion, "snapshot_rows_skipped", rep.RowsSkipped)
	}
	c.opts.Log.Info("compaction", attrs...)
}

// measure records one flow's run. A run that left nothing to fold (idle,
// up to date) reports an unfolded age of 0, so a quiet source never looks
// behind; any other run reports how far its watermark trails the clock,
// which grows while runs fail or are deferred. A flow never folded (its
// watermark is the epoch) has no age to report unless nothing waits.
//
// A snapshot flow's run that read its table's statistics also reports the
// rows of the table never applied.
func (c *Compactor) measure(ctx context.Context, r Report, snapshot bool) {
	age := time.Duration(-1)
	switch w := r.WatermarkAfter; {
	case r.Outcome == Idle || r.Outcome == UpToDate:
		age = 0
	case !w.IsZero() && w.After(render.Epoch):
		age = c.opts.Now().Sub(w)
	}
	// RowsSkipped is known from a run that read the table's statistics.
	read := snapshot && (r.Outcome == Compacted || r.Outcome == UpToDate || r.Outcome == Settling)
	c.opts.Metrics.Compacted(ctx, metrics.Compaction{Flow: r.Flow, Outcome: r.Outcome, Duration: r.Duration,
		Events: r.EventsRead, Jobs: r.Jobs, BytesBilled: r.BytesBilled, UnfoldedAge: age, Snapshot: read, SnapshotRowsSkipped: r.RowsSkipped})
}

// writeReports appends one row per flow to the report table, through the
// Storage Write API: no DML on a shared table, whatever the number of
// flows and runs. Best effort: correctness never depends on it.
func (c *Compactor) writeReports(ctx context.Context, start time.Time, sel Selection, reports []Report) {
	if c.opts.Reports == nil || len(reports) == 0 || c.opts.DryRun != nil {
		return
	}
	runID := fmt.Sprintf("%s-%d", start.Format("20060102T150405.000000Z"), sel.Shard)
	rows := make([]map[string]any, len(reports))
	for i, r := range reports {
		rows[i] = catalog.CompactionRun{RunID: runID, RunAt: start, Shard: sel.Shard, Flow: r.Flow, Target: r.Target, Source: r.Source,
			Outcome: r.Outcome, EventsRead: r.EventsRead, WithoutSequence: r.WithoutSequence, KeysTouched: r.KeysTouched,
			RowsWritten: r.RowsWritten, WatermarkBefore: r.WatermarkBefore, WatermarkAfter: r.WatermarkAfter, Generation: r.Generation,
			Jobs: r.Jobs, BytesBilled: r.BytesBilled, Duration: r.Duration, Error: r.Error,
			AppliedVersion: r.AppliedVersion, RowsSkipped: r.RowsSkipped, FeedHeld: r.FeedHeld, KeysOutsideRange: r.KeysOutsideRange,
			NewestSourceTS: r.NewestSourceTS, LastIngestedAt: r.LastIngestedAt, TailRows: r.TailRows}.Row()
	}
	if err := c.opts.Reports.Append(ctx, catalog.CompactionRunsTable, rows); err != nil {
		c.opts.Log.Warn("compaction reports not written", "event", "compaction_report_failed", "error", err.Error())
	}
}
