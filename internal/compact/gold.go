package compact

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/plan"
	"github.com/bqcdc/bqcdc/sql/render"
)

// Materialized views (gold flows) compaction can refresh
// (flow.BoundGold.Refreshable) have a state table of versions: per group
// (and per distinct value of the aggregates kept by value) the partial
// sums as of a position of the source's change feed. A run of the source
// flow, right after it materializes the change feed, appends a version of
// each group the feed's new rows touch (one INSERT reading the feed's new
// rows by a constant range, the state's markers and the touched groups'
// rows, never the source's state); per group only the newest version
// counts, and every version is exact as of its position, so a repeated or
// concurrent refresh adds nothing twice. The label is only the constant
// that prunes the change table: it lags the state, never leads it. A state
// past Options.GoldTouchedAbove is first asked which groups the run
// touches, so that the refresh reads only their blocks. With the flow's
// maintenance (once a day), once the state has grown by
// Options.GoldMaintainGrowth since its last maintenance (a label), the
// versions that no longer count are deleted, but those the view's change
// feed compares within its retention (Options.GoldFeedRetention).

// refreshGolds refreshes the state of every refreshable materialized view
// over the run's flow to the position its change feed reached, and
// maintains it when maintain is set.
func (s *streamRun) refreshGolds(ctx context.Context, reached time.Time, maintain bool) error {
	for _, g := range s.c.opts.Golds {
		bg, err := flow.BindGold(g, []*flow.Bound{s.t.b}, s.c.loc.DefaultDataset)
		if err != nil || bg.Refreshable() != nil {
			continue // another flow's view, or one compaction does not refresh
		}
		ds, table := s.c.loc.GoldDataset(g), catalog.GoldStateName(g)
		md, err := s.c.wh.Metadata(ctx, ds, table)
		if err != nil {
			return fmt.Errorf("reading the state of materialized view %s: %w", g.Name, err)
		}
		if md == nil {
			// Made by bqcdc apply; until then the view without the suffix
			// (exact now) is there.
			s.c.opts.Log.Warn("materialized view not refreshed: its state table is missing (bqcdc apply makes it)", "event", "gold_state_missing", "view", g.Name.String())
			continue
		}
		from := render.Epoch
		if w, ok := catalog.LabelMicros(md.Labels[catalog.LabelWatermark]); ok {
			from = w
		}
		at := from // the position the state holds after this run, as far as the label tells
		if reached.After(from) {
			if err := s.refreshGold(ctx, bg, md.NumBytes, from, reached); err != nil {
				// After the flow's commit point: a view that cannot be
				// refreshed (no permission on its dataset, a definition
				// BigQuery refuses) must not hold its source flow back.
				// It stays at its position, which bqcdc status shows.
				s.c.opts.Log.Error("materialized view not refreshed", "event", "gold_refresh_failed", "view", g.Name.String(), "flow", s.t.b.Name, "error", err.Error())
				s.rep.GoldErrors = append(s.rep.GoldErrors, fmt.Sprintf("%s: %v", g.Name, err))
				if at.After(render.Epoch) {
					s.c.opts.Metrics.GoldRefreshed(ctx, g.Name.String(), s.now.Sub(at))
				}
				continue
			}
			at = reached
			if bg.Watermark != nil {
				if err := s.finalize(ctx, bg); err != nil {
					// The refresh counts; the windows are appended by the
					// next run that finalizes.
					s.c.opts.Log.Error("materialized view's final windows not appended", "event", "gold_final_failed", "view", g.Name.String(), "flow", s.t.b.Name, "error", err.Error())
					s.rep.GoldErrors = append(s.rep.GoldErrors, fmt.Sprintf("%s: final windows: %v", g.Name, err))
				}
			}
			if err := s.step(StepGold); err != nil {
				return err
			}
			if s.c.opts.DryRun == nil {
				labels := map[string]string{catalog.LabelWatermark: catalog.MicrosLabel(reached)}
				if rows, ok := md.Labels[catalog.LabelGoldRows]; ok {
					labels[catalog.LabelGoldRows] = rows // kept where an update replaces every label (the emulator)
				}
				if err := s.c.wh.SetLabels(ctx, ds, table, labels); err != nil {
					return fmt.Errorf("labelling the state of materialized view %s: %w", g.Name, err)
				}
			}
			s.rep.Golds++
		}
		if s.c.opts.DryRun == nil && at.After(render.Epoch) {
			s.c.opts.Metrics.GoldRefreshed(ctx, g.Name.String(), s.now.Sub(at))
		}
		if maintain && s.c.goldGrown(md) {
			sql, err := plan.ForGold(bg, s.c.loc).Maintain(s.now.Add(-max(s.c.opts.GoldFeedRetention, 0)))
			if err != nil {
				return err
			}
			if _, err := s.c.exec(ctx, StepGoldGC, sql, s.acct); err != nil {
				// Versions that no longer count stay until the next day:
				// the views read them the same.
				s.c.opts.Log.Error("materialized view not maintained", "event", "gold_maintain_failed", "view", g.Name.String(), "flow", s.t.b.Name, "error", err.Error())
				s.rep.GoldErrors = append(s.rep.GoldErrors, fmt.Sprintf("%s: maintenance: %v", g.Name, err))
			} else if err := s.labelGoldRows(ctx, ds, table, at); err != nil {
				// The next maintenance of the flow maintains it again.
				s.c.opts.Log.Warn("materialized view's maintenance not labelled", "event", "gold_maintain_unlabelled", "view", g.Name.String(), "flow", s.t.b.Name, "error", err.Error())
			}
		}
	}
	return nil
}

