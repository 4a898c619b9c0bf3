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
	"github.com/bqcdc/bqcdc/internal/plan"
	"github.com/bqcdc/bqcdc/internal/schema/bqschema"
)

// renderFlow prints a flow's plan: its objects, in the order apply makes
// them (apply makes the tables with tables.insert; their DDL here says the
// same), each as DDL a user can review or run.
func renderFlow(b *flow.Bound, loc catalog.Location) (string, error) {
	objs, err := plan.For(b, loc).Objects(nil)
	if err != nil {
		return "", err
	}
	var sb strings.Builder
	for _, o := range objs {
		switch o.Kind {
		case plan.Table:
			fmt.Fprintf(&sb, "-- table %s.%s (made by bqcdc apply)\n%s;\n\n", o.Dataset, o.Name, tableDDL(catalog.QuoteIdent(loc.Project)+"."+catalog.QuoteIdent(o.Dataset)+"."+catalog.QuoteIdent(o.Name), o.Table))
		case plan.ViewObject:
			fmt.Fprintf(&sb, "-- view %s.%s\nCREATE OR REPLACE VIEW %s AS\n%s;\n\n", o.Dataset, o.Name, loc.ViewTable(b.Flow), o.SQL)
		case plan.TableFunction:
			fmt.Fprintf(&sb, "-- table function %s.%s\n%s;\n\n", o.Dataset, o.Name, o.SQL)
		}
	}
	return sb.String(), nil
}

// runRender prints (or writes) the SQL of every flow's view. It needs no
// BigQuery: changelog schemas come from the schemas folder, or from the
// registry when --registry-url is given. Snapshot flows' columns are those
// of a BigQuery table, read when --project is given (metadata only, no
// query), else from <dataset>.<table>.schema.json in the schemas folder;
// without either they are refused.
func runRender(ctx context.Context, args []string) error {
	var t target
	fs := flag.NewFlagSet("render", flag.ContinueOnError)
	t.register(fs)
	out := fs.String("out", "", "write one <flow>.sql file per flow into this folder instead of printing")
	if err := t.parse(ctx, fs, args); err != nil {
		return err
	}
	d, invalid := flow.ParseDirAll(t.Flows)
	if len(d.Flows) == 0 {
		return errors.Join(invalid...)
	}
	t.refused = invalid
	sources, flows, err := t.renderSources(ctx, d.Flows)
	if err != nil {
		return err
	}
	if t.BigQuery.Project == "" {
		t.BigQuery.Project = "PROJECT"
	}
	bound, refused := flow.BindAll(flows, apply.Changelogs(sources))
	t.refused = append(t.refused, refused)
	loc := catalog.Location{Project: t.BigQuery.Project, DefaultDataset: t.Dataset}
	w := renderOut{dir: *out}
	if w.dir != "" {
		if err := os.MkdirAll(w.dir, 0o755); err != nil {
			return err
		}
	}
	for _, b := range bound {
		if err := w.write(b.Name, func() (string, error) { return renderFlow(b, loc) }); err != nil {
			return err
		}
	}
	golds, refused := flow.BindGolds(d.Golds, bound, t.Dataset)
	t.refused = append(t.refused, refused)
	for _, g := range golds {
		if err := w.write(g.Name.Table, func() (string, error) { return goldSQL(g, loc) }); err != nil {
			return err
		}
	}
	return t.notAll(nil)
}

// renderSources finds the columns of what flows read: each source's schema
// (a source whose schema is bad refuses its flows alone, in t.refused)
// and each snapshot table's, from BigQuery with a project, else from its
// schema file. It returns the sources and the flows that remain.
func (t *target) renderSources(ctx context.Context, flows []*flow.Flow) (map[string]apply.SourceSchema, []*flow.Flow, error) {
	schemas, err := t.schemaSource()
	if err != nil {
		return nil, nil, err
	}
	sources, flows, noSchema := apply.LookupSources(ctx, flows, schemas)
	t.refused = append(t.refused, noSchema)
	switch {
	case t.BigQuery.Project == "" && t.Schemas != "":
		err = apply.SnapshotSchemaFiles(t.Schemas, flows, sources)
	case t.BigQuery.Project != "" && len(flow.SnapshotTables(flows)) > 0:
		bq, cerr := clients.NewBigQuery(ctx, t.BigQuery)
		if cerr != nil {
			return nil, nil, cerr
		}
		_, err = apply.SnapshotTables(ctx, bq, flows, sources)
		bq.Close()
	}
	return sources, flows, err
}

// renderOut prints what render renders, or writes it to <dir>/<name>.sql.
type renderOut struct{ dir string }

func (w renderOut) write(name string, sql func() (string, error)) error {
	text, err := sql()
	if err != nil {
		return err
	}
	if w.dir == "" {
		fmt.Print(text)
		return nil
	}
	path := filepath.Join(w.dir, name+".sql")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	fmt.Println("wrote", path)
	return nil
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
	if rp := md.RangePartitioning; rp != nil && rp.Range != nil {
		b.WriteString(fmt.Sprintf("\nPARTITION BY RANGE_BUCKET(%s, GENERATE_ARRAY(%d, %d, %d))", catalog.QuoteIdent(rp.Field), rp.Range.Start, rp.Range.End, rp.Range.Interval))
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

// goldSQL is what bqcdc render prints of a materialized view: its plan's
// objects, in the order apply makes them, with the statements compaction
// runs for it.
func goldSQL(g *flow.BoundGold, loc catalog.Location) (string, error) {
	objs, err := plan.ForGold(g, loc).Objects()
	if err != nil {
		return "", err
	}
	var sb strings.Builder
	for _, o := range objs {
		switch {
		case o.Step != "":
			fmt.Fprintf(&sb, "-- %s\n%s;\n\n", o.Step, o.SQL)
		case o.What == "table":
			fmt.Fprintf(&sb, "-- table %s.%s (made by bqcdc apply)\n%s;\n\n", o.Dataset, o.Name, o.SQL)
		case o.What == "table function":
			fmt.Fprintf(&sb, "-- table function %s.%s\n%s;\n\n", o.Dataset, o.Name, o.SQL)
		default:
			fmt.Fprintf(&sb, "-- %s %s.%s\nCREATE OR REPLACE VIEW %s AS\n%s;\n\n", o.What, o.Dataset, o.Name,
				catalog.QuoteIdent(loc.Project)+"."+catalog.QuoteIdent(o.Dataset)+"."+catalog.QuoteIdent(o.Name), o.SQL)
		}
	}
	return sb.String(), nil
}
