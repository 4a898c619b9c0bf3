// Package scale holds the many-flows test of compaction on the local stack:
// 200 flows over 100 sources. It has its own test binary.
package scale

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/compact"
	"github.com/bqcdc/bqcdc/internal/dev/localstack"
	"github.com/bqcdc/bqcdc/internal/dev/viewcheck"
	"github.com/bqcdc/bqcdc/internal/loadgen"
)

// TestCompactionAtScale applies two flows (a current-state and a history
// flow) per source over BQCDC_SCALE_SOURCES sources (default 50: 100 flows;
// docs/performance.md records a run at 100 sources, 200 flows, which takes about 11
// minutes on the emulator, past go test's 10-minute default), brings every
// flow to a checked state, then changes 3 sources and runs one compaction:
// the 6 flows of those sources must be compacted (at most 4 query jobs
// each) with views equal to the reference model, and all the others idle
// at 0 jobs, told from the append ledger without reading their tables.
func TestCompactionAtScale(t *testing.T) {
	s := loadgen.DefaultSpec()
	s.Prefix, s.Tables, s.Messages, s.Keys, s.Width = "scale.db", sources(t), 40, 10, 4
	dir := t.TempDir()
	if err := s.Write(dir); err != nil {
		t.Fatal(err)
	}
	var hist strings.Builder
	for i := range s.Tables {
		fmt.Fprintf(&hist, "CREATE FLOW lg_h%03d AS AUTO CDC INTO lg_h%03d FROM STREAM(%s) KEYS (id) APPLY AS DELETE WHEN _cdc_op = 'd'\nSEQUENCE BY _cdc_sequence COLUMNS (id, lg_run, c000) STORED AS SCD TYPE 2;\n",
			i, i, catalog.QuoteIdent(s.Topic(i)))
	}
	if err := os.WriteFile(filepath.Join(dir, "flows", "history.sql"), []byte(hist.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	o := localstack.DefaultOptions()
	o.BigQueryPort, o.StoragePort, o.PubSubPort, o.RegistryPort, o.FunctionPort = 0, 0, 0, 0, 0
	o.FlowsDir, o.SchemasDir, o.CompactEvery = filepath.Join(dir, "flows"), filepath.Join(dir, "schemas"), 0
	o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	// The append ledger is trusted at once: the untouched flows are then
	// idle without a read of their tables (their reports say so).
	o.LedgerSettle = time.Nanosecond
	ctx := context.Background()
	start := time.Now()
	st, err := localstack.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	flows := len(st.Flows)
	if flows != 2*s.Tables {
		t.Fatalf("%d flows, want %d", flows, 2*s.Tables)
	}
	t.Logf("%d flows over %d sources applied in %v", flows, s.Tables, time.Since(start).Round(time.Second))

	// Two runs bring every flow to a checked, clean state: the first reads
	// each marker and finds nothing; the second, a visibility lag later,
	// confirms it with one query.
	for run := range 2 {
		time.Sleep(st.VisibilityLag + 500*time.Millisecond)
		reports, err := st.Compact(ctx, nil)
		if err != nil {
			t.Fatalf("priming run %d: %v", run+1, err)
		}
		jobs := 0
		for _, r := range reports {
			if r.Outcome != compact.UpToDate {
				t.Fatalf("priming run %d: %s: %s %s", run+1, r.Flow, r.Outcome, r.Error)
			}
			jobs += r.Jobs
		}
		t.Logf("priming run %d: %d flows up to date, %d query jobs", run+1, flows, jobs)
	}

	// Change 3 sources.
	touched := s
	touched.Tables = 3
	var progress io.Writer
	if testing.Verbose() {
		progress = os.Stderr
	}
	res, err := loadgen.Run(ctx, touched, st.LoadTarget(progress), 3*time.Minute)
	if err != nil || res.Landed != res.Published {
		t.Fatalf("publishing to 3 sources: %v (%v)", err, res)
	}
	time.Sleep(st.VisibilityLag + 500*time.Millisecond)
	runStart := time.Now()
	reports, err := st.Compact(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	isTouched := map[string]bool{}
	for i := range touched.Tables {
		isTouched[touched.Topic(i)] = true
	}
	jobs, compacted, idle := 0, 0, 0
	for _, r := range reports {
		jobs += r.Jobs
		switch {
		case isTouched[r.Source]:
			if r.Outcome != compact.Compacted || r.Jobs > 4 || r.Error != "" {
				t.Errorf("touched flow %s: %s after %d jobs %s", r.Flow, r.Outcome, r.Jobs, r.Error)
			}
			compacted++
		default:
			if r.Outcome != compact.Idle || r.Jobs != 0 || !r.LedgerIdle {
				t.Errorf("untouched flow %s: %s after %d jobs %s (idle from the ledger: %t)", r.Flow, r.Outcome, r.Jobs, r.Error, r.LedgerIdle)
			}
			idle++
		}
	}
	t.Logf("one run after changing 3 sources: %d compacted, %d idle, %d query jobs in all, %v", compacted, idle, jobs, time.Since(runStart).Round(time.Millisecond))
	if compacted != 6 || idle != flows-6 {
		t.Errorf("%d compacted and %d idle, want 6 and %d", compacted, idle, flows-6)
	}
	bound, _, err := viewcheck.Bind(ctx, st.BigQuery, st.Location(), st.Flows)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bound {
		if !isTouched[b.Source.Name] {
			continue
		}
		diff, err := viewcheck.Check(ctx, st.BigQuery, b, st.Location())
		if err != nil {
			t.Fatal(err)
		}
		if diff != "" {
			t.Errorf("view %s differs from the model:\n%s", b.Target, diff)
		}
	}
}

func sources(t *testing.T) int {
	v := os.Getenv("BQCDC_SCALE_SOURCES")
	if v == "" {
		return 50
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 3 {
		t.Fatalf("BQCDC_SCALE_SOURCES=%q: want 3 or more", v)
	}
	return n
}
