package compact

import (
	"context"
	"fmt"
	"sync"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/bqerror"
	"github.com/bqcdc/bqcdc/internal/cost"
	"github.com/bqcdc/bqcdc/internal/schema/bqschema"
)

// ModelLabel says what Model's figures are, for the reports that print
// them beside BigQuery's.
const ModelLabel = "the cost model's upper bound from the tables' metadata (no partition or block pruning: table metadata does not say how rows lie)"

// Model prices statements with the cost model (package cost) over the
// tables as their BigQuery metadata describes them, read on first use.
// Metadata says how many rows and bytes a table holds, not how they lie in
// partitions and blocks, so the model reads every table as one
// unpartitioned, unclustered span: an upper bound that counts the columns
// each statement reads and the 10 MB minimum per table, but no pruning.
// Column sizes are the model's defaults (16-byte strings), scaled so a
// row's bytes are the table's bytes per row. It is what `bqcdc compact
// --dry-run` prints beside BigQuery's dry runs, and against an emulator
// (whose dry runs report a result's size) alone.
func Model(bq *bigquery.Client) Estimator {
	return &model{bq: bq, m: cost.NewModel()}
}

type model struct {
	bq *bigquery.Client
	mu sync.Mutex
	m  *cost.Model
}

func (m *model) Estimate(ctx context.Context, st Stmt) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for attempt := 0; ; attempt++ {
		e, err := m.m.Estimate(st.SQL)
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
func (m *model) add(ctx context.Context, name string) error {
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
	t := cost.NewTable(name, metadataColumns(md), "", "")
	if err := t.AddSpan(cost.Partition{}, cost.Null, cost.Null, int64(md.NumRows), 0); err != nil {
		return err
	}
	m.m.Tables[name] = t
	return nil
}

// metadataColumns are md's columns at the model's default sizes, scaled to
// md's bytes per row when it has rows and bytes: a table of long strings
// is priced at its real size, not at 16 bytes a value.
func metadataColumns(md *bigquery.TableMetadata) []cost.Column {
	cols := cost.Columns(bqschema.FromBigQuery(md.Schema), nil, cost.Shape{Len: 16, Elems: 2})
	var row float64
	for _, c := range cols {
		row += c.Bytes
	}
	if md.NumRows == 0 || md.NumBytes <= 0 || row == 0 {
		return cols
	}
	scale := float64(md.NumBytes) / float64(md.NumRows) / row
	for i := range cols {
		cols[i].Bytes *= scale
	}
	return cols
}
