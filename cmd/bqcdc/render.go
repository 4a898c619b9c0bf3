package main

import (
	"cloud.google.com/go/bigquery"
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bqcdc/bqcdc/internal/apply"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/clients"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/schema/bqschema"
	"github.com/bqcdc/bqcdc/sql/render"
)

// runRender prints (or writes) the SQL of every flow's view. It needs no
// BigQuery: changelog schemas come from the schemas folder, or from the
// registry when --registry-url is given. Snapshot flows are the exception:
// their columns are those of a BigQuery table, read when --project is
// given (metadata only, no query); without it they are refused.
// renderFlow renders the SQL objects apply creates for a flow, as DDL a
// user can review or run: the view, then its table functions. (Tables are
// created through the API, not DDL.)
func renderFlow(b *flow.Bound, loc catalog.Location) (string, error) {
	view, err := render.View(b, loc, render.Epoch)
	if err != nil {
		return "", err
	}
	var sb strings.Builder
	// In the order apply makes them: the change table, the state, the
	// view, the table functions. (apply makes the tables with
	// tables.insert; their DDL here says the same.)
	if b.ChangeFeed() {
		fmt.Fprintf(&sb, "-- table %s.%s (made by bqcdc apply)\n%s;\n\n", loc.Dataset(b.Flow), catalog.ChangesName(b.Flow), tableDDL(loc.ChangesTable(b.Flow), apply.ChangeTableSpec(b)))
	}
	fmt.Fprintf(&sb, "-- table %s.%s (made by bqcdc apply)\n%s;\n\n", loc.Dataset(b.Flow), catalog.StateName(b.Flow), tableDDL(loc.StateTable(b.Flow), apply.StateTableSpec(b)))
	fmt.Fprintf(&sb, "-- view %s.%s\nCREATE OR REPLACE VIEW %s AS\n%s;\n\n", loc.Dataset(b.Flow), b.Target.Table, loc.ViewTable(b.Flow), view)
	fns, err := apply.FunctionDDL(b, loc)
	if err != nil {
		return "", err
	}
	for _, f := range fns {
		fmt.Fprintf(&sb, "-- table function %s.%s\n%s;\n\n", loc.Dataset(b.Flow), f.Name, f.DDL)
	}
	return sb.String(), nil
}

