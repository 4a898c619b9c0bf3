package main

import (
	"cloud.google.com/go/bigquery"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bqcdc/bqcdc/internal/bqwrite"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/clients"
	"github.com/bqcdc/bqcdc/internal/compact"
	"github.com/bqcdc/bqcdc/internal/config"
)

type names []string

func (n *names) String() string { return strings.Join(*n, ",") }

// Set keeps each name once: a flow named twice runs once.
func (n *names) Set(v string) error {
	if !slices.Contains(*n, v) {
		*n = append(*n, v)
	}
	return nil
}

// runCompact runs one compaction of every flow (or of the --flow ones)
// against BigQuery or the local stack, and prints the per-flow report.
func runCompact(ctx context.Context, args []string) error {
	var t target
	var only names
	fs := flag.NewFlagSet("compact", flag.ContinueOnError)
	t.register(fs)
	fs.Var(&only, "flow", "compact only this flow (repeatable)")
	lag := fs.Duration("visibility-lag", config.DefaultVisibilityLag, "how long after _cdc_ingested_at a row may become visible (ingest timeout + clock skew)")
	tombstones := fs.Int("tombstone-retention-days", config.DefaultTombstoneRetention, "keep SCD 1 delete tombstones this many days (0: forever)")
	retention := fs.Int("changelog-retention-days", 0, "delete compacted changelog days older than this (0: keep forever)")
	concurrency := fs.Int("concurrency", 8, "flows folded at once")
	budget := fs.Duration("budget", 0, "start no flow after this long (0: no limit); the rest are reported deferred")
	settle := fs.Duration("snapshot-settle", compact.DefaultSnapshotSettle, "snapshot flows: while the table changed less than this long ago, leave its newest version for a later run (negative: off)")
	shard := fs.Int("shard", 0, "with --shards: compact the sources of this shard only")
	shards := fs.Int("shards", 1, "split the sources into this many shards (one scheduled run each)")
	asJSON := fs.Bool("json", false, "print one JSON object per flow")
	dry := fs.Bool("dry-run", false, "write nothing: read what each flow's run would fold (its statistics) and print the bytes each statement it would run would bill (BigQuery dry runs; against an emulator, the cost model's estimate)")
	maintainEvery := fs.Duration("maintain-every", compact.DefaultMaintainEvery, "fold each flow's state levels into one this often (negative: never)")
	ledger := fs.Bool("ledger", envBool(config.EnvAppendLedger, true), "tell idle flows from the append ledger and a listing of the datasets instead of reading every table's metadata (env "+config.EnvAppendLedger+")")
	changeFeedEvery := fs.Duration("change-feed-every", 0, "materialize each flow's change feed only once it lags this long (0: every run); fewer, longer ranges read the touched keys' state fewer times")
	if err := t.parse(ctx, fs, args); err != nil {
		return err
	}
	if err := checkCompactFlags(*lag, *tombstones, *retention, *concurrency); err != nil {
		return err
	}
	if err := compact.ValidShards(*shard, *shards); err != nil {
		return usagef("--shard %d --shards %d: %w", *shard, *shards, err)
	}
	flows, bq, err := t.open(ctx)
	if err != nil {
		return err
	}
	defer bq.Close()
	if len(t.refused) > 0 && *retention > 0 {
		// A flow that does not parse names no source, and it will need the
		// changelog days it has not folded once fixed: keep them all.
		fmt.Fprintln(os.Stderr, "changelog retention suspended: some flows do not parse")
		*retention = 0
	}
	loc := catalog.Location{Project: t.BigQuery.Project, DefaultDataset: t.Dataset}
	// The flags are a configuration, mapped to options as the compact
	// function maps its environment (compact.Configured).
	opts := compact.Configured(config.Config{BigQuery: t.BigQuery, Dataset: t.Dataset, VisibilityLag: *lag, AppendLedger: *ledger,
		TombstoneRetentionDays: *tombstones, ChangelogRetentionDays: *retention, CompactConcurrency: *concurrency,
		CompactBudget: *budget, SnapshotSettle: *settle, MaintainEvery: *maintainEvery, ChangeFeedEvery: *changeFeedEvery})
	opts.Golds = t.golds
	done, err := compactClients(ctx, t, bq, *dry, &opts)
	if err != nil {
		return err
	}
	defer done()
	c := compact.New(bq, loc, opts)
	sel, unbindable, err := c.Prepare(ctx, flows, only, *shard, *shards)
	if err != nil {
		return err
	}
	if len(sel.Flows) == 0 && len(sel.Idle) == 0 && unbindable != nil {
		return t.notAll(unbindable)
	}
	t.refused = append(t.refused, unbindable) // flows that do not bind: the others run
	reports, err := c.Compact(ctx, sel)
	if err != nil {
		return err
	}
	failed, err := printReports(reports, *asJSON)
	if err != nil {
		return err
	}
	if failed > 0 {
		return t.notAll(fmt.Errorf("%d flow(s) failed", failed))
	}
	return t.notAll(nil)
}

