// Package testenv gives integration tests a BigQuery project of their own on
// the local stack's emulator: clients, a Storage Write writer, and helpers to
// create changelogs and flows (as `bqcdc apply` does), append rows with exact
// ingestion times or load snapshots, and compare views with the reference
// model; for property tests, seed flags, random values, message ids and
// delivery orders (random.go) and compaction runs that crash (compact.go);
// and the acceptance cases shared with other engines (acceptance.go).
//
// Each test gets its own emulator project: the emulator loads every job of a
// project on each request, so a project's queries get slower with every query
// run in it (30 ms after 100 jobs, 380 ms after 500). It is imported by tests
// only.
package testenv

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/apply"
	"github.com/bqcdc/bqcdc/internal/bqwrite"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/clients"
	"github.com/bqcdc/bqcdc/internal/dev/localstack"
	"github.com/bqcdc/bqcdc/internal/dev/viewcheck"
	"github.com/bqcdc/bqcdc/internal/failure"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/schema"
	"github.com/bqcdc/bqcdc/internal/schema/bqschema"
	"github.com/bqcdc/bqcdc/sql/render"
	"github.com/goccy/bigquery-emulator/server"
	"github.com/goccy/bigquery-emulator/types"
)

// Env is one emulator project for one test.
type Env struct {
	BQ  *bigquery.Client
	W   *bqwrite.Writer
	Loc catalog.Location
	// Apply is what ApplyFlows passes to apply.FlowObjects: by default no
	// table functions, as on the local stack (internal/emulator, concession
	// 11); a test of their DDL clears SkipTableFunctions.
	Apply apply.Options
}

var projects sync.Map

// UsersClock gives minutes from an hour ago, and a maker of events of a
// source of UsersImage ingested at one of them.
func UsersClock() (at func(minute int) time.Time, row func(id int64, name, city any, op string, seq int64, msg string, minute int) map[string]any) {
	base := time.Now().UTC().Add(-time.Hour).Truncate(time.Minute)
	at = func(minute int) time.Time { return base.Add(time.Duration(minute) * time.Minute) }
	row = func(id int64, name, city any, op string, seq int64, msg string, minute int) map[string]any {
		return map[string]any{"userId": id, "name": name, "city": city, "operation": op, "sequenceNum": seq,
			"_cdc_message_id": msg, "_cdc_ingested_at": at(minute).UnixMicro()}
	}
	return at, row
}

// UsersImage is the row image of the users sources of several tests.
var UsersImage = schema.Columns{
	{Name: "userId", Type: schema.Int64}, {Name: "name", Type: schema.String}, {Name: "city", Type: schema.String},
	{Name: "operation", Type: schema.String}, {Name: "sequenceNum", Type: schema.Int64},
}

// New creates project in the stack's emulator, with the stack's dataset and
// an empty compaction report table; the dataset is dropped when the test ends.
func New(t testing.TB, st *localstack.Stack, project string) *Env {
	t.Helper()
	if _, dup := projects.LoadOrStore(project, true); dup {
		t.Fatalf("project %s used twice", project)
	}
	if err := st.Emulator().Load(server.StructSource(types.NewProject(project, types.NewDataset(st.Dataset)))); err != nil {
		t.Fatalf("creating emulator project %s: %v", project, err)
	}
	ctx := context.Background()
	cfg := st.BQConfig
	cfg.Project = project
	bq, mw, err := clients.NewAppendClients(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := &Env{BQ: bq, W: bqwrite.NewWriter(bq, mw, project, st.Dataset), Apply: apply.Options{SkipTableFunctions: true},
		Loc: catalog.Location{Project: project, DefaultDataset: st.Dataset}}
	var rep apply.Report
	if err := apply.CompactionReport(ctx, bq, st.Dataset, &rep); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.W.Close()
		mw.Close()
		// The emulator keeps every project's tables in one SQLite file and
		// slows down as it grows: drop what the test made.
		if err := bq.Dataset(st.Dataset).DeleteWithContents(context.Background()); err != nil {
			t.Logf("dropping the test dataset of %s: %v", project, err)
		}
		bq.Close()
	})
	return e
}

