package compact

import (
	"context"
	"fmt"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/bqerror"
	"github.com/bqcdc/bqcdc/internal/clients"
)

// account counts what one flow's run cost: the query jobs it started (each
// attempt is a job) and the bytes BigQuery billed for them.
type account struct {
	jobs  int
	bytes int64
}

func (c *Compactor) query(ctx context.Context, sql string, acct *account) ([]map[string]bigquery.Value, error) {
	it, _, err := c.read(ctx, sql, acct)
	if err != nil {
		return nil, err
	}
	return clients.Collect(it)
}

// exec runs a statement, retrying transient failures, and returns its
// statistics when BigQuery gives them.
func (c *Compactor) exec(ctx context.Context, sql string, acct *account) (*bigquery.QueryStatistics, error) {
	_, st, err := c.read(ctx, sql, acct)
	return st, err
}

func (c *Compactor) read(ctx context.Context, sql string, acct *account) (*bigquery.RowIterator, *bigquery.QueryStatistics, error) {
	var err error
	for attempt := 0; attempt < c.opts.Attempts; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			case <-time.After(c.opts.Backoff << (attempt - 1)):
			}
		}
		acct.jobs++
		var it *bigquery.RowIterator
		if it, err = c.bq.Query(sql).Read(ctx); err == nil {
			st := c.statistics(ctx, it)
			if st != nil {
				acct.bytes += st.TotalBytesBilled
			}
			return it, st, nil
		}
		if !bqerror.IsTransient(err) {
			return nil, nil, err
		}
	}
	return nil, nil, fmt.Errorf("giving up after %d attempts: %w", c.opts.Attempts, err)
}

// statistics reads a finished query job's statistics (a jobs.get, not a
// job); nil when BigQuery gives none.
func (c *Compactor) statistics(ctx context.Context, it *bigquery.RowIterator) *bigquery.QueryStatistics {
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
