package property

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/dev/benchsize"
	"github.com/bqcdc/bqcdc/internal/dev/testenv"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/compact"
	"github.com/bqcdc/bqcdc/internal/dev/viewcheck"
	"github.com/bqcdc/bqcdc/internal/flow"
)

// BenchmarkCompaction grows the changelog tenfold at a fixed delta: each
// iteration appends 100 new change rows (over 1000 keys) and runs one
// compaction of an SCD 1 and an SCD 2 flow. It reports the changelog rows a
// run reads (events/op: the delta, whatever the history) and the state
// rows (what views read instead of the changelog).
//
//	go test ./internal/dev/e2e/property -run '^$' -bench Compaction -benchmem -benchtime 5x
func BenchmarkCompaction(b *testing.B) {
	for _, history := range benchsize.Pick([]int{1_000, 10_000}, []int{1_000}, "") {
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
	bound := e.ApplySourceFlows(t, "bench.sql", `
CREATE FLOW b_current_`+fmt.Sprint(history)+` AS AUTO CDC INTO b_current_`+fmt.Sprint(history)+` FROM STREAM(`+"`"+src+"`"+`)
KEYS (userId) APPLY AS DELETE WHEN operation = 'DELETE' SEQUENCE BY sequenceNum COLUMNS (userId, name, city);
CREATE FLOW b_history_`+fmt.Sprint(history)+` AS AUTO CDC INTO b_history_`+fmt.Sprint(history)+` FROM STREAM(`+"`"+src+"`"+`)
KEYS (userId) APPLY AS DELETE WHEN operation = 'DELETE' SEQUENCE BY sequenceNum COLUMNS (userId, name, city) STORED AS SCD TYPE 2;
`, src, testenv.UsersImage)
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

// BenchmarkReadGrowth times reads of one key's history as it grows, on the
// emulator (which prunes nothing: it shows the work, not what BigQuery
// bills; see BenchmarkCompactionCost for that): the whole change feed of an
// SCD 2 flow and its last 5 positions (BenchmarkBitemporalReadGrowth has
// the bitemporal view). The change feed is materialized by compaction, so
// reading it is reading rows of the change table.
//
//	go test ./internal/dev/e2e/property -run '^$' -bench '^BenchmarkReadGrowth$' -benchtime 1x -timeout 60m
func BenchmarkReadGrowth(b *testing.B) {
	// (At 400 events, compacting the key once, its change feed's history,
	// took over 15 minutes on the emulator: as of each of its 400 positions
	// the fold reads its events. BigQuery runs that in seconds; see
	// docs/compaction.md.)
	for _, n := range benchsize.Pick([]int{50, 100, 200}, []int{20}, "") {
		e, bound, positions := readGrowthSetup(b, n, true, true, false)
		hist := bound[0]
		b.Run(fmt.Sprintf("changes/all/events=%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := viewcheck.ActualChanges(context.Background(), e.BQ, hist, e.Loc, time.Time{}, time.Time{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("changes/last5/events=%d", n), func(b *testing.B) {
			from := positions[len(positions)-6]
			for b.Loop() {
				if _, err := viewcheck.ActualChanges(context.Background(), e.BQ, hist, e.Loc, from, time.Time{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkBitemporalReadGrowth times reads of a bitemporal view of one
// key as its history grows, on the emulator: a key learnt in order (the
// view's one-pass path) and one with late events (folded per system time
// from its cut on). Without the SCD 2 flow of BenchmarkReadGrowth, whose
// compaction of 400 positions takes the emulator many minutes:
//
//	go test ./internal/dev/e2e/property -run '^$' -bench BitemporalReadGrowth -benchtime 1x -timeout 60m
func BenchmarkBitemporalReadGrowth(b *testing.B) {
	for _, n := range benchsize.Pick([]int{50, 100, 200, 400}, []int{20}, "") {
		for _, v := range []struct {
			name       string
			late, fill bool
		}{{"late", true, false}, {"in-order", false, false}, {"late-fill", true, true}} {
			e, bound, _ := readGrowthSetup(b, n, v.late, false, v.fill)
			b.Run(fmt.Sprintf("bitemporal/view/%s/events=%d", v.name, n), func(b *testing.B) {
				for b.Loop() {
					if _, err := viewcheck.Actual(context.Background(), e.BQ, bound[0], e.Loc); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// readGrowthSetup gives one key n events (with late: every tenth a late
// one, sequenced before the newest), one per position, compacted: the
// change feed materialized up to the last. The flows are an SCD 2 one
// (with history) and a bitemporal one, in that order; with fill, the
// bitemporal flow has IGNORE NULL UPDATES ON (city) and every third event
// a NULL city.
func readGrowthSetup(b *testing.B, n int, late, history, fill bool) (*testenv.Env, []*flow.Bound, []time.Time) {
	src := fmt.Sprintf("growth.n%d.%v.%v.%v", n, late, history, fill)
	e := testenv.New(b, stack, fmt.Sprintf("growth-%d-%v-%d", n, late, time.Now().UnixNano()))
	ignore := ""
	if fill {
		ignore = " IGNORE NULL UPDATES ON (city)"
	}
	flows := fmt.Sprintf(`
CREATE FLOW g_bt_%[1]d_%[3]v AS AUTO CDC INTO g_bt_%[1]d_%[3]v FROM STREAM(`+"`%[2]s`"+`)
KEYS (userId) APPLY AS DELETE WHEN operation = 'DELETE' SEQUENCE BY sequenceNum SYSTEM SEQUENCE BY _cdc_ingested_at
COLUMNS (userId, name, city) STORED AS BITEMPORAL%[4]s;
`, n, src, late, ignore)
	if history {
		flows = fmt.Sprintf(`
CREATE FLOW g_hist_%[1]d_%[3]v AS AUTO CDC INTO g_hist_%[1]d_%[3]v FROM STREAM(`+"`%[2]s`"+`)
KEYS (userId) APPLY AS DELETE WHEN operation = 'DELETE' SEQUENCE BY sequenceNum COLUMNS (userId, name, city) STORED AS SCD TYPE 2;
`, n, src, late) + flows
	}
	bound := e.ApplySourceFlows(b, "growth.sql", flows, src, testenv.UsersImage)
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	var rows []map[string]any
	var positions []time.Time
	for i := range n {
		seq := int64(10 * (i + 1))
		if late && i%10 == 9 {
			seq -= 15 // late: before the previous event
		}
		at := base.Add(time.Duration(i) * time.Millisecond)
		positions = append(positions, at)
		var city any = "c"
		switch {
		case fill && i%3 == 2:
			city = nil
		case fill:
			city = fmt.Sprint("c", i%5)
		}
		rows = append(rows, map[string]any{"userId": int64(1), "name": fmt.Sprint("n", i%7), "city": city, "operation": "UPDATE",
			"sequenceNum": seq, catalog.ColMessageID: fmt.Sprint("m", i), catalog.ColIngestedAt: at.UnixMicro()})
	}
	e.AppendRows(b, src, rows)
	now := base.Add(time.Minute)
	c := compact.New(e.BQ, e.Loc, compact.Options{VisibilityLag: time.Second, Now: func() time.Time { return now }, MaintainEvery: -1})
	for _, r := range c.Run(context.Background(), bound) {
		if r.Outcome != compact.Compacted {
			b.Fatalf("compaction of %s: %+v", r.Flow, r)
		}
	}
	return e, bound, positions
}
