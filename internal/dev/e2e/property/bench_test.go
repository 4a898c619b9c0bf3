package property

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/dev/testenv"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/compact"
	"github.com/bqcdc/bqcdc/internal/schema"
)

// BenchmarkCompaction grows the changelog tenfold at a fixed delta: each
// iteration appends 100 new change rows (over 1000 keys) and runs one
// compaction of an SCD 1 and an SCD 2 flow. It reports the changelog rows a
// run reads (events/op: the delta, whatever the history) and the state
// rows (what views read instead of the changelog).
//
//	go test ./internal/e2e/property -run '^$' -bench Compaction -benchmem -benchtime 5x
func BenchmarkCompaction(b *testing.B) {
	for _, history := range []int{1_000, 10_000} {
		b.Run(fmt.Sprintf("history=%d/delta=100", history), func(b *testing.B) {
			benchCompaction(b, history, 100)
		})
	}
}

func benchCompaction(b *testing.B, history, delta int) {
	t := b
	src := fmt.Sprintf("bench.h%d", history)
	e := testenv.New(b, stack, fmt.Sprintf("bench-%d-%d", history, time.Now().UnixNano()))
	ctx := context.Background()
	cols := e.CreateSource(t, src, usersImage)
	bound := e.ApplyFlows(t, "bench.sql", `
CREATE FLOW b_current_`+fmt.Sprint(history)+` AS AUTO CDC INTO b_current_`+fmt.Sprint(history)+` FROM STREAM(`+"`"+src+"`"+`)
KEYS (userId) APPLY AS DELETE WHEN operation = 'DELETE' SEQUENCE BY sequenceNum COLUMNS (userId, name, city);
CREATE FLOW b_history_`+fmt.Sprint(history)+` AS AUTO CDC INTO b_history_`+fmt.Sprint(history)+` FROM STREAM(`+"`"+src+"`"+`)
KEYS (userId) APPLY AS DELETE WHEN operation = 'DELETE' SEQUENCE BY sequenceNum COLUMNS (userId, name, city) STORED AS SCD TYPE 2;
`, map[string]schema.Columns{src: cols})
	clock := time.Now().Add(-24 * time.Hour)
	seq := int64(0)
	rows := func(n int) []map[string]any {
		out := make([]map[string]any, n)
		for i := range out {
			seq++
			clock = clock.Add(time.Millisecond)
			op := "UPDATE"
			if seq%10 == 0 {
				op = "DELETE"
			}
			out[i] = map[string]any{"userId": seq % 1000, "name": fmt.Sprint("n", seq%7), "city": fmt.Sprint("c", seq%13),
				"operation": op, "sequenceNum": seq, catalog.ColMessageID: fmt.Sprint("m", seq), catalog.ColIngestedAt: clock.UnixMicro()}
		}
		return out
	}
	for appended := 0; appended < history; appended += 5000 {
		e.AppendRows(t, src, rows(min(5000, history-appended)))
	}
	lag := time.Second
	run := func() []compact.Report {
		now := clock.Add(2 * lag)
		c := compact.New(e.BQ, e.Loc, compact.Options{VisibilityLag: lag, Now: func() time.Time { return now }, Backoff: 20 * time.Millisecond})
		reports := c.Run(ctx, bound)
		for _, r := range reports {
			if r.Outcome == compact.Failed {
				b.Fatalf("compaction of %s: %s", r.Flow, r.Error)
			}
		}
		clock = now
		return reports
	}
	run() // fold the history once
	var read, stateRows int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		e.AppendRows(t, src, rows(delta))
		b.StartTimer()
		for _, r := range run() {
			read += r.EventsRead
			stateRows += r.RowsWritten
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(read)/float64(b.N), "events/op")
	b.ReportMetric(float64(stateRows)/float64(b.N), "rows-written/op")
	n, err := e.Query(fmt.Sprintf("SELECT COUNT(*) AS n FROM %s", e.Loc.StateTable(bound[0].Flow)))
	if err == nil && len(n) == 1 {
		b.ReportMetric(float64(n[0]["n"].(int64)), "scd1-state-rows")
	}
}