// printReports prints each flow's report (a line, and a dry run's plan
// under it; or one JSON object) and counts the failed ones.
func printReports(reports []compact.Report, asJSON bool) (failed int, err error) {
	enc := json.NewEncoder(os.Stdout)
	for _, r := range reports {
		if r.Outcome == compact.Failed {
			failed++
		}
		if asJSON {
			if err := enc.Encode(r); err != nil {
				return failed, err
			}
			continue
		}
		fmt.Println(r.Line())
		for _, st := range r.Plan {
			line := fmt.Sprintf("    would run %-14s %s", st.Step, formatBytes(st.Bytes))
			switch {
			case st.ModelError != "":
				line += " (model: " + st.ModelError + ")"
			case st.HasModel:
				line += fmt.Sprintf(" (model, unpruned: %s)", formatBytes(st.Model))
			}
			if st.Ran {
				line = fmt.Sprintf("    ran       %-14s %s billed", st.Step, formatBytes(st.Bytes))
			}
			if st.Error != "" {
				line += " (" + st.Error + ")"
			}
			fmt.Println(line)
		}
	}
	return failed, nil
}

func formatBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d B", n)
}

// checkCompactFlags refuses the settings the compact function's
// configuration refuses (package config has the bounds and why), except
// the lag's floor: a local stack compacts with a lag of seconds.
func checkCompactFlags(lag time.Duration, tombstones, retention, concurrency int) error {
	switch {
	case lag <= 0:
		return usagef("--visibility-lag %s: want a positive duration, at least the ingest timeout", lag)
	case tombstones < 0 || tombstones > config.MaxRetentionDays:
		return usagef("--tombstone-retention-days %d: want 0 to %d", tombstones, config.MaxRetentionDays)
	case retention < 0 || retention > config.MaxRetentionDays:
		return usagef("--changelog-retention-days %d: want 0 to %d", retention, config.MaxRetentionDays)
	case concurrency < 1 || concurrency > config.MaxCompactConcurrency:
		return usagef("--concurrency %d: want 1 to %d", concurrency, config.MaxCompactConcurrency)
	}
	return nil
}

// envBool reads a boolean environment variable, def when unset or not a
// boolean (the functions refuse such a value at start; a flag overrides it).
func envBool(name string, def bool) bool {
	if v, err := strconv.ParseBool(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

// compactClients gives opts what a run talks to beyond bq: with dry, the
// estimator that prices its statements (nothing written); else the writer
// of its reports (a run without it still compacts); with the ledger, the
// lister of the datasets. done releases them.
func compactClients(ctx context.Context, t target, bq *bigquery.Client, dry bool, opts *compact.Options) (done func(), err error) {
	done = func() {}
	if dry {
		est, model, label := estimator(t, bq)
		opts.DryRun, opts.Model = est, model
		fmt.Fprintf(os.Stderr, "dry run: nothing is written; bytes are %s\n", label)
	} else if mw, err := clients.NewWriter(ctx, t.BigQuery); err == nil {
		w := bqwrite.NewWriter(bq, mw, t.BigQuery.Project, t.Dataset)
		opts.Reports = w
		done = func() { w.Close() }
	} else {
		fmt.Fprintln(os.Stderr, "compaction reports not written:", err)
	}
	if opts.Ledger {
		if opts.Lister, err = clients.NewTableLister(ctx, t.BigQuery); err != nil {
			done()
			return func() {}, err
		}
	}
	return done, nil
}
