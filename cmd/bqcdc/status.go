package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/status"
)

// runStatus prints each flow's freshness, tail, last compaction and dead
// letters, and each source's changelog size, and fails when any is past a
// threshold (so it can gate a deploy or a cron job).
func runStatus(ctx context.Context, args []string) error {
	var t target
	th := status.Off
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	t.register(fs)
	fs.DurationVar(&th.MaxLag, "max-lag", 0, "fail when a flow's newest change is older than this (0: unchecked; a quiet source trips it too)")
	fs.Int64Var(&th.MaxTail, "max-tail", -1, "fail when more changelog rows than this wait after a flow's compaction watermark (-1: unchecked)")
	fs.DurationVar(&th.MaxCompactionAge, "max-compaction-age", 0, "fail when a flow's last compaction run is older than this, or missing (0: unchecked)")
	fs.Int64Var(&th.MaxDeadLetters, "max-dead-letters", -1, "fail when a topic dead-lettered more messages than this in the last day (-1: unchecked; 0: any)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if err := parseFlags(ctx, fs, args); err != nil {
		return err
	}
	flows, bq, err := t.open(ctx)
	if err != nil {
		return err
	}
	defer bq.Close()
	start := time.Now()
	rep, err := status.Gather(ctx, bq, catalog.Location{Project: t.bq.Project, DefaultDataset: t.dataset}, flows)
	if err != nil {
		return err
	}
	problems := status.Check(&rep, th)
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		if err := status.Write(os.Stdout, rep); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "read in %s\n", time.Since(start).Round(time.Millisecond))
	}
	if len(problems) > 0 {
		return t.notAll(fmt.Errorf("%d problem(s) past the thresholds", len(problems)))
	}
	return t.notAll(nil)
}
