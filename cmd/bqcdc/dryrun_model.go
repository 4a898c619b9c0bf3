package main

import (
	"context"
	"fmt"
	"sync"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/bqerror"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/compact"
	"github.com/bqcdc/bqcdc/internal/cost"
	"github.com/bqcdc/bqcdc/internal/schema/bqschema"
)

// modelEstimator prices statements with the cost model (package cost)
// against an emulator, whose dry runs report the size of a result rather
// than what a statement scans. Its metadata says how many rows a table
// holds, not how they lie in partitions and blocks, so the model reads
// every table as one unpartitioned, unclustered span: an upper bound,
// labelled so, that counts the columns each statement reads and the 10 MB
// minimum per table, but no pruning.
func modelEstimator(_ context.Context, bq *bigquery.Client, loc catalog.Location) (compact.Estimator, string, error) {
	return &modelEstimate{bq: bq, model: cost.NewModel()},
		"the cost model's upper bound from the tables' metadata (no partition or block pruning: table metadata does not say how rows lie)", nil
}

type modelEstimate struct {
	bq    *bigquery.Client
	mu    sync.Mutex
	model *cost.Model
}

func (m *modelEstimate) Estimate(ctx context.Context, st compact.Stmt) (int64, error) {
	sql := st.SQL
	m.mu.Lock()
	defer m.mu.Unlock()
	for attempt := 0; ; attempt++ {
		e, err := m.model.Estimate(sql)
		if err == nil {
			return e.Billed, nil
		}
		// A table the model lacks: read its metadata and try again.
		name, ok := cost.MissingTable(err)
		if !ok || attempt > 64 {
			return 0, err
		}
		if err := m.add(ctx, name); err != nil {
			return 0, err
		}
	}
}

// add models table name (project.dataset.table) from its metadata.
func (m *modelEstimate) add(ctx context.Context, name string) error {
	project, dataset, table, ok := cost.SplitName(name)
	if !ok {
		return fmt.Errorf("table %s: not project.dataset.table", name)
	}
	md, err := m.bq.DatasetInProject(project, dataset).Table(table).Metadata(ctx)
	if bqerror.NotFound(err) {
		return fmt.Errorf("table %s does not exist (bqcdc apply makes it)", name)
	}
	if err != nil {
		return fmt.Errorf("reading table %s: %w", name, err)
	}
	t := cost.NewTable(name, cost.Columns(bqschema.FromBigQuery(md.Schema), nil, cost.Shape{Len: 16, Elems: 2}), "", "")
	if err := t.AddSpan(cost.Partition{}, cost.Null, cost.Null, int64(md.NumRows), 0); err != nil {
		return err
	}
	m.model.Tables[name] = t
	return nil
}
