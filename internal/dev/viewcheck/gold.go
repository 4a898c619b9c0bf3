package viewcheck

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/dev/model"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/plan"
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
	rows, err := goldRead(ctx, bq, g, view)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(rows))
	for _, m := range rows {
		out = append(out, model.GoldRow(spec, m))
	}
	sort.Strings(out)
	return out, nil
}

// goldRead reads the rows of from (a view, or a query in parentheses)
// with the window as [2]time.Time.
func goldRead(ctx context.Context, bq *bigquery.Client, g *flow.BoundGold, from string) ([]map[string]any, error) {
	sql := "SELECT * FROM " + from
	if w := g.Window; w != nil {
		// The emulator returns TIMESTAMP fields of a STRUCT as text, which
		// the client cannot read (internal/emulator, concession 15).
		n := catalog.QuoteIdent(w.Name)
		sql = fmt.Sprintf("SELECT * EXCEPT (%s), STRUCT(UNIX_MICROS(%s.start) AS `start`, UNIX_MICROS(%s.`end`) AS `end`) AS %s FROM %s", n, n, n, n, from)
	}
	rows, err := query(ctx, bq, sql)
	if err != nil {
		return nil, err
	}
	out := make([]map[string]any, 0, len(rows))
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
		out = append(out, m)
	}
	return out, nil
}

// CheckGoldFeed replays a materialized view's change feed
// (<name>_changes(NULL, NULL), run as its body) and compares the result
// with <name>_refreshed; "" when they are equal. It also checks what a
// consumer relies on: at a position a group has one change, a pre-image or
// delete is the row the replay holds, an update changes the row, and an
// insert is of a group the replay does not hold.
func CheckGoldFeed(ctx context.Context, bq *bigquery.Client, g *flow.BoundGold, loc catalog.Location) (string, error) {
	// The rows' form only (no reference evaluates the view here), so
	// views with WHERE and HAVING are checked too.
	var spec model.GoldSpec
	for _, it := range g.Items {
		spec.Items = append(spec.Items, model.GoldItem{Name: it.Name, Group: it.Group, Window: it.Window, Func: it.Func})
	}
	sql, err := render.GoldChangesQuery(g, loc, time.Time{}, time.Time{})
	if err != nil {
		return "", err
	}
	rows, err := goldRead(ctx, bq, g, "("+sql+")")
	if err != nil {
		return "", err
	}
	key := func(m map[string]any) string {
		var k []string
		for _, it := range spec.Items {
			if it.Func == "" {
				k = append(k, model.GoldRow(model.GoldSpec{Items: []model.GoldItem{it}}, m))
			}
		}
		return fmt.Sprint(k)
	}
	type change struct {
		pos       time.Time
		kind, key string
		row       string
	}
	var changes []change
	for _, m := range rows {
		pos, _ := m[catalog.ColCommitPosition].(time.Time)
		kind, _ := m[catalog.ColChangeType].(string)
		changes = append(changes, change{pos: pos, kind: kind, key: key(m), row: model.GoldRow(spec, m)})
	}
	// Per position, pre-images and deletes before post-images and inserts.
	rank := map[string]int{"update_preimage": 0, "delete": 0, "update_postimage": 1, "insert": 1}
	sort.SliceStable(changes, func(i, j int) bool {
		if !changes[i].pos.Equal(changes[j].pos) {
			return changes[i].pos.Before(changes[j].pos)
		}
		if changes[i].key != changes[j].key {
			return changes[i].key < changes[j].key
		}
		return rank[changes[i].kind] < rank[changes[j].kind]
	})
	held := map[string]string{}
	seen := map[string]string{} // key at position: the kinds
	var problems []string
	for _, c := range changes {
		at := c.key + "@" + c.pos.String()
		seen[at] += c.kind + " "
		switch c.kind {
		case "update_preimage", "delete":
			if held[c.key] != c.row {
				problems = append(problems, fmt.Sprintf("%s of %s at %s is %q, the replay holds %q", c.kind, c.key, c.pos, c.row, held[c.key]))
			}
			delete(held, c.key)
		case "update_postimage", "insert":
			if _, ok := held[c.key]; ok {
				problems = append(problems, fmt.Sprintf("%s of %s at %s, which the replay holds", c.kind, c.key, c.pos))
			}
			held[c.key] = c.row
		default:
			problems = append(problems, fmt.Sprintf("change type %q", c.kind))
		}
	}
	for at, kinds := range seen {
		if kinds != "update_preimage update_postimage " && kinds != "insert " && kinds != "delete " {
			problems = append(problems, fmt.Sprintf("%s: changes %q", at, kinds))
		}
	}
	for _, c := range changes {
		if c.kind == "update_postimage" {
			for _, p := range changes {
				if p.kind == "update_preimage" && p.key == c.key && p.pos.Equal(c.pos) && p.row == c.row {
					problems = append(problems, fmt.Sprintf("an update of %s at %s changes nothing", c.key, c.pos))
				}
			}
		}
	}
	got := make([]string, 0, len(held))
	for _, r := range held {
		got = append(got, r)
	}
	sort.Strings(got)
	want, err := GoldRefreshed(ctx, bq, g, loc, spec)
	if err != nil {
		return "", err
	}
	sort.Strings(problems)
	if d := Diff(want, got); d != "" {
		problems = append(problems, "the replay differs from "+catalog.GoldRefreshedName(g.Gold)+":\n"+d)
	}
	return strings.Join(problems, "\n"), nil
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
	sql, err := plan.For(g.Source, loc).AtQuery(w, render.Epoch)
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