// goldGrown reports whether a materialized view's state (its metadata
// md, read before this run's refresh) has grown enough since its last
// maintenance to be maintained: more rows than (1 +
// Options.GoldMaintainGrowth) times those the maintenance left. A state
// never labelled so (made, or last maintained, by an earlier bqcdc) is.
func (c *Compactor) goldGrown(md *bigquery.TableMetadata) bool {
	kept, err := strconv.ParseInt(md.Labels[catalog.LabelGoldRows], 10, 64)
	if g := c.opts.GoldMaintainGrowth; g >= 0 && err == nil && kept >= 0 {
		return float64(md.NumRows) > float64(kept)*(1+g)
	}
	return true
}

// labelGoldRows records on a materialized view's state the rows its
// maintenance left (table metadata, after the DELETE), beside its position
// at (where an update replaces every label, the emulator, it must stay).
func (s *streamRun) labelGoldRows(ctx context.Context, ds, table string, at time.Time) error {
	if s.c.opts.DryRun != nil {
		return nil
	}
	md, err := s.c.wh.Metadata(ctx, ds, table)
	switch {
	case err != nil:
		return fmt.Errorf("reading the state after its maintenance: %w", err)
	case md == nil:
		return fmt.Errorf("the state is gone after its maintenance")
	}
	labels := map[string]string{catalog.LabelGoldRows: strconv.FormatUint(md.NumRows, 10)}
	if at.After(render.Epoch) {
		labels[catalog.LabelWatermark] = catalog.MicrosLabel(at)
	}
	return s.c.wh.SetLabels(ctx, ds, table, labels)
}

// refreshGold appends the versions of the groups the feed's rows in (from,
// to] touch. A state of more than Options.GoldTouchedAbove bytes is first
// asked which groups those are (their clustering values), so the refresh
// reads their blocks only.
func (s *streamRun) refreshGold(ctx context.Context, g *flow.BoundGold, stateBytes int64, from, to time.Time) error {
	r := render.GoldRange{From: from, To: to, Run: render.NewRun()}
	if above := s.c.opts.GoldTouchedAbove; above < 0 || stateBytes > above {
		sql, err := plan.ForGold(g, s.c.loc).Touched(from, to)
		if err != nil {
			return err
		}
		res, err := s.c.query(ctx, StepGoldTouched, sql, s.acct)
		if err != nil {
			return fmt.Errorf("reading the groups the refresh touches: %w", err)
		}
		values := make([]any, 0, len(res.Rows))
		for _, row := range res.Rows {
			values = append(values, row[render.OutCluster])
		}
		if r.Touched, err = render.GoldTouchedFilter(g, values); err != nil {
			return err
		}
	}
	sql, err := plan.ForGold(g, s.c.loc).Refresh(r)
	if err != nil {
		return err
	}
	_, err = s.c.exec(ctx, StepGold, sql, s.acct)
	return err
}

// finalize appends the windows of a view with a WATERMARK that became final
// (compared with what the table holds, so a repeat appends nothing).
func (s *streamRun) finalize(ctx context.Context, g *flow.BoundGold) error {
	sql, err := render.GoldFinal(g, s.c.loc, render.FinalAppend)
	if err != nil {
		return err
	}
	_, err = s.c.exec(ctx, StepGoldFinal, sql, s.acct)
	return err
}
