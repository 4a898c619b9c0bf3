package compact

import (
	"context"
	"fmt"
	"time"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/plan"
)

// expire deletes changelog days that are older than the retention and that
// every flow reading the source has folded (strictly before the day of the
// lowest watermark). Whole days only: BigQuery drops whole partitions
// without scanning them. A flow's watermark is this run's when it ran (and
// did not fail), else the one its state table's labels record; a source
// with a flow whose watermark is unknown, or with an unbound flow, is left
// alone.
func (c *Compactor) expire(ctx context.Context, sel Selection, tasks []*task, reports []Report, changelogs map[string]changelogMeta) {
	now := c.opts.Now().UTC()
	first := map[string]int{} // source -> index of its first report
	watermarks := map[string]time.Time{}
	for i, t := range tasks {
		src, ok := t.b.ChangelogSource()
		if !ok {
			continue // no changelog to expire
		}
		if _, ok := first[src]; !ok {
			first[src] = i
		}
		r := reports[i]
		if r.Outcome != Failed && r.Outcome != Deferred {
			watermarks[t.b.Name] = r.WatermarkAfter
		} else if t.labels.known {
			watermarks[t.b.Name] = t.labels.watermark
		}
	}
	for _, f := range sel.Idle {
		watermarks[f.Flow.Name] = f.Watermark // from its labels, which Prepare read
	}
	held := map[string]bool{}
	for _, f := range sel.Unbound {
		held[f.SourceKey()] = true // refused at binding: it will need the days once fixed
	}
	for src, i := range first {
		cl := changelogs[src].md
		if held[src] || cl == nil {
			continue
		}
		lowest, ok := c.lowestWatermark(ctx, sel, src, watermarks)
		if !ok {
			continue
		}
		cutoff := now.Add(-c.opts.ChangelogRetention)
		if lowest.Before(cutoff) {
			cutoff = lowest
		}
		cutoff = cutoff.Truncate(24 * time.Hour)
		if done, ok := catalog.LabelMicros(cl.Labels[catalog.ChangelogExpiredLabel]); ok && !cutoff.After(done) {
			continue // this day was expired already
		}
		var acct account
		err := c.expireSource(ctx, tasks[i].b, cutoff, &acct)
		reports[i].Jobs += acct.jobs
		reports[i].BytesBilled += acct.bytes
		if err != nil && reports[i].Error == "" {
			reports[i].Error = fmt.Sprintf("expiring changelog days of %s before %s: %v", src, cutoff.Format(time.DateOnly), err)
		}
	}
}

func (c *Compactor) expireSource(ctx context.Context, b *flow.Bound, cutoff time.Time, acct *account) error {
	sql, err := plan.For(b, c.loc).Compaction().ExpireChangelog(cutoff)
	if err != nil {
		return err
	}
	if _, err := c.exec(ctx, StepExpire, sql, acct); err != nil {
		return err
	}
	if c.opts.DryRun != nil {
		return nil
	}
	return c.wh.SetLabels(ctx, c.loc.DefaultDataset, catalog.TableName(b.Source.Name),
		map[string]string{catalog.ChangelogExpiredLabel: catalog.MicrosLabel(cutoff)})
}

// lowestWatermark is the lowest watermark of every flow reading src (the
// run's bound flows and the idle ones Prepare left out): from this run
// where known, else from the flow's state table labels.
func (c *Compactor) lowestWatermark(ctx context.Context, sel Selection, src string, known map[string]time.Time) (time.Time, bool) {
	var lowest time.Time
	found := false
	for _, f := range sel.Idle {
		if f.Flow.Source.Name == src && (!found || f.Watermark.Before(lowest)) {
			lowest, found = f.Watermark, true
		}
	}
	for _, b := range sel.Flows {
		if s, ok := b.ChangelogSource(); !ok || s != src {
			continue
		}
		w, ok := known[b.Name]
		if !ok {
			md, err := c.readState(ctx, b)
			if err != nil || md == nil {
				return time.Time{}, false
			}
			l := readLabels(md.Labels)
			if !l.known {
				return time.Time{}, false
			}
			w = l.watermark
		}
		if !found || w.Before(lowest) {
			lowest, found = w, true
		}
	}
	return lowest, found
}
