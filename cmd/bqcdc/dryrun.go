package main

import (
	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/compact"
)

// estimator prices the statements of `bqcdc compact --dry-run`: BigQuery's
// own dry runs against a project, with the cost model's estimate beside
// each (model); against an emulator, whose dry runs report the size of the
// result rather than what a statement scans, the cost model's estimate
// alone. Both read the tables' metadata only.
func estimator(t target, bq *bigquery.Client) (est, model compact.Estimator, label string) {
	m := compact.Model(bq)
	if t.BigQuery.Emulated() {
		return m, nil, compact.ModelLabel
	}
	return compact.DryRun(bq), m, "BigQuery's dry-run estimates (bytes processed, before the 10 MB per table minimum), each beside " + compact.ModelLabel
}
