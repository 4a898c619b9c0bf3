package compact

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/sql/render"
)

// Materialized views (gold flows) compaction can refresh
// (flow.BoundGold.Refreshable) have a state table, a row per group (and
// per distinct value of the aggregates kept by value),
// which a run of their source flow refreshes right after it materializes
// the source's change feed: one statement reading the state and the feed's
// new rows (a constant range of the change table), never the source's
// state. The statement carries its own position (the state's rows hold
// it), so a repeated run adds nothing twice; the label is only the
// constant that prunes the change table, and lags the rows, never leads.

// refreshGolds refreshes the state of every refreshable materialized view
// over the run's flow to the position its change feed reached.
func (s *streamRun) refreshGolds(ctx context.Context, reached time.Time) error {
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
		if us, err := strconv.ParseInt(md.Labels[catalog.LabelWatermark], 10, 64); err == nil {
			from = time.UnixMicro(us).UTC()
		}
		if !reached.After(from) {
			continue
		}
		sql, err := render.GoldRefresh(bg, s.c.loc, from, reached, false)
		if err != nil {
			return err
		}
		if _, err := s.c.exec(ctx, StepGold, sql, s.acct); err != nil {
			// After the flow's commit point: a view that cannot be
			// refreshed (no permission on its dataset, a definition
			// BigQuery refuses) must not hold its source flow back. It
			// stays at its position, which bqcdc status shows.
			s.c.opts.Log.Error("materialized view not refreshed", "event", "gold_refresh_failed", "view", g.Name.String(), "flow", s.t.b.Name, "error", err.Error())
			s.rep.GoldErrors = append(s.rep.GoldErrors, fmt.Sprintf("%s: %v", g.Name, err))
			continue
		}

		if err := s.step(StepGold); err != nil {
			return err
		}
		if s.c.opts.DryRun == nil {
			// The replaced table lost its labels (BigQuery keeps none
			// through CREATE OR REPLACE): the position, and the spec apply
			// checks the layout by.
			spec, err := render.GoldStateSpec(bg, s.c.loc)
			if err != nil {
				return err
			}
			if err := s.c.wh.SetLabels(ctx, ds, table, map[string]string{catalog.LabelWatermark: strconv.FormatInt(reached.UnixMicro(), 10), catalog.SpecLabel: spec}); err != nil {
				return fmt.Errorf("labelling the state of materialized view %s: %w", g.Name, err)
			}
		}
		s.rep.Golds++
	}
	return nil
}
