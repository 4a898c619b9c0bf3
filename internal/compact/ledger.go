package compact

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/bqcdc/bqcdc/internal/apply"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/sql/render"
)

// # Idle flows at ten thousand tables
//
// Reading every changelog's and state table's metadata costs a request per
// table a run: at 10,000 flows over 5,000 sources, 15,000 requests, 150 s
// of BigQuery's per-method quota every 10 minutes. With the append ledger
// (catalog.AppendsTable) a run instead lists its datasets (a request per
// 1,000 tables, which gives every state table's labels) and reads the
// ledger in one query; only the flows that may have rows to fold are bound
// and read as before.
//
// Why a flow the ledger calls idle has nothing to fold: its labels say its
// last checking run found every changelog row ingested by reached folded
// (catalog.LabelReached), and that run left it clean. A row ingested
// later was stamped t > reached by an ingest instance that, before sending
// it, had a ledger row of the source with until ≥ t acknowledged; a query
// after that acknowledgement sees it. So when this run's ledger query
// finds no row of the source reaching past reached, every row appended
// before the query was folded; a row appended after it is the next run's.
// One run late, never missed — given that every ingest instance covers its
// rows: the ledger is trusted only for flows whose reached is LedgerSettle
// after the ledger table was made (instances deployed before it append
// uncovered), and a ledger write refused for good lets rows through
// uncovered (logged): FullCheckEvery still checks every flow with a query.

// IdleFlow is a flow Prepare found idle without binding it, with the
// watermark its labels record.
type IdleFlow struct {
	Flow      *flow.Flow
	Watermark time.Time
}

// Prepare is the entry of every compaction run (the Compact function and
// `bqcdc compact`): it keeps the deployed flows of one shard (before
// binding, so a shard reads only its own sources), leaves out the flows
// the append ledger says are idle (Options.Ledger; not for a run that
// names flows), binds the others to their changelogs or snapshot tables
// (one metadata read per source, which the run reuses), and names the
// flows to run (all when names is empty, each once). refused holds the
// flows that do not bind (file:line:column): the others run, and the
// refused keep their sources' changelog days (Selection.Unbound). err is a
// request that cannot run: a bad shard, or a name that is no deployed flow.
func (c *Compactor) Prepare(ctx context.Context, deployed []*flow.Flow, names []string, shard, shards int) (sel Selection, refused, err error) {
	if err := ValidShards(shard, shards); err != nil {
		return Selection{}, nil, err
	}
	for _, n := range names {
		if !slices.ContainsFunc(deployed, func(f *flow.Flow) bool { return f.Name == n }) {
			return Selection{}, nil, fmt.Errorf("no flow named %q", n)
		}
	}
	flows := deployed
	if shards > 1 {
		flows = slices.DeleteFunc(slices.Clone(deployed), func(f *flow.Flow) bool { return ShardOf(f.SourceKey(), shards) != shard })
	}
	var idle []IdleFlow
	if len(names) == 0 {
		idle, flows = c.skipIdle(ctx, flows)
	}
	var bound []*flow.Bound
	cols, changelogs, refused := apply.ReadSources(ctx, c.wh, c.loc, flows, c.opts.Concurrency)
	if refused == nil {
		bound, refused = flow.BindAll(flows, cols)
	}
	sel = Selection{Flows: bound, Unbound: apply.Unbound(flows, bound), Changelogs: changelogs,
		Shard: shard, Shards: shards, Sharded: true, Idle: idle}
	if len(names) > 0 {
		// Named flows that do not bind (or are of another shard) do not run.
		sel.Names = []string{}
		for _, n := range names {
			if slices.ContainsFunc(bound, func(b *flow.Bound) bool { return b.Name == n }) && !slices.Contains(sel.Names, n) {
				sel.Names = append(sel.Names, n)
			}
		}
		if len(sel.Names) == 0 {
			sel.Flows = nil
		}
	}
	return sel, refused, nil
}

