package compact

import (
	"context"
	"fmt"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/bqerror"
)

// account counts what one flow's run cost: the query jobs it started (each
// attempt is a job) and the bytes BigQuery billed for them; in a dry run,
// the statements it would have run, priced.
type account struct {
	jobs  int
	bytes int64
	plan  []Statement
}

// Statement is one statement of a dry run: one it would have run, and its
// price, or (Ran) a read it ran to know what the run would do, and what
// BigQuery billed for it.
type Statement struct {
	Step  string `json:"step"`  // fold, changes, maintain, ...; stats, marker, ... (reads)
	Bytes int64  `json:"bytes"` // what BigQuery would bill (or the cost model estimates), or billed (Ran)
	// Model is Options.Model's estimate beside Bytes (HasModel: there is
	// one; ModelError: it failed).
	Model      int64  `json:"model_bytes,omitempty"`
	HasModel   bool   `json:"has_model,omitempty"`
	ModelError string `json:"model_error,omitempty"`
	Ran        bool   `json:"ran,omitempty"`
	Error      string `json:"error,omitempty"`
	SQL        string `json:"-"`
}

// Estimator prices a statement without running it: a BigQuery dry run, or
// the cost model (package cost) where dry runs mean nothing (the emulator).
type Estimator interface {
	Estimate(ctx context.Context, st Stmt) (int64, error)
}

// exec runs a statement that writes (step names it). In a dry run
// (Options.DryRun) it prices the statement instead, lists it in the plan,
// and returns no rows.
func (c *Compactor) exec(ctx context.Context, step, sql string, acct *account) (Result, error) {
	if c.opts.DryRun == nil {
		return c.query(ctx, step, sql, acct)
	}
	st := Statement{Step: step, SQL: sql}
	n, err := c.opts.DryRun.Estimate(ctx, Stmt{Step: step, SQL: sql})
	if err != nil {
		st.Error = err.Error()
	}
	st.Bytes = n
	if c.opts.Model != nil {
		st.HasModel = true
		if st.Model, err = c.opts.Model.Estimate(ctx, Stmt{Step: step, SQL: sql}); err != nil {
			st.ModelError = err.Error()
		}
	}
	acct.bytes += n
	acct.plan = append(acct.plan, st)
	return Result{}, nil
}

// query runs a statement (step names it), retrying transient failures (concurrent DML on
// the same table, rate limits, 5xx) with exponential backoff. Every
// statement compaction runs is idempotent or is a commit point whose
// repetition is (a level folded twice counts once), so a retry after an
// answer lost in transit is safe.
func (c *Compactor) query(ctx context.Context, step, sql string, acct *account) (Result, error) {
	var err error
	for attempt := 0; attempt < c.opts.Attempts; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return Result{}, ctx.Err()
			case <-time.After(c.opts.Backoff << (attempt - 1)):
			}
		}
		acct.jobs++
		var res Result
		if res, err = c.wh.Query(ctx, Stmt{Step: step, SQL: sql}); err == nil {
			acct.bytes += res.BytesBilled
			if c.opts.DryRun != nil {
				// A dry run lists the reads it ran too: they are billed.
				acct.plan = append(acct.plan, Statement{Step: step, Bytes: res.BytesBilled, Ran: true, SQL: sql})
			}
			return res, nil
		}
		if !bqerror.IsTransient(err) {
			return Result{}, err
		}
	}
	return Result{}, fmt.Errorf("giving up after %d attempts: %w", c.opts.Attempts, err)
}

// one runs a statement that returns one row.
func (c *Compactor) one(ctx context.Context, step, sql string, acct *account) (map[string]bigquery.Value, error) {
	res, err := c.query(ctx, step, sql, acct)
	if err != nil {
		return nil, err
	}
	if len(res.Rows) != 1 {
		return nil, fmt.Errorf("the query returned %d rows, want 1", len(res.Rows))
	}
	return res.Rows[0], nil
}

// statsRow is the one row of a run's statistics query: counts and bounds
// of what the run is to fold or apply.
type statsRow map[string]bigquery.Value

// stats runs a run's statistics query; what says what it reads, for the
// error.
func (c *Compactor) stats(ctx context.Context, sql string, acct *account, what string) (statsRow, error) {
	r, err := c.one(ctx, StepStats, sql, acct)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", what, err)
	}
	return r, nil
}

// n is column k as a count (0 when NULL).
func (r statsRow) n(k string) int64 { return int64Of(r[k]) }

func ts(v bigquery.Value, def time.Time) time.Time {
	if t, ok := v.(time.Time); ok {
		return t.UTC()
	}
	return def
}

func int64Of(v bigquery.Value) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case string:
		var n int64
		fmt.Sscan(x, &n)
		return n
	}
	return 0
}
