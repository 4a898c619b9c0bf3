package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/apply"
	"github.com/bqcdc/bqcdc/internal/bqclient"
	"github.com/bqcdc/bqcdc/internal/bqwrite"
	"github.com/bqcdc/bqcdc/internal/changelog"
	"github.com/bqcdc/bqcdc/internal/failure"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/schema"
	"github.com/bqcdc/bqcdc/sql/render"
	"github.com/goccy/bigquery-emulator/server"
	"github.com/goccy/bigquery-emulator/types"
)

// env is a BigQuery project for a test: clients, a writer and where its
// flows live. Tests of the views and of compaction build changelogs and flows
// directly (as `bqcdc apply` does) and append rows through the Storage Write
// API, for exact control of the events and their arrival.
//
// Each such test gets its own emulator project: the emulator loads every job
// of a project on each request, so a project's queries get slower with every
// query run in it (30 ms after 100 jobs, 380 ms after 500); fresh projects
// keep each test's cost flat.
type env struct {
	bq  *bigquery.Client
	w   *bqwrite.Writer
	cfg bqclient.Config
	loc render.Location
}

var projects sync.Map

func newEnv(t *testing.T, project string) *env { return newEnvTB(t, project) }

func newEnvB(b *testing.B, project string) *env { return newEnvTB(b, project) }

func newEnvTB(t testing.TB, project string) *env {
	t.Helper()
	if _, dup := projects.LoadOrStore(project, true); dup {
		t.Fatalf("project %s used twice", project)
	}
	if err := stack.Emulator().Load(server.StructSource(types.NewProject(project, types.NewDataset(stack.Dataset)))); err != nil {
		t.Fatalf("creating emulator project %s: %v", project, err)
	}
	ctx := context.Background()
	cfg := stack.BQConfig
	cfg.Project = project
	bq, err := bqclient.NewBigQuery(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	mw, err := bqclient.NewWriter(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{bq: bq, w: bqwrite.NewWriter(bq, mw, project, stack.Dataset), cfg: cfg,
		loc: render.Location{Project: project, DefaultDataset: stack.Dataset}}
	var rep apply.Report
	if err := apply.CompactionReport(ctx, bq, stack.Dataset, &rep); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.w.Close()
		mw.Close()
		// The emulator keeps every project's tables in one SQLite file and
		// slows down as it grows: drop what the test made.
		if err := bq.Dataset(stack.Dataset).DeleteWithContents(context.Background()); err != nil {
			t.Logf("dropping the test dataset of %s: %v", project, err)
		}
		bq.Close()
	})
	return e
}

// createSource creates the changelog of source for a row image.
func (e *env) createSource(t testing.TB, source string, image schema.Columns) schema.Columns {
	t.Helper()
	cols, err := changelog.Schema(image)
	if err != nil {
		t.Fatal(err)
	}
	var rep apply.Report
	if err := apply.Changelog(context.Background(), e.bq, e.loc.DefaultDataset,
		apply.SourceSchema{Source: source, Columns: cols, Origin: "test"}, nil, &rep); err != nil {
		t.Fatal(err)
	}
	return cols
}

// applyFlows parses flow text, binds it to the given changelogs and applies
// each flow's state table and view.
func (e *env) applyFlows(t testing.TB, file, text string, changelogs map[string]schema.Columns) []*flow.Bound {
	t.Helper()
	flows, err := flow.Parse(file, text)
	if err != nil {
		t.Fatal(err)
	}
	var out []*flow.Bound
	for _, f := range flows {
		b, err := flow.Bind(f, changelogs[f.Source.Name])
		if err != nil {
			t.Fatal(err)
		}
		var rep apply.Report
		if err := apply.FlowObjects(context.Background(), e.bq, e.loc, b, &rep); err != nil {
			t.Fatalf("applying flow %s: %v", b.Name, err)
		}
		out = append(out, b)
	}
	return out
}

// appendRows appends canonical rows to a source's changelog, retrying the
// emulator's transient "database is locked".
func (e *env) appendRows(t testing.TB, source string, rows []map[string]any) {
	t.Helper()
	for attempt := 0; ; attempt++ {
		err := e.w.Append(context.Background(), changelog.TableName(source), rows)
		if err == nil {
			return
		}
		if failure.IsPermanent(err) || attempt == 20 {
			t.Fatalf("appending %d rows to %s: %v", len(rows), source, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func projectName(prefix string, n int64) string { return fmt.Sprintf("%s-%d", prefix, n) }

func queryEnv(e *env, sql string) ([]map[string]any, error) {
	rows, err := demoQuery(e, sql)
	return rows, err
}
