package plan

import (
	"time"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/sql/render"
)

// Gold is a materialized view's plan: its objects (GoldObjects, in the
// order apply makes them) and the statements a compaction run of its
// source executes for it (Refresh, Touched, Maintain, FinalAppend). It
// reads its source flow's change feed, whose shape the source's plan
// gives.
type Gold struct {
	Gold   *flow.BoundGold
	Loc    catalog.Location
	source render.Shape
}

// ForGold is materialized view g's plan in deployment loc.
func ForGold(g *flow.BoundGold, loc catalog.Location) *Gold {
	return &Gold{Gold: g, Loc: loc, source: For(g.Source, loc).Shape()}
}

// Refreshed reports whether compaction refreshes the view's state (nil),
// or why not: a view it does not refresh is exact through its view alone.
func (p *Gold) Refreshed() error { return p.Gold.Refreshable() }

// State is the statement that makes the view's state from everything the
// source's change feed holds (run is the refresh's id), and the spec label
// of the layout it makes.
func (p *Gold) State(run string) (ddl, spec string, err error) {
	if ddl, err = p.Refresh(render.GoldRange{Init: true, Run: run}); err != nil {
		return "", "", err
	}
	spec, err = render.GoldStateSpec(p.Gold, p.Loc, p.source)
	return ddl, spec, err
}

// Refresh is the statement that brings the state to the feed's range r.
func (p *Gold) Refresh(r render.GoldRange) (string, error) {
	return render.GoldRefresh(p.Gold, p.Loc, p.source, r)
}

// Touched is the query of the groups the feed's rows in (from, to] touch.
func (p *Gold) Touched(from, to time.Time) (string, error) {
	return render.GoldTouched(p.Gold, p.Loc, p.source, from, to)
}

// Maintain is the daily maintenance of the state (horizon: the oldest
// feed position kept).
func (p *Gold) Maintain(horizon time.Time) (string, error) {
	return render.GoldMaintain(p.Gold, p.Loc, horizon)
}

// HasChanges reports whether the view keeps a change feed (<name>_changes).
func (p *Gold) HasChanges() bool { return render.GoldHasChanges(p.Gold) }

// GoldObject is one object of a materialized view, or (Step) a statement
// compaction runs for it, as bqcdc render prints it.
type GoldObject struct {
	What, Dataset, Name string // "view", "table", "table function"; Name "" for a step
	SQL                 string // a view's query, else the statement
	Step                string // what a step is, for a step
}

// Objects lists what the view consists of, in the order apply makes it,
// with the statements compaction runs for it where render shows them: the
// view; for a view compaction refreshes, its state, its refresh and
// maintenance, with WATERMARK its final windows' table, their append and
// view, its change feed, and <name>_refreshed.
func (p *Gold) Objects() ([]GoldObject, error) {
	g, loc := p.Gold, p.Loc
	ds := loc.GoldDataset(g.Gold)
	view, err := render.GoldView(g, loc)
	if err != nil {
		return nil, err
	}
	out := []GoldObject{{What: "materialized view", Dataset: ds, Name: g.Name.Table, SQL: view}}
	if p.Refreshed() != nil {
		return out, nil
	}
	create, _, err := p.State("0")
	if err != nil {
		return nil, err
	}
	refresh, err := p.Refresh(render.GoldRange{From: render.Epoch, To: render.Epoch, Run: "0"})
	if err != nil {
		return nil, err
	}
	maintain, err := p.Maintain(render.Epoch)
	if err != nil {
		return nil, err
	}
	out = append(out,
		GoldObject{What: "table", Dataset: ds, Name: catalog.GoldStateName(g.Gold), SQL: create},
		GoldObject{Step: "its refresh, as a compaction run executes it (from and to the run's positions; a run with a large state first reads the touched groups and filters by them)", SQL: refresh},
		GoldObject{Step: "its maintenance, once a day (the horizon: the run's time less the change feed's retention)", SQL: maintain})
	if g.Watermark != nil {
		final, err := p.finalObjects()
		if err != nil {
			return nil, err
		}
		out = append(out, final...)
	}
	if p.HasChanges() {
		ddl, err := render.GoldChangesFunction(g, loc)
		if err != nil {
			return nil, err
		}
		out = append(out, GoldObject{What: "table function", Dataset: ds, Name: catalog.GoldChangesName(g.Gold), SQL: ddl})
	}
	refreshed, err := render.GoldRefreshedView(g, loc)
	if err != nil {
		return nil, err
	}
	return append(out, GoldObject{What: "view", Dataset: ds, Name: catalog.GoldRefreshedName(g.Gold), SQL: refreshed}), nil
}

// finalObjects are a WATERMARK view's final windows: their table, the
// append a run executes after the refresh, and <name>_final.
func (p *Gold) finalObjects() ([]GoldObject, error) {
	g, loc := p.Gold, p.Loc
	ds := loc.GoldDataset(g.Gold)
	var sql [3]string
	for i, s := range []render.FinalStatement{render.FinalTable, render.FinalAppend, render.FinalView} {
		var err error
		if sql[i], err = render.GoldFinal(g, loc, s); err != nil {
			return nil, err
		}
	}
	return []GoldObject{
		{What: "table", Dataset: ds, Name: catalog.GoldFinalName(g.Gold), SQL: sql[0]},
		{Step: "the windows a compaction run appends after the refresh", SQL: sql[1]},
		{What: "view", Dataset: ds, Name: catalog.GoldFinalViewName(g.Gold), SQL: sql[2]},
	}, nil
}
