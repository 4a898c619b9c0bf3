package compact

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/apply"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/sql/render"
)

// A snapshot flow (AUTO CDC FROM SNAPSHOT) reads a user's table of
// snapshots, not a changelog: its state holds what is applied up to an
// applied version (render, snapshot.go), and a run applies the snapshots
// newer than it. Runs follow the same pattern as a change stream's:
//
//   - idle (no query) while the table's metadata signature is the one the
//     last run left clean: every row it reflects was read;
//   - else the marker (1 job: the applied version, read from the state) and
//     the statistics (1 job: the rows of newer snapshots, read with the
//     applied version as a constant bound, so BigQuery prunes the older
//     snapshots of a table partitioned or clustered by its version, and
//     the table's row count);
//   - if there are newer snapshots, the fold (1 job: one INSERT of the new
//     generation and its marker, the commit point) and the clean-up (1
//     job).
//
// A run's cost is the newer snapshots plus the state's current rows (SCD
// 1) or open versions (SCD 2); closed versions are written once and never
// read by compaction again. A snapshot loaded with a version at or before
// the applied one is skipped; the rows the table holds beyond those
// processed and the newer ones are reported as RowsSkipped.

// sourceName is what a report names as a flow's source: its topic, or a
// snapshot flow's dataset.table.
func sourceName(b *flow.Bound) string {
	if b.IsSnapshot() {
		return b.Snapshot.String()
	}
	return b.Source.Name
}

type snapshotMarker struct {
	version   string // the applied version key, as text
	gen       time.Time
	newestGen time.Time
	found     bool
}

type snapshotStats struct {
	total, events, versions, keys, processed int64
	newest                                   string // the newest version key read, as text ("" if none)
	older                                    string // the newest version key below newest ("" if none)
}

// snapshotFlow compacts one snapshot flow; acct counts its query jobs.
func (c *Compactor) snapshotFlow(ctx context.Context, t *task, now time.Time, rep *Report, acct *account) error {
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
		return c.snapshotView(ctx, b, cols, "", &applied)
	}
	// The statistics read the table after its metadata was: every row the
	// signature reflects is read, so a run that leaves nothing to apply
	// leaves the signature clean.
	next := labels{known: true, sig: sig, sigSeen: now, checked: now, watermark: now, foldedMax: now, clean: true}
	plan := render.NewSnapshotCompaction(b, c.loc)
	m, err := c.readSnapshotMarker(ctx, plan, acct)
	if err != nil {
		return err
	}
	bound := ""
	if m.found {
		if bound, err = render.VersionBound(b, m.version); err != nil {
			return err
		}
		rep.AppliedVersion = bound
	}
	st, err := c.readSnapshotStats(ctx, plan, bound, acct)
	if err != nil {
		return err
	}
	rep.EventsRead, rep.KeysTouched = st.events, st.keys
	rep.RowsSkipped = max(0, st.total-st.processed-st.events)
	// The run applies the versions the statistics saw, up to upTo: a
	// version loaded meanwhile waits for the next run, where it is counted
	// and applied whole. While the table is still being written, the newest
	// version may be incomplete: it waits too.
	upTo := st.newest
	if st.events > 0 && c.opts.SnapshotSettle > 0 && now.Sub(t.changelog.LastModifiedTime) < c.opts.SnapshotSettle {
		upTo = st.older
		if upTo == "" {
			// Nothing settled to apply. The signature is not recorded as
			// clean: the next run must look again even if the table is
			// unchanged by then.
			rep.Outcome = Settling
			return c.snapshotView(ctx, b, cols, m.version, &applied)
		}
	}
	if st.events == 0 {
		rep.Outcome, rep.WatermarkAfter = UpToDate, now
		if err := c.snapshotView(ctx, b, cols, m.version, &applied); err != nil {
			return err
		}
		return c.setLabels(ctx, b, next)
	}
	gen := now
	if !gen.After(m.newestGen) {
		gen = m.newestGen.Add(time.Microsecond) // generations only grow, whatever the clock does
	}
	fold, err := plan.Fold(bound, upTo, gen)
	if err != nil {
		return err
	}
	stat, err := c.exec(ctx, fold, acct)
	if err != nil {
		return fmt.Errorf("applying %d snapshots: %w", st.versions, err)
	}
	rep.Outcome, rep.Generation, rep.WatermarkAfter = Compacted, gen, now
	if stat != nil {
		rep.RowsWritten = stat.NumDMLAffectedRows
	}
	if rep.AppliedVersion, err = render.VersionBound(b, upTo); err != nil {
		return err
	}
	if err := c.step(b, StepFold); err != nil {
		return err
	}
	gc, err := plan.GC(gen)
	if err != nil {
		return err
	}
	if _, err := c.exec(ctx, gc, acct); err != nil {
		return fmt.Errorf("deleting rows no view reads: %w", err)
	}
	if err := c.step(b, StepGC); err != nil {
		return err
	}
	// The view's constant bound moves to the version now applied.
	if err := c.snapshotView(ctx, b, cols, upTo, &applied); err != nil {
		return err
	}
	if err := c.step(b, StepView); err != nil {
		return err
	}
	if upTo != st.newest {
		return nil // newer versions wait: not clean
	}
	return c.setLabels(ctx, b, next)
}

