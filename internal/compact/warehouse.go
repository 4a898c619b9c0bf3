package compact

import (
	"context"
	"fmt"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/apply"
	"github.com/bqcdc/bqcdc/internal/bqerror"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/clients"
	"github.com/bqcdc/bqcdc/internal/flow"
)

// Warehouse is what compaction asks of BigQuery: run a statement, read a
// table's metadata, set labels. Compaction holds nothing else of the
// client, so its planning, idle detection, budget, shards, deferral, crash
// recovery and failure isolation are tested against a fake (fake_test.go).
type Warehouse interface {
	// Query runs one statement as one query job: its rows, and what
	// BigQuery billed for it. Errors are as the client returns them
	// (bqerror classifies them); the caller retries.
	Query(ctx context.Context, st Stmt) (Result, error)
	// Metadata reads a table's metadata; nil and no error when the table
	// does not exist.
	Metadata(ctx context.Context, dataset, table string) (*bigquery.TableMetadata, error)
	// SetLabels sets labels on a table in one metadata update (not a query
	// job); labels not named keep their values.
	SetLabels(ctx context.Context, dataset, table string, labels map[string]string) error
}

// Stmt is one statement of a run: what it is for (a Step* constant) and
// its SQL. The step is the seam's name for it: a fake warehouse answers by
// the step, never by reading the SQL's text or comments.
type Stmt struct {
	Step string
	SQL  string
}

// Result is what a statement returned.
type Result struct {
	Rows []map[string]bigquery.Value
	// BytesBilled and RowsAffected are from the job's statistics (0 when
	// BigQuery gives none; the emulator gives none).
	BytesBilled, RowsAffected int64
}

// Objects creates and updates a flow's tables and view: package apply does,
// comparing what exists with what is wanted (metadata calls only).
type Objects interface {
	// State creates or evolves the flow's state table (and its change
	// table), with the flow's columns.
	State(ctx context.Context, b *flow.Bound) error
	// View renders a change-stream flow's view with the pruning bound hint
	// (a committed watermark), and renews the bound of its table functions
	// where they read one and it is a day behind: jobs is the query jobs
	// that took (a DDL script, billed nothing), which the run counts.
	View(ctx context.Context, b *flow.Bound, hint time.Time) (jobs int, err error)
	// SnapshotView renders a snapshot flow's view with the version bound
	// key ("" keeps the view's).
	SnapshotView(ctx context.Context, b *flow.Bound, key string) error
}

// bigQuery is the Warehouse and Objects of a BigQuery client.
type bigQuery struct {
	bq  *bigquery.Client
	loc catalog.Location
}

func (w bigQuery) Query(ctx context.Context, st Stmt) (Result, error) {
	it, err := w.bq.Query(st.SQL).Read(ctx)
	if err != nil {
		return Result{}, err
	}
	var res Result
	if st := statistics(ctx, it); st != nil {
		res.BytesBilled, res.RowsAffected = st.TotalBytesBilled, st.NumDMLAffectedRows
	}
	res.Rows, err = clients.Collect(it)
	return res, err
}

// statistics reads a finished query job's statistics (a jobs.get, not a
// job); nil when BigQuery gives none.
func statistics(ctx context.Context, it *bigquery.RowIterator) *bigquery.QueryStatistics {
	job := it.SourceJob()
	if job == nil {
		return nil
	}
	st, err := job.Status(ctx)
	if err != nil || st == nil || st.Statistics == nil {
		return nil
	}
	q, _ := st.Statistics.Details.(*bigquery.QueryStatistics)
	return q
}

func (w bigQuery) Metadata(ctx context.Context, dataset, table string) (*bigquery.TableMetadata, error) {
	md, err := w.bq.Dataset(dataset).Table(table).Metadata(ctx)
	if bqerror.NotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading table %s.%s: %w", dataset, table, err)
	}
	return md, nil
}

func (w bigQuery) SetLabels(ctx context.Context, dataset, table string, labels map[string]string) error {
	var upd bigquery.TableMetadataToUpdate
	for k, v := range labels {
		upd.SetLabel(k, v)
	}
	_, err := w.bq.Dataset(dataset).Table(table).Update(ctx, upd, "")
	return err
}

func (w bigQuery) State(ctx context.Context, b *flow.Bound) error {
	return apply.State(ctx, w.bq, w.loc, b, nil)
}

func (w bigQuery) View(ctx context.Context, b *flow.Bound, hint time.Time) (int, error) {
	return apply.View(ctx, w.bq, w.loc, b, hint, nil)
}

func (w bigQuery) SnapshotView(ctx context.Context, b *flow.Bound, key string) error {
	return apply.SnapshotView(ctx, w.bq, w.loc, b, key, nil)
}

// DryRun is the Estimator of a BigQuery project: a dry run of the
// statement (no job runs, nothing is billed), answering the bytes BigQuery
// would process. (A dry run's figure is before the 10 MB per table
// minimum; billing rounds up from it.)
func DryRun(bq *bigquery.Client) Estimator { return dryRun{bq} }

type dryRun struct{ bq *bigquery.Client }

func (d dryRun) Estimate(ctx context.Context, stmt Stmt) (int64, error) {
	q := d.bq.Query(stmt.SQL)
	q.DryRun = true
	job, err := q.Run(ctx)
	if err != nil {
		return 0, err
	}
	st := job.LastStatus()
	if st == nil {
		return 0, fmt.Errorf("the dry run returned no status")
	}
	if err := st.Err(); err != nil {
		return 0, err
	}
	if st.Statistics == nil {
		return 0, nil
	}
	return st.Statistics.TotalBytesProcessed, nil
}
