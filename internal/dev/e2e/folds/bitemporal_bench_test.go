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
// n versions learnt in order (business and system time rising together);
// "corrected" adds one correction of its first business time, learnt last,
// so the key leaves the view's one-pass path and is folded at each of its
// system times (n + 1 folds of up to n + 1 events: about n²/2 rows
// through the fold); "inorder" has none. Each sub-benchmark reads the key's
// rows of the view on the emulator (after checking the view equals the
// reference model). The emulator's time is SQLite's, not BigQuery's
// slots: what the figures show is how the work grows with n, compared
// across n and with "inorder", never as an absolute. Under -short, n is 16
// and 64.
//
// go test ./internal/dev/e2e/folds -run '^$' -bench BitemporalCorrection
func BenchmarkBitemporalCorrection(b *testing.B) {
	for _, n := range benchsize.Pick([]int{16, 32, 64, 128, 256}, []int{16, 64}, "") {
		for _, corrected := range []bool{false, true} {
			name := map[bool]string{false: "inorder", true: "corrected"}[corrected]
			b.Run(fmt.Sprintf("%s/events%d", name, n), func(b *testing.B) {
				benchCorrection(b, n, corrected)
			})
		}
	}
}

func benchCorrection(b *testing.B, n int, corrected bool) {
	e := testenv.New(b, stack, fmt.Sprintf("btbench-%d-%v", n, corrected))
	image := schema.Columns{{Name: "id", Type: schema.Int64}, {Name: "status", Type: schema.String},
		{Name: "op", Type: schema.String}, {Name: "bt", Type: schema.Int64}, {Name: "st", Type: schema.Int64}}
	bound := e.ApplySourceFlows(b, "bt.sql", `
CREATE FLOW accounts AS AUTO CDC INTO accounts FROM STREAM(`+"`bt.accounts`"+`)
KEYS (id) APPLY AS DELETE WHEN op = 'D' SEQUENCE BY bt SYSTEM SEQUENCE BY st
COLUMNS (id, status, bt, st) STORED AS BITEMPORAL;`, "bt.accounts", image)
	var rows []map[string]any
	for i := 1; i <= n; i++ {
		rows = append(rows, map[string]any{"id": int64(1), "status": fmt.Sprintf("s%d", i), "op": "U", "bt": int64(10 * i), "st": int64(i),
			catalog.ColMessageID: fmt.Sprintf("m%04d", i)})
	}
	if corrected {
		rows = append(rows, map[string]any{"id": int64(1), "status": "corrected", "op": "U", "bt": int64(10), "st": int64(n + 1),
			catalog.ColMessageID: "m9999"})
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
