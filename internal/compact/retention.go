package compact

import (
	"context"
	"fmt"
	"time"

	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/sql/render"
)

// expire deletes changelog days that are older than the retention and that
// every flow reading the source has folded (strictly before the day of the
// lowest watermark). Whole days only: BigQuery drops whole partitions
// without scanning them. A source with a failed flow, or with a flow of all
// that this run did not compact, is left alone this run.
func (c *Compactor) expire(ctx context.Context, all, flows []*flow.Bound, unbound []*flow.Flow, reports []Report) {
	now := c.opts.Now().UTC()
	lowest := map[string]time.Time{}
	failed := map[string]bool{}
	ran := map[string]bool{}
	for _, b := range flows {
		ran[b.Name] = true
	}
	for _, b := range all {
		if !ran[b.Name] {
			failed[b.Source.Name] = true // not folded by this run: its days may still be needed
		}
	}
	for _, f := range unbound {
		failed[f.Source.Name] = true // refused at binding: it will need them once fixed
	}
	for i, b := range flows {
		src := b.Source.Name
		r := reports[i]
		if r.Outcome == Failed {
			failed[src] = true
			continue
		}
		if w, ok := lowest[src]; !ok || r.WatermarkAfter.Before(w) {
			lowest[src] = r.WatermarkAfter
		}
	}
	for src, w := range lowest {
		if failed[src] {
			continue
		}
		cutoff := now.Add(-c.opts.ChangelogRetention)
		if w.Before(cutoff) {
			cutoff = w
		}
		cutoff = cutoff.Truncate(24 * time.Hour)
		sql, err := render.NewCompaction(sourceFlow(flows, src), c.loc).ExpireChangelog(cutoff)
		if err == nil {
			err = c.exec(ctx, sql)
		}
		if err != nil {
			for i := range reports {
				if flows[i].Source.Name == src && reports[i].Error == "" {
					reports[i].Error = fmt.Sprintf("expiring changelog days before %s: %v", cutoff.Format(time.DateOnly), err)
				}
			}
		}
	}
}

func sourceFlow(flows []*flow.Bound, src string) *flow.Bound {
	for _, b := range flows {
		if b.Source.Name == src {
			return b
		}
	}
	return nil
}
