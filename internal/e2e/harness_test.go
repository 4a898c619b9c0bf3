package e2e

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/apply"
	"github.com/bqcdc/bqcdc/internal/bqclient"
	"github.com/bqcdc/bqcdc/internal/bqwrite"
	"github.com/bqcdc/bqcdc/internal/changelog"
	"github.com/bqcdc/bqcdc/internal/failure"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/schema"
	"github.com/bqcdc/bqcdc/sql/render"
)

// The harness builds changelogs and flows directly (as `bqcdc apply` does)
// and appends rows through the Storage Write API, for tests of the views and
// of compaction that need exact control of the events and their arrival.

var (
	writerOnce sync.Once
	writer     *bqwrite.Writer
)

func sharedWriter(t *testing.T) *bqwrite.Writer {
	t.Helper()
	writerOnce.Do(func() {
		mw, err := bqclient.NewWriter(context.Background(), stack.BQConfig)
		if err != nil {
			t.Fatal(err)
		}
		writer = bqwrite.NewWriter(stack.BigQuery, mw, stack.Project, stack.Dataset)
	})
	return writer
}

// createSource creates the changelog of source for a row image.
func createSource(t *testing.T, source string, image schema.Columns) schema.Columns {
	t.Helper()
	cols, err := changelog.Schema(image)
	if err != nil {
		t.Fatal(err)
	}
	var rep apply.Report
	if err := apply.Changelog(context.Background(), stack.BigQuery, stack.Dataset,
		apply.SourceSchema{Source: source, Columns: cols, Origin: "test"}, nil, &rep); err != nil {
		t.Fatal(err)
	}
	return cols
}

// applyFlows parses flow text, binds it to the given changelogs and applies
// each flow's state table and view.
func applyFlows(t *testing.T, file, text string, changelogs map[string]schema.Columns) []*flow.Bound {
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
		if err := apply.FlowObjects(context.Background(), stack.BigQuery, stack.Location(), b, &rep); err != nil {
			t.Fatalf("applying flow %s: %v", b.Name, err)
		}
		out = append(out, b)
	}
	return out
}

// appendRows appends canonical rows to a source's changelog, retrying the
// emulator's transient "database is locked".
func appendRows(t *testing.T, source string, rows []map[string]any) {
	t.Helper()
	w := sharedWriter(t)
	for attempt := 0; ; attempt++ {
		err := w.Append(context.Background(), changelog.TableName(source), rows)
		if err == nil {
			return
		}
		if failure.IsPermanent(err) || attempt == 20 {
			t.Fatalf("appending %d rows to %s: %v", len(rows), source, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func location() render.Location { return stack.Location() }
