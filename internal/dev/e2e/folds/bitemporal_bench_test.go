package folds

import (
	"fmt"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/dev/benchsize"
	"github.com/bqcdc/bqcdc/internal/dev/testenv"
	"github.com/bqcdc/bqcdc/internal/schema"
)

// BenchmarkBitemporalCorrection runs what issue 40 says was only derived:
// the work a back-dated correction puts on a bitemporal view. One key has
// n versions learnt in order (business and system time rising together):
// "inorder" takes the view's one-pass path. "corrected-early" adds a
// correction of its first business time learnt right after it (the key
// leaves the one-pass path; each system time is folded from its cut on,
// the versions before the cut read from the final history). "corrected-
// late" learns that correction last: until then no version of the key is
// final, so each of its n + 1 system times folds the key from its first
// event (about n²/2 rows through the fold). Each sub-benchmark reads the
// key's rows of the view on the emulator (after checking the view equals
// the reference model). The emulator's time is SQLite's, not BigQuery's
// slots: what the figures show is how the work grows with n, compared
// across n and modes, never as an absolute. Under -short, n is 16 and 64.
//
// go test ./internal/dev/e2e/folds -run '^$' -bench BitemporalCorrection
func BenchmarkBitemporalCorrection(b *testing.B) {
	for _, n := range benchsize.Pick([]int{16, 32, 64, 128, 256}, []int{16, 64}, "") {
		for _, mode := range []string{"inorder", "corrected-early", "corrected-late"} {
			b.Run(fmt.Sprintf("%s/events%d", mode, n), func(b *testing.B) {
				benchCorrection(b, n, mode)
			})
		}
	}
}

func benchCorrection(b *testing.B, n int, mode string) {
	e := testenv.New(b, stack, fmt.Sprintf("btbench-%d-%s", n, mode))
	image := schema.Columns{{Name: "id", Type: schema.Int64}, {Name: "status", Type: schema.String},
		{Name: "op", Type: schema.String}, {Name: "bt", Type: schema.Int64}, {Name: "st", Type: schema.Int64}}
	bound := e.ApplySourceFlows(b, "bt.sql", `
CREATE FLOW accounts AS AUTO CDC INTO accounts FROM STREAM(`+"`bt.accounts`"+`)
KEYS (id) APPLY AS DELETE WHEN op = 'D' SEQUENCE BY bt SYSTEM SEQUENCE BY st
COLUMNS (id, status, bt, st) STORED AS BITEMPORAL;`, "bt.accounts", image)
	// System times are even; the early correction comes between the first
	// and the second event.
	var rows []map[string]any
	for i := 1; i <= n; i++ {
		rows = append(rows, map[string]any{"id": int64(1), "status": fmt.Sprintf("s%d", i), "op": "U", "bt": int64(10 * i), "st": int64(2 * i),
			catalog.ColMessageID: fmt.Sprintf("m%04d", i)})
	}
	correction := map[string]any{"id": int64(1), "status": "corrected", "op": "U", "bt": int64(10), catalog.ColMessageID: "m9999"}
	switch mode {
	case "corrected-early":
		correction["st"] = int64(3)
		rows = append(rows, correction)
	case "corrected-late":
		correction["st"] = int64(2*n + 1)
		rows = append(rows, correction)
	}
	e.AppendIngested(b, "bt.accounts", rows, time.Now().Add(-time.Hour))
	e.CheckViews(b, bound, "before the benchmark")
	query := fmt.Sprintf("SELECT COUNT(*) AS n FROM %s WHERE id = 1", e.Loc.ViewTable(bound[0].Flow))
	var got int64
	for b.Loop() {
		res, err := e.Query(query)
		if err != nil {
			b.Fatal(err)
		}
		got = res[0]["n"].(int64)
	}
	b.ReportMetric(float64(got), "view-rows")
}