// skipIdle splits flows into those the listing and the append ledger show
// idle and the others (busy: to bind and run). Without the ledger, or on
// any failure, every flow is busy: the run then reads every table, as
// without a ledger.
func (c *Compactor) skipIdle(ctx context.Context, flows []*flow.Flow) (idle []IdleFlow, busy []*flow.Flow) {
	if !c.opts.Ledger || c.opts.Lister == nil || c.opts.DryRun != nil {
		return nil, flows
	}
	now := c.opts.Now().UTC()
	listed, err := c.list(ctx, flows)
	if err != nil {
		c.opts.Log.Warn("listing the datasets failed: every table is read this run", "event", "compaction_listing_failed", "error", err.Error())
		return nil, flows
	}
	ledger, ok := listed[c.loc.DefaultDataset][catalog.AppendsTable]
	if !ok || now.Sub(ledger.Created) < c.opts.LedgerSettle {
		return nil, flows // none yet, or too young to trust
	}
	trusted := ledger.Created.Add(c.opts.LedgerSettle)

	// Candidates: flows whose labels say idle but for the ledger.
	type candidate struct {
		f *flow.Flow
		l labels
	}
	var cands []candidate
	lowest := map[string]time.Time{} // source -> lowest watermark of its flows, for retention
	held := map[string]bool{}        // sources with a flow whose labels are unknown
	for _, f := range flows {
		st, ok := listed[c.loc.Dataset(f)][catalog.StateName(f)]
		l := readLabels(st.Labels)
		src, reads := f.ChangelogSource()
		if reads {
			if !ok || !l.known {
				held[src] = true
			} else if w, seen := lowest[src]; !seen || l.watermark.Before(w) {
				lowest[src] = l.watermark
			}
		}
		// A flow that reads no changelog (a snapshot flow reads the user's
		// table) is covered by no ledger.
		if !reads || !ok || !c.quiet(l, now) || l.reached.Before(trusted) {
			busy = append(busy, f)
			continue
		}
		cands = append(cands, candidate{f, l})
	}
	if len(cands) == 0 {
		return nil, flows
	}
	since := cands[0].l.reached
	for _, cd := range cands {
		if cd.l.reached.Before(since) {
			since = cd.l.reached
		}
	}
	var acct account
	res, err := c.query(ctx, StepAppends, render.AppendsSince(c.loc, since), &acct)
	if err != nil {
		c.opts.Log.Warn("reading the append ledger failed: every table is read this run", "event", "compaction_ledger_failed", "error", err.Error())
		return nil, flows
	}
	until := map[string]time.Time{}
	for _, row := range res.Rows {
		src, _ := row[render.OutSource].(string)
		until[src] = ts(row[render.OutUntil], time.Time{})
	}
	for _, cd := range cands {
		src := cd.f.Source.Name
		if u, ok := until[src]; ok && u.After(cd.l.reached) || c.expiryDue(listed, src, lowest, held, now) {
			busy = append(busy, cd.f)
			continue
		}
		idle = append(idle, IdleFlow{Flow: cd.f, Watermark: cd.l.watermark})
	}
	c.opts.Log.Info("append ledger read", "event", "compaction_ledger", "flows", len(flows), "idle", len(idle),
		"sources_appended", len(until), "since", since, "bytes_billed", acct.bytes)
	return idle, busy
}

// quiet reports whether a flow's labels say it needs no query: a run left
// it clean, knows how far it checked, and checked recently enough.
func (c *Compactor) quiet(l labels, now time.Time) bool {
	if !l.known || !l.clean || !l.layout || l.reached.IsZero() {
		return false
	}
	return c.opts.FullCheckEvery < 0 || now.Sub(l.checked) < c.opts.FullCheckEvery
}

// expiryDue reports whether a source has changelog days to expire that it
// has not (ChangelogRetention): its flows then run, and the run expires
// them. The days are those before both the retention cutoff and the
// lowest watermark of its flows, as expire computes.
func (c *Compactor) expiryDue(listed apply.Listing, src string, lowest map[string]time.Time, held map[string]bool, now time.Time) bool {
	if c.opts.ChangelogRetention <= 0 || held[src] {
		return false
	}
	cutoff := now.Add(-c.opts.ChangelogRetention)
	if w, ok := lowest[src]; ok && w.Before(cutoff) {
		cutoff = w
	}
	cutoff = cutoff.Truncate(24 * time.Hour)
	cl, ok := listed[c.loc.DefaultDataset][catalog.TableName(src)]
	if !ok {
		return false
	}
	done, ok := catalog.LabelMicros(cl.Labels[catalog.ChangelogExpiredLabel])
	return !ok || cutoff.After(done)
}

// list lists the default dataset and the flows' datasets.
func (c *Compactor) list(ctx context.Context, flows []*flow.Flow) (apply.Listing, error) {
	datasets := []string{c.loc.DefaultDataset}
	for _, f := range flows {
		if ds := c.loc.Dataset(f); !slices.Contains(datasets, ds) {
			datasets = append(datasets, ds)
		}
	}
	return apply.List(ctx, c.opts.Lister, datasets)
}
