package viewcheck

import (
	"context"
	"fmt"
	"sort"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/dev/model"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/sql/render"
)

// GoldSpec is the reference's form of a materialized view. The reference
// evaluates views whose groups and aggregate arguments are columns, with
// no WHERE or HAVING (what it would have to evaluate as SQL); others are
// refused.
func GoldSpec(g *flow.BoundGold) (model.GoldSpec, error) {
	if g.Where != "" || g.Having != "" {
		return model.GoldSpec{}, fmt.Errorf("%s: the reference evaluates no WHERE or HAVING", g.Name)
	}
	spec := model.GoldSpec{Groups: g.GroupColumns}
	for i, c := range g.GroupColumns {
		if c == "" {
			return model.GoldSpec{}, fmt.Errorf("%s groups by %s: the reference groups by columns", g.Name, g.Groups[i])
		}
	}
	if w := g.Window; w != nil {
		spec.Window = &model.GoldWindow{Column: w.Time.Name, Size: w.Size, Slide: w.Slide, Session: w.Session}
	}
	for _, it := range g.Items {
		if it.Arg != "" && it.ArgColumn == "" {
			return model.GoldSpec{}, fmt.Errorf("%s: %s aggregates %s: the reference aggregates columns", g.Name, it.Name, it.Arg)
		}
		spec.Items = append(spec.Items, model.GoldItem{Name: it.Name, Group: it.Group, Window: it.Window, Func: it.Func, Column: it.ArgColumn, Distinct: it.Distinct})
	}
	return spec, nil
}

// GoldSource reads what a materialized view aggregates: the current rows
// of its source flow's view (which Check compares with the model), or the
// stream's events, once per message id.
func GoldSource(ctx context.Context, bq *bigquery.Client, g *flow.BoundGold, loc catalog.Location) ([]map[string]any, error) {
	table := loc.ViewTable(g.Source.Flow)
	if g.IsStream() {
		table = loc.ChangelogTable(g.Source.Flow)
	}
	rows, err := query(ctx, bq, "SELECT * FROM "+table)
	if err != nil {
		return nil, err
	}
	seen := map[bigquery.Value]bool{}
	var kept []map[string]bigquery.Value
	for _, r := range rows {
		if id := r[catalog.ColMessageID]; g.IsStream() && id != nil {
			if seen[id] {
				continue
			}
			seen[id] = true
		}
		kept = append(kept, r)
	}
	return plainRows(kept), nil
}

// Gold lines the rows of a materialized view as the reference renders
// them.
func Gold(ctx context.Context, bq *bigquery.Client, g *flow.BoundGold, loc catalog.Location, spec model.GoldSpec) ([]string, error) {
	return goldRows(ctx, bq, g, loc.GoldView(g.Gold), spec)
}

// GoldRefreshed lines the rows of a materialized view's refreshed view
// (<name>_refreshed) as the reference renders them.
func GoldRefreshed(ctx context.Context, bq *bigquery.Client, g *flow.BoundGold, loc catalog.Location, spec model.GoldSpec) ([]string, error) {
	return goldRows(ctx, bq, g, loc.GoldRefreshed(g.Gold), spec)
}

func goldRows(ctx context.Context, bq *bigquery.Client, g *flow.BoundGold, view string, spec model.GoldSpec) ([]string, error) {
	sql := "SELECT * FROM " + view
	if w := g.Window; w != nil {
		// The emulator returns TIMESTAMP fields of a STRUCT as text, which
		// the client cannot read (internal/emulator, concession 15).
		n := flow.QuoteIdent(w.Name)
		sql = fmt.Sprintf("SELECT * EXCEPT (%s), STRUCT(UNIX_MICROS(%s.start) AS `start`, UNIX_MICROS(%s.`end`) AS `end`) AS %s FROM %s", n, n, n, n, view)
	}
	rows, err := query(ctx, bq, sql)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(rows))
	for _, r := range rows {
		m := make(map[string]any, len(r))
		for k, v := range r {
			m[k] = v
		}
		if g.Window != nil {
			if w, ok := r[g.Window.Name].(map[string]bigquery.Value); ok {
				start, _ := w["start"].(int64)
				end, _ := w["end"].(int64)
				m[g.Window.Name] = [2]time.Time{time.UnixMicro(start).UTC(), time.UnixMicro(end).UTC()}
			}
		}
		out = append(out, model.GoldRow(spec, m))
	}
	sort.Strings(out)
	return out, nil
}

// CheckGold compares a materialized view with its SELECT evaluated by the
// reference over what it reads now; "" when they are equal.
func CheckGold(ctx context.Context, bq *bigquery.Client, g *flow.BoundGold, loc catalog.Location) (string, error) {
	return checkGold(ctx, bq, g, loc, Gold, nil)
}

// plainRows copies BigQuery rows into plain maps.
func plainRows(rows []map[string]bigquery.Value) []map[string]any {
	out := make([]map[string]any, 0, len(rows))
	for _, r := range rows {
		m := make(map[string]any, len(r))
		for k, v := range r {
			m[k] = v
		}
		out = append(out, m)
	}
	return out
}

// CheckGoldRefreshed compares a materialized view's refreshed view with
// its SELECT evaluated by the reference over the target as of the state's
// own position (<target>_at of it, run as its body, which CheckAt compares
// with the model).
func CheckGoldRefreshed(ctx context.Context, bq *bigquery.Client, g *flow.BoundGold, loc catalog.Location) (string, error) {
	rows, err := query(ctx, bq, fmt.Sprintf("SELECT MAX(%s) AS w FROM %s", catalog.ColStateWatermark, loc.GoldState(g.Gold)))
	if err != nil {
		return "", err
	}
	w, ok := rows[0]["w"].(time.Time)
	if !ok {
		return "", fmt.Errorf("the state of %s holds no position", g.Name)
	}
	sql, err := render.AtQuery(g.Source, loc, w)
	if err != nil {
		return "", err
	}
	at, err := query(ctx, bq, sql)
	if err != nil {
		return "", err
	}
	return checkGold(ctx, bq, g, loc, GoldRefreshed, plainRows(at))
}

func checkGold(ctx context.Context, bq *bigquery.Client, g *flow.BoundGold, loc catalog.Location,
	read func(context.Context, *bigquery.Client, *flow.BoundGold, catalog.Location, model.GoldSpec) ([]string, error),
	src []map[string]any) (string, error) {
	spec, err := GoldSpec(g)
	if err != nil {
		return "", err
	}
	if src == nil {
		if src, err = GoldSource(ctx, bq, g, loc); err != nil {
			return "", err
		}
	}
	var want []string
	for _, r := range model.Gold(spec, src) {
		want = append(want, model.GoldRow(spec, r))
	}
	sort.Strings(want)
	got, err := read(ctx, bq, g, loc, spec)
	if err != nil {
		return "", err
	}
	return Diff(want, got), nil
}
