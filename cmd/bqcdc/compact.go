package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/bqcdc/bqcdc/internal/apply"
	"github.com/bqcdc/bqcdc/internal/bqwrite"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/clients"
	"github.com/bqcdc/bqcdc/internal/compact"
	"github.com/bqcdc/bqcdc/internal/config"
	"github.com/bqcdc/bqcdc/internal/flow"
)

type names []string

func (n *names) String() string     { return strings.Join(*n, ",") }
func (n *names) Set(v string) error { *n = append(*n, v); return nil }

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
	if err := parseFlags(ctx, fs, args); err != nil {
		return err
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
	loc := catalog.Location{Project: t.bq.Project, DefaultDataset: t.dataset}
	if *shards < 1 || *shard < 0 || *shard >= *shards {
		return fmt.Errorf("--shard %d --shards %d: want 0 <= shard < shards", *shard, *shards)
	}
	if *shards > 1 {
		flows = slices.DeleteFunc(flows, func(f *flow.Flow) bool { return compact.ShardOf(f.SourceKey(), *shards) != *shard })
	}
	bound, changelogs, err := apply.BindToChangelogMetadata(ctx, bq, loc, flows)
	if err != nil && len(bound) == 0 {
		return t.notAll(err)
	}
	t.refused = append(t.refused, err) // flows that do not bind: the others run
	opts := compact.Options{VisibilityLag: *lag,
		TombstoneRetention: time.Duration(*tombstones) * 24 * time.Hour,
		ChangelogRetention: time.Duration(*retention) * 24 * time.Hour,
		Concurrency:        *concurrency, Budget: *budget, SnapshotSettle: *settle}
	if mw, err := clients.NewWriter(ctx, t.bq); err == nil {
		w := bqwrite.NewWriter(bq, mw, t.bq.Project, t.dataset)
		defer w.Close()
		opts.Reports = w
	} else {
		fmt.Fprintln(os.Stderr, "compaction reports not written:", err)
	}
	c := compact.New(bq, loc, opts)
	reports, err := c.Compact(ctx, compact.Selection{Flows: bound, Names: only, Unbound: apply.Unbound(flows, bound),
		Changelogs: changelogs, Shard: *shard, Shards: *shards})
	if err != nil {
		return err
	}
	failed := 0
	enc := json.NewEncoder(os.Stdout)
	for _, r := range reports {
		if *asJSON {
			if err := enc.Encode(r); err != nil {
				return err
			}
		} else {
			fmt.Println(r.Line())
		}
		if r.Outcome == compact.Failed {
			failed++
		}
	}
	if failed > 0 {
		return t.notAll(fmt.Errorf("%d flow(s) failed", failed))
	}
	return t.notAll(nil)
}