// Project names a test project.
func Project(prefix string, n int64) string { return fmt.Sprintf("%s-%d", prefix, n) }

// CreateSource creates the changelog of source for a row image.
func (e *Env) CreateSource(t testing.TB, source string, image schema.Columns) schema.Columns {
	t.Helper()
	cols, err := catalog.Schema(image)
	if err != nil {
		t.Fatal(err)
	}
	var rep apply.Report
	if err := apply.Changelog(context.Background(), e.BQ, e.Loc.DefaultDataset,
		apply.SourceSchema{Source: source, Columns: cols, Origin: "test"}, nil, &rep); err != nil {
		t.Fatal(err)
	}
	return cols
}

// ApplyFlows parses flow text, binds it to the given changelogs and applies
// each flow's state table and view.
func (e *Env) ApplyFlows(t testing.TB, file, text string, changelogs map[string]schema.Columns) []*flow.Bound {
	t.Helper()
	flows, err := flow.Parse(file, text)
	if err != nil {
		t.Fatal(err)
	}
	var out []*flow.Bound
	for _, f := range flows {
		b, err := flow.Bind(f, changelogs[f.SourceKey()])
		if err != nil {
			t.Fatal(err)
		}
		var rep apply.Report
		if err := apply.FlowObjects(context.Background(), e.BQ, e.Loc, b, e.Apply, &rep); err != nil {
			t.Fatalf("applying flow %s: %v", b.Name, err)
		}
		out = append(out, b)
	}
	return out
}

// ApplySourceFlows creates the changelog of source for a row image and
// applies the flows of text, which read that source only.
func (e *Env) ApplySourceFlows(t testing.TB, file, text, source string, image schema.Columns) []*flow.Bound {
	t.Helper()
	return e.ApplyFlows(t, file, text, map[string]schema.Columns{source: e.CreateSource(t, source, image)})
}

// ApplySnapshotFlows creates table (cols, in the default dataset) and
// applies the snapshot flows of text that read it, their columns read from
// BigQuery as bqcdc apply reads them (apply.SnapshotTables).
func (e *Env) ApplySnapshotFlows(t testing.TB, file, text, table string, cols schema.Columns) (*bigquery.Table, []*flow.Bound) {
	t.Helper()
	ctx := context.Background()
	tb := e.BQ.Dataset(e.Loc.DefaultDataset).Table(table)
	if err := tb.Create(ctx, &bigquery.TableMetadata{Schema: bqschema.ToBigQuery(cols)}); err != nil {
		t.Fatalf("creating the snapshot table: %v", err)
	}
	flows, err := flow.Parse(file, text)
	if err != nil {
		t.Fatal(err)
	}
	sources := map[string]apply.SourceSchema{}
	if _, err := apply.SnapshotTables(ctx, e.BQ, flows, sources); err != nil {
		t.Fatal(err)
	}
	columns := map[string]schema.Columns{}
	for key, s := range sources {
		columns[key] = s.Columns
	}
	return tb, e.ApplyFlows(t, file, text, columns)
}

// LoadSnapshot inserts rows (values by column name) into a snapshot table
// of cols, as a scheduled load would.
func LoadSnapshot(t testing.TB, tb *bigquery.Table, cols schema.Columns, rows []map[string]bigquery.Value) {
	t.Helper()
	bqs := bqschema.ToBigQuery(cols)
	savers := make([]*bigquery.ValuesSaver, len(rows))
	for i, r := range rows {
		vs := &bigquery.ValuesSaver{Schema: bqs}
		for _, c := range cols {
			vs.Row = append(vs.Row, r[c.Name])
		}
		savers[i] = vs
	}
	if err := tb.Inserter().Put(context.Background(), savers); err != nil {
		t.Fatalf("loading %d rows into %s: %v", len(rows), tb.TableID, err)
	}
}