func runRender(ctx context.Context, args []string) error {
	var t target
	fs := flag.NewFlagSet("render", flag.ContinueOnError)
	t.register(fs)
	out := fs.String("out", "", "write one <flow>.sql file per flow into this folder instead of printing")
	if err := t.parse(ctx, fs, args); err != nil {
		return err
	}
	d, invalid := flow.ParseDirAll(t.Flows)
	flows := d.Flows
	if len(flows) == 0 {
		return errors.Join(invalid...)
	}
	t.refused = invalid
	schemas, err := t.schemaSource()
	if err != nil {
		return err
	}
	// A source whose schema is bad refuses its flows alone.
	sources, flows, noSchema := apply.LookupSources(ctx, flows, schemas)
	t.refused = append(t.refused, noSchema)
	if t.BigQuery.Project != "" && len(flow.SnapshotTables(flows)) > 0 {
		bq, err := clients.NewBigQuery(ctx, t.BigQuery)
		if err != nil {
			return err
		}
		_, err = apply.SnapshotTables(ctx, bq, flows, sources)
		bq.Close()
		if err != nil {
			return err
		}
	}
	if t.BigQuery.Project == "" {
		t.BigQuery.Project = "PROJECT"
	}
	bound, refused := flow.BindAll(flows, apply.Changelogs(sources))
	t.refused = append(t.refused, refused)
	loc := catalog.Location{Project: t.BigQuery.Project, DefaultDataset: t.Dataset}
	if *out != "" {
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return err
		}
	}
	for _, b := range bound {
		sql, err := renderFlow(b, loc)
		if err != nil {
			return err
		}
		if *out == "" {
			fmt.Print(sql)
			continue
		}
		path := filepath.Join(*out, b.Name+".sql")
		if err := os.WriteFile(path, []byte(sql), 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
		fmt.Println("wrote", path)
	}
	golds, refused := flow.BindGolds(d.Golds, bound, t.Dataset)
	t.refused = append(t.refused, refused)
	for _, g := range golds {
		sql, err := goldSQL(g, loc)
		if err != nil {
			return err
		}
		if *out == "" {
			fmt.Print(sql)
			continue
		}
		path := filepath.Join(*out, g.Name.Table+".sql")
		if err := os.WriteFile(path, []byte(sql), 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
		fmt.Println("wrote", path)
	}
	return t.notAll(nil)
}

// tableDDL is the DDL of the table apply makes from md (its columns,
// partitioning, clustering, description and labels); name is quoted.
func tableDDL(name string, md *bigquery.TableMetadata) string {
	var b strings.Builder
	b.WriteString("CREATE TABLE IF NOT EXISTS " + name + " (\n")
	for i, c := range bqschema.FromBigQuery(md.Schema) {
		if i > 0 {
			b.WriteString(",\n")
		}
		b.WriteString("  " + catalog.QuoteIdent(c.Name) + " " + c.SQLType())
		if c.Required && !c.Repeated {
			b.WriteString(" NOT NULL")
		}
	}
	b.WriteString("\n)")
	if tp := md.TimePartitioning; tp != nil {
		b.WriteString(fmt.Sprintf("\nPARTITION BY TIMESTAMP_TRUNC(%s, %s)", catalog.QuoteIdent(tp.Field), tp.Type))
	}
	if cl := md.Clustering; cl != nil && len(cl.Fields) > 0 {
		var fields []string
		for _, f := range cl.Fields {
			fields = append(fields, catalog.QuoteIdent(f))
		}
		b.WriteString("\nCLUSTER BY " + strings.Join(fields, ", "))
	}
	b.WriteString("\nOPTIONS (description = " + flow.QuoteString(md.Description))
	if len(md.Labels) > 0 {
		var labels []string
		for _, k := range slices.Sorted(maps.Keys(md.Labels)) {
			labels = append(labels, fmt.Sprintf("(%s, %s)", flow.QuoteString(k), flow.QuoteString(md.Labels[k])))
		}
		b.WriteString(", labels = [" + strings.Join(labels, ", ") + "]")
	}
	b.WriteString(")")
	return b.String()
}

// goldSQL is what bqcdc render prints of a materialized view: its view,
// and for one compaction refreshes its state, refresh, maintenance,
// refreshed view, change feed and (with WATERMARK) final windows.
func goldSQL(g *flow.BoundGold, loc catalog.Location) (string, error) {
	sql, err := render.GoldView(g, loc)
	if err != nil {
		return "", err
	}
	sql = fmt.Sprintf("-- materialized view %s.%s\nCREATE OR REPLACE VIEW %s AS\n%s;\n\n", loc.GoldDataset(g.Gold), g.Name.Table, loc.GoldView(g.Gold), sql)
	if g.Refreshable() == nil {
		// Its state (as apply creates it), the refresh each compaction
		// run of the source executes, and the refreshed view.
		create, err := render.GoldRefresh(g, loc, render.GoldRange{Init: true, Run: "0"})
		if err != nil {
			return "", err
		}
		refresh, err := render.GoldRefresh(g, loc, render.GoldRange{From: render.Epoch, To: render.Epoch, Run: "0"})
		if err != nil {
			return "", err
		}
		maintain, err := render.GoldMaintain(g, loc, render.Epoch)
		if err != nil {
			return "", err
		}
		feed := "-- (no change feed: a session view's state holds times, not sessions)"
		if render.GoldHasChanges(g) {
			if feed, err = render.GoldChangesFunction(g, loc); err != nil {
				return "", err
			}
		}
		view, err := render.GoldRefreshedView(g, loc)
		if err != nil {
			return "", err
		}
		sql += fmt.Sprintf("-- table %s.%s (made by bqcdc apply)\n%s;\n\n"+
			"-- its refresh, as a compaction run executes it (from and to the run's positions; a run with a large state first reads the touched groups and filters by them)\n%s;\n\n"+
			"-- its maintenance, once a day (the horizon: the run's time less the change feed's retention)\n%s;\n\n-- view %s.%s\nCREATE OR REPLACE VIEW %s AS\n%s;\n\n-- table function %s.%s\n%s;\n\n",
			loc.GoldDataset(g.Gold), catalog.GoldStateName(g.Gold), create, refresh, maintain,
			loc.GoldDataset(g.Gold), catalog.GoldRefreshedName(g.Gold), loc.GoldRefreshed(g.Gold), view,
			loc.GoldDataset(g.Gold), catalog.GoldChangesName(g.Gold), feed)
		if g.Watermark != nil {
			create, err := render.GoldFinal(g, loc, render.FinalTable)
			if err != nil {
				return "", err
			}
			emit, err := render.GoldFinal(g, loc, render.FinalAppend)
			if err != nil {
				return "", err
			}
			view, err := render.GoldFinal(g, loc, render.FinalView)
			if err != nil {
				return "", err
			}
			sql += fmt.Sprintf("-- table %s.%s (made by bqcdc apply)\n%s;\n\n-- the windows a compaction run appends after the refresh\n%s;\n\n-- view %s.%s\nCREATE OR REPLACE VIEW %s AS\n%s;\n\n",
				loc.GoldDataset(g.Gold), catalog.GoldFinalName(g.Gold), create, emit,
				loc.GoldDataset(g.Gold), catalog.GoldFinalViewName(g.Gold), loc.GoldFinalView(g.Gold), view)
		}
	}
	return sql, nil
}
