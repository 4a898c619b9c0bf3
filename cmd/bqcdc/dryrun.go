package main

import (
	"context"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/compact"
)

// estimator prices the statements of `bqcdc compact --dry-run`: BigQuery's
// own dry runs against a project; against an emulator, whose dry runs
// report the size of the result rather than what a statement scans, the
// cost model's estimate from the tables' metadata.
func estimator(ctx context.Context, t target, bq *bigquery.Client, loc catalog.Location) (compact.Estimator, string, error) {
	if t.BigQuery.Emulated() {
		return modelEstimator(ctx, bq, loc)
	}
	return compact.DryRun(bq), "BigQuery's dry-run estimates (bytes processed, before the 10 MB per table minimum)", nil
}