// AppendRows appends canonical rows to a source's changelog, retrying the
// emulator's transient "database is locked".
func (e *Env) AppendRows(t testing.TB, source string, rows []map[string]any) {
	t.Helper()
	for attempt := 0; ; attempt++ {
		err := e.W.Append(context.Background(), catalog.TableName(source), rows)
		if err == nil {
			return
		}
		if failure.IsPermanent(err) || attempt == 20 {
			t.Fatalf("appending %d rows to %s: %v", len(rows), source, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// AppendIngested stamps rows as ingested from start on, a millisecond
// apart, and appends them to source's changelog.
func (e *Env) AppendIngested(t testing.TB, source string, rows []map[string]any, start time.Time) {
	t.Helper()
	for i, row := range rows {
		row[catalog.ColIngestedAt] = start.Add(time.Duration(i) * time.Millisecond).UnixMicro()
	}
	e.AppendRows(t, source, rows)
}

// Query runs sql in the project.
func (e *Env) Query(sql string) ([]map[string]bigquery.Value, error) {
	it, err := e.BQ.Query(sql).Read(context.Background())
	if err != nil {
		return nil, fmt.Errorf("querying %q: %w", sql, err)
	}
	return clients.Collect(it)
}

// CheckViews compares each view with the reference model; on a difference
// it reports it and, with -v, dumps the flow's state table.
func (e *Env) CheckViews(t testing.TB, bound []*flow.Bound, when string) {
	t.Helper()
	for _, b := range bound {
		diff, err := viewcheck.Check(context.Background(), e.BQ, b, e.Loc)
		if err != nil {
			t.Fatalf("%s: checking %s: %v", when, b.Target, err)
		}
		if diff == "" {
			continue
		}
		t.Errorf("%s: view %s differs from the model:\n%s", when, b.Target, diff)
		if testing.Verbose() {
			rows, _ := e.Query(fmt.Sprintf("SELECT * EXCEPT (__watermark) FROM %s ORDER BY __gen, __key", e.Loc.StateTable(b.Flow)))
			for _, r := range rows {
				t.Logf("  state: %v", r)
			}
		}
	}
}

// Only is the flow of bound named name (none: nil), for checking the
// flow a step ran on.
func Only(bound []*flow.Bound, name string) []*flow.Bound {
	for _, b := range bound {
		if b.Name == name {
			return []*flow.Bound{b}
		}
	}
	return nil
}

// CheckRefreshedGolds compares each refreshed materialized view of golds
// (<name>_refreshed) with its SELECT over the target as of the state's own
// position and, where it keeps a change feed, the replay of <name>_changes
// with <name>_refreshed. Views compaction does not refresh are passed over.
func (e *Env) CheckRefreshedGolds(t testing.TB, golds []*flow.BoundGold, when string) {
	t.Helper()
	ctx := context.Background()
	for _, g := range golds {
		if g.Refreshable() != nil {
			continue
		}
		diff, err := viewcheck.CheckGoldRefreshed(ctx, e.BQ, g, e.Loc)
		if err != nil {
			t.Fatalf("%s: checking %s_refreshed: %v", when, g.Name, err)
		}
		if diff != "" {
			t.Errorf("%s: %s_refreshed differs from its SELECT at its position:\n%s", when, g.Name, diff)
		}
		if !render.GoldHasChanges(g) {
			continue
		}
		if diff, err = viewcheck.CheckGoldFeed(ctx, e.BQ, g, e.Loc); err != nil {
			t.Fatalf("%s: checking %s_changes: %v", when, g.Name, err)
		}
		if diff != "" {
			t.Errorf("%s: %s_changes, replayed:\n%s", when, g.Name, diff)
		}
	}
}

// ApplyGolds parses the materialized views of text, binds them to the
// applied flows and creates their views, as bqcdc apply does.
func (e *Env) ApplyGolds(t testing.TB, file, text string, bound []*flow.Bound) []*flow.BoundGold {
	t.Helper()
	_, golds, err := flow.ParseAll(file, text)
	if err != nil {
		t.Fatal(err)
	}
	bg, err := flow.BindGolds(golds, bound, e.Loc.DefaultDataset)
	if err != nil {
		t.Fatal(err)
	}
	var rep apply.Report
	if err := apply.Golds(context.Background(), e.BQ, e.Loc, bound, bg, e.Apply, &rep); err != nil {
		t.Fatal(err)
	}
	return bg
}