func (c *Compactor) readSnapshotMarker(ctx context.Context, plan *render.SnapshotCompaction, acct *account) (snapshotMarker, error) {
	sql, err := plan.Marker()
	if err != nil {
		return snapshotMarker{}, err
	}
	rows, err := c.query(ctx, sql, acct)
	if err != nil {
		return snapshotMarker{}, fmt.Errorf("reading the applied version: %w", err)
	}
	m := snapshotMarker{gen: render.Epoch, newestGen: render.Epoch}
	if len(rows) != 1 {
		return m, nil
	}
	v, ok := rows[0]["applied_version"].(string)
	if !ok {
		return m, nil // a marker of an empty first snapshot has no version
	}
	m.version, m.found = v, true
	m.gen = ts(rows[0]["__gen"], render.Epoch)
	m.newestGen = ts(rows[0]["newest_gen"], m.gen)
	return m, nil
}

func (c *Compactor) readSnapshotStats(ctx context.Context, plan *render.SnapshotCompaction, bound string, acct *account) (snapshotStats, error) {
	sql, err := plan.Stats(bound)
	if err != nil {
		return snapshotStats{}, err
	}
	rows, err := c.query(ctx, sql, acct)
	if err != nil {
		return snapshotStats{}, fmt.Errorf("reading what to apply: %w", err)
	}
	if len(rows) != 1 {
		return snapshotStats{}, fmt.Errorf("reading what to apply: the statistics query returned %d rows, want 1", len(rows))
	}
	r := rows[0]
	n := func(k string) int64 { return int64Of(r[k]) }
	st := snapshotStats{total: n("total_rows"), events: n("events"), versions: n("versions"), keys: n("keys"), processed: n("processed_rows")}
	st.newest, _ = r["newest_version"].(string)
	st.older, _ = r["older_version"].(string)
	return st, nil
}

func int64Of(v bigquery.Value) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case string:
		n, _ := strconv.ParseInt(x, 10, 64)
		return n
	}
	return 0
}

// snapshotView renders b's view with the constant bound key (a version
// applied; "" keeps the view's), unless this compactor already did for the
// same columns and key.
func (c *Compactor) snapshotView(ctx context.Context, b *flow.Bound, cols, key string, rep *apply.Report) error {
	memo := cols + "@version:" + key
	if seen, ok := c.views.Load(b.Name); ok && seen == memo {
		return nil
	}
	if err := apply.SnapshotView(ctx, c.bq, c.loc, b, key, rep); err != nil {
		return fmt.Errorf("updating the view (version bound %q): %w", key, err)
	}
	c.views.Store(b.Name, memo)
	return nil
}
